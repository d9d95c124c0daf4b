# SPDX-License-Identifier: Apache-2.0
"""`onecopy scan --filter/--explain` and `onecopy take` from the command line."""

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import vortex as vx

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("ONECOPY_BUILD_DIR", ROOT / "build"))
ONECOPY = BUILD / "client" / "onecopy"
N = 50_000

pytestmark = pytest.mark.skipif(not ONECOPY.exists(), reason=f"{ONECOPY} is not built")

EXPLAIN_KEYS = ["rows scanned", "rows delivered", "rows pruned", "zones total", "zones pruned",
                "file pruned", "batches", "segments read", "bytes read", "pushdown calls", "file size",
                "bytes read %",
                "plan ms", "fetch ms", "filter ms", "decode ms"]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> tuple[Path, pa.Table]:
    table = pa.table({
        "id": pa.array(np.arange(N, dtype=np.int64)),
        "tag": pa.array([f"t{i % 13}" for i in range(N)]),
    })
    path = tmp_path_factory.mktemp("cli") / "f.vortex"
    vx.io.write(table, str(path))
    return path, table


def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(ONECOPY), *map(str, args)], capture_output=True, text=True, timeout=120)


def explain(path, *args) -> dict:
    out = cli("scan", path, "--explain", *args)
    assert out.returncode == 0, out.stderr
    return dict(line.split(": ", 1) for line in out.stdout.splitlines())


def test_scan_filter_prints_matching_rows(data):
    path, _ = data
    out = cli("scan", path, "--columns", "id", "--filter", "id < 4 OR id = 49999")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["id", "0", "1", "2", "3", "49999"]


def test_scan_filter_jsonl(data):
    path, table = data
    out = cli("scan", path, "--filter", "tag = 't7' AND id < 100", "--format", "jsonl")
    assert out.returncode == 0, out.stderr
    want = table.filter(pc.and_(pc.equal(table["tag"], "t7"), pc.less(table["id"], 100))).to_pylist()
    assert [json.loads(line) for line in out.stdout.splitlines()] == want


def test_scan_filter_matching_nothing_prints_the_header(data):
    path, _ = data
    out = cli("scan", path, "--columns", "id,tag", "--filter", "id < 0")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["id,tag"]


def test_explain_reports_every_key_and_no_rows(data):
    path, table = data
    rep = explain(path, "--filter", "tag = 't3'")
    assert list(rep) == EXPLAIN_KEYS
    assert int(rep["rows delivered"]) == pc.sum(pc.equal(table["tag"], "t3")).as_py()
    assert int(rep["rows scanned"]) == N
    assert rep["file pruned"] in ("yes", "no")
    assert int(rep["file size"]) == path.stat().st_size
    # Segments inside the tail that opening the file read cost no read: a small file reads 0.
    assert 0 <= int(rep["bytes read"]) <= path.stat().st_size
    assert float(rep["bytes read %"]) == pytest.approx(100 * int(rep["bytes read"]) / path.stat().st_size, abs=0.01)
    for stage in ("plan ms", "fetch ms", "filter ms", "decode ms"):
        assert float(rep[stage]) >= 0


def test_explain_counts_are_consistent(data):
    path, _ = data
    narrow = explain(path, "--filter", "id < 10")
    assert int(narrow["rows delivered"]) == 10
    assert int(narrow["zones pruned"]) <= int(narrow["zones total"])
    assert int(narrow["rows pruned"]) <= int(narrow["rows scanned"]) == N
    whole = explain(path)
    assert int(whole["rows delivered"]) == N and int(whole["rows pruned"]) == 0
    assert whole["file pruned"] == "no" and int(whole["zones total"]) == 0  # no filter, no zones
    assert int(explain(path, "--filter", "id > 1000000")["rows delivered"]) == 0
    limited = explain(path, "--limit", "5", "--batch-rows", "1000")
    assert int(limited["rows delivered"]) <= 1000


def test_take_prints_rows_in_the_order_given(data):
    path, _ = data
    out = cli("take", path, "17,5,17,49999", "--columns", "id,tag")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["id,tag", "17,t4", "5,t5", "17,t4", "49999,t1"]
    out = cli("take", path, "3", "--format", "jsonl")
    assert out.returncode == 0, out.stderr
    assert [json.loads(line) for line in out.stdout.splitlines()] == [{"id": 3, "tag": "t3"}]


@pytest.mark.parametrize("args", [
    ["take"],
    ["take", "{path}"],
    ["take", "{path}", "1,x"],
    ["take", "{path}", "1,,2"],
    ["take", "{path}", "-1"],
    ["take", "{path}", "1", "--format", "xml"],
    ["take", "{path}", "1", "--bogus", "v"],
    ["take", "{path}", "1", "--columns"],
    ["scan", "{path}", "--filter"],
    ["scan", "{path}", "--filter", ""],
])
def test_bad_usage_exits_2(data, args):
    path, _ = data
    out = cli(*[a.format(path=path) for a in args])
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "usage:" in out.stderr


def test_errors_exit_1_with_the_message(data):
    path, _ = data
    bad = cli("scan", path, "--filter", "id < < 3")
    assert bad.returncode == 1 and "^" in bad.stderr
    unknown = cli("scan", path, "--explain", "--filter", "nope = 1")
    assert unknown.returncode == 1 and "nope" in unknown.stderr
    past = cli("take", path, f"0,{N}")
    assert past.returncode == 1 and bad.stdout == ""
