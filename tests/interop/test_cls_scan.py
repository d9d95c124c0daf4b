# SPDX-License-Identifier: Apache-2.0
"""libcls_onecopy.so inside a real ceph-osd: the object class `onecopy` and its method `scan`
(format/pushdown.hpp), called through librados' Python binding with no onecopy client code.

A private cluster of its own (tests/servers/ceph.sh: 1 memstore OSD, no radosgw, the build's
class library copied into the OSD's class dir) keeps these checks independent of the 3-OSD
`ceph_cluster` of test_rados.py. Requests are written from JSON by `flatc -b` against
format/fbs/pushdown.fbs, so the schema file itself is what the test speaks.

- the class loads and answers: scans of seed files and an interop corpus file, with and without
  projections, filters, row ranges and string views, equal the client-side `onecopy scan
  --format arrow` of the same file (or the corpus's pyarrow ground truth);
- every error of the contract comes back as its errno (a non-Vortex object -EBADMSG, a
  truncated file -EBADMSG, a stale size -ESTALE, garbage -EINVAL, a newer version -EPROTO, a
  small cap -EFBIG), and the OSD stays up and keeps answering after each;
- the library exports `__cls_init` alone;
- the OSD's ONECOPY_* environment sets the class's knobs, and a bad variable is logged and
  ignored (the class still loads, with the built-in knobs).
"""
import errno
import json
import math
import os
import random
import shutil
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.compute
import pyarrow.ipc
import pytest

from ceph_cluster import CLS_LIB, start_ceph, stop_ceph
from test_filter_take import read_arrow

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
BUILD = Path(os.environ.get("ONECOPY_BUILD_DIR", ROOT / "build"))
CLI = BUILD / "client" / "onecopy"
SCHEMA = ROOT / "format" / "fbs" / "pushdown.fbs"
SEEDS = ROOT / "tests" / "fuzz" / "seeds" / "open_scan"
RESULT_BYTES = 64 << 20  # the class's default cap; librados needs room for the answer


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if shutil.which("flatc") is None:
        pytest.fail("flatc is not installed (it builds onecopy: scripts/bootstrap.sh)")
    if not CLS_LIB.is_file():
        pytest.fail(f"{CLS_LIB} is not built (ninja -C {BUILD} format/cls/libcls_onecopy.so)")
    state = tmp_path_factory.mktemp("ceph-cls")
    env = start_ceph(state, osds=1, rgw=False, class_libs=[CLS_LIB])
    yield env
    stop_ceph(state)


def open_ioctx(cluster):
    import rados
    c = rados.Rados(conffile=cluster["CEPH_CONF"], conf={"keyring": cluster["CEPH_KEYRING"]})
    c.connect(timeout=10)
    return c, c.open_ioctx(cluster["ONECOPY_TEST_RADOS_POOL"])


@pytest.fixture(scope="module")
def ioctx(cluster):
    c, io = open_ioctx(cluster)
    yield io
    io.close()
    c.shutdown()


def request(tmp_path: Path, **fields) -> bytes:
    """A ScanRequest of @p fields (version 1 unless given), encoded by flatc from JSON."""
    fields.setdefault("version", 1)
    (tmp_path / "req.json").write_text(json.dumps(fields))
    subprocess.run(["flatc", "-b", "-o", str(tmp_path), str(SCHEMA), str(tmp_path / "req.json")],
                   check=True, capture_output=True)
    return (tmp_path / "req.bin").read_bytes()


def scan(io, oid: str, req: bytes) -> pa.Table:
    ret, out = io.execute(oid, "onecopy", "scan", req, length=RESULT_BYTES)
    assert ret >= 0
    table = pa.ipc.open_stream(out).read_all()
    for batch in table.to_batches():
        batch.validate(full=True)  # what any Arrow consumer may rely on, checked in full
    return table


def scan_errno(io, oid: str, req: bytes) -> int:
    import rados
    with pytest.raises(rados.Error) as e:
        io.execute(oid, "onecopy", "scan", req, length=RESULT_BYTES)
    return e.value.errno


