# SPDX-License-Identifier: Apache-2.0
"""rados:// sources and scans pushed into the OSDs, against the 3-OSD test cluster
(ceph_cluster.py) with libcls_onecopy.so in the OSDs' class dir.

- `onecopy cp` both ways and `onecopy ls` over a pool;
- seeded filters and projections over the interop corpus and TPC-H lineitem SF 0.1, each scan's
  table equal to pyarrow's, once with every scan pushed into the OSDs and once with every scan
  read client-side (rados_scan_check.py, one process per mode: knobs are read once);
- a pushed-down selective scan moves a fraction of the bytes the client-side scan reads;
- a non-Vortex object, a truncated file and hostile requests each give a clear error, and the
  OSDs stay up and keep answering;
- an OSD restarted in the middle of a scan: the scan completes with exactly the right rows or
  ends with a clear error;
"""
import errno
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc
import pytest

from ceph_cluster import osd
from test_filter_take import read_arrow

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
BUILD = Path(os.environ.get("ONECOPY_BUILD_DIR", ROOT / "build"))
CLI = BUILD / "client" / "onecopy"
CORPUS_CASES = ["numeric_some_nulls", "string_some_nulls", "typed_some_nulls", "nested_some_nulls",
                "sparse", "empty", "one_row"]
FILTERS = 8


def env_of(cluster, **knobs):
    e = dict(os.environ, CEPH_CONF=cluster["CEPH_CONF"])
    e.update({f"ONECOPY_{k.upper()}": str(v) for k, v in knobs.items()})
    return e


def cli(cluster, *args, knobs=None, check=True, timeout=600):
    r = subprocess.run([str(CLI), *map(str, args)], env=env_of(cluster, **(knobs or {})),
                       capture_output=True, timeout=timeout)
    if check:
        assert r.returncode == 0, f"onecopy {' '.join(map(str, args))}: {r.stderr.decode()}"
    return r


def connect(cluster):
    import rados
    c = rados.Rados(conffile=cluster["CEPH_CONF"])
    c.connect(timeout=10)
    return c


def osds_up(cluster) -> list[int]:
    c = connect(cluster)
    try:
        ret, out, err = c.mon_command(json.dumps({"prefix": "osd dump", "format": "json"}), b"",
                                      timeout=10)
        assert ret == 0, err
        return [o["osd"] for o in json.loads(out)["osds"] if o["up"]]
    finally:
        c.shutdown()


@pytest.fixture(scope="module")
def pool(ceph_cluster):
    return ceph_cluster["ONECOPY_TEST_RADOS_POOL"]


@pytest.fixture(scope="module")
def loaded(ceph_cluster, pool, corpus):
    """The corpus cases (default and compact writers) and TPC-H lineitem SF 0.1 copied into the
    pool with `onecopy cp`: {object uri: ground-truth .arrow path}."""
    from test_filter_take import cache_dir
    import corpus as corpus_mod
    out = {}
    for case in CORPUS_CASES:
        for writer in ("default", "compact"):
            src = corpus / f"{case}.{writer}.vortex"
            if src.exists():
                uri = f"rados://{pool}/corpus/{src.name}"
                cli(ceph_cluster, "cp", src, uri)
                out[uri] = corpus / f"{case}.arrow"
    d = cache_dir() / "tpch-sf0.1"
    d.mkdir(parents=True, exist_ok=True)
    lineitem = d / "tpch_lineitem.default.vortex"
    if not lineitem.exists() or not (d / "tpch_lineitem.arrow").exists():
        tables = corpus_mod.tpch_tables(d)
        corpus_mod.write_case(d, "tpch_lineitem", tables["tpch_lineitem"],
                              {"default": corpus_mod.WRITERS["default"]})
    uri = f"rados://{pool}/tpch/lineitem.vortex"
    cli(ceph_cluster, "cp", lineitem, uri)
    out[uri] = d / "tpch_lineitem.arrow"
    return out


