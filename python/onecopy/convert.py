# SPDX-License-Identifier: Apache-2.0
"""onecopy convert: the way in for data kept elsewhere. Parquet files, JSONL, WebDataset tar
shards and MosaicML MDS shards, local or in S3, become Vortex files written by vortex-data's own
writer, ready for onecopy to scan.

    python -m onecopy.convert INPUT ... --to DIR|s3://BUCKET/PREFIX/ [--format parquet|jsonl|wds|mds]
                              [--rows-per-file N] [--batch-rows N] [--compact] [--no-progress]
    (or `onecopy convert ...`, which runs this with $ONECOPY_PYTHON, else python3)

INPUT: files, directories or globs; or s3://bucket/key, s3://bucket/prefix/ (the objects under
it, like a directory) or an s3:// glob (fnmatch with `*` crossing `/`, as onecopy's own expand),
read in sorted order. A directory (or prefix) holding MDS datasets, each a directory with an MDS
index.json (version 2, shards of format mds), is read as those, their shards as its files, in
index order. Input file i becomes the Vortex files DIR/<i>-<its name>-<k>.vortex, part k holding
its rows [k*N, (k+1)*N) of N = rows-per-file. It streams: rows go through in batches of
batch-rows, never a whole file, read by a thread of their own one batch ahead of the writer
(across inputs too), so reading the next batch overlaps writing this one and a convert takes
about as long as the longer of the two; at most three batches are in memory (the one written,
the one waiting, the one being read), besides the writer's own buffering. A manifest,
DIR/_onecopy_convert.json, names every finished part; each part is written to a temporary name
and renamed once complete, and the manifest rewritten after it, so an interrupted convert run
again with the same arguments skips what is done, rewrites the part it was in, and ends with
the same files: no row twice, none lost.

S3 goes through pyarrow's S3 filesystem: credentials from the AWS SDK's chain
(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, then its files), the region from
AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1, and the endpoint from AWS_ENDPOINT_URL_S3,
else AWS_ENDPOINT_URL, as onecopy's own S3 client takes them. Parquet objects are read in
ranges, JSONL and tar objects streamed through a buffer of STREAM_BUFFER bytes, MDS shards
fetched into a temporary directory one at a time. To an s3:// --to, each part is written to a
local temporary file, then uploaded to its key (an object appears whole or not at all), then the
manifest object at the prefix is put again: a part uploaded but not yet in it is rewritten.

WebDataset samples (tar members grouped by key, the name up to the first dot of its base name)
become a row each: "__key__", then one column per extension: txt and json as strings, cls as
an int64, a one-dimensional .npy array as a list of its type (a token array of int32 becomes
list<int32>), anything else as binary. A column missing from a sample is null.

MDS samples, read by MosaicML Streaming's own shard reader (package mosaicml-streaming), become
a row each, one column per MDS column: int8..int64, uint8..uint64 and float16..float64 as
themselves, int and str_int as int64, str_float as float64; str, json and str_decimal as their
text; a one-dimensional ndarray as a list of its type (ndarray:int32 tokens become list<int32>);
bytes, and the encodings with no Arrow type (jpeg, png, pil, pkl, jpeg_array, list[...]), as
the bytes MDS stores, never decoded: a pickle is not unpickled. Compressed shards are
decompressed with Streaming's codecs.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import functools
import glob
import io
import itertools
import json
import os
import posixpath
import queue
import shutil
import sys
import tarfile
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Callable, Iterator, Optional, Sequence

import numpy as np
import pyarrow as pa
from pyarrow import fs as pafs

from onecopy._s3fs import s3_filesystem

MANIFEST = "_onecopy_convert.json"
FORMATS = {".parquet": "parquet", ".pq": "parquet", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl",
           ".tar": "wds"}
MDS_INDEX = "index.json"
# Read ahead of a streamed input: one S3 GET per STREAM_BUFFER bytes, not one per tar block.
STREAM_BUFFER = 8 << 20
# Batches read ahead of the writer (besides the one it writes and the one being read): reading
# the next input overlaps writing this one, so a convert takes about the longer of the two.
READ_AHEAD = 1
S3 = "s3://"
WILDCARDS = "*?["


# ---- where inputs and outputs are --------------------------------------------------------------------

def _locate(where: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem @where is on and its path there: bucket/key in S3 for s3://, else local."""
    if where.startswith(S3):
        return s3_filesystem(), where[len(S3):]
    return pafs.LocalFileSystem(), str(Path(where))


