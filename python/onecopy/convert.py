# SPDX-License-Identifier: Apache-2.0
"""onecopy convert: the way in for data kept elsewhere. Parquet files, JSONL and WebDataset tar
shards become Vortex files written by vortex-data's own writer, ready for onecopy to scan.

    python -m onecopy.convert INPUT ... --to DIR [--format parquet|jsonl|wds]
                              [--rows-per-file N] [--batch-rows N] [--compact] [--no-progress]
    (or `onecopy convert ...`, which runs this with $ONECOPY_PYTHON, else python3)

INPUT: files, directories or globs, read in sorted order. Input file i becomes the Vortex files
DIR/<i>-<its name>-<k>.vortex, part k holding its rows [k*N, (k+1)*N) of N = rows-per-file.
It streams: rows go through in batches of batch-rows (the memory bound, with the writer's own
buffering), never a whole file. A manifest, DIR/_onecopy_convert.json, names every finished
part; each part is written to a temporary name and renamed once complete, and the manifest
rewritten after it, so an interrupted convert run again with the same arguments skips what is
done, rewrites the part it was in, and ends with the same files: no row twice, none lost.

WebDataset samples (tar members grouped by key, the name up to the first dot of its base name)
become a row each: "__key__", then one column per extension: txt and json as strings, cls as
an int64, a one-dimensional .npy array as a list of its type (a token array of int32 becomes
list<int32>), anything else as binary. A column missing from a sample is null.
"""

from __future__ import annotations

import argparse
import glob
import io
import itertools
import json
import os
import sys
import tarfile
from pathlib import Path
from typing import Iterator, Optional, Sequence

import numpy as np
import pyarrow as pa

MANIFEST = "_onecopy_convert.json"
FORMATS = {".parquet": "parquet", ".pq": "parquet", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl",
           ".tar": "wds"}


def input_files(inputs: Sequence[str], fmt: Optional[str]) -> list[tuple[Path, str]]:
    """(file, format) for every input, expanded and sorted; ValueError for one it cannot read."""
    out: list[tuple[Path, str]] = []
    for item in inputs:
        paths = sorted(Path(p) for p in glob.glob(item)) if any(c in item for c in "*?[") else [Path(item)]
        for p in paths:
            # In a directory, .json files are metadata (an MDS index, a manifest), not JSONL.
            files = sorted(f for f in p.rglob("*") if f.is_file() and f.suffix in FORMATS and f.suffix != ".json"
                           and f.name != MANIFEST) if p.is_dir() else [p]
            for f in files:
                if not f.is_file():
                    raise ValueError(f"{f}: no such file")
                kind = fmt or FORMATS.get(f.suffix)
                if kind is None:
                    raise ValueError(f"{f}: unknown format (name it with --format parquet|jsonl|wds)")
                out.append((f, kind))
    if not out:
        raise ValueError("no input files")
    return out


# ---- readers: each yields record batches of at most batch_rows rows ---------------------------------

def _parquet(path: Path, batch_rows: int) -> Iterator[pa.RecordBatch]:
    import pyarrow.parquet as pq

    yield from pq.ParquetFile(path).iter_batches(batch_size=batch_rows)


def _jsonl(path: Path, batch_rows: int) -> Iterator[pa.RecordBatch]:
    import pyarrow.json as pj

    for batch in pj.open_json(path):
        for at in range(0, batch.num_rows, batch_rows):
            yield batch.slice(at, batch_rows)


def _wds_value(ext: str, data: bytes):
    """A member's bytes as the column value of its extension (see the module)."""
    if ext in ("txt", "text", "json"):
        return data.decode("utf-8")
    if ext == "cls":
        return int(data.decode("ascii").strip())
    if ext == "npy":
        a = np.load(io.BytesIO(data), allow_pickle=False)
        if a.ndim == 1:
            return a
    return data


def _wds_type(ext: str, value) -> pa.DataType:
    if isinstance(value, str):
        return pa.string()
    if isinstance(value, int):
        return pa.int64()
    if isinstance(value, np.ndarray):
        return pa.list_(pa.from_numpy_dtype(value.dtype))
    return pa.binary()


def _wds_samples(path: Path) -> Iterator[dict]:
    """The samples of one tar shard in order, streaming through it once."""
    sample: dict = {}
    with tarfile.open(path, "r|*") as tar:
        for member in tar:
            if not member.isfile():
                continue
            base = os.path.basename(member.name)
            key = os.path.join(os.path.dirname(member.name), base.split(".", 1)[0])
            ext = base.split(".", 1)[1] if "." in base else ""
            if sample and sample["__key__"] != key:
                yield sample
                sample = {}
            sample["__key__"] = key
            sample[ext] = _wds_value(ext, tar.extractfile(member).read())
    if sample:
        yield sample