def test_cp_both_ways_and_ls(ceph_cluster, pool, loaded, tmp_path):
    for uri in list(loaded)[:3]:
        name = uri.rsplit("/", 1)[1]
        back = tmp_path / name
        cli(ceph_cluster, "cp", uri, back)
        case = name.split(".")[0]
        original = next(p for p in Path(loaded[uri]).parent.glob(f"{case}.*.vortex") if p.name == name)
        assert back.read_bytes() == original.read_bytes(), f"{uri} came back different"
    listing = cli(ceph_cluster, "ls", f"rados://{pool}/corpus/").stdout.decode().splitlines()
    names = {line.split(" ", 1)[1]: int(line.split(" ", 1)[0]) for line in listing}
    corpus_objects = {u.split(f"rados://{pool}/", 1)[1] for u in loaded if "/corpus/" in u}
    assert set(names) == corpus_objects
    lineitem = f"rados://{pool}/tpch/lineitem.vortex"
    shown = cli(ceph_cluster, "inspect", lineitem).stdout.decode()
    assert "rows:    600572" in shown and "l_orderkey" in shown, shown[:400]
    missing = cli(ceph_cluster, "cp", f"rados://{pool}/no/such.vortex", tmp_path / "x", check=False)
    assert missing.returncode == 1 and b"not_found" in missing.stderr
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("mode", ["on", "off"])
def test_scans_equal_pyarrow(ceph_cluster, loaded, mode):
    """Every scan in the OSDs (on) or client-side (off), the same seeds, each equal to pyarrow.
    Small pushdown calls (64k rows) so lineitem's 600k rows take several calls in flight."""
    args = [sys.executable, str(HERE / "rados_scan_check.py"), "7", str(FILTERS)]
    for uri, arrow in loaded.items():
        args += [uri, str(arrow)]
    e = env_of(ceph_cluster, rados_pushdown=mode, rados_pushdown_rows=65536)
    r = subprocess.run(args, env=e, capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, f"{mode}:\n{r.stdout}\n{r.stderr[-4000:]}"
    assert r.stdout.count("scans equal pyarrow") == len(loaded), r.stdout


def explain(ceph_cluster, uri, mode, *args):
    r = cli(ceph_cluster, "scan", uri, *args, "--explain", knobs={"rados_pushdown": mode})
    return dict(line.split(": ", 1) for line in r.stdout.decode().splitlines() if ": " in line)


def test_pushdown_moves_a_fraction_of_the_bytes(ceph_cluster, pool, loaded):
    uri = f"rados://{pool}/tpch/lineitem.vortex"
    q = ["--columns", "l_orderkey,l_extendedprice", "--filter", "l_suppkey < 20"]
    pushed, local = explain(ceph_cluster, uri, "on", *q), explain(ceph_cluster, uri, "off", *q)
    assert pushed["rows delivered"] == local["rows delivered"] and int(local["rows delivered"]) > 0
    assert int(pushed["pushdown calls"]) > 0 and int(local["pushdown calls"]) == 0
    pushed_bytes, local_bytes = int(pushed["bytes read"]), int(local["bytes read"])
    # ~2% of the rows (l_suppkey is not sorted: zone maps prune nothing), 2 of 16 columns: the
    # IPC answer is far smaller than the segments read.
    assert pushed_bytes * 10 < local_bytes, (pushed_bytes, local_bytes)


def test_bad_objects_give_clear_errors_and_the_osds_stay_up(ceph_cluster, pool, loaded, tmp_path):
    junk = tmp_path / "junk.vortex"
    junk.write_bytes(b"this is not a vortex file" * 1000)
    cli(ceph_cluster, "cp", junk, f"rados://{pool}/bad/junk.vortex")
    lineitem = Path(loaded[f"rados://{pool}/tpch/lineitem.vortex"]).with_name("tpch_lineitem.default.vortex")
    cut = tmp_path / "cut.vortex"
    cut.write_bytes(lineitem.read_bytes()[: lineitem.stat().st_size // 2])
    cli(ceph_cluster, "cp", cut, f"rados://{pool}/bad/cut.vortex")
    for name in ("junk", "cut"):
        r = cli(ceph_cluster, "scan", f"rados://{pool}/bad/{name}.vortex", "--filter", "x > 1",
                knobs={"rados_pushdown": "on"}, check=False)
        assert r.returncode == 1 and b"corrupt" in r.stderr, r.stderr
    assert osds_up(ceph_cluster) == [0, 1, 2]


def test_hostile_requests_are_refused_and_the_osds_stay_up(ceph_cluster, pool, loaded):
    import rados
    c = connect(ceph_cluster)
    try:
        with c.open_ioctx(pool) as io:
            oid = "tpch/lineitem.vortex"
            hostile = [b"", b"\x00", b"\xff" * 64, os.urandom(4096), b"\x10\x00\x00\x00" * 200,
                       os.urandom(2 << 20)]
            for req in hostile:
                with pytest.raises(rados.Error) as e:
                    io.execute(oid, "onecopy", "scan", req)
                assert e.value.errno in (errno.EINVAL, errno.E2BIG), (req[:16], e.value)
            # What the client's fallback keys on: an OSD without the class or the method
            # answers EOPNOTSUPP (client/rados_pushdown.cpp, means_no_class).
            for cls, method in (("onecopy", "no_such_method"), ("no_such_class", "scan")):
                with pytest.raises(rados.Error) as e:
                    io.execute(oid, cls, method, b"")
                assert e.value.errno == errno.EOPNOTSUPP, (cls, method, e.value)
            # The class keeps answering a valid request afterwards (through the CLI).
            r = cli(ceph_cluster, "scan", f"rados://{pool}/{oid}", "--filter", "l_orderkey < 12000",
                    "--columns", "l_orderkey", "--explain", knobs={"rados_pushdown": "on"})
            assert b"pushdown calls: 0" not in r.stdout and b"rows delivered: " in r.stdout
    finally:
        c.shutdown()
    assert osds_up(ceph_cluster) == [0, 1, 2]


def primary_of(cluster, pool, name) -> int:
    c = connect(cluster)
    try:
        ret, out, err = c.mon_command(json.dumps({"prefix": "osd map", "pool": pool, "object": name,
                                                  "format": "json"}), b"", timeout=10)
        assert ret == 0, err
        return json.loads(out)["acting_primary"]
    finally:
        c.shutdown()


def test_an_osd_restarted_mid_scan(ceph_cluster, pool, loaded, tmp_path):
    """One call at a time, 1,024 rows each (~590 calls over lineitem), so the scan is still
    running when the OSD holding the object restarts; it must end with exactly the rows of the
    client-side scan, or fail with a clear error."""
    uri = f"rados://{pool}/tpch/lineitem.vortex"
    q = ["--columns", "l_orderkey,l_linenumber", "--filter", "l_suppkey < 500", "--format", "arrow"]
    expected = pa.ipc.open_stream(cli(ceph_cluster, "scan", uri, *q,
                                      knobs={"rados_pushdown": "off"}).stdout).read_all()
    target = primary_of(ceph_cluster, pool, "tpch/lineitem.vortex")
    out = tmp_path / "scan.arrow"
    with open(out, "wb") as sink:
        p = subprocess.Popen([str(CLI), "scan", uri, *q], stdout=sink, stderr=subprocess.PIPE,
                             env=env_of(ceph_cluster, rados_pushdown="on", rados_pushdown_rows=1024,
                                        rados_ops_in_flight=1))
        deadline = time.time() + 30
        while out.stat().st_size == 0 and p.poll() is None and time.time() < deadline:
            time.sleep(0.01)
        assert p.poll() is None, "the scan ended before the OSD restarted: make it longer"
        osd(ceph_cluster, "restart-osd", target)
        _, err = p.communicate(timeout=600)
    if p.returncode == 0:
        got = pa.ipc.open_stream(out.read_bytes()).read_all()
        assert got.num_rows == expected.num_rows and got.equals(expected), \
            "rows missing or repeated after the OSD restart"
    else:
        assert p.returncode == 1 and (b"timeout" in err or b"io:" in err), err
    assert osds_up(ceph_cluster) == [0, 1, 2]


def test_the_daemon_serves_a_rados_dataset_to_torch(ceph_cluster, pool, tmp_path):
    """onecopyd reads RADOS with its own Ceph identity (the trainer holds no keyring) under
    daemon_rados_grants; the samples equal an in-process read of the same local files."""
    import numpy as np
    import vortex as vx
    import onecopy
    import onecopy.torch as oct
    sys.path.insert(0, str(ROOT / "tests" / "daemon"))
    from test_daemon import Daemon

    rng = np.random.default_rng(5)
    local, remote, first = [], [], 0
    for i, n in enumerate((3000, 2000)):
        path = tmp_path / f"p{i}.vortex"
        vx.io.write(pa.table({"id": pa.array(np.arange(first, first + n, dtype=np.int64)),
                              "quality": pa.array(rng.random(n))}), str(path))
        cli(ceph_cluster, "cp", path, f"rados://{pool}/torch/")
        local.append(str(path))
        remote.append(f"rados://{pool}/torch/{path.name}")
        first += n
    d = Daemon(tmp_path, config=f'daemon_rados_grants = ["*: rados://{pool}/torch/"]\n',
               env={"CEPH_CONF": ceph_cluster["CEPH_CONF"]})
    try:
        kw = dict(batch_rows=64, unit_rows=500, shuffle_units=2, seed=3, filter="quality > 0.5")
        served = oct.Dataset(remote, socket=d.sock, **kw)
        here = oct.Dataset(local, socket=False, **kw)
        got = [b["id"].tolist() for b in oct.DataLoader(served, num_workers=0, batch_size=None)]
        exp = [b["id"].tolist() for b in oct.DataLoader(here, num_workers=0, batch_size=None)]
        assert got == exp and sum(map(len, got)) > 1000
        assert d.client.list(f"rados://{pool}/torch/") == remote
        with pytest.raises(onecopy.OnecopyError) as e:
            d.client.units(f"rados://{pool}/corpus/one_row.default.vortex", 100)
        assert e.value.code == "denied" and "daemon_rados_grants" in str(e.value)
        assert d.client.status()["errors"] >= 1
    finally:
        d.stop()