def _display(fs: pafs.FileSystem, path: str) -> str:
    """@path as the manifest and messages show it: the local path, or s3://bucket/key."""
    return S3 + path if isinstance(fs, pafs.S3FileSystem) else path


def _order(path: str) -> list[str]:
    return path.split("/")  # component by component, as pathlib sorts


def _files(fs: pafs.FileSystem, root: str) -> list[str]:
    """Every file under the directory or prefix @root, sorted; none when it does not exist."""
    infos = fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True))
    return sorted((i.path for i in infos if i.type == pafs.FileType.File), key=_order)


def _matches(fs: pafs.FileSystem, pattern: str) -> list[str]:
    """What @pattern names: itself, or the matches of a glob, sorted."""
    if not any(c in pattern for c in WILDCARDS):
        return [pattern]
    if isinstance(fs, pafs.LocalFileSystem):
        return sorted((str(Path(p)) for p in glob.glob(pattern)), key=_order)
    # S3 has no directories to walk: list under the part before the first wildcard.
    base = pattern[:min(pattern.index(c) for c in WILDCARDS if c in pattern)]
    return [p for p in _files(fs, posixpath.dirname(base)) if fnmatch.fnmatchcase(p, pattern)]


@dataclass(frozen=True)
class Source:
    """One input file: where it is, its format and, for an MDS shard, its index entry."""

    fs: pafs.FileSystem
    path: str  # on fs: a local path, or bucket/key
    kind: str  # a READERS key
    shard: Optional[dict] = None  # mds: the shard's entry in its index.json
    root: str = ""  # mds: the dataset's directory, which the entry's basenames are relative to

    @property
    def name(self) -> str:
        return _display(self.fs, self.path)

    @property
    def stem(self) -> str:
        """What the names of its parts call it (an MDS shard by its uncompressed name)."""
        return PurePosixPath(self.shard["raw_data"]["basename"] if self.shard else self.path).stem


def input_files(inputs: Sequence[str], fmt: Optional[str]) -> list[Source]:
    """Every input file, expanded and sorted; ValueError for one it cannot read."""
    out: list[Source] = []
    for item in inputs:
        fs, pattern = _locate(item)
        for path in _matches(fs, pattern):
            out += _sources(fs, path, fmt)
    if not out:
        raise ValueError("no input files")
    return out


def _sources(fs: pafs.FileSystem, path: str, fmt: Optional[str]) -> list[Source]:
    info = fs.get_file_info(path)
    if info.type == pafs.FileType.Directory:
        return _dir_sources(fs, info.path, fmt)
    if info.type != pafs.FileType.File:
        raise ValueError(f"{_display(fs, path)}: no such file")
    kind = fmt or FORMATS.get(PurePosixPath(path).suffix)
    if kind is None:
        raise ValueError(f"{_display(fs, path)}: unknown format (name it with --format parquet|jsonl|wds|mds)")
    if kind == "mds":
        raise ValueError(f"{_display(fs, path)}: an MDS input is the directory of its {MDS_INDEX}")
    return [Source(fs, path, kind)]


def _dir_sources(fs: pafs.FileSystem, root: str, fmt: Optional[str]) -> list[Source]:
    """The input files of a directory or prefix: the shards of its MDS datasets if it has any,
    else its files of the formats FORMATS names. .json files are not among those: beside data
    they are metadata (an MDS index, the manifest), not JSONL."""
    files = _files(fs, root)
    if fmt in (None, "mds"):
        shards = _mds_shards(fs, files)
        if shards or fmt == "mds":
            if not shards:
                raise ValueError(f"{_display(fs, root)}: no MDS {MDS_INDEX} (version 2, format mds) in it")
            return shards
    suffixes = ((f, PurePosixPath(f).suffix) for f in files)
    return [Source(fs, f, fmt or FORMATS[s]) for f, s in suffixes if s in FORMATS and s != ".json"]


