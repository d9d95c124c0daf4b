# SPDX-License-Identifier: Apache-2.0
"""One scan request from Python to the planner: every option Python's ScanRequest (onecopy._request)
carries reaches the library's format::ScanRequest unchanged (onecopy_scan_request_json reads the
C options as onecopy_scan does), and a malformed selection fails with one message, wherever it is
asked for. The same request crosses the wire unchanged (tests/daemon/test_scan_request.cpp) and is
planned by format::plan in process and in onecopyd alike."""

import pytest

import onecopy
from onecopy._request import ScanRequest, Shard, describe

TO_END = 2**64 - 1


def _all(**over):
    base = {"columns": [], "filter": "", "batch_rows": 0, "selection": {"all": True}, "strings": "views",
            "device": -1, "start": [0, 0]}
    base.update(over)
    return base


def test_every_option_reaches_the_planner_unchanged():
    shard = Shard(rank=2, world_size=5, worker=1, num_workers=3, shuffle=1, seed=2**63 + 5, epoch=9, unit_rows=4096)
    cases = [
        (ScanRequest(), _all()),
        (ScanRequest(columns=["b", "a"], filter=onecopy.col("a") > 3, batch_rows=77, strings="offsets"),
         _all(columns=["b", "a"], filter="a > 3", batch_rows=77, strings="offsets")),
        (ScanRequest(row_range=(10, 20)), _all(selection={"row_range": [10, 20]})),
        (ScanRequest(row_range=(10, -1)), _all(selection={"row_range": [10, TO_END]})),
        (ScanRequest(shard=shard, start=(4, 7)),
         _all(selection={"shard": {"rank": 2, "world_size": 5, "worker": 1, "num_workers": 3, "shuffle": True,
                                   "seed": 2**63 + 5, "epoch": 9, "unit_rows": 4096}}, start=[4, 7])),
        (ScanRequest(ranges=[(5, 9), (0, 2), (5, 9)], start=(1, 1)),
         _all(selection={"ranges": [[5, 9], [0, 2], [5, 9]]}, start=[1, 1])),
        (ScanRequest(ranges=[]), _all(selection={"ranges": []})),
        (ScanRequest(device="cuda:3"), _all(device=3)),
        (ScanRequest(device="host-reference"), _all(device=-2)),
    ]
    for request, want in cases:
        assert describe(request) == want, request


def test_a_malformed_request_is_refused_with_one_message():
    shard = Shard(world_size=1, num_workers=1)
    for request, message in [
        (ScanRequest(row_range=(0, 5), shard=shard),
         "a scan reads every row, a row range, a shard or explicit ranges: one of them, not a row range and a shard"),
        (ScanRequest(row_range=(0, 5), ranges=[(0, 1)], shard=shard),
         "one of them, not a row range and a shard and explicit ranges"),
        (ScanRequest(row_range=(9, 3)), "row range 9:3 is reversed (end before begin)"),
        (ScanRequest(ranges=[(0, 1), (8, 2)]), "range 1 (8:2) ends before it begins"),
        (ScanRequest(start=(1, 0)), "a start position counts the units of a shard or of explicit ranges"),
        (ScanRequest(shard=Shard(rank=3, world_size=2, num_workers=1)), "rank"),
    ]:
        with pytest.raises(onecopy.OnecopyError) as e:
            describe(request)
        assert e.value.code == "invalid" and message in str(e.value), (request, str(e.value))
    with pytest.raises(ValueError):
        describe(ScanRequest(strings="large"))
    with pytest.raises(ValueError):
        describe(ScanRequest(ranges=[(1, 2, 3)]))
    with pytest.raises(TypeError):
        describe(ScanRequest(filter=42))
