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
            "device": -1, "start": [0, 0], "row_numbers": False}
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
        (ScanRequest(take_rows=[9, 2, 9, 2**62], columns=["a"]), _all(columns=["a"], selection={"rows": [9, 2, 9, 2**62]})),
        (ScanRequest(take_rows=[]), _all(selection={"rows": []})),
        (ScanRequest(ranges=[(3, 4)], filter="a > 1", row_numbers=True),
         _all(selection={"ranges": [[3, 4]]}, filter="a > 1", row_numbers=True)),
    ]
    for request, want in cases:
        assert describe(request) == want, request


def test_a_malformed_request_is_refused_with_one_message():
    shard = Shard(world_size=1, num_workers=1)
    for request, message in [
        (ScanRequest(row_range=(0, 5), shard=shard),
         "a scan reads every row, a row range, a shard, explicit ranges or the rows of a take: one of them, "
         "not a row range and a shard"),
        (ScanRequest(row_range=(0, 5), ranges=[(0, 1)], shard=shard),
         "one of them, not a row range and a shard and explicit ranges"),
        (ScanRequest(row_range=(9, 3)), "row range 9:3 is reversed (end before begin)"),
        (ScanRequest(ranges=[(0, 1), (8, 2)]), "range 1 (8:2) ends before it begins"),
        (ScanRequest(start=(1, 0)), "a start position counts the units of a shard or of explicit ranges"),
        (ScanRequest(shard=Shard(rank=3, world_size=2, num_workers=1)), "rank"),
        (ScanRequest(ranges=[(0, 1)], take_rows=[0]), "not explicit ranges and the rows of a take"),
        (ScanRequest(take_rows=[1], filter="a > 1"), "a take reads the rows it names and has no filter"),
        (ScanRequest(take_rows=[1], device="cuda:0"), "a take decodes on the host, not on device 0"),
        (ScanRequest(take_rows=[1], start=(0, 3)), "this scan reads the rows of a take"),
        (ScanRequest(take_rows=[1], row_numbers=True), "a take's rows are the ones it names: it has no row numbers"),
        (ScanRequest(device="cuda:1", row_numbers=True), "row numbers come from a host scan, not from one on device 1"),
    ]:
        with pytest.raises(onecopy.OnecopyError) as e:
            describe(request)
        assert e.value.code == "invalid" and message in str(e.value), (request, str(e.value))
    with pytest.raises(ValueError):
        describe(ScanRequest(strings="large"))
    with pytest.raises(ValueError):
        describe(ScanRequest(ranges=[(1, 2, 3)]))
    with pytest.raises(ValueError):
        describe(ScanRequest(take_rows=[3, -1]))
    with pytest.raises(TypeError):
        describe(ScanRequest(filter=42))


def test_a_take_request_is_planned_in_process_as_in_the_daemon(tmp_path):
    import pyarrow as pa
    import vortex as vx

    from onecopy._request import Source, start

    path = str(tmp_path / "t.vortex")
    vx.io.write(pa.table({"id": pa.array(range(1000), pa.int64()), "s": [f"v{i}" for i in range(1000)]}), path)
    f = onecopy.open(path, daemon=False)
    scan = start(Source.of_file(f._handle), ScanRequest(take_rows=[5, 999, 5], batch_rows=2, columns=["s"]))
    batches = list(pa.RecordBatchReader.from_stream(scan))
    assert [b.num_rows for b in batches] == [2, 1]
    assert pa.Table.from_batches(batches).column("s").to_pylist() == ["v5", "v999", "v5"]


def test_unknown_scan_flags_are_refused_not_ignored():
    import ctypes

    from onecopy._lib import _ERRLEN, _lib

    opts, keep = ScanRequest()._options(0)
    opts.flags = 1 << 7  # a flag a newer caller might set: this library must not drop it silently
    out = ctypes.c_void_p()
    err = ctypes.create_string_buffer(_ERRLEN)
    rc = _lib.onecopy_scan_request_json(ctypes.byref(opts), ctypes.byref(out), err, _ERRLEN)
    assert rc != 0
    assert "scan flags 0x80 include some a scan does not take" in err.value.decode()