def _mds_shards(fs: pafs.FileSystem, files: list[str]) -> list[Source]:
    """The shards of the MDS datasets among @files (all those under a directory): dataset by
    dataset in path order, each in its index's order. A dataset inside another is left to it:
    an index merged over subdirectories lists their shards as its own."""
    roots: dict[str, dict] = {}
    for f in sorted((f for f in files if posixpath.basename(f) == MDS_INDEX), key=lambda f: f.count("/")):
        root = posixpath.dirname(f)
        if any(root.startswith(r + "/") for r in roots):
            continue
        index = _mds_index(fs, f)
        if index is not None:
            roots[root] = index
    if roots:
        _streaming()  # missing, it fails here, before any part is written
    return [Source(fs, posixpath.join(root, (s["zip_data"] or s["raw_data"])["basename"]), "mds", s, root)
            for root in sorted(roots, key=_order) for s in roots[root]["shards"]]


def _mds_index(fs: pafs.FileSystem, path: str) -> Optional[dict]:
    """The MDS index at @path; None for any other JSON."""
    with fs.open_input_stream(path) as f:
        try:
            index = json.loads(f.read())
        except ValueError:
            return None
    if not isinstance(index, dict) or index.get("version") != 2 or not isinstance(index.get("shards"), list):
        return None
    shards = index["shards"]
    return index if shards and all(isinstance(s, dict) and s.get("format") == "mds" for s in shards) else None


def _streaming():
    """MosaicML Streaming's shard readers and codecs: its format and compression modules."""
    try:
        from streaming.base import compression, format as formats
    except ImportError as e:
        raise ImportError(f"reading MDS shards needs MosaicML Streaming: pip install mosaicml-streaming "
                          f"(requirements-nodeps.txt pins it and what it imports) [{e}]") from e
    return formats, compression


# ---- readers: each yields record batches of at most batch_rows rows ---------------------------------

def _stream(src: Source):
    return src.fs.open_input_stream(src.path, compression=None, buffer_size=STREAM_BUFFER)


def _parquet(src: Source, batch_rows: int) -> Iterator[pa.RecordBatch]:
    import pyarrow.parquet as pq

    with src.fs.open_input_file(src.path) as f:  # random access: S3 reads only the ranges it needs
        yield from pq.ParquetFile(f).iter_batches(batch_size=batch_rows)


def _jsonl(src: Source, batch_rows: int) -> Iterator[pa.RecordBatch]:
    import pyarrow.json as pj

    with _stream(src) as f:
        for batch in pj.open_json(f):
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


def _wds_samples(src: Source) -> Iterator[dict]:
    """The samples of one tar shard in order, streaming through it once."""
    sample: dict = {}
    with _stream(src) as f, tarfile.open(fileobj=f, mode="r|*") as tar:
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


def _wds(src: Source, batch_rows: int) -> Iterator[pa.RecordBatch]:
    schema = None
    rows: list[dict] = []

    def batch():
        cols = {}
        for field in schema:
            vals = [r.get(field.name) for r in rows]
            cols[field.name] = pa.array(vals, type=field.type)
        return pa.RecordBatch.from_pydict(cols, schema=schema)

    for s in _wds_samples(src):
        if schema is None:
            schema = pa.schema([("__key__", pa.string())] +
                               [(ext, _wds_type(ext, v)) for ext, v in s.items() if ext != "__key__"])
        unknown = set(s) - set(schema.names)
        if unknown:
            raise ValueError(f"{src.name}: sample {s['__key__']!r} has {sorted(unknown)}, which the first sample lacks")
        rows.append(s)
        if len(rows) == batch_rows:
            yield batch()
            rows = []
    if rows:
        yield batch()


