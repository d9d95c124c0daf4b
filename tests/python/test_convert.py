# SPDX-License-Identifier: Apache-2.0
"""onecopy convert: Parquet, JSONL and WebDataset shards (written by pyarrow and by the real
webdataset package) to Vortex files that equal the source row for row, read back by onecopy and
by vortex-data; an interrupted convert resumes to the same files; bad inputs are clear errors."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import vortex as vx

import onecopy
from onecopy import convert

ROOT = Path(__file__).resolve().parents[2]
CLI = Path(os.environ.get("ONECOPY_BUILD_DIR", ROOT / "build")) / "client" / "onecopy"


def _source(n=3000, seed=2) -> pa.Table:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 30, n)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "text": pa.array([f"doc {i} " * int(rng.integers(1, 5)) for i in range(n)]),
        "score": pa.array(rng.random(n)),
        "tokens": pa.ListArray.from_arrays(pa.array(offsets), pa.array(rng.integers(0, 50_000, offsets[-1],
                                                                                  dtype=np.int32))),
    })


def _read_back(out: Path) -> tuple[pa.Table, pa.Table]:
    """Every converted file in name order, concatenated: by onecopy and by vortex-data."""
    files = sorted(str(p) for p in out.glob("*.vortex"))
    assert files and not list(out.glob("*.tmp"))
    ours = pa.concat_tables([pa.table(onecopy.open(f).scan()) for f in files])
    theirs = pa.concat_tables([vx.open(f).to_arrow().read_all() for f in files])
    return ours, theirs


def _same(a: pa.Table, b: pa.Table) -> None:
    assert a.num_rows == b.num_rows
    assert a.column_names == b.column_names
    for name in a.column_names:
        assert a[name].to_pylist() == b[name].to_pylist(), name


def test_parquet_in_parts_equals_the_source(tmp_path):
    src = _source()
    pq.write_table(src.slice(0, 1800), tmp_path / "a.parquet", row_group_size=500)
    pq.write_table(src.slice(1800), tmp_path / "b.parquet", row_group_size=500)
    out = tmp_path / "out"
    m = convert.convert([str(tmp_path / "*.parquet")], str(out), rows_per_file=700, batch_rows=128, progress=False)
    assert sorted(m["parts"]) == [f"00000-a-{k:05d}.vortex" for k in range(3)] + \
        [f"00001-b-{k:05d}.vortex" for k in range(2)]
    assert [m["parts"][k]["rows"] for k in sorted(m["parts"])] == [700, 700, 400, 700, 500]
    ours, theirs = _read_back(out)
    _same(ours, src)
    _same(theirs, src)
    assert ours.schema.field("tokens").type == pa.list_(pa.int32())


def test_jsonl_equals_the_source(tmp_path):
    src = _source(1200).drop_columns(["tokens"])
    with open(tmp_path / "docs.jsonl", "w") as f:
        for row in src.to_pylist():
            f.write(json.dumps(row) + "\n")
    (tmp_path / "index.json").write_text("{}")  # metadata beside it, not JSONL
    out = tmp_path / "out"
    convert.convert([str(tmp_path)], str(out), rows_per_file=500, batch_rows=100, progress=False)
    ours, theirs = _read_back(out)
    _same(ours, src)
    _same(theirs, src)


def test_webdataset_shards_become_rows_with_token_lists(tmp_path):
    import webdataset as wds

    src = _source(600)
    tokens = src["tokens"].to_pylist()
    for shard in range(2):
        with wds.TarWriter(str(tmp_path / f"shard-{shard:04d}.tar")) as sink:
            for i in range(shard * 300, shard * 300 + 300):
                sink.write({"__key__": f"s{i:06d}", "txt": src["text"][i].as_py(), "cls": i % 7,
                            "npy": np.asarray(tokens[i], dtype=np.int32)})
    out = tmp_path / "out"
    convert.convert([str(tmp_path / "*.tar")], str(out), rows_per_file=250, batch_rows=64, progress=False)
    ours, theirs = _read_back(out)
    # What webdataset itself reads from the shards, in order.
    seen = list(wds.WebDataset(str(tmp_path / "shard-{0000..0001}.tar"), shardshuffle=False).decode())
    assert ours["__key__"].to_pylist() == [s["__key__"] for s in seen] == [f"s{i:06d}" for i in range(600)]
    assert ours["txt"].to_pylist() == src["text"].to_pylist()
    assert ours["cls"].to_pylist() == [i % 7 for i in range(600)]
    assert ours.schema.field("npy").type == pa.list_(pa.int32())
    assert ours["npy"].to_pylist() == tokens == [s["npy"].tolist() for s in seen]
    _same(theirs, ours)


def test_an_interrupted_convert_resumes_without_duplicates(tmp_path):
    src = _source(20_000)
    pq.write_table(src, tmp_path / "big.parquet", row_group_size=1000)
    out = tmp_path / "out"
    args = [sys.executable, "-m", "onecopy.convert", str(tmp_path / "big.parquet"), "--to", str(out),
            "--rows-per-file", "1000", "--batch-rows", "250", "--no-progress"]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while time.time() < deadline:  # interrupted once a few parts are done, mid-way
        if (out / convert.MANIFEST).exists() and len(json.loads((out / convert.MANIFEST).read_text())["parts"]) >= 3:
            break
        time.sleep(0.01)
    p.send_signal(signal.SIGKILL)
    p.wait()
    done = json.loads((out / convert.MANIFEST).read_text())["parts"]
    assert 3 <= len(done) < 20, "the convert was not interrupted mid-way"
    before = {name: (out / name).stat().st_mtime_ns for name in done}
    r = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"20 files, 20000 rows in {out}"
    assert all((out / name).stat().st_mtime_ns == t for name, t in before.items()), "finished parts rewritten"
    ours, theirs = _read_back(out)
    _same(ours, src)
    _same(theirs, src)


def test_the_cli_runs_convert(tmp_path):
    src = _source(300)
    pq.write_table(src, tmp_path / "t.parquet")
    env = dict(os.environ, ONECOPY_PYTHON=sys.executable)
    r = subprocess.run([str(CLI), "convert", str(tmp_path / "t.parquet"), "--to", str(tmp_path / "out"),
                        "--no-progress"], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    _same(_read_back(tmp_path / "out")[0], src)
    env["ONECOPY_PYTHON"] = str(tmp_path / "no-such-python")
    r = subprocess.run([str(CLI), "convert", "x", "--to", "y"], capture_output=True, text=True, env=env)
    assert r.returncode == 1 and "ONECOPY_PYTHON" in r.stderr


def test_bad_inputs_are_clear_errors(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ValueError, match="unknown format"):
        convert.convert([str(tmp_path / "notes.txt")], str(tmp_path / "o"), progress=False)
    with pytest.raises(ValueError, match="no such file"):
        convert.convert([str(tmp_path / "missing.parquet")], str(tmp_path / "o"), progress=False)
    import webdataset as wds

    with wds.TarWriter(str(tmp_path / "odd.tar")) as sink:
        sink.write({"__key__": "a", "txt": "one"})
        sink.write({"__key__": "b", "txt": "two", "cls": 3})
    with pytest.raises(ValueError, match="the first sample lacks"):
        convert.convert([str(tmp_path / "odd.tar")], str(tmp_path / "o"), progress=False)
    r = subprocess.run([sys.executable, "-m", "onecopy.convert", str(tmp_path / "notes.txt"), "--to",
                        str(tmp_path / "o")], capture_output=True, text=True)
    assert r.returncode == 1 and r.stderr.startswith("onecopy convert: ")
