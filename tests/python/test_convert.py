# SPDX-License-Identifier: Apache-2.0
"""onecopy convert: Parquet, JSONL, WebDataset and MDS shards (written by pyarrow, by the real
webdataset package and by MosaicML Streaming's MDSWriter) to Vortex files that equal the source
row for row, read back by onecopy and by vortex-data; the same from and to S3 (moto's server,
tests/servers/moto.sh); an interrupted convert resumes to the same files, locally and in S3;
the next input is read while this one is written, and each part is byte for byte the file
vortex-data writes of its rows; bad inputs are clear errors."""

import itertools
import json
import os
import pickle
import signal
import subprocess
import sys
import threading
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


def _write_wds(out: Path, src: pa.Table, shards: int) -> None:
    """@src's text, i % 7 and tokens as WebDataset shards written by webdataset's TarWriter."""
    import webdataset as wds

    tokens, per = src["tokens"].to_pylist(), src.num_rows // shards
    for shard in range(shards):
        with wds.TarWriter(str(out / f"shard-{shard:04d}.tar")) as sink:
            for i in range(shard * per, shard * per + per):
                sink.write({"__key__": f"s{i:06d}", "txt": src["text"][i].as_py(), "cls": i % 7,
                            "npy": np.asarray(tokens[i], dtype=np.int32)})


# One column of each kind of MDS encoding convert maps: numbers, text, json, arrays with a fixed
# and a per-sample dtype, and the opaque ones it keeps as bytes (a pickle is never unpickled).
MDS_COLUMNS = {"id": "int64", "text": "str", "score": "float64", "tokens": "ndarray:int32", "label": "int",
               "small": "uint8", "ratio": "str_float", "meta": "json", "dims": "ndarray", "blob": "bytes",
               "obj": "pkl"}


def _mds_samples(src: pa.Table) -> list[dict]:
    """@src's rows with a value for every MDS_COLUMNS column (MDS arrays may not be empty)."""
    return [{"id": row["id"], "text": row["text"], "score": row["score"],
             "tokens": np.asarray(row["tokens"] or [7], dtype=np.int32), "label": i % 5, "small": np.uint8(i % 200),
             "ratio": i / 8, "meta": {"i": i, "even": i % 2 == 0}, "dims": np.arange(i % 4 + 1, dtype=np.uint16),
             "blob": bytes([i % 256]) * (i % 3 + 1), "obj": {"i": i}}
            for i, row in enumerate(src.to_pylist())]


def _write_mds(out: Path, samples: list[dict], compression=None) -> None:
    from streaming import MDSWriter

    with MDSWriter(out=str(out), columns=MDS_COLUMNS, compression=compression, size_limit=1 << 15) as w:
        for s in samples:
            w.write(s)


def _same_as_mds(t: pa.Table, samples: list[dict]) -> None:
    """@t holds @samples (as MosaicML Streaming reads them back) in the types convert maps them to."""
    assert t.num_rows == len(samples)
    assert sorted(t.column_names) == sorted(MDS_COLUMNS)
    assert t.schema.field("tokens").type == pa.list_(pa.int32())
    assert t.schema.field("dims").type == pa.list_(pa.uint16())
    assert t.schema.field("small").type == pa.uint8()
    for name in ("id", "text", "score", "label", "small", "ratio", "blob"):
        assert t[name].to_pylist() == [s[name] for s in samples], name
    for name in ("tokens", "dims"):
        assert t[name].to_pylist() == [s[name].tolist() for s in samples], name
    assert [json.loads(m) for m in t["meta"].to_pylist()] == [s["meta"] for s in samples]
    assert [pickle.loads(b) for b in t["obj"].to_pylist()] == [s["obj"] for s in samples]


def _crashing(reader, batches: int):
    """@reader, failing after @batches batches in all, as a crash mid-convert would."""
    seen = itertools.count()

    def crashing(src, batch_rows):
        for b in reader(src, batch_rows):
            if next(seen) == batches:
                raise _Crash("interrupted")
            yield b

    return crashing


class _Crash(Exception):
    pass


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


def _reader_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "onecopy-convert-read"]


