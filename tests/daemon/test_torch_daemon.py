# SPDX-License-Identifier: Apache-2.0
"""onecopy.torch.Dataset served by a real onecopyd: the daemon plans the units and delivers every
batch, and the samples equal an in-process read exactly."""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import vortex as vx

import onecopy
import onecopy.torch as oct
from test_daemon import Daemon


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("torchd")
    rng = np.random.default_rng(3)
    paths, first = [], 0
    for i, n in enumerate((3000, 2000)):
        lengths = rng.integers(1, 30, n)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
        vx.io.write(pa.table({
            "id": pa.array(np.arange(first, first + n, dtype=np.int64)),
            "quality": pa.array(rng.random(n)),
            "tokens": pa.ListArray.from_arrays(pa.array(offsets), pa.array(rng.integers(0, 1000, offsets[-1],
                                                                                      dtype=np.int32))),
        }), str(root / f"p{i}.vortex"))
        paths.append(str(root / f"p{i}.vortex"))
        first += n
    return paths


def _items(ds, workers):
    out = []
    for b in oct.DataLoader(ds, num_workers=workers, batch_size=None):
        out.append((b["id"].tolist(), b["tokens"].tolist(), b["tokens.offsets"].tolist()))
    return out


def test_dataset_through_the_daemon_equals_in_process(tmp_path, files):
    d = Daemon(tmp_path)
    try:
        kw = dict(batch_rows=50, unit_rows=400, shuffle_units=2, seed=8, filter="quality > 0.3")
        remote = oct.Dataset(files, socket=d.sock, **kw)
        local = oct.Dataset(files, socket=False, **kw)
        assert remote.groups() == local.groups()
        assert _items(remote, 0) == _items(local, 0)
        for rank in range(2):  # the shards as they are (equal steps need a process group here)
            r = oct.Dataset(files, socket=d.sock, rank=rank, world_size=2, uneven=None, **kw)
            l_ = oct.Dataset(files, socket=False, rank=rank, world_size=2, uneven=None, **kw)
            assert sorted(_items(r, 2)) == sorted(_items(l_, 2))
        status = d.client.status()
        assert status["batches_delivered"] > 0
        assert status["errors"] == 0
    finally:
        d.stop()


def test_units_from_the_daemon_and_its_errors(tmp_path, files):
    d = Daemon(tmp_path)
    try:
        assert d.client.units(files[0], 700) == onecopy.open(files[0]).units(700)
        with pytest.raises(onecopy.OnecopyError) as e:
            d.client.units(str(tmp_path / "missing.vortex"), 700)
        assert e.value.code in ("not_found", "io")
    finally:
        d.stop()


def test_the_daemon_lists_patterns(tmp_path, files):
    d = Daemon(tmp_path)
    try:
        root = str(files[0]).rsplit("/", 1)[0]
        assert d.client.list(root) == onecopy.expand(root) == sorted(files)
        assert d.client.list(root + "/p1*") == [files[1]]
        with pytest.raises(onecopy.OnecopyError, match="no Vortex files match"):
            d.client.list(root + "/zzz*")
        # Thousands of names come back in several parts.
        many = tmp_path / "many"
        many.mkdir()
        for i in range(3000):
            (many / f"{'x' * 60}-{i:05d}.vortex").write_bytes(b"")
        names = d.client.list(str(many))
        assert len(names) == 3000 and names == sorted(names)
    finally:
        d.stop()


def _status_as(uid, sock):
    """`onecopy status` run as another user (setpriv; these tests run as root), from a copy of the
    CLI beside the socket: the build directory may be private to root (a fresh clone under
    mktemp -d is)."""
    cli = Path(os.environ.get("ONECOPY_CLI", Path(onecopy.__file__).resolve().parents[2] / "build" / "client" / "onecopy"))
    copy = Path(sock).parent / "onecopy"
    shutil.copy2(cli, copy)
    os.chmod(copy, 0o755)
    return subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", str(copy), "status",
                           "--socket", sock], capture_output=True, text=True, timeout=30)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a client as another user")