# MDS column encodings (the name before any ':') as Arrow columns (see the module). Text is read
# with Streaming's "str" coding, so json keeps its text and str_decimal its digits; _MDS_BYTES
# with its "bytes" coding, the bytes the shard holds.
_MDS_NUMBERS = {"int": "int64", "str_int": "int64", "str_float": "float64",
                **{t: t for t in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                                  "float16", "float32", "float64")}}
_MDS_TEXT = {"str", "json", "str_decimal"}
_MDS_BYTES = {"bytes", "pkl", "pil", "jpeg", "jpeg_array", "jpegarray", "png", "list[pil]", "list[jpeg]", "list[png]"}


def _mds_read_as(src: Source, column: str, encoding: str) -> str:
    """The MDS encoding to read @column with."""
    kind = encoding.split(":", 1)[0]
    if kind in _MDS_TEXT:
        return "str"
    if kind in _MDS_BYTES:
        return "bytes"
    if kind in _MDS_NUMBERS or kind == "ndarray":
        return encoding
    raise ValueError(f"{src.name}: column {column!r} has MDS encoding {encoding!r}, which convert does not know")


def _mds_array(src: Source, column: str, encoding: str, values: list) -> pa.Array:
    """@column's values, read as _mds_read_as says, as an Arrow array."""
    kind = encoding.split(":", 1)[0]
    if kind == "ndarray":
        wrong = next((a for a in values if a.ndim != 1), None)
        if wrong is not None:
            raise ValueError(f"{src.name}: column {column!r} holds {wrong.ndim}-dimensional arrays; convert takes "
                             "one-dimensional ones (as lists)")
        # Safe cast: past 2**31 values in a batch the int32 offsets of a list would wrap.
        offsets = pa.array(np.concatenate([[0], np.cumsum([len(a) for a in values])])).cast(pa.int32())
        return pa.ListArray.from_arrays(offsets, pa.array(np.concatenate(values)))
    if kind in _MDS_NUMBERS:
        return pa.array(np.asarray(values, dtype=_MDS_NUMBERS[kind]))
    return pa.array(values, type=pa.string() if kind in _MDS_TEXT else pa.binary())


def _mds_local(src: Source, tmp: str, codecs) -> str:
    """A local directory holding @src's shard uncompressed under its basename: the dataset's
    own when it is local and uncompressed, else @tmp, which it is fetched into (and decompressed
    by Streaming's codecs, which take the whole shard in memory)."""
    zipped = src.shard["zip_data"] is not None
    if not zipped and isinstance(src.fs, pafs.LocalFileSystem):
        return src.root
    local = os.path.join(tmp, src.shard["raw_data"]["basename"])
    os.makedirs(os.path.dirname(local), exist_ok=True)
    with src.fs.open_input_stream(src.path, compression=None) as f, open(local, "wb") as out:
        if zipped:
            out.write(codecs.decompress(src.shard["compression"], f.read()))
        else:
            shutil.copyfileobj(f, out, STREAM_BUFFER)
    return tmp


def _mds(src: Source, batch_rows: int) -> Iterator[pa.RecordBatch]:
    formats, codecs = _streaming()
    names, encodings = src.shard["column_names"], src.shard["column_encodings"]
    index = dict(src.shard, column_encodings=[_mds_read_as(src, n, e) for n, e in zip(names, encodings)])
    with tempfile.TemporaryDirectory(prefix="onecopy-mds-") as tmp:
        reader = formats.reader_from_json(_mds_local(src, tmp, codecs), None, index)
        for at in range(0, len(reader), batch_rows):
            samples = [reader.get_item(i) for i in range(at, min(at + batch_rows, len(reader)))]
            yield pa.RecordBatch.from_arrays([_mds_array(src, n, e, [s[n] for s in samples])
                                              for n, e in zip(names, encodings)], names=names)


READERS = {"parquet": _parquet, "jsonl": _jsonl, "wds": _wds, "mds": _mds}