def test_the_next_input_is_read_while_this_one_is_written(tmp_path, monkeypatch):
    src = _source(300)
    pq.write_table(src.slice(0, 100), tmp_path / "a.parquet")
    pq.write_table(src.slice(100), tmp_path / "b.parquet")
    b_read = threading.Event()
    parquet, write = convert.READERS["parquet"], vx.io.write

    def reading(s, batch_rows):
        for batch in parquet(s, batch_rows):
            if s.path.endswith("b.parquet"):
                b_read.set()
            yield batch

    waited = []

    def writing(reader, path):
        if "00000-a-" in path:  # a.parquet's one part: b.parquet is read meanwhile, not after
            waited.append(b_read.wait(timeout=30))
        return write(reader, path)

    monkeypatch.setitem(convert.READERS, "parquet", reading)
    monkeypatch.setattr(vx.io, "write", writing)
    out = tmp_path / "out"
    m = convert.convert([str(tmp_path / "*.parquet")], str(out), batch_rows=1000, progress=False)
    assert waited == [True], "b.parquet was not read while a.parquet's part was being written"
    assert sorted(m["parts"]) == ["00000-a-00000.vortex", "00001-b-00000.vortex"]
    _same(_read_back(out)[0], src)
    assert not _reader_threads()


def test_each_part_is_the_file_vortex_data_writes_of_its_rows(tmp_path):
    """Read ahead in batches that straddle parts and inputs, every part is byte for byte the file
    vx.io.write makes of the same rows at once (its writer is deterministic)."""
    src = _source(3000)
    cuts = [0, 1800, 1900, 3000]
    for n, (lo, hi) in enumerate(zip(cuts, cuts[1:])):
        pq.write_table(src.slice(lo, hi - lo), tmp_path / f"{n}.parquet", row_group_size=300)
    out = tmp_path / "out"
    m = convert.convert([str(tmp_path)], str(out), rows_per_file=700, batch_rows=128, progress=False)
    assert sorted(m["parts"]) == [f"00000-0-{k:05d}.vortex" for k in range(3)] + ["00001-1-00000.vortex"] + \
        [f"00002-2-{k:05d}.vortex" for k in range(2)]
    for name, part in m["parts"].items():
        i = int(name[:5])
        vx.io.write(src.slice(cuts[i] + part["first_row"], part["rows"]), str(tmp_path / "expected.vortex"))
        assert (out / name).read_bytes() == (tmp_path / "expected.vortex").read_bytes(), name


def test_a_bad_input_among_good_ones_stops_the_convert_after_the_good_ones_before_it(tmp_path):
    src = _source(600)
    pq.write_table(src.slice(0, 300), tmp_path / "a.parquet")
    (tmp_path / "b.parquet").write_bytes(b"not parquet at all" * 100)
    pq.write_table(src.slice(300), tmp_path / "c.parquet")
    out = tmp_path / "out"
    with pytest.raises(pa.ArrowInvalid, match="Parquet magic bytes not found"):
        convert.convert([str(tmp_path)], str(out), rows_per_file=200, progress=False)
    done = json.loads((out / convert.MANIFEST).read_text())["parts"]
    assert sorted(done) == ["00000-a-00000.vortex", "00000-a-00001.vortex"]
    assert sorted(p.name for p in out.iterdir()) == sorted(done) + [convert.MANIFEST], "a part of b or c"
    _same(_read_back(out)[0], src.slice(0, 300))
    assert not _reader_threads()
    assert convert.main([str(tmp_path), "--to", str(out), "--no-progress"]) == 1


def test_a_failing_write_stops_the_reading_thread(tmp_path, monkeypatch):
    src = _source(2000)
    for n in range(4):
        pq.write_table(src.slice(n * 500, 500), tmp_path / f"{n}.parquet", row_group_size=100)

    def full(reader, path):
        raise OSError("No space left on device")

    monkeypatch.setattr(vx.io, "write", full)
    with pytest.raises(OSError, match="No space left"):
        convert.convert([str(tmp_path)], str(tmp_path / "out"), batch_rows=100, progress=False)
    assert not _reader_threads(), "the thread reading ahead outlived the convert"


def test_webdataset_shards_become_rows_with_token_lists(tmp_path):
    import webdataset as wds

    src = _source(600)
    tokens = src["tokens"].to_pylist()
    _write_wds(tmp_path, src, 2)
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


@pytest.mark.parametrize("compression", [None, "zstd"])
def test_mds_shards_become_rows_as_streaming_reads_them(tmp_path, compression):
    from streaming import LocalDataset

    samples = _mds_samples(_source(700))
    _write_mds(tmp_path / "oracle", samples)  # uncompressed, for streaming's own LocalDataset to read
    _write_mds(tmp_path / "data" / "train", samples, compression)
    (tmp_path / "data" / "notes.json").write_text("{}")
    out = tmp_path / "out"
    m = convert.convert([str(tmp_path / "data")], str(out), rows_per_file=150, batch_rows=40, progress=False)
    index = json.loads((tmp_path / "data" / "train" / "index.json").read_text())
    assert len(index["shards"]) >= 3 and all(s["compression"] == compression for s in index["shards"])
    zipped = ".mds" + (f".{compression}" if compression else "")
    inputs = sorted({p["input"] for p in m["parts"].values()})
    assert inputs == [str(tmp_path / "data" / "train" / f"shard.{i:05d}{zipped}") for i in range(len(index["shards"]))]
    assert sorted(m["parts"])[:2] == ["00000-shard.00000-00000.vortex", "00000-shard.00000-00001.vortex"]
    ours, theirs = _read_back(out)
    seen = LocalDataset(str(tmp_path / "oracle"))
    oracle = [seen[i] for i in range(len(seen))]
    assert [s["id"] for s in oracle] == list(range(700))
    _same_as_mds(ours, oracle)
    _same_as_mds(ours, samples)
    _same(theirs, ours)