def test_another_user_is_refused_unless_allowed():
    for allowed, served in (('"0"', False), ('"0,65534"', True)):
        # pytest's own temporary directories are private to root; this one the other user reaches.
        where = Path(tempfile.mkdtemp(prefix="onecopy-uid-", dir="/tmp"))
        os.chmod(where, 0o755)
        d = Daemon(where, config=f'daemon_allowed_uids = {allowed}\ndaemon_allowed_gids = ""\n')
        try:
            os.chmod(d.sock, 0o666)  # let the kernel connect it: SO_PEERCRED must refuse it
            r = _status_as(65534, d.sock)
            assert (r.returncode == 0) == served, r.stderr
            if served:
                assert "onecopyd" in r.stdout
            else:
                assert "uid 65534" in d.log.read_text() and "not allowed" in d.log.read_text()
            assert d.client.status()["clients"] >= 1  # root is still served
        finally:
            d.stop()
            shutil.rmtree(where, ignore_errors=True)


def test_daemon_batches_are_dlpack_views_and_a_missing_device_is_a_cuda_error(tmp_path, files):
    import torch

    d = Daemon(tmp_path)
    try:
        for batch in d.client.scan(files[0], columns=["id", "quality", "tokens"], batch_rows=700):
            ids = batch.column("id")
            t = torch.from_dlpack(ids)
            assert t.data_ptr() == ids.buffers()[1].address + ids.offset * 8  # a view, no copy
            assert t.tolist() == ids.to_pylist()
            tokens = batch.column("tokens")
            assert torch.from_dlpack(tokens.values).data_ptr() == tokens.values.buffers()[1].address + \
                tokens.values.offset * 4
            assert not t.is_cuda
        if not Path("/dev/nvidia0").exists():  # no GPU here: the daemon says it has no device
            # to every kind of device request: a whole file, a shard, a resumed shard, ranges,
            # and the dataset that reads its groups through the daemon
            requests = [lambda: d.client.scan(files[0], device="cuda:0"),
                        lambda: d.client.scan(files[0], device="cuda:0", rank=1, world_size=2, shuffle=True),
                        lambda: d.client.scan(files[0], device="cuda:0", start=(1, 5), unit_rows=1000),
                        lambda: d.client.scan_ranges(files[0], [(0, 10), (500, 900)], device="cuda:0"),
                        lambda: next(iter(oct.Dataset(files, socket=d.sock, batch_rows=100, device="cuda:0")))]
            for request in requests:
                with pytest.raises(onecopy.OnecopyError) as e:
                    request()
                assert e.value.code == "cuda" and "onecopyd has no CUDA device cuda:0" in str(e.value)
        with pytest.raises(ValueError):
            d.client.scan(files[0], device="tpu")
        with pytest.raises(ValueError, match="does not reconnect"):
            d.client.scan(files[0], device="cuda:0", rank=0, world_size=2, resume=True)
        with pytest.raises(ValueError, match="in this process only"):
            d.client.scan(files[0], device="host-reference")
        with pytest.raises(ValueError, match="socket=False"):
            oct.Dataset(files, socket=d.sock, device="host-reference")
    finally:
        d.stop()


def _slab_ranges() -> list[tuple[int, int]]:
    """The address ranges of this process's mappings of onecopyd's slabs (memfds it names
    "onecopy-slab")."""
    out = []
    for line in Path("/proc/self/maps").read_text().splitlines():
        if "onecopy-slab" in line:
            lo, hi = line.split()[0].split("-")
            out.append((int(lo, 16), int(hi, 16)))
    return out


def test_unshuffled_batches_are_views_of_the_slabs_and_shuffled_ones_one_copy(tmp_path, files):
    d = Daemon(tmp_path)
    try:
        kw = dict(socket=d.sock, columns=["id", "tokens"], batch_rows=100, unit_rows=500, shuffle_units=2)
        in_slab = lambda t: any(lo <= t.data_ptr() < hi for lo, hi in _slab_ranges())  # noqa: E731
        # Checked as they come, each dropped before the next, as a training loop does (a loop
        # that keeps every batch gets copies past half the daemon's per-client limits).
        ids, views = [], []
        for b in oct.Dataset(files, shuffle=False, **kw):
            ids += b["id"].tolist()
            views.append(in_slab(b["id"]) and in_slab(b["tokens"]))
        # Units of 500 rows, scanned whole and cut into batches of 100: each a slice of one.
        assert ids == list(range(5000)) and all(views), views
        ids, views = [], []
        for b in oct.Dataset(files, shuffle=True, seed=1, **kw):
            ids += b["id"].tolist()
            views.append(in_slab(b["id"]))
        assert sorted(ids) == list(range(5000)) and not any(views)  # gathered: copies, by design
    finally:
        d.stop()