# ---- parts and the manifest ----------------------------------------------------------------------------

class _Out:
    """Where the parts and their manifest go: a local directory or an S3 prefix."""

    def __init__(self, to: str):
        self.fs, self.dir = _locate(to)
        self.dir = self.dir.rstrip("/")
        self.s3 = isinstance(self.fs, pafs.S3FileSystem)
        if not self.s3:
            Path(self.dir).mkdir(parents=True, exist_ok=True)

    def path(self, name: str) -> str:
        return f"{self.dir}/{name}"

    def load_manifest(self) -> dict:
        path = self.path(MANIFEST)
        if self.fs.get_file_info(path).type == pafs.FileType.NotFound:
            return {"version": 1, "parts": {}}
        with self.fs.open_input_stream(path) as f:
            return json.loads(f.read())

    def save_manifest(self, manifest: dict) -> None:
        self.put(MANIFEST, lambda p: Path(p).write_text(json.dumps(manifest, indent=1, sort_keys=True)))

    def put(self, name: str, write: Callable[[str], None]) -> None:
        """Writes @name with @write(a local path), so that it appears whole or not at all: locally
        under a temporary name, then renamed; to S3 as a local temporary file, then uploaded."""
        if not self.s3:
            tmp = self.path(name + ".tmp")
            write(tmp)
            os.replace(tmp, self.path(name))
            return
        with tempfile.TemporaryDirectory(prefix="onecopy-convert-") as tmp:
            local = os.path.join(tmp, name)
            write(local)
            pafs.copy_files(local, self.path(name), source_filesystem=pafs.LocalFileSystem(),
                            destination_filesystem=self.fs)


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
    """Converts @inputs to Vortex files in @out_dir, a directory or s3:// prefix (see the
    module); returns the manifest."""
    import vortex

    if rows_per_file < 1 or batch_rows < 1:
        raise ValueError("rows_per_file and batch_rows must be at least 1")
    if fmt is not None and fmt not in READERS:
        raise ValueError(f"format is one of {sorted(READERS)}, not {fmt!r}")
    files = input_files(inputs, fmt)
    out = _Out(out_dir)
    manifest = out.load_manifest()
    write = vortex.io.VortexWriteOptions.compact().write if compact else vortex.io.write
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(unit=" rows", unit_scale=True, desc="convert", file=sys.stderr)
    ahead = _ReadAhead(files, batch_rows)
    try:
        for i, src in enumerate(files):
            for k, part in enumerate(_parts(ahead.next_input(), rows_per_file)):
                name = f"{i:05d}-{src.stem}-{k:05d}.vortex"
                done = manifest["parts"].get(name)
                if done is not None and done["input"] == src.name:
                    for b in part:  # finished before an interruption: read past it
                        pass
                    continue
                counted = _Counting(part, bar)
                first = next(counted)  # a part has a row at least
                reader = pa.RecordBatchReader.from_batches(first.schema, itertools.chain([first], counted))
                try:
                    out.put(name, functools.partial(write, reader))
                except Exception:
                    if counted.error is not None:  # vortex-data raises a RuntimeError of its text instead
                        raise counted.error from None
                    raise
                manifest["parts"][name] = {"input": src.name, "first_row": k * rows_per_file, "rows": counted.rows}
                out.save_manifest(manifest)
    finally:
        ahead.close()
        if bar is not None:
            bar.close()
    return manifest


