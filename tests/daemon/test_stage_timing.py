# SPDX-License-Identifier: Apache-2.0
"""Per-stage timing through onecopyd: a scan's stats (ScanCursor.stats, Scan.stats) and
`onecopy status` say where its time went (format/scan_profile.hpp), per scan, for the scans
the asking user may see. Timing assertions here are lower bounds a sleep guarantees, and which
stage dominates when one stage is made to take seconds more than the others: no speed
thresholds."""

import json
import subprocess
import time

import numpy as np
import pyarrow as pa
import pytest
import vortex as vx

from test_daemon import CLI, Daemon

ENDED_KEPT = 64  # daemon/counters.hpp Counters::kEndedScansKept


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    n = 60_000
    rng = np.random.default_rng(3)
    table = pa.table({"id": pa.array(np.arange(n, dtype=np.int64)), "score": pa.array(rng.random(n))})
    path = tmp_path_factory.mktemp("timing") / "t.vortex"
    vx.io.write(table, str(path))
    return path, table


@pytest.fixture
def daemon(tmp_path):
    # Two batches in flight: a consumer that holds two makes the scan wait for it.
    d = Daemon(tmp_path, config="daemon_client_max_batches_in_flight = 2\n")
    yield d
    d.stop()


def _status_json(d) -> dict:
    out = subprocess.run([str(CLI), "status", "--json", "--socket", d.sock], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


def test_a_slow_consumer_is_the_bottleneck_and_status_says_so(daemon, data):
    path, table = data
    cursor = daemon.client.scan(str(path), batch_rows=4000, filter="score < 0.5")
    held, rows, batches = [], 0, 0
    for batch in cursor:
        rows += batch.num_rows
        batches += 1
        held = (held + [batch])[-2:]  # keeps the client at its limit while it "trains"
        time.sleep(0.03)
    del held
    st = cursor.stats()
    assert st["complete"]
    assert (st["rows"], st["batches"]) == (rows, batches)
    assert rows == int(np.sum(table.column("score").to_numpy() < 0.5))
    assert st["bytes_read"] > 0 and st["decode_s"] > 0 and st["copy_s"] > 0
    # Each batch but the last two waited for the consumer's 30 ms; the daemon measured it.
    assert st["consumer_wait_s"] >= 0.03 * (batches - 3) * 0.9
    assert st["bottleneck"] == "consumer"
    assert st["wall_s"] >= 0.03 * batches

    scans = _status_json(daemon)["scans"]
    mine = [s for s in scans if s["uri"] == str(path)]
    assert len(mine) == 1, scans
    s = mine[0]
    assert (s["state"], s["rows"], s["batches"]) == ("done", rows, batches)
    assert s["consumer_wait_s"] == pytest.approx(st["consumer_wait_s"], abs=1e-5)
    assert s["bottleneck"] == "consumer"
    text = subprocess.run([str(CLI), "status", "--socket", daemon.sock], capture_output=True, text=True,
                          check=True).stdout
    line = next(l for l in text.splitlines() if l.rstrip().endswith(str(path)))
    assert " done " in line and f" {rows} " in line and " consumer " in line, text


def test_a_running_scan_shows_then_ends_cancelled(daemon, data):
    path, _ = data
    cursor = daemon.client.scan(str(path), batch_rows=1000)
    first = next(cursor)
    running = [s for s in daemon.client.status()["scans"] if s["state"] == "running"]
    assert len(running) == 1 and running[0]["uri"] == str(path)
    assert running[0]["rows"] >= first.num_rows
    assert running[0]["wall_s"] > 0
    cursor.close()
    deadline = time.time() + 5
    while time.time() < deadline:
        states = [s["state"] for s in daemon.client.status()["scans"] if s["uri"] == str(path)]
        if states == ["cancelled"]:
            break
        time.sleep(0.05)
    assert states == ["cancelled"]
    assert not cursor.stats()["complete"]  # the daemon's stages never came


def test_status_keeps_a_bounded_number_of_ended_scans(daemon, data):
    path, _ = data
    for _ in range(ENDED_KEPT + 6):
        assert daemon.client.scan_stream(str(path), row_range=(0, 10)).read_all().num_rows == 10
    scans = daemon.client.status()["scans"]
    assert len(scans) == ENDED_KEPT
    assert all(s["state"] == "done" and s["rows"] == 10 for s in scans)


def test_a_stage_made_slow_is_the_bottleneck_in_process(data):
    """In process, a consumer that sleeps makes "consumer" the bottleneck; one that takes every
    batch at once leaves the reader's own stages the larger."""
    import onecopy

    path, table = data
    f = onecopy.open(str(path))
    slow = f.scan(batch_rows=10_000)
    n = 0
    for batch in pa.RecordBatchReader.from_stream(slow):
        n += batch.num_rows
        time.sleep(0.05)
    st = slow.stats()
    assert st["complete"] and st["rows"] == n == table.num_rows
    assert st["consumer_wait_s"] >= 0.05 * (st["batches"] - 1) * 0.9
    assert st["bottleneck"] == "consumer"
    fast = f.scan(batch_rows=10_000)
    assert fast.read_all().num_rows == table.num_rows
    st = fast.stats()
    assert st["complete"] and st["bytes_read"] > 0
    assert st["storage_s"] + st["decode_s"] > st["consumer_wait_s"]
    assert st["bottleneck"] in ("storage", "decode")