def test_an_interrupted_mds_convert_resumes_without_duplicates(tmp_path, monkeypatch):
    samples = _mds_samples(_source(700))
    _write_mds(tmp_path / "mds", samples, "zstd")
    out = tmp_path / "out"
    args = dict(inputs=[str(tmp_path / "mds")], out_dir=str(out), rows_per_file=100, batch_rows=30,
                progress=False)
    with monkeypatch.context() as m, pytest.raises(_Crash):
        m.setitem(convert.READERS, "mds", _crashing(convert.READERS["mds"], 10))
        convert.convert(**args)
    done = json.loads((out / convert.MANIFEST).read_text())["parts"]
    assert 2 <= len(done) and list(out.glob("*.tmp")), "the convert was not interrupted mid-part"
    before = {name: (out / name).stat().st_mtime_ns for name in done}
    m = convert.convert(**args)
    assert sum(p["rows"] for p in m["parts"].values()) == 700 and len(m["parts"]) > len(done)
    assert all((out / name).stat().st_mtime_ns == t for name, t in before.items()), "finished parts rewritten"
    ours, theirs = _read_back(out)
    _same_as_mds(ours, samples)
    _same(theirs, ours)


def test_mds_inputs_it_cannot_take_are_clear_errors(tmp_path, monkeypatch, capsys):
    from streaming import MDSWriter

    with MDSWriter(out=str(tmp_path / "grid"), columns={"g": "ndarray:float32"}) as w:
        w.write({"g": np.ones((2, 3), np.float32)})
    with pytest.raises(ValueError, match="2-dimensional arrays; convert takes one-dimensional"):
        convert.convert([str(tmp_path / "grid")], str(tmp_path / "o"), progress=False)
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "a.jsonl").write_text('{"a": 1}\n')
    with pytest.raises(ValueError, match="no MDS index.json"):
        convert.convert([str(tmp_path / "plain")], str(tmp_path / "o"), fmt="mds", progress=False)
    with pytest.raises(ValueError, match="an MDS input is the directory of its index.json"):
        convert.convert([str(tmp_path / "plain" / "a.jsonl")], str(tmp_path / "o"), fmt="mds", progress=False)
    _write_mds(tmp_path / "mds", _mds_samples(_source(10)))
    for name in [n for n in sys.modules if n.split(".")[0] == "streaming"]:
        monkeypatch.setitem(sys.modules, name, None)  # as if mosaicml-streaming were not installed
    with pytest.raises(ImportError, match="needs MosaicML Streaming: pip install mosaicml-streaming"):
        convert.convert([str(tmp_path / "mds")], str(tmp_path / "o2"), progress=False)
    assert not (tmp_path / "o2").exists(), "it started writing before failing"
    assert convert.main([str(tmp_path / "mds"), "--to", str(tmp_path / "o2"), "--no-progress"]) == 1
    assert "pip install mosaicml-streaming" in capsys.readouterr().err


