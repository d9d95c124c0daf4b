# SPDX-License-Identifier: Apache-2.0
"""Where onecopy reads when nobody says (python/onecopy/_daemon.py): onecopy.open through the
daemon that $ONECOPY_SOCKET names gives the same rows as in this process (RemoteFile: row count,
schema, scan, filters, take, ranges, units); reading in this process is opt-in; and a daemon that
should answer and does not is an error naming its socket, never a silent in-process read, for
onecopy.open and onecopy.torch.Dataset alike."""

import os
import socket
import time

import numpy as np
import pyarrow as pa
import pytest
import vortex as vx

import onecopy
import onecopy.torch as oct
from test_daemon import Daemon


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    rng = np.random.default_rng(5)
    n = 20_000
    words = [None if i % 11 == 0 else ("w" * int(rng.integers(0, 20))) + str(i) for i in range(n)]
    table = pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "score": pa.array(rng.random(n)),
        "word": pa.array(words),
        "tokens": pa.array([list(range(i % 7)) for i in range(n)], pa.list_(pa.int32())),
    })
    path = tmp_path_factory.mktemp("route") / "sample.vortex"
    vx.io.write(table, str(path))
    return str(path), table


@pytest.fixture
def daemon_env(tmp_path, monkeypatch):
    d = Daemon(tmp_path)
    monkeypatch.setenv("ONECOPY_SOCKET", d.sock)
    yield d
    d.stop()