class _ReadAhead:
    """The batches of every input in order, read by a thread of their own up to READ_AHEAD
    batches ahead of the writer, across inputs: pyarrow's readers and vortex-data's writer both
    let go of the GIL, so reading and writing overlap. A reader's exception comes out in its
    place, after the batches read before it."""

    _END = object()  # after an input's last batch

    def __init__(self, files: Sequence[Source], batch_rows: int):
        self._queue: queue.Queue = queue.Queue(READ_AHEAD)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, args=(files, batch_rows), name="onecopy-convert-read",
                                        daemon=True)
        self._thread.start()

    def next_input(self) -> Iterator[pa.RecordBatch]:
        """The next input's batches."""
        while True:
            item = self._queue.get()
            if item is self._END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def close(self) -> None:
        """Stops the thread (after the batch it is reading) and waits for it."""
        self._stop.set()
        self._thread.join()

    def _read(self, files: Sequence[Source], batch_rows: int) -> None:
        try:
            for src in files:
                with contextlib.closing(READERS[src.kind](src, batch_rows)) as batches:
                    for b in batches:
                        if not self._put(b):
                            return
                if not self._put(self._END):
                    return
        except BaseException as e:  # noqa: BLE001 - the writer's thread raises it
            self._put(e)

    def _put(self, item) -> bool:
        """Queues @item once there is room; False once closed."""
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.05)
                return True
            except queue.Full:
                pass
        return False


class _Counting:
    """The batches of one part, counting rows (and ticking the progress bar) as they go, and
    keeping the exception that reading them raised, if any."""

    def __init__(self, part: Iterator[pa.RecordBatch], bar):
        self.part, self.bar, self.rows = part, bar, 0
        self.error: Optional[BaseException] = None

    def __iter__(self):
        return self

    def __next__(self) -> pa.RecordBatch:
        try:
            b = next(self.part)
        except StopIteration:
            raise
        except BaseException as e:
            self.error = e
            raise
        self.rows += b.num_rows
        if self.bar is not None:
            self.bar.update(b.num_rows)
        return b


def _keeping_pool() -> None:
    """Arrow's allocations in this process from jemalloc, where pyarrow has it. Its default here,
    mimalloc, gives a batch's freed memory back and takes the next batch's as fresh huge pages,
    each zeroed by the kernel: a quarter of a convert's time went to that (clear_page), and its
    system time was 0.9-2.4 s where it is 0.6 s with jemalloc, which keeps the memory for the
    next batch (docs/benchmarks.md, the conversion table). The command's process only: convert()
    leaves a caller's pool alone."""
    try:
        pa.set_memory_pool(pa.jemalloc_memory_pool())
    except NotImplementedError:  # a pyarrow built without it
        pass


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="onecopy convert", description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="+", metavar="INPUT",
                    help="files, directories, globs; s3://bucket/key, s3://bucket/prefix/, s3:// globs")
    ap.add_argument("--to", required=True, metavar="DIR",
                    help="the directory, or s3://bucket/prefix/, of the Vortex files to write")
    ap.add_argument("--format", choices=sorted(READERS), help="the inputs' format (default: from their names)")
    ap.add_argument("--rows-per-file", type=int, default=1_000_000)
    ap.add_argument("--batch-rows", type=int, default=65_536,
                    help="rows in a batch; at most three batches in memory (the memory bound)")
    ap.add_argument("--compact", action="store_true", help="vortex-data's compact writer (smaller, slower)")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--no-index", action="store_true",
                    help="to an s3:// prefix, skip writing its manifest (onecopy index) at the end")
    a = ap.parse_args(argv)
    _keeping_pool()
    try:
        m = convert(a.inputs, a.to, a.format, a.rows_per_file, a.batch_rows, a.compact, not a.no_progress)
    except (ValueError, ImportError, OSError, pa.ArrowException) as e:
        print(f"onecopy convert: {e}", file=sys.stderr)
        return 1
    rows = sum(p["rows"] for p in m["parts"].values())
    print(f"{len(m['parts'])} files, {rows} rows in {a.to}")
    if a.to.startswith(S3) and not a.no_index:
        # With this process's credentials, which have just written the prefix. The data is
        # complete without it: a failure only costs the next plans their speed.
        from onecopy.index import index
        try:
            r = index(a.to.rstrip("/") + "/", socket=False)
            print(f"{r['manifest']}: the manifest of {r['files']} files")
        except Exception as e:  # noqa: BLE001 - reported; the converted files stand
            print(f"onecopy convert: the files are written, but not their manifest ({e}); "
                  f"run `onecopy index {a.to}` to write it", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