def test_s3_keys_prefixes_and_globs_convert_as_their_local_copies_do(tmp_path, moto_bucket):
    name, s3, _ = moto_bucket
    src = _source(600)
    local = tmp_path / "src"
    (local / "pq").mkdir(parents=True)
    pq.write_table(src.slice(0, 250), local / "pq" / "a.parquet", row_group_size=100)
    pq.write_table(src.slice(250), local / "pq" / "b.parquet", row_group_size=100)
    with open(local / "docs.jsonl", "w") as f:
        for row in src.drop_columns(["tokens"]).to_pylist():
            f.write(json.dumps(row) + "\n")
    (local / "wds").mkdir()
    _write_wds(local / "wds", src, 2)
    (local / "wds" / "README.txt").write_text("not a shard")
    samples = _mds_samples(src)
    _write_mds(local / "mds", samples, "zstd")
    for f in sorted(p for p in local.rglob("*") if p.is_file()):
        s3.upload_file(str(f), name, f"in/{f.relative_to(local)}")
    cases = {  # S3 input, its local copy, the input files it names
        "pq": (f"s3://{name}/in/pq/", local / "pq", ["in/pq/a.parquet", "in/pq/b.parquet"]),
        "jsonl": (f"s3://{name}/in/docs.jsonl", local / "docs.jsonl", ["in/docs.jsonl"]),
        "wds": (f"s3://{name}/in/w*/shard-*.tar", local / "wds" / "shard-*.tar",
                ["in/wds/shard-0000.tar", "in/wds/shard-0001.tar"]),
        "mds": (f"s3://{name}/in/mds/", local / "mds", [f"in/mds/shard.{i:05d}.mds.zstd"
                                                         for i in range(len(list((local / "mds").glob("*.zstd"))))]),
    }
    for case, (uri, copy, names) in cases.items():
        m = convert.convert([uri], str(tmp_path / case), rows_per_file=200, batch_rows=64, progress=False)
        assert sorted({p["input"] for p in m["parts"].values()}) == [f"s3://{name}/{n}" for n in names], case
        convert.convert([str(copy)], str(tmp_path / f"{case}-local"), rows_per_file=200, batch_rows=64,
                        progress=False)
        ours, theirs = _read_back(tmp_path / case)
        expected, _ = _read_back(tmp_path / f"{case}-local")
        _same(ours, expected)
        _same(theirs, expected)
    _same(_read_back(tmp_path / "pq")[0], src)
    _same_as_mds(_read_back(tmp_path / "mds")[0], samples)


def test_a_convert_to_s3_resumes_without_duplicates(tmp_path, moto_bucket, monkeypatch):
    name, s3, _ = moto_bucket
    src = _source(6000)
    pq.write_table(src, tmp_path / "big.parquet", row_group_size=500)
    args = dict(inputs=[str(tmp_path / "big.parquet")], out_dir=f"s3://{name}/out/", rows_per_file=1000,
                batch_rows=250, progress=False)
    with monkeypatch.context() as m, pytest.raises(_Crash):
        m.setitem(convert.READERS, "parquet", _crashing(convert.READERS["parquet"], 14))  # in part 3
        convert.convert(**args)
    manifest_key = "out/" + convert.MANIFEST
    done = json.loads(s3.get_object(Bucket=name, Key=manifest_key)["Body"].read())["parts"]
    assert sorted(done) == [f"00000-big-{k:05d}.vortex" for k in range(3)]
    # As if the crash had come between uploading the last part and recording it: rewritten.
    last = max(done)
    del done[last]
    s3.put_object(Bucket=name, Key=manifest_key, Body=json.dumps({"version": 1, "parts": done}).encode())

    def modified():
        return {o["Key"]: o["LastModified"] for o in s3.list_objects_v2(Bucket=name, Prefix="out/")["Contents"]}

    before = modified()
    time.sleep(1.1)  # past LastModified's resolution
    m = convert.convert(**args)
    after = modified()
    assert sorted(after) == sorted(["out/" + n for n in m["parts"]] + [manifest_key]), "stray objects"
    assert [m["parts"][n]["rows"] for n in sorted(m["parts"])] == [1000] * 6
    assert all(after["out/" + n] == before["out/" + n] for n in done), "finished parts uploaded again"
    assert after["out/" + last] > before["out/" + last], "an unrecorded part was kept"
    down = tmp_path / "down"
    down.mkdir()
    for n in m["parts"]:
        s3.download_file(name, "out/" + n, str(down / n))
    ours, theirs = _read_back(down)
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


def test_the_command_allocates_from_jemalloc_and_convert_leaves_the_pool_alone(tmp_path):
    """`onecopy convert` takes Arrow's memory from jemalloc (convert._keeping_pool: pyarrow's
    mimalloc gave each batch fresh huge pages to zero); convert() called from a program keeps
    that program's pool."""
    pq.write_table(_source(300), tmp_path / "t.parquet")
    script = ("import sys, pyarrow as pa; from onecopy import convert; before = pa.default_memory_pool().backend_name; "
              "convert.convert([sys.argv[1]], sys.argv[2] + '/a'); mid = pa.default_memory_pool().backend_name; "
              "convert.main([sys.argv[1], '--to', sys.argv[2] + '/b', '--no-progress']); "
              "print(before, mid, pa.default_memory_pool().backend_name)")
    r = subprocess.run([sys.executable, "-c", script, str(tmp_path / "t.parquet"), str(tmp_path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    before, mid, after = r.stdout.split()[-3:]
    assert mid == before
    try:
        pa.jemalloc_memory_pool()
    except NotImplementedError:
        pytest.skip("this pyarrow has no jemalloc")
    assert after == "jemalloc"


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