def test_schema_and_take_refuse_flags_they_do_not_take(tmp_path):
    """onecopy_schema and onecopy_take check their flags as onecopy_scan does: one from a newer
    header, or row numbers (a scan's), fails the call instead of being dropped."""
    import ctypes

    from onecopy._lib import _ERRLEN, ArrowArrayStream, ArrowSchema, _lib
    from onecopy._request import ONECOPY_ROW_NUMBERS

    path, _ = _numbered(tmp_path)
    f = onecopy.open(path, daemon=False)
    err = ctypes.create_string_buffer(_ERRLEN)
    for flags in (1 << 7, ONECOPY_ROW_NUMBERS):
        schema = ArrowSchema()
        assert _lib.onecopy_schema(f._handle, flags, ctypes.byref(schema), err, _ERRLEN) != 0
        assert f"schema flags {flags:#x} include some a schema does not take" in err.value.decode()
        assert not schema.release
        rows = (ctypes.c_uint64 * 1)(3)
        stream = ArrowArrayStream()
        assert _lib.onecopy_take(f._handle, None, 0, rows, 1, flags, ctypes.byref(stream), err, _ERRLEN) != 0
        assert f"take flags {flags:#x} include some a take does not take" in err.value.decode()
        assert not stream.release  # nothing to release: the call failed before it made a stream
    assert f.take([3], ["id"]).read_all().column("id").to_pylist() == [3]  # without, it reads


def _numbered(tmp_path):
    import pyarrow as pa
    import vortex as vx

    path = str(tmp_path / "n.vortex")
    q = [(i * 37 % 100) / 100 for i in range(20000)]
    vx.io.write(pa.table({"id": pa.array(range(20000), pa.int64()), "q": pa.array(q, pa.float64())}), path)
    return path, q


def _kept(batches):
    import pyarrow as pa

    t = pa.Table.from_batches(batches)
    assert t.schema.names[-1] == "_row_number" and t.schema.field("_row_number").type == pa.uint64()
    return t


def test_row_numbers_name_the_rows_a_filter_kept(tmp_path):
    """The last column holds each kept row's number, in the order the ranges are read (through
    onecopyd: tests/daemon/test_open_through_daemon.py)."""
    import pyarrow as pa

    path, q = _numbered(tmp_path)
    ranges = [(15000, 20000), (0, 700), (9000, 9100)]
    scan = onecopy.open(path, daemon=False).scan_ranges(ranges, ["id"], "q > 0.8", row_numbers=True)
    t = _kept(list(pa.RecordBatchReader.from_stream(scan)))
    want = [r for b, e in ranges for r in range(b, e) if q[r] > 0.8]
    assert t.column("_row_number").to_pylist() == want
    assert t.column("id").to_pylist() == want


def test_a_plain_scan_reports_row_numbers_too(tmp_path):
    """scan() takes row_numbers as scan_ranges() does: a row range and batches that cut its
    chunks keep each row's number in the file."""
    import pyarrow as pa

    path, q = _numbered(tmp_path)
    f = onecopy.open(path, daemon=False)
    batches = list(pa.RecordBatchReader.from_stream(
        f.scan(["id"], "q > 0.8", batch_rows=333, row_range=(2500, 17000), row_numbers=True)))
    t = _kept(batches)
    want = [r for r in range(2500, 17000) if q[r] > 0.8]
    assert t.column("_row_number").to_pylist() == want
    assert t.column("id").to_pylist() == want
    assert max(b.num_rows for b in batches) <= 333
    assert pa.table(f.scan(["id"], "q > 0.8", row_range=(2500, 17000))).schema.names == ["id"]


def test_a_file_with_a_row_number_column_refuses_row_numbers(tmp_path):
    import pyarrow as pa
    import vortex as vx

    path = str(tmp_path / "clash.vortex")
    vx.io.write(pa.table({"_row_number": pa.array([1, 2], pa.int64())}), path)
    f = onecopy.open(path, daemon=False)
    with pytest.raises(onecopy.OnecopyError) as e:
        f.scan_ranges([(0, 2)], row_numbers=True)
    assert e.value.code == "invalid" and "the file has a column named _row_number" in str(e.value)
    assert len(list(pa.RecordBatchReader.from_stream(f.scan_ranges([(0, 2)])))) == 1  # without, it reads