def _stale_socket(path: str) -> str:
    """A socket file nobody listens on, as a daemon killed with SIGKILL leaves it."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.bind(path)
    s.close()
    return path


def test_open_reads_through_the_daemon_with_the_same_rows(daemon_env, sample):
    path, table = sample
    remote = onecopy.open(path)
    local = onecopy.open(path, daemon=False)
    assert isinstance(remote, onecopy.RemoteFile) and remote.socket == daemon_env.sock
    assert isinstance(local, onecopy.VortexFile)
    assert remote.row_count == len(remote) == local.row_count == table.num_rows
    assert remote.schema == local.schema
    assert remote.schema_with("offsets") == local.schema_with("offsets")
    assert remote.units(4096) == local.units(4096)
    for kw in ({}, {"columns": ["word", "id"]}, {"filter": "score > 0.7 AND word IS NOT NULL"},
               {"row_range": (1234, 9876), "batch_rows": 1000}, {"strings": "offsets"}):
        assert pa.table(remote.scan(**kw)).equals(pa.table(local.scan(**kw))), kw
    ranges = [(19_000, 19_500), (5, 9), (700, 2_000)]
    assert pa.table(remote.scan_ranges(ranges, columns=["id", "tokens"])).equals(
        pa.table(local.scan_ranges(ranges, columns=["id", "tokens"])))
    assert pa.table(remote.scan_ranges([])).num_rows == 0
    rng = np.random.default_rng(1)
    for idx in (rng.integers(0, table.num_rows, 500), [19_999, 0, 0, 77, 78, 79, 5_000], []):
        for strings in ("views", "offsets"):
            got = pa.table(remote.take(idx, strings=strings))
            want = pa.table(local.take(idx, strings=strings))
            assert got.schema == want.schema
            assert got.to_pylist() == want.to_pylist(), (list(idx)[:5], strings)
    assert pa.table(remote.take([3, 1], columns=["word"])).column("word").to_pylist() == \
        [table.column("word")[i].as_py() for i in (3, 1)]
    with pytest.raises(onecopy.OnecopyError, match="past the file's 20000 rows"):
        remote.take([5, 20_000])
    with pytest.raises(ValueError):
        remote.take([-1])
    # The scans were the daemon's: it delivered batches.
    assert daemon_env.client.status()["batches_delivered"] > 0


def test_a_take_is_one_request_the_daemon_reads_as_a_take(daemon_env, sample):
    path, table = sample
    scan = daemon_env.client.take(path, [7, 7, 19_999, 3], columns=["id", "word"])
    got = pa.table(scan)
    assert got.column("id").to_pylist() == [7, 7, 19_999, 3]
    assert got.column("word").to_pylist() == [table.column("word")[i].as_py() for i in (7, 7, 19_999, 3)]
    # The daemon delivered the take's four rows: not the rows 3..19,999 that a scan of the row
    # ranges around them would, nor the three distinct rows that a gather here would repeat.
    stats = scan._cursor.stats()
    assert stats["rows"] == 4 and stats["batches"] == 1
    assert stats["bytes_read"] > 0  # what the daemon's take fetched, reported as a scan's
    # The daemon checks the rows as it takes them: the stream fails, as a scan's does mid-way.
    with pytest.raises(OSError, match="take index 20000 \\(position 1\\) is past the file's 20000 rows"):
        pa.table(daemon_env.client.take(path, [5, 20_000]))
    assert pa.table(daemon_env.client.take(path, [])).num_rows == 0


@pytest.mark.parametrize("kind", ["list", "list_view"])
def test_a_take_of_a_few_token_lists_reads_their_bytes_not_their_chunks(daemon_env, tmp_path, kind):
    """vortex.list and vortex.listview takes (format/encodings/list.cpp, listview.cpp): the
    offsets (and sizes) of the taken rows, then only the elements they hold, not the chunk's
    millions. vortex-data writes a pyarrow list_view column as vortex.listview."""
    rng = np.random.default_rng(3)
    n = 20_000
    lengths = rng.integers(100, 300, n)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    values = pa.array(rng.integers(0, 50_000, offsets[-1], dtype=np.int32))
    if kind == "list":
        tokens = pa.ListArray.from_arrays(pa.array(offsets), values)
    else:
        tokens = pa.ListViewArray.from_arrays(pa.array(offsets[:-1]), pa.array(lengths.astype(np.int32)), values)
    path = str(tmp_path / "tokens.vortex")
    vx.io.write(pa.table({"tokens": tokens}), path)
    rows = [19_999, 7, 12_345]
    scan = daemon_env.client.take(path, rows, columns=["tokens"])
    got = pa.table(scan)
    assert got.column("tokens").to_pylist() == [tokens[r].as_py() for r in rows]
    read = scan._cursor.stats()["bytes_read"]
    size = os.path.getsize(path)
    assert 0 < read < size // 50, (read, size)  # a few blocks of each chunk, not its 8 MB


def test_row_numbers_come_through_the_daemon(daemon_env, sample):
    path, table = sample
    ranges = [(19_000, 20_000), (5, 900)]
    kw = {"columns": ["word"], "filter": "score > 0.8", "row_numbers": True}
    got = pa.table(onecopy.open(path).scan_ranges(ranges, **kw))
    assert got.equals(pa.table(onecopy.open(path, daemon=False).scan_ranges(ranges, **kw)))
    score = table.column("score").to_numpy()
    want = [r for b, e in ranges for r in range(b, e) if score[r] > 0.8]
    assert got.schema.names == ["word", "_row_number"]
    assert got.column("_row_number").to_pylist() == want
    assert got.column("word").to_pylist() == [table.column("word")[r].as_py() for r in want]


def test_row_numbers_come_with_plain_and_sharded_daemon_scans(daemon_env, sample):
    """RemoteFile.scan and Client.scan take row_numbers as VortexFile.scan does; each shard of a
    shuffled, sharded scan reports its rows' numbers in the file, and together the shards'
    numbers are the rows the filter keeps, each once."""
    path, table = sample
    kw = {"columns": ["word"], "filter": "score > 0.8", "row_numbers": True}
    got = pa.table(onecopy.open(path).scan(row_range=(300, 18_000), **kw))
    assert got.equals(pa.table(onecopy.open(path, daemon=False).scan(row_range=(300, 18_000), **kw)))
    score = table.column("score").to_numpy()
    assert got.column("_row_number").to_pylist() == [r for r in range(300, 18_000) if score[r] > 0.8]
    words = table.column("word")
    seen = []
    for rank in (0, 1):
        for b in daemon_env.client.scan(path, rank=rank, world_size=2, shuffle=True, seed=7, unit_rows=1000,
                                        **kw):
            rows = b.column("_row_number").to_pylist()
            assert b.column("word").to_pylist() == [words[r].as_py() for r in rows]
            seen += rows
    assert sorted(seen) == [r for r in range(table.num_rows) if score[r] > 0.8]
    assert seen != sorted(seen)  # shuffled units: numbers say where each row came from


def test_reading_in_this_process_is_opt_in(daemon_env, sample, monkeypatch):
    path, _ = sample
    assert isinstance(onecopy.open(path, daemon=False), onecopy.VortexFile)
    assert isinstance(onecopy.open(path, daemon=daemon_env.sock), onecopy.RemoteFile)
    assert isinstance(onecopy.open(path, daemon=True), onecopy.RemoteFile)
    assert onecopy.daemon_socket() == daemon_env.sock
    monkeypatch.setenv("ONECOPY_SOCKET", "")
    assert onecopy.daemon_socket() is None
    assert isinstance(onecopy.open(path), onecopy.VortexFile)
    ds = oct.Dataset([path], batch_rows=100, shuffle=False)
    assert ds.socket is None


@pytest.mark.parametrize("kind", ["stale", "missing"])
def test_a_dead_socket_is_an_error_not_an_in_process_read(tmp_path, sample, monkeypatch, kind):
    path, _ = sample
    sock = str(tmp_path / "dead.sock")
    if kind == "stale":
        _stale_socket(sock)
    monkeypatch.setenv("ONECOPY_SOCKET", sock)
    why = "nobody listens there" if kind == "stale" else "the socket does not exist"
    for attempt in (lambda: onecopy.open(path), lambda: oct.Dataset([path], batch_rows=100),
                    lambda: onecopy.daemon_socket()):
        with pytest.raises(onecopy.OnecopyError) as e:
            attempt()
        assert e.value.code == "io"
        message = str(e.value)
        assert f"no onecopyd answers at {sock} ($ONECOPY_SOCKET): {why}" in message, message
        assert "ONECOPY_SOCKET= (empty)" in message and "daemon=False" in message
    # An explicit socket is checked the same way, and opting out still reads.
    monkeypatch.delenv("ONECOPY_SOCKET")
    with pytest.raises(onecopy.OnecopyError, match="the socket given"):
        oct.Dataset([path], batch_rows=100, socket=sock)
    with pytest.raises(onecopy.OnecopyError, match="the socket given"):
        onecopy.open(path, daemon=sock)
    assert onecopy.open(path, daemon=False).row_count == 20_000
    assert sum(b["id"].numel() for b in oct.Dataset([path], columns=["id"], batch_rows=1000,
                                                   socket=False, shuffle=False)) == 20_000


def test_daemon_true_without_a_daemon_says_so(sample, monkeypatch):
    if os.path.exists("/run/onecopy/onecopyd.sock"):
        pytest.skip("this machine has a default onecopyd socket; the case needs one without")
    monkeypatch.delenv("ONECOPY_SOCKET", raising=False)
    assert onecopy.daemon_socket() is None
    assert isinstance(onecopy.open(sample[0]), onecopy.VortexFile)
    with pytest.raises(onecopy.OnecopyError, match="no onecopyd serves this machine") as e:
        onecopy.open(sample[0], daemon=True)
    assert e.value.code == "not_found"


@pytest.mark.parametrize("kept", [64, 0])
def test_the_daemon_keeps_a_local_file_for_the_next_open_of_it(tmp_path, kept):
    """onecopyd keeps a file a client opened (daemon/kept_files.hpp): the next take of it, from
    another connection, starts from what the first one read. A file rewritten at the same path
    is another file, and one changed in the last two seconds is not kept."""
    path = str(tmp_path / "kept.vortex")
    rng = np.random.default_rng(3)
    vx.io.write(pa.table({"v": pa.array(rng.random(50_000))}), path)
    time.sleep(2.1)  # a file changed in the last two seconds is not kept (racy)
    d = Daemon(tmp_path, env={"ONECOPY_TAKE_PARTIAL_SEGMENT_BYTES": "1KiB", "ONECOPY_DAEMON_KEPT_FILES": str(kept)})
    try:
        idx = [3, 40_001, 17_000]
        read = []
        for _ in range(2):  # each take is a connection, an Open and a Scan of its own
            scan = d.client.take(path, idx)
            assert pa.table(scan).column("v").to_pylist() == pa.table(vx.open(path).to_arrow()).column(
                "v").take(pa.array(idx)).to_pylist()
            read.append(scan._cursor.stats()["bytes_read"])
        assert read[0] > 0
        status = d.client.status()
        if kept:
            assert read[1] < read[0]  # the partial segments the first take read were there
            assert (status["kept_files"], status["kept_file_hits"]) == (1, 1)
        else:
            assert read[1] == read[0]
            assert (status["kept_files"], status["kept_file_hits"]) == (0, 0)
        os.unlink(path)
        vx.io.write(pa.table({"v": pa.array(-rng.random(50_000))}), path)
        read = []
        for _ in range(2):
            scan = d.client.take(path, idx)
            assert all(v < 0 for v in pa.table(scan).column("v").to_pylist())  # the new file's rows
            read.append(scan._cursor.stats()["bytes_read"])
        assert read[0] == read[1] > 0  # just written: not kept
    finally:
        d.stop()