def _wds(path: Path, batch_rows: int) -> Iterator[pa.RecordBatch]:
    schema = None
    rows: list[dict] = []

    def batch():
        cols = {}
        for field in schema:
            vals = [r.get(field.name) for r in rows]
            cols[field.name] = pa.array(vals, type=field.type)
        return pa.RecordBatch.from_pydict(cols, schema=schema)

    for s in _wds_samples(path):
        if schema is None:
            schema = pa.schema([("__key__", pa.string())] +
                               [(ext, _wds_type(ext, v)) for ext, v in s.items() if ext != "__key__"])
        unknown = set(s) - set(schema.names)
        if unknown:
            raise ValueError(f"{path}: sample {s['__key__']!r} has {sorted(unknown)}, which the first sample lacks")
        rows.append(s)
        if len(rows) == batch_rows:
            yield batch()
            rows = []
    if rows:
        yield batch()


READERS = {"parquet": _parquet, "jsonl": _jsonl, "wds": _wds}


# ---- parts and the manifest ----------------------------------------------------------------------------

def _load_manifest(out: Path) -> dict:
    path = out / MANIFEST
    return json.loads(path.read_text()) if path.exists() else {"version": 1, "parts": {}}


def _save_manifest(out: Path, manifest: dict) -> None:
    tmp = out / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True))
    os.replace(tmp, out / MANIFEST)  # atomic: a crash leaves the old manifest or the new one


def _parts(batches: Iterator[pa.RecordBatch], rows_per_file: int) -> Iterator[Iterator[pa.RecordBatch]]:
    """The batches cut at every rows_per_file rows, as one iterator per part (each to be drained
    before the next is asked for)."""
    pending: list[pa.RecordBatch] = []

    def one() -> Iterator[pa.RecordBatch]:
        have = 0
        while have < rows_per_file:
            b = pending.pop() if pending else next(batches, None)
            if b is None:
                return
            take = min(b.num_rows, rows_per_file - have)
            if take < b.num_rows:
                pending.append(b.slice(take))
            have += take
            yield b.slice(0, take)

    while True:
        first = pending.pop() if pending else next(batches, None)
        if first is None:
            return
        pending.append(first)
        yield one()


def convert(inputs: Sequence[str], out_dir: str, fmt: Optional[str] = None, rows_per_file: int = 1_000_000,
            batch_rows: int = 65_536, compact: bool = False, progress: bool = True) -> dict:
    """Converts @inputs to Vortex files in @out_dir (see the module); returns the manifest."""
    import vortex

    if rows_per_file < 1 or batch_rows < 1:
        raise ValueError("rows_per_file and batch_rows must be at least 1")
    if fmt is not None and fmt not in READERS:
        raise ValueError(f"format is one of {sorted(READERS)}, not {fmt!r}")
    files = input_files(inputs, fmt)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    manifest = _load_manifest(out)
    writer = vortex.io.VortexWriteOptions.compact() if compact else None
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(unit=" rows", unit_scale=True, desc="convert", file=sys.stderr)
    try:
        for i, (path, kind) in enumerate(files):
            for k, part in enumerate(_parts(READERS[kind](path, batch_rows), rows_per_file)):
                name = f"{i:05d}-{path.stem}-{k:05d}.vortex"
                done = manifest["parts"].get(name)
                if done is not None and done["input"] == str(path):
                    for b in part:  # finished before an interruption: read past it
                        pass
                    continue
                counted = _Counting(part, bar)
                first = next(counted)  # a part has a row at least
                reader = pa.RecordBatchReader.from_batches(first.schema, itertools.chain([first], counted))
                tmp = out / (name + ".tmp")
                if writer is not None:
                    writer.write(reader, str(tmp))
                else:
                    vortex.io.write(reader, str(tmp))
                os.replace(tmp, out / name)
                manifest["parts"][name] = {"input": str(path), "first_row": k * rows_per_file, "rows": counted.rows}
                _save_manifest(out, manifest)
    finally:
        if bar is not None:
            bar.close()
    return manifest


class _Counting:
    """The batches of one part, counting rows (and ticking the progress bar) as they go."""

    def __init__(self, part: Iterator[pa.RecordBatch], bar):
        self.part, self.bar, self.rows = part, bar, 0

    def __iter__(self):
        return self

    def __next__(self) -> pa.RecordBatch:
        b = next(self.part)
        self.rows += b.num_rows
        if self.bar is not None:
            self.bar.update(b.num_rows)
        return b


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="onecopy convert", description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="+", metavar="INPUT")
    ap.add_argument("--to", required=True, metavar="DIR", help="the directory of Vortex files to write")
    ap.add_argument("--format", choices=sorted(READERS), help="the inputs' format (default: from their names)")
    ap.add_argument("--rows-per-file", type=int, default=1_000_000)
    ap.add_argument("--batch-rows", type=int, default=65_536, help="rows in memory at a time (the memory bound)")
    ap.add_argument("--compact", action="store_true", help="vortex-data's compact writer (smaller, slower)")
    ap.add_argument("--no-progress", action="store_true")
    a = ap.parse_args(argv)
    try:
        m = convert(a.inputs, a.to, a.format, a.rows_per_file, a.batch_rows, a.compact, not a.no_progress)
    except (ValueError, OSError, pa.ArrowException) as e:
        print(f"onecopy convert: {e}", file=sys.stderr)
        return 1
    rows = sum(p["rows"] for p in m["parts"].values())
    print(f"{len(m['parts'])} files, {rows} rows in {a.to}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