def client_side(path: Path, *args: str) -> pa.Table:
    r = subprocess.run([str(CLI), "scan", str(path), "--format", "arrow", *args],
                       capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr.decode()
    return pa.ipc.open_stream(r.stdout).read_all()


def values(column: pa.ChunkedArray) -> list:
    """The column's values, NaN as a string (NaN equals nothing, itself included)."""
    return ["NaN" if isinstance(v, float) and math.isnan(v) else v for v in column.to_pylist()]


def assert_same(got: pa.Table, want: pa.Table) -> None:
    """Field by field, so that a failure names the column."""
    assert got.schema == want.schema
    for name in want.column_names:
        assert values(got.column(name)) == values(want.column(name)), name


def osd_up(cluster) -> bool:
    r = subprocess.run(["ceph", "-c", cluster["CEPH_CONF"], "--connect-timeout", "10", "osd",
                        "dump", "--format", "json"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return [o["up"] for o in json.loads(r.stdout)["osds"]] == [1]


def put(io, oid: str, data: bytes) -> int:
    io.write_full(oid, data)
    return len(data)


def test_the_class_library_exports_cls_init_alone():
    """Everything linked into the class stays ours (cls_onecopy.map): an exported symbol could
    interpose on the OSD's own, or the OSD's on ours."""
    if not CLS_LIB.is_file():
        pytest.fail(f"{CLS_LIB} is not built (ninja -C {BUILD} format/cls/libcls_onecopy.so)")
    out = subprocess.run(["nm", "-D", "--defined-only", str(CLS_LIB)], capture_output=True,
                         text=True, check=True).stdout
    assert [line.split()[-1] for line in out.splitlines()] == ["__cls_init"]
    undefined = subprocess.run(["nm", "-D", "--undefined-only", str(CLS_LIB)],
                               capture_output=True, text=True, check=True).stdout.split()
    for f in ["cls_register", "cls_register_method", "cls_read", "cls_alloc", "cls_free",
              "cls_log"]:
        assert f in undefined  # resolved from ceph-osd at load


@pytest.mark.parametrize("seed", ["zoned.vortex", "mixed.vortex", "compact_strings.vortex"])
def test_the_class_scans_seed_files_as_the_client_does(ioctx, tmp_path, seed):
    path = SEEDS / seed
    size = put(ioctx, seed, path.read_bytes())
    whole = scan(ioctx, seed, request(tmp_path, file_size=size))
    assert whole.num_rows > 0
    assert_same(whole, client_side(path))
    views = scan(ioctx, seed, request(tmp_path, file_size=size, string_views=True))
    assert views.num_rows == whole.num_rows
    for name in whole.column_names:
        assert values(views.column(name)) == values(whole.column(name)), name
    # zstd bodies (compression 1): pyarrow reads the same table, from fewer bytes.
    zstd = request(tmp_path, file_size=size, compression=1)
    assert_same(scan(ioctx, seed, zstd), whole)
    plain_bytes = ioctx.execute(seed, "onecopy", "scan", request(tmp_path, file_size=size),
                                length=RESULT_BYTES)[1]
    zstd_bytes = ioctx.execute(seed, "onecopy", "scan", zstd, length=RESULT_BYTES)[1]
    assert len(zstd_bytes) < len(plain_bytes)
    if seed == "zoned.vortex":
        some = scan(ioctx, seed, request(tmp_path, file_size=size, columns=["name", "id"],
                                         filter="id >= 1000 AND id < 1100"))
        assert some.column_names == ["name", "id"]
        assert some.column("id").to_pylist() == list(range(1000, 1100))
        assert_same(some, client_side(path, "--columns", "name,id", "--filter",
                                      "id >= 1000 AND id < 1100"))
        rows = scan(ioctx, seed, request(tmp_path, file_size=size, columns=["id"], row_begin=49990,
                                         row_end=50000))
        assert rows.column("id").to_pylist() == list(range(49990, 50000))
        none = scan(ioctx, seed, request(tmp_path, file_size=size, filter="id < 0"))
        assert none.num_rows == 0 and none.schema == whole.schema


def test_the_class_scans_a_corpus_file_as_pyarrow_reads_it(ioctx, tmp_path, corpus):
    path = corpus / "string_some_nulls.default.vortex"
    size = put(ioctx, "corpus-strings", path.read_bytes())
    got = scan(ioctx, "corpus-strings", request(tmp_path, file_size=size))
    truth = read_arrow(corpus / "string_some_nulls.arrow")
    assert got.num_rows == truth.num_rows > 0
    assert got.to_pylist() == truth.to_pylist()


def test_the_class_scans_a_file_of_many_chunks(ioctx, tmp_path, corpus):
    """3,000,000 rows in many chunks: the reader fetches ahead on a thread of its own, whose
    reads the class refuses (cls_read belongs to the op thread), and reads them itself."""
    path = corpus / "multi_million.default.vortex"
    size = put(ioctx, "multi-million", path.read_bytes())
    truth = read_arrow(corpus / "multi_million.arrow")
    rows = scan(ioctx, "multi-million", request(tmp_path, file_size=size, columns=["id"],
                                                row_begin=1_000_000, row_end=2_500_000))
    assert values(rows.column("id")) == values(truth.column("id").slice(1_000_000, 1_500_000))
    some = scan(ioctx, "multi-million", request(tmp_path, file_size=size,
                                                columns=["label", "value"], filter="bucket = 3"))
    want = truth.filter(pa.compute.equal(truth.column("bucket"), 3)).select(["label", "value"])
    assert 0 < some.num_rows < truth.num_rows
    for name in ["label", "value"]:
        assert values(some.column(name)) == values(want.column(name)), name


def test_errors_come_back_as_their_errno_and_the_osd_stays_up(cluster, ioctx, tmp_path):
    zoned = (SEEDS / "zoned.vortex").read_bytes()
    size = put(ioctx, "zoned-err", zoned)
    ok = request(tmp_path, file_size=size, columns=["id"], filter="id < 3")

    cases = [
        ("not a Vortex file", "not-vortex", b"v" * 5000, {"file_size": 5000}, errno.EBADMSG),
        ("truncated", "half", zoned[: len(zoned) // 2], {"file_size": len(zoned) // 2},
         errno.EBADMSG),
        ("stale size", "zoned-err", None, {"file_size": size - 1}, errno.ESTALE),
        ("unknown column", "zoned-err", None, {"file_size": size, "columns": ["nope"]},
         errno.EINVAL),
        ("bad filter", "zoned-err", None, {"file_size": size, "filter": "id >>> 1"}, errno.EINVAL),
        ("newer version", "zoned-err", None, {"file_size": size, "version": 2}, errno.EPROTO),
        ("unknown compression", "zoned-err", None, {"file_size": size, "compression": 2},
         errno.EINVAL),
        ("result cap", "zoned-err", None, {"file_size": size, "max_result_bytes": 1000},
         errno.EFBIG),
    ]
    for what, oid, data, fields, want in cases:
        if data is not None:
            put(ioctx, oid, data)
        assert scan_errno(ioctx, oid, request(tmp_path, **fields)) == want, what
        assert scan(ioctx, "zoned-err", ok).column("id").to_pylist() == [0, 1, 2], what
    assert scan_errno(ioctx, "zoned-err", b"\x00garbage") == errno.EINVAL
    assert scan_errno(ioctx, "zoned-err", random.Random(20).randbytes(4096)) == errno.EINVAL
    # what the OSD answers itself, before the class runs
    assert scan_errno(ioctx, "no-such-object", ok) == errno.ENOENT
    import rados
    with pytest.raises(rados.Error) as e:
        ioctx.execute("zoned-err", "onecopy", "no_such_method", ok)
    assert e.value.errno == errno.EOPNOTSUPP
    assert osd_up(cluster)
    assert scan(ioctx, "zoned-err", ok).num_rows == 3


@pytest.mark.parametrize("bad", [False, True])
def test_the_osd_environment_sets_the_knobs_and_a_bad_one_is_ignored(tmp_path_factory, tmp_path,
                                                                      bad):
    """A 64 KiB cls_max_result_bytes from the OSD's environment refuses a whole scan of
    zoned.vortex (about 5 MB of Arrow) with -EFBIG; with a bad variable beside it the whole
    environment is ignored, logged at level 0, and the built-in 64 MiB cap answers."""
    knobs = {"ONECOPY_CLS_MAX_RESULT_BYTES": "64KiB"}
    if bad:
        knobs["ONECOPY_IO_QUEUE_DEPTH"] = "banana"
    state = tmp_path_factory.mktemp("ceph-cls-env")
    saved = {k: os.environ.get(k) for k in knobs}
    os.environ.update(knobs)  # ceph.sh's daemons inherit it
    try:
        env = start_ceph(state, osds=1, rgw=False, class_libs=[CLS_LIB])
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k)
            else:
                os.environ[k] = v
    try:
        c, io = open_ioctx(env)
        try:
            zoned = (SEEDS / "zoned.vortex").read_bytes()
            size = put(io, "zoned", zoned)
            small = request(tmp_path, file_size=size, columns=["id"], filter="id < 3")
            assert scan(io, "zoned", small).column("id").to_pylist() == [0, 1, 2]
            whole = request(tmp_path, file_size=size)
            if bad:
                assert scan(io, "zoned", whole).num_rows == 50000
            else:
                assert scan_errno(io, "zoned", whole) == errno.EFBIG
        finally:
            io.close()
            c.shutdown()
        log = (state / "log" / "osd.0.log").read_text(errors="replace")
        assert ("ignoring the ONECOPY_* environment" in log) == bad
        assert ("ONECOPY_IO_QUEUE_DEPTH" in log) == bad
    finally:
        stop_ceph(state)