def test_scan_ranges_in_process_and_in_the_daemon(tmp_path, files):
    ranges = [(2500, 2900), (0, 10), (10, 10), (1200, 1700)]
    f = onecopy.open(files[0])
    want = pa.concat_tables([pa.table(f.scan(["id", "tokens"], "quality > 0.5", 0, r)) for r in ranges])
    local = pa.table(f.scan_ranges(ranges, ["id", "tokens"], "quality > 0.5"))
    assert local.equals(want)
    d = Daemon(tmp_path)
    try:
        # Batches of 300 rows: few enough to hold them all (the daemon's limit is 8 unreleased).
        remote = pa.table(d.client.scan_ranges(files[0], ranges, ["id", "tokens"], onecopy.col("quality") > 0.5,
                                               batch_rows=300))
        assert remote.equals(want)
        for bad in ([(0, 10**9)], [(5, 4)]):
            with pytest.raises(onecopy.OnecopyError) as e:
                pa.table(d.client.scan_ranges(files[0], bad))
            assert e.value.code == "invalid"
            with pytest.raises(onecopy.OnecopyError):
                pa.table(f.scan_ranges(bad))
        with pytest.raises(ValueError):
            d.client.scan_ranges(files[0], [(1, 2, 3)])
        assert d.client.status()["clients"] >= 1  # the daemon went on
    finally:
        d.stop()


def test_groups_of_many_small_batches_do_not_stall_the_daemon(tmp_path, files):
    # Units of 50 rows and groups of 40 units: far more batches per group than the daemon lets
    # one client hold unreleased (daemon_client_max_batches_in_flight, 8 by default).
    d = Daemon(tmp_path)
    try:
        kw = dict(batch_rows=128, unit_rows=50, shuffle_units=40, seed=1)
        remote = oct.Dataset(files, socket=d.sock, **kw)
        local = oct.Dataset(files, socket=False, **kw)
        assert _items(remote, 0) == _items(local, 0)
    finally:
        d.stop()


def test_a_whole_scan_collects_through_the_daemon(tmp_path, files):
    # docs/usage.md's example keeps every batch: far more than the 3 a client may hold unreleased.
    d = Daemon(tmp_path, config="daemon_client_max_batches_in_flight = 3\n")
    try:
        want = pa.table(onecopy.open(files[0]).scan(["id", "tokens"], batch_rows=100))
        assert pa.table(d.client.scan_stream(files[0], ["id", "tokens"], batch_rows=100)).equals(want)
        assert pa.Table.from_batches(list(d.client.scan(files[0], ["id", "tokens"], batch_rows=100))).equals(want)
        assert d.client.scan(files[0], ["id", "tokens"], batch_rows=100).read_all().equals(want)
        assert d.client.status()["errors"] == 0
    finally:
        d.stop()


def test_scans_one_after_another_reuse_the_connection_and_its_slab(tmp_path, files):
    d = Daemon(tmp_path)
    try:
        for _ in range(5):
            assert sum(b.num_rows for b in d.client.scan(files[0], ["id"], batch_rows=500)) == 3000
        s = d.client.status()
        assert s["slabs_sent"] == 1  # one connection, one slab, for all five scans
        # A scan abandoned half way is not handed on (its batches may still be in flight).
        it = d.client.scan(files[0], ["id"], batch_rows=100)
        next(iter(it))
        it.close()
        assert sum(b.num_rows for b in d.client.scan(files[1], ["id"], batch_rows=500)) == 2000
        # A restarted daemon: the kept connection is dead, and the next scan connects anew.
        d.stop()
        os.unlink(d.notify_path)
        d = Daemon(tmp_path)  # the same socket path
        assert sum(b.num_rows for b in d.client.scan(files[0], ["id"], batch_rows=500)) == 3000
        assert d.client.status()["errors"] == 0
    finally:
        d.stop()
