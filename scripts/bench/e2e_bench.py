# SPDX-License-Identifier: Apache-2.0
"""End-to-end PyTorch feeding benchmark; the Python half of scripts/bench_e2e.sh, which starts
the S3 server and onecopyd and passes their pids and the socket here.

    e2e_bench.py run --socket S --daemon-pid P --server-pids Q,R --data DIR [--gb 2]
                     [--workers 0,2] [--shuffle group,none] [--batch-size 256] [--repeat 1]
                     [--systems onecopy,vortex,wds,mds,lance] [--unit-rows 8192] [--shuffle-units 8]
                     [--chart-dir DIR]
    e2e_bench.py leg --system NAME --urls-json F --workers N --shuffle group|none [--filter]
                     [--first-batch-only] ...                                           (JSON out)
    e2e_bench.py rewrite --system wds|mds ...                                           (JSON out)

One dataset (scripts/bench/tokens_data.py: token sequences list<int32>, label int64, quality
float64; the same samples in the same shards) is stored on the S3 server in each system's own
format and fed to a PyTorch training loop by torch.utils.data.DataLoader with the same
num_workers and batch size everywhere:

  onecopy      vortex files, scanned by onecopyd (CPU path): onecopy.torch.Dataset(urls,
               batch_rows=B, seed, socket=S, unit_rows=U, shuffle_units=K); DataLoader(batch_size=None)
  vortex-data  the same vortex files, scanned in the DataLoader workers with vortex-data's own
               S3 store (one scan per unit, to_repeated_scan().execute(row_range)), dealt and
               shuffled as onecopy deals them (below), batches of B rows
  webdataset   tar shards (tokens.bin raw int32 + meta.json per sample) streamed by `curl` from
               presigned URLs (`pipe:`), decoded and collated in the workers (.batched(B))
  mds          MosaicML Streaming MDS shards (tokens ndarray:int32, label int64, quality
               float64): StreamingDataset(remote=s3://..., local=a fresh cache dir,
               batch_size=B), DataLoader(batch_size=B) with a collate function
  lance        a Lance dataset (pylance's defaults, a fragment per shard) read from S3 by
               lance.torch.data.LanceDataset(s3://..., batch_size=B, storage_options for the
               benchmark's endpoint and credentials, its default batch_readahead, a to_tensor_fn
               giving the common batch); DataLoader(batch_size=None), its workers spawned, not
               forked (lance is not fork-safe; the spawn is in the epoch's time). lance.torch.data works
               with Debian's torch 1.13 (pylance's `torch` extra asks for torch>=2.0; only that
               module is used, and it is not installed from PyPI)

Every --workers count and every --shuffle mode is a table of its own, all systems run in it
with that num_workers and that shuffle work (G = U x K rows, 65,536 by default; each
DataLoader worker, or the training process with num_workers=0, shuffles its own share):

  --shuffle group  onecopy: units of up to U rows (cut at chunk boundaries) shuffled across all
                   files by the seed, consecutive runs of K units form shuffle groups, worker w
                   of W takes every W-th group, and a group's rows (G at most) are permuted
                   (onecopy reads the next group on a thread meanwhile: prefetch_groups=1);
                   vortex-data: the same plan in the benchmark (units of U rows, their order
                   shuffled by the seed, groups of K units dealt to workers, rows permuted
                   within a group, G rows held; no read-ahead);
                   WebDataset: shard order shuffled (shardshuffle), then .shuffle(G, initial=G),
                   a buffer of G samples filled before the first one leaves;
                   MDS: shard order shuffled and samples permuted within blocks of 0.75 to 1.25
                   x G samples (shuffle_algo="py1br", shuffle_block_size=G: this Streaming has
                   no fixed-size py1b); samples are read by index from shards cached on disk;
                   Lance: fragment order shuffled by the seed (lance.sampler's
                   ShardedFragmentSampler, randomize=True), fragments dealt to the workers, rows
                   in stored order within a fragment: lance.torch has no row shuffle for a
                   streamed dataset (its samplers reorder fragments or whole batches).
  --shuffle none   nobody shuffles: files and shards in order, rows in order (onecopy and
                   vortex-data still deal groups of K units to the workers).

Every leg hands the training loop the same batch: {"tokens": int32 values, "tokens.offsets",
"label": int64, "quality": float64}; the loop (the sink) sums every token (int64), every label
and quality. Decoded bytes per batch are counted alike for all (4 per token, 4 per offset, 16
per sample; 1 GB = 1e9 bytes).

Reported per table (median of --repeat epochs, each leg a fresh Python process, after one untimed
first batch per system that warms the server, onecopyd and the page cache): samples/s and
GB/s over one epoch (wall time from building the dataset to the last batch), time to first batch,
CPU s/GB of the training process with its DataLoader workers and their children (curl), plus
onecopyd's for onecopy, and of the S3 server, apart and in the total; ratios against onecopy in
the same run.

Then, per --workers count under the first --shuffle mode, the filter changes to
`quality > 0.8`: onecopy, vortex-data and Lance push it into the scan, and the time to first batch
and the epoch under the filter (samples/s, CPU s/GB of what they delivered) are measured;
WebDataset and MDS rewrite their shards first, in --workers processes (read from S3 with their own
reader, keep the matching samples, write with wds.TarWriter / MDSWriter and merge_index, upload),
and the rewrite time is added to the first batch of the rewritten shards.
WebDataset's in-stream `.select()` (every byte still read) is shown as an extra row. There
WebDataset's shuffle buffer and MDS's shuffle blocks hold a fifth of G samples, what a group of
onecopy's and vortex-data's gives under the filter (FILTER_KEPT).

Charts (--chart-dir, scripts/bench/e2e_chart.py): e2e-epochs.png (samples/s, CPU s/GB total and
first batch per table) and e2e-filter.png (time to the first batch under the new filter, and the
filtered epoch's samples/s).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import benchlib as bl  # noqa: E402
import charts  # noqa: E402
import e2e_chart  # noqa: E402

FILTER_SQL = "quality > 0.8"
QUALITY_MIN = 0.8
FILTER_KEPT = 0.2  # the share of rows it keeps (tokens_data.py: quality uniform in [0, 1))
SYSTEMS = ["onecopy", "vortex", "wds", "mds", "lance"]
SHUFFLES = ["group", "none"]  # every contender shuffles in groups of the same rows, or nobody does
NAMES = {"onecopy": "onecopy (onecopyd, CPU)", "vortex": "vortex-data in-process", "wds": "WebDataset",
         "mds": "MosaicML Streaming (MDS)", "lance": "Lance (lance.torch LanceDataset)"}
PUSHDOWN = ("onecopy", "vortex", "lance")  # systems that push the new filter into their scan


# --- batches ------------------------------------------------------------------------------------

def collate(tokens: list, labels, quality) -> dict:
    """The common batch from a list of int32 arrays and sequences of labels and qualities."""
    import numpy as np
    import torch

    lengths = np.fromiter((len(t) for t in tokens), dtype=np.int32, count=len(tokens))
    offsets = np.zeros(len(tokens) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    values = np.concatenate(tokens) if tokens else np.zeros(0, np.int32)
    return {"tokens": torch.from_numpy(values), "tokens.offsets": torch.from_numpy(offsets),
            "label": torch.as_tensor(np.asarray(labels, dtype=np.int64)),
            "quality": torch.as_tensor(np.asarray(quality, dtype=np.float64))}


def arrow_batch(rb) -> dict:
    """The common batch from an Arrow record batch (zero-copy where Arrow allows)."""
    import numpy as np
    import pyarrow as pa
    import torch

    tokens = rb.column(rb.schema.get_field_index("tokens"))
    if isinstance(tokens, pa.ChunkedArray):
        tokens = tokens.combine_chunks()
    offsets = tokens.offsets.to_numpy()
    values = tokens.values.slice(offsets[0], offsets[-1] - offsets[0]).to_numpy()
    return {"tokens": torch.from_numpy(np.asarray(values)), "tokens.offsets": torch.from_numpy(offsets - offsets[0]),
            "label": torch.from_numpy(rb.column(rb.schema.get_field_index("label")).to_numpy()),
            "quality": torch.from_numpy(rb.column(rb.schema.get_field_index("quality")).to_numpy())}


# --- datasets -------------------------------------------------------------------------------------

def s3_parts(url: str) -> tuple[str, str]:
    bucket, _, key = url[len("s3://"):].partition("/")
    return bucket, key


def group_rows(a) -> int:
    """Rows a shuffle group holds before a filter (onecopy's bounded shuffle buffer)."""
    return a.unit_rows * a.shuffle_units


def buffer_rows(a) -> int:
    """Samples WebDataset's shuffle buffer and MDS's shuffle blocks hold: as many as onecopy's
    shuffle group gives, its rows, or what the leg says (a filtered group gives a fifth)."""
    return a.shuffle_rows or group_rows(a)


def shuffled(a) -> bool:
    return a.shuffle == "group"


class VortexDataset:
    """vortex-data scanning vortex files from S3 in the DataLoader workers (an IterableDataset),
    dealt as onecopy.torch.Dataset deals them, so that both do the same shuffle work: each file's
    rows cut into units of unit_rows, the units of all files shuffled by the seed (shuffle on),
    consecutive runs of shuffle_units units form groups, worker w of W takes every W-th group,
    and a group's rows are read (one scan per unit), permuted (shuffle on) and cut into batches
    (a short one at the end of a group, as onecopy's)."""

    def __init__(self, urls, a):
        self.urls, self.batch_rows, self.seed, self.filter = list(urls), a.batch_size, a.seed, a.filter
        self.unit_rows, self.shuffle_units, self.shuffle = a.unit_rows, a.shuffle_units, shuffled(a)

    def _groups(self, lengths: list[int]) -> list[list[tuple[int, int, int]]]:
        import random

        units = [(f, b, min(b + self.unit_rows, n)) for f, n in enumerate(lengths)
                 for b in range(0, n, self.unit_rows)]
        if self.shuffle:
            random.Random(self.seed).shuffle(units)
        k = self.shuffle_units
        return [units[i:i + k] for i in range(0, len(units), k)]

    def __iter__(self):
        import numpy as np
        import pyarrow as pa
        import torch.utils.data as tud
        import vortex as vx
        import vortex.expr as ve
        from vortex.store import S3Store

        info = tud.get_worker_info()
        wid, n_workers = (info.id, info.num_workers) if info else (0, 1)
        store = S3Store(s3_parts(self.urls[0])[0], endpoint=os.environ["S3_ENDPOINT"],
                        region=os.environ.get("AWS_REGION", "us-east-1"),
                        access_key_id=os.environ["AWS_ACCESS_KEY_ID"],
                        secret_access_key=os.environ["AWS_SECRET_ACCESS_KEY"],
                        client_options={"allow_http": True})
        expr = ve.column("quality") > QUALITY_MIN if self.filter else None
        files = [vx.open(s3_parts(u)[1], store=store) for u in self.urls]  # the plan needs every length
        scans = [f.to_repeated_scan(expr=expr) for f in files]
        groups = self._groups([len(f) for f in files])
        for g in range(wid, len(groups), n_workers):
            table = pa.concat_tables(scans[f].execute(row_range=(b, e)).to_arrow().read_all()
                                     for f, b, e in groups[g]).combine_chunks()
            n = table.num_rows
            order = np.random.default_rng([self.seed, g]).permutation(n) if self.shuffle else None
            for off in range(0, n, self.batch_rows):
                part = table.take(order[off:off + self.batch_rows]) if order is not None else \
                    table.slice(off, self.batch_rows)
                yield arrow_batch(part.combine_chunks().to_batches()[0])


def vortex_dataset(urls, a):
    import torch.utils.data as tud

    class _DS(VortexDataset, tud.IterableDataset):
        pass

    return _DS(urls, a), None


def onecopy_dataset(urls, a):
    from onecopy.torch import Dataset  # onecopy's IterableDataset (python/onecopy/torch.py)

    return Dataset(urls, columns=None, filter=FILTER_SQL if a.filter else None, batch_rows=a.batch_size,
                   shuffle=shuffled(a), seed=a.seed, socket=a.socket, unit_rows=a.unit_rows,
                   shuffle_units=a.shuffle_units), None


def presign(urls, expires=6 * 3600):
    s3 = bl.s3_client()
    out = []
    for u in urls:
        b, k = s3_parts(u)
        out.append(s3.generate_presigned_url("get_object", Params={"Bucket": b, "Key": k}, ExpiresIn=expires))
    return out


def wds_decode(sample):
    import numpy as np

    meta = json.loads(sample["meta.json"])
    return np.frombuffer(sample["tokens.bin"], dtype="<i4"), meta["label"], meta["quality"]


def wds_collate(samples):
    return collate([s[0] for s in samples], [s[1] for s in samples], [s[2] for s in samples])


def wds_keep(sample) -> bool:
    return json.loads(sample["meta.json"])["quality"] > QUALITY_MIN


def wds_dataset(urls, a):
    import webdataset as wds

    pipes = [f"pipe:curl -sS --fail {u!r}" for u in presign(urls)]
    ds = wds.WebDataset(pipes, shardshuffle=len(pipes) if shuffled(a) else False,
                        seed=a.seed if shuffled(a) else None, nodesplitter=None,
                        workersplitter=wds.split_by_worker, empty_check=False)
    if a.filter:
        ds = ds.select(wds_keep)
    if shuffled(a):  # full before the first sample leaves, as a shuffle group is
        ds = ds.shuffle(buffer_rows(a), initial=buffer_rows(a), seed=a.seed)
    return ds.map(wds_decode).batched(a.batch_size, collation_fn=wds_collate, partial=True), None


def mds_collate(samples):
    return collate([s["tokens"] for s in samples], [s["label"] for s in samples], [s["quality"] for s in samples])


def streaming_dataset(urls, a, shuffle: bool):
    """MosaicML Streaming's dataset over the MDS index in urls, caching into a fresh directory;
    shuffled in blocks of buffer_rows samples when @shuffle."""
    from streaming import StreamingDataset
    from streaming.base.util import clean_stale_shared_memory

    clean_stale_shared_memory()
    os.environ.setdefault("S3_ENDPOINT_URL", os.environ["S3_ENDPOINT"])
    remote = urls[0].rsplit("/", 1)[0]  # the prefix holding index.json
    local = tempfile.mkdtemp(prefix="mds-cache-", dir=a.tmp)
    return StreamingDataset(remote=remote, local=local, shuffle=shuffle, shuffle_seed=a.seed,
                            shuffle_algo="py1br", shuffle_block_size=buffer_rows(a), batch_size=a.batch_size)


def mds_dataset(urls, a):
    return streaming_dataset(urls, a, shuffled(a)), mds_collate


def lance_batch(batch, **_) -> dict:
    """lance.torch's to_tensor_fn: the common batch from its record batch (its default converter
    takes no list columns)."""
    return arrow_batch(batch)


def lance_dataset(urls, a):
    """lance.torch.data.LanceDataset over the dataset at urls[0], read from the benchmark's S3
    endpoint; its fragments dealt to the DataLoader workers, shuffled by the seed when shuffle is
    on (scripts/bench/lance_feed.py)."""
    from lance.torch.data import LanceDataset

    from lance_feed import WorkerFragments

    storage = {"aws_endpoint": os.environ["S3_ENDPOINT"], "aws_region": os.environ.get("AWS_REGION", "us-east-1"),
               "aws_access_key_id": os.environ["AWS_ACCESS_KEY_ID"],
               "aws_secret_access_key": os.environ["AWS_SECRET_ACCESS_KEY"], "allow_http": "true"}
    return LanceDataset(urls[0], batch_size=a.batch_size, dataset_options={"storage_options": storage},
                        filter=FILTER_SQL if a.filter else None, to_tensor_fn=lance_batch,
                        sampler=WorkerFragments(shuffled(a), a.seed)), None


MODULES = {"onecopy": ["onecopy.torch"], "vortex": ["vortex", "vortex.store", "pyarrow"],
           "wds": ["webdataset"], "mds": ["streaming", "streaming.base.util"],
           "lance": ["lance", "lance.torch.data", "lance_feed"]}
# Systems whose library is not fork-safe: their DataLoader workers are spawned (lance says so at
# every fork, and lance.torch.data.get_safe_loader spawns them), the others' forked.
SPAWNED = ("lance",)


def preimport(system: str) -> None:
    """Imports a system's modules before the clock starts: an import is a one-time cost of the
    training process, not of feeding it (and forked workers inherit the modules)."""
    import importlib

    for m in MODULES[system]:
        importlib.import_module(m)


BUILDERS = {"onecopy": onecopy_dataset, "vortex": vortex_dataset, "wds": wds_dataset, "mds": mds_dataset,
            "lance": lance_dataset}


# --- one leg, in its own process -----------------------------------------------------------------

def leg(a) -> dict:
    import torch
    from torch.utils.data import DataLoader

    torch.set_num_threads(1)
    urls = json.loads(Path(a.urls_json).read_text())
    preimport(a.system)
    cpu0, t0 = bl.self_cpu(), time.perf_counter()
    ds, collate_fn = BUILDERS[a.system](urls, a)
    ctx = {"multiprocessing_context": "spawn"} if a.system in SPAWNED and a.workers else {}
    if collate_fn is None:  # the dataset yields whole batches
        loader = DataLoader(ds, batch_size=None, num_workers=a.workers, **ctx)
    else:
        loader = DataLoader(ds, batch_size=a.batch_size, num_workers=a.workers, collate_fn=collate_fn, **ctx)
    ttfb = None
    samples = nbytes = batches = 0
    tok_sum = lab_sum = 0
    q_sum = 0.0
    it = iter(loader)
    for batch in it:
        if ttfb is None:
            ttfb = time.perf_counter() - t0
        tokens = batch["tokens"]
        n = int(batch["label"].numel())
        tok_sum += int(tokens.sum(dtype=torch.int64))
        lab_sum += int(batch["label"].sum())
        q_sum += float(batch["quality"].sum())
        samples += n
        nbytes += 4 * tokens.numel() + 4 * (n + 1) + 16 * n
        batches += 1
        if a.first_batch_only:
            break
    wall = time.perf_counter() - t0
    del it, loader  # shuts the workers down, so their CPU is in RUSAGE_CHILDREN
    return {"system": a.system, "samples": samples, "bytes": nbytes, "batches": batches, "wall_s": wall,
            "ttfb_s": ttfb, "cpu_s": bl.self_cpu() - cpu0, "token_sum": tok_sum, "label_sum": lab_sum,
            "quality_sum": q_sum}


# --- shard rewrites for the new filter, in their own process ------------------------------------

def _rewrite_wds(job) -> int:
    """One rewrite process: its tar shards from S3 (curl), matching samples into a tar of the same
    name, uploaded; returns the samples kept."""
    import webdataset as wds

    urls, work, out_prefix = job
    s3 = bl.s3_client()
    bucket, prefix = s3_parts(out_prefix)
    kept = 0
    for url, signed in zip(urls, presign(urls)):
        name = url.rsplit("/", 1)[1]
        ds = wds.WebDataset([f"pipe:curl -sS --fail {signed!r}"], shardshuffle=False, nodesplitter=None,
                            workersplitter=None, empty_check=False).select(wds_keep)
        with wds.TarWriter(str(Path(work) / name)) as sink:
            for sample in ds:
                sink.write({"__key__": sample["__key__"], "tokens.bin": sample["tokens.bin"],
                            "meta.json": sample["meta.json"]})
                kept += 1
        s3.upload_file(str(Path(work) / name), bucket, f"{prefix}/{name}")
    return kept


_MDS_SOURCE = None  # the StreamingDataset that rewrite() builds before forking its processes


def _rewrite_mds(job) -> int:
    """One rewrite process: rows [begin, end) of the MDS dataset (StreamingDataset random access;
    the dataset was built before the fork, as DataLoader workers share theirs), matching samples
    into an MDS partition uploaded to out_prefix/PART."""
    from streaming import MDSWriter

    from tokens_data import MDS_COLUMNS

    part, begin, end, work, out_prefix, shard_bytes = job
    ds = _MDS_SOURCE
    kept = 0
    with MDSWriter(out=(str(Path(work) / "out" / str(part)), f"{out_prefix}/{part}"), columns=MDS_COLUMNS,
                   size_limit=int(shard_bytes)) as sink:
        for i in range(begin, end):
            sample = ds[i]
            if sample["quality"] > QUALITY_MIN:
                sink.write({"tokens": sample["tokens"], "label": int(sample["label"]),
                            "quality": float(sample["quality"])})
                kept += 1
    return kept


def rewrite(a) -> dict:
    """Rewrites the shards for `quality > 0.8` with the system's own reader and writer in
    --workers processes (the DataLoader's parallelism, without its per-sample IPC; one for
    --workers 0): read from S3,
    keep the matching samples, write new shards, upload; JSON out."""
    import multiprocessing as mp

    urls = json.loads(Path(a.urls_json).read_text())
    out_prefix = a.out_prefix  # s3://bucket/prefix
    preimport(a.system)
    import torch  # noqa: F401 - webdataset and streaming import it

    cpu0, t0 = bl.self_cpu(), time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix=f"rewrite-{a.system}-", dir=a.tmp))
    s3 = bl.s3_client()
    bucket, prefix = s3_parts(out_prefix)
    bl.delete_prefix(s3, bucket, prefix)
    os.environ.setdefault("S3_ENDPOINT_URL", os.environ["S3_ENDPOINT"])
    ctx = mp.get_context("fork")
    procs = max(1, a.workers)  # num_workers=0 loads in the training process: the rewrite takes one
    if a.system == "wds":
        jobs = [(urls[w::procs], str(work), out_prefix) for w in range(procs) if urls[w::procs]]
        with ctx.Pool(len(jobs)) as pool:
            kept = sum(pool.map(_rewrite_wds, jobs))
        new = [f"{out_prefix}/{u.rsplit('/', 1)[1]}" for u in urls]
    else:
        from streaming.base.util import merge_index

        global _MDS_SOURCE
        _MDS_SOURCE = streaming_dataset(urls, a, shuffle=False)
        rows = _MDS_SOURCE.num_samples
        jobs = [(w, rows * w // procs, rows * (w + 1) // procs, str(work), out_prefix, a.shard_bytes)
                for w in range(procs)]
        with ctx.Pool(procs) as pool:
            kept = sum(pool.map(_rewrite_mds, jobs))
        merge_index([(str(work / "out" / str(w) / "index.json"), f"{out_prefix}/{w}/index.json")
                     for w in range(procs)], (str(work / "out"), out_prefix))
        new = [f"{out_prefix}/index.json"]
    shutil.rmtree(work, ignore_errors=True)
    return {"system": a.system, "kept": kept, "rewrite_s": time.perf_counter() - t0, "cpu_s": bl.self_cpu() - cpu0,
            "urls": new}


# --- the driver ---------------------------------------------------------------------------------------

def prepare(a, systems) -> dict:
    """Each format written once per (gb, seed) under a.data and uploaded (Lance's only when it
    runs); {system: urls}."""
    from tokens_data import ensure

    s3 = bl.s3_client()
    bl.ensure_bucket(s3, a.bucket)
    urls, stored = {}, {}
    for fmt in ("vortex", "wds", "mds", *(["lance"] if "lance" in systems else [])):
        t = time.perf_counter()
        s = ensure(fmt, a.data, a.gb, a.seed)
        log(f"{fmt}: written in {time.perf_counter() - t:.1f} s (0 when kept from an earlier run)")
        t = time.perf_counter()
        prefix = f"e2e/gb{a.gb:g}-seed{a.seed}/{fmt}"
        u = upload_lance(s3, a.data / fmt, a.bucket, prefix) if fmt == "lance" else \
            bl.upload_dir(s3, a.data / fmt, a.bucket, prefix)
        log(f"{fmt}: {len(s['files'])} objects, {s['stored_bytes'] / 1e9:.3f} GB in s3://{a.bucket}/{prefix}/ "
            f"({time.perf_counter() - t:.1f} s)")
        stored[fmt] = s["stored_bytes"]
        if fmt == "mds":
            u = [x for x in u if x.endswith("/index.json")]
        urls[fmt] = u
        a.decoded = s["decoded_bytes"]
        a.rows = s["rows"]
    a.stored = stored
    return {"onecopy": urls["vortex"], "vortex": urls["vortex"], "wds": urls["wds"], "mds": urls["mds"],
            "lance": urls.get("lance")}


def upload_lance(s3, local: Path, bucket: str, prefix: str) -> list[str]:
    """Uploads the Lance dataset directory local (every folder of it) to s3://bucket/prefix/,
    emptying the prefix first unless it holds exactly the dataset's files (a rewritten dataset
    may keep a manifest's name and size); returns [the dataset's URL]."""
    files = {f"{prefix}/{p.relative_to(local)}" for p in local.rglob("*") if p.is_file()}
    have = {o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/")
            for o in page.get("Contents", [])}
    if have != files:
        bl.delete_prefix(s3, bucket, prefix)
    for d in [local, *sorted(p for p in local.rglob("*") if p.is_dir())]:
        bl.upload_dir(s3, d, bucket, f"{prefix}/{d.relative_to(local)}".removesuffix("/."))
    return [f"s3://{bucket}/{prefix}"]


def log(msg: str) -> None:
    print(f"[bench_e2e] {msg}", file=sys.stderr, flush=True)


def common_args(a, workers: int, shuffle: str) -> list[str]:
    return ["--workers", str(workers), "--shuffle", shuffle, "--batch-size", str(a.batch_size),
            "--seed", str(a.seed), "--socket", a.socket or "", "--tmp", str(a.tmp),
            "--unit-rows", str(a.unit_rows), "--shuffle-units", str(a.shuffle_units),
            "--shard-bytes", str(a.shard_bytes)]


def run_child(a, args: list[str], system: str, attempts: int = 3) -> dict | None:
    """Runs one leg or rewrite in a fresh process; a failed one is retried (up to `attempts` in
    all) and each failure is listed under the tables."""
    for attempt in range(1, attempts + 1):
        d0, s0 = bl.proc_cpu(a.daemon_pid), bl.procs_cpu(a.server_pids)
        # TMPDIR: streaming's lock files and merge_index's temporary folders stay in the run's tmp.
        p = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True,
                           env={**os.environ, "TMPDIR": str(a.tmp)})
        if p.returncode == 0:
            r = json.loads(p.stdout.strip().splitlines()[-1])
            r["daemon_cpu_s"] = bl.proc_cpu(a.daemon_pid) - d0 if system == "onecopy" else 0.0
            r["server_cpu_s"] = bl.procs_cpu(a.server_pids) - s0
            return r
        tail = [x for x in p.stderr.strip().splitlines() if "leaked shared_memory" not in x and "warnings.warn" not in x]
        tail = tail[-12:]
        where = " ".join(args[args.index("--workers"):args.index("--workers") + 4])  # workers and shuffle
        log(f"{system} {args[0]} {where}: FAILED ({p.returncode}), attempt {attempt}/{attempts}:\n  " +
            "\n  ".join(tail))
        a.notes.append(f"{NAMES[system]} ({args[0]} {where}{' --filter' if '--filter' in args else ''}): "
                       f"attempt {attempt} failed: {tail[-1] if tail else p.returncode}")
    return None


def run_leg(a, system: str, urls: list[str], workers: int, shuffle: str, filter: bool = False,
            first_only: bool = False, filtered: bool = False) -> dict | None:
    """One leg; @filter: the leg filters, @filtered: its data or its scan is filtered (so
    WebDataset and MDS shuffle as many samples as onecopy's filtered group gives)."""
    f = Path(a.tmp) / f"urls-{system}.json"
    f.write_text(json.dumps(urls))
    args = ["leg", "--system", system, "--urls-json", str(f), *common_args(a, workers, shuffle)]
    if filtered:
        args += ["--shuffle-rows", str(round(group_rows(a) * FILTER_KEPT))]
    if filter:
        args.append("--filter")
    if first_only:
        args.append("--first-batch-only")
    return run_child(a, args, system)


def epoch_legs(a, systems, urls, workers: int, shuffle: str) -> dict[str, list[dict]]:
    """--repeat epochs of every system at one (num_workers, shuffle); {system: results}."""
    epochs: dict[str, list[dict]] = {s: [] for s in systems}
    for r in range(a.repeat):
        for s in systems:
            res = run_leg(a, s, urls[s], workers, shuffle)
            if res:
                epochs[s].append(res)
                log(f"workers={workers} shuffle={shuffle} epoch {r + 1}/{a.repeat} {s}: "
                    f"{res['samples'] / res['wall_s']:.0f} samples/s, {res['bytes'] / 1e9 / res['wall_s']:.3f} GB/s, "
                    f"first batch {res['ttfb_s'] * 1e3:.0f} ms")
    return epochs


def pushed_down(res: dict | None) -> dict | None:
    """A first batch under the new filter with no rewrite before it."""
    if res:
        res["rewrite_s"] = 0.0
        res["rewrite_cpu_s"] = 0.0
    return res


def filter_legs(a, systems, urls, workers: int, shuffle: str) -> dict[str, list[dict]]:
    """The filter changes to quality > 0.8: first batches, after the rewrites WebDataset and
    MDS need, and the filtered epochs of the systems that push the filter down; {system (or
    "wds-select"): results}."""
    filt: dict[str, list[dict]] = {}
    for r in range(a.repeat):
        for s in systems:
            if s in PUSHDOWN:  # the whole filtered epoch: its first batch, then its rate
                res = pushed_down(run_leg(a, s, urls[s], workers, shuffle, filter=True))
                if res:
                    filt.setdefault(s, []).append(res)
            else:
                if s == "wds":  # no rewrite: .select() in the stream, every byte still read
                    res = pushed_down(run_leg(a, s, urls[s], workers, shuffle, filter=True, first_only=True,
                                              filtered=True))
                    if res:
                        filt.setdefault("wds-select", []).append(res)
                f = Path(a.tmp) / f"urls-{s}.json"
                f.write_text(json.dumps(urls[s]))
                out_prefix = f"s3://{a.bucket}/e2e/gb{a.gb:g}-seed{a.seed}/{s}-quality-gt-0.8"
                rw = run_child(a, ["rewrite", "--system", s, "--urls-json", str(f), "--out-prefix", out_prefix,
                                   *common_args(a, workers, shuffle)], s)
                if not rw:
                    continue
                res = run_leg(a, s, rw["urls"], workers, shuffle, first_only=True, filtered=True)
                if res:
                    res["rewrite_s"] = rw["rewrite_s"]
                    res["rewrite_cpu_s"] = rw["cpu_s"] + rw["server_cpu_s"]
                    res["kept"] = rw["kept"]
                    filt.setdefault(s, []).append(res)
            if filt.get(s):
                x = filt[s][-1]
                log(f"workers={workers} filter {r + 1}/{a.repeat} {s}: rewrite {x['rewrite_s']:.2f} s + first batch "
                    f"{x['ttfb_s'] * 1e3:.0f} ms")
    return filt


def run(a) -> None:
    a.notes = []
    a.tmp = Path(tempfile.mkdtemp(prefix="e2e-", dir=a.tmp_root))
    systems = [s for s in a.systems.split(",") if s]
    # Installs (pylance, matplotlib) before anything is timed.
    if "lance" in systems and (why := charts.ensure_lance()):
        log(f"lance: skipped ({why})")
        a.notes.append(f"{NAMES['lance']}: skipped, {why}")
        systems.remove("lance")
    if a.chart_dir and (why := charts.ensure_matplotlib()):
        log(f"charts will be skipped: {why}")
    urls = prepare(a, systems)
    if "onecopy" in systems:
        try:
            import onecopy.torch  # noqa: F401
        except ImportError as e:
            log(f"onecopy: skipped ({e})")
            a.notes.append(f"{NAMES['onecopy']}: skipped, onecopy.torch is not importable ({e})")
            systems.remove("onecopy")
    # Untimed: one first batch per system, so no system pays for warming the S3 server, onecopyd,
    # the page cache of Python's modules or the first connection.
    for s in systems:
        run_leg(a, s, urls[s], a.workers[0], a.shuffles[0], first_only=True)
    tables = [(w, m, epoch_legs(a, systems, urls, w, m)) for w in a.workers for m in a.shuffles]
    filters = [(w, filter_legs(a, systems, urls, w, a.shuffles[0])) for w in a.workers]
    epoch_cells = [(w, m, report_epochs(a, systems, epochs, w, m)) for w, m, epochs in tables]
    filter_cells = [(w, report_filter(a, systems, filt, w, a.shuffles[0])) for w, filt in filters]
    for n in a.notes:
        print(f"- {n}")
    if a.chart_dir:
        title = (f"bench_e2e: {a.rows:,} samples, {a.decoded / 1e9:.3f} GB decoded, from {a.server}; "
                 f"batch {a.batch_size}; median of {a.repeat}")
        for line in e2e_chart.draw(Path(a.chart_dir), epoch_cells, filter_cells, NAMES, title):
            print(line)


def shuffle_work(a, shuffle: str) -> dict[str, str]:
    """What each system's shuffle does at @shuffle, for the line under its table."""
    if shuffle == "none":
        return {s: "none (files and shards in order, rows in order)" for s in SYSTEMS}
    g = f"{group_rows(a):,}"
    units = f"units of up to {a.unit_rows:,} rows shuffled across all files, rows permuted within groups of " \
            f"{a.shuffle_units} units ({g} rows held"
    return {"onecopy": units + ", the next group read ahead)", "vortex": units + ", the same plan)",
            "wds": f"shard order shuffled, then a shuffle buffer of {g} samples, full before the first leaves",
            "mds": f"shard order shuffled, samples permuted within blocks of 0.75-1.25 x {g} (py1br)",
            "lance": "fragment order shuffled by the seed (ShardedFragmentSampler, randomize=True; a fragment "
                     "per shard), rows in stored order within a fragment (lance.torch has no row shuffle for "
                     "a streamed dataset)"}


def report_epochs(a, systems, epochs, workers: int, shuffle: str) -> dict:
    """Prints the table of one (num_workers, shuffle); returns its cells, {system: {"sps", "gbps",
    "ttfb" (ms), "client", "server", "total" (CPU s/GB), ...}}."""
    base = "onecopy" if epochs.get("onecopy") else None
    cells = {}
    for s in systems:
        rs = epochs.get(s) or []
        if not rs:
            continue
        gb = [r["bytes"] / 1e9 for r in rs]
        cells[s] = {
            "sps": bl.median(r["samples"] / r["wall_s"] for r in rs),
            "gbps": bl.median(g / r["wall_s"] for g, r in zip(gb, rs)),
            "ttfb": bl.median(r["ttfb_s"] * 1e3 for r in rs),
            "client": bl.median((r["cpu_s"] + r["daemon_cpu_s"]) / g for g, r in zip(gb, rs)),
            "server": bl.median(r["server_cpu_s"] / g for g, r in zip(gb, rs)),
            "total": bl.median((r["cpu_s"] + r["daemon_cpu_s"] + r["server_cpu_s"]) / g for g, r in zip(gb, rs)),
            "samples": rs[0]["samples"], "token_sum": rs[0]["token_sum"],
        }
    ref = cells.get(base) if base else None
    print()
    print(f"### DataLoader num_workers={workers}, shuffle {shuffle}")
    print()
    print(f"One epoch over {a.rows:,} samples, {a.decoded / 1e9:.3f} GB decoded, from {a.server} on loopback; "
          f"DataLoader num_workers={workers}, batch {a.batch_size} samples; median of {a.repeat}; the loop sums "
          "every token, label and quality. CPU s/GB: training process + DataLoader workers + their children "
          "(+ onecopyd); S3 server apart; total = both." + (" Ratios: system / onecopy." if ref else ""))
    print()
    rows = []
    for s in systems:
        c = cells.get(s)
        if not c:
            rows.append([NAMES[s], "—", "—", "—", "—", "—", "—", "—", "—", "—"])
            continue
        same = "yes" if c["samples"] == a.rows and c["token_sum"] == next(iter(cells.values()))["token_sum"] \
            else f"**{c['samples']} samples**"
        rows.append([NAMES[s], f"{a.stored['vortex' if s in ('onecopy', 'vortex') else s] / 1e9:.3f}",
                     bl.fmt(c["sps"], ",.0f"), bl.fmt(c["gbps"], ".3f"), bl.fmt(c["ttfb"], ".0f"),
                     bl.fmt(c["client"], ".2f"), bl.fmt(c["server"], ".2f"), bl.fmt(c["total"], ".2f"),
                     (f"{bl.ratio(c['sps'], ref['sps'])} / {bl.ratio(c['total'], ref['total'])}" if ref else "—"),
                     same])
    print(bl.table(["system", "stored GB", "samples/s", "GB/s", "first batch ms", "CPU s/GB client",
                    "CPU s/GB S3 server", "CPU s/GB total", "samples/s, CPU vs onecopy", "all samples"], rows))
    print()
    work = shuffle_work(a, shuffle)
    print(f"Shuffle, {'in each DataLoader worker' if workers else 'in the training process'}: " +
          "; ".join(f"{NAMES[s]}: {work[s]}" for s in systems) + ".")
    spawned = [NAMES[s] for s in systems if s in SPAWNED]
    if workers and spawned:
        print(f"Workers spawned, not forked, for {', '.join(spawned)} (not fork-safe; lance.torch's own loader "
              "spawns them too): their start, a fresh interpreter importing torch, is in the epoch's time.")
    return cells


def report_filter(a, systems, filt, workers: int, shuffle: str) -> dict:
    """Prints the new filter's table; returns {system: (rewrite s, first batch s, total s, filtered
    epoch samples/s or None)}."""
    print()
    print(f"### New filter, DataLoader num_workers={workers}, shuffle {shuffle}")
    print()
    print(f"New filter `{FILTER_SQL}` (about 20% of the samples): time to the first batch, shard rewrites "
          f"included (rewrite: read from S3 with the system's own reader in {max(1, workers)} process(es), filter, "
          "write with its own writer, upload).")
    print()
    rows, cells, rates = [], {}, {}
    names = dict(NAMES, **{"wds-select": "WebDataset, .select() in the stream (no rewrite)"})
    for s in [x for x in ("onecopy", "vortex", "lance", "wds-select", "wds", "mds") if x in filt or x in systems]:
        rs = filt.get(s) or []
        if not rs:
            rows.append([names[s], "—", "—", "—", "—"])
            continue
        how = "pushed into the scan" if s in PUSHDOWN else (
            "filter in the stream" if s == "wds-select" else "rewrite shards")
        rw = bl.median(r["rewrite_s"] for r in rs)
        ttfb = bl.median(r["ttfb_s"] for r in rs)
        tot = bl.median(r["rewrite_s"] + r["ttfb_s"] for r in rs)
        cells[s] = (rw, ttfb, tot, None)
        epoch = ["—"] * 4
        if s in PUSHDOWN:
            rate = bl.median(r["samples"] / r["wall_s"] for r in rs)
            client = bl.median((r["cpu_s"] + r["daemon_cpu_s"]) / (r["bytes"] / 1e9) for r in rs)
            total = bl.median((r["cpu_s"] + r["daemon_cpu_s"] + r["server_cpu_s"]) / (r["bytes"] / 1e9) for r in rs)
            rates[s] = rate
            cells[s] = (rw, ttfb, tot, rate)
            epoch = [bl.fmt(rate, ",.0f"), bl.fmt(client, ".2f"), bl.fmt(total, ".2f"),
                     f"{rates['onecopy'] / rate:.2f}x" if "onecopy" in rates else "—"]
        rows.append([names[s], how, bl.fmt(rw, ".2f"), bl.fmt(ttfb * 1e3, ".0f"), bl.fmt(tot, ".2f"), *epoch])
    print(bl.table(["system", "how", "rewrite s", "first batch ms", "total s to first batch",
                    "filtered epoch samples/s", "CPU s/GB client", "CPU s/GB total", "onecopy faster"], rows))
    print()
    print("Filtered epoch: the whole epoch under the filter of each system that pushes it down, in the same leg as "
          "its first batch: samples/s over the leg's wall time; CPU s/GB of the bytes delivered, as in the epoch "
          "tables (client: training process, workers and onecopyd; total: with the S3 server); onecopy faster: "
          "onecopy's samples/s over the system's.")
    if shuffle == "group":
        print()
        print(f"Shuffle as in the epochs, but WebDataset's buffer and MDS's blocks hold "
              f"{round(group_rows(a) * FILTER_KEPT):,} samples: what onecopy's and vortex-data's groups of "
              f"{group_rows(a):,} rows give under the filter.")
    return cells


def int_list(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def shuffle_list(text: str) -> list[str]:
    modes = [x for x in text.split(",") if x]
    bad = [m for m in modes if m not in SHUFFLES]
    if bad or not modes:
        raise argparse.ArgumentTypeError(f"shuffle modes are {','.join(SHUFFLES)}, not {text!r}")
    return modes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("leg", "rewrite", "run"):
        p = sub.add_parser(name)
        if name == "run":  # every count and mode listed is a table of its own
            p.add_argument("--workers", type=int_list, default=[2])
            p.add_argument("--shuffle", dest="shuffles", type=shuffle_list, default=["group"])
        else:
            p.add_argument("--workers", type=int, default=2)
            p.add_argument("--shuffle", choices=SHUFFLES, default="group")
        p.add_argument("--batch-size", type=int, default=256)
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--socket", default=None)
        p.add_argument("--tmp", default=None)
        p.add_argument("--unit-rows", type=int, default=8192)  # onecopy.torch.Dataset's defaults
        p.add_argument("--shuffle-units", type=int, default=8)
        p.add_argument("--shard-bytes", type=float, default=256e6)
        if name in ("leg", "rewrite"):
            p.add_argument("--shuffle-rows", type=int, default=0, help="WebDataset's buffer, MDS's blocks "
                           "(0: --unit-rows x --shuffle-units)")
            p.add_argument("--system", choices=SYSTEMS, required=True)
            p.add_argument("--urls-json", required=True)
        if name == "leg":
            p.add_argument("--filter", action="store_true")
            p.add_argument("--first-batch-only", action="store_true")
        if name == "rewrite":
            p.add_argument("--out-prefix", required=True)
        if name == "run":
            p.add_argument("--daemon-pid", type=int, default=0)
            p.add_argument("--server-pids", default="")
            p.add_argument("--server", default="ceph")
            p.add_argument("--data", type=Path, required=True)
            p.add_argument("--gb", type=float, default=2.0)
            p.add_argument("--repeat", type=int, default=1)
            p.add_argument("--bucket", default="bench")
            p.add_argument("--systems", default=",".join(SYSTEMS))
            p.add_argument("--tmp-root", default=None)
            p.add_argument("--chart-dir", default="", help="directory of the charts' PNGs ('' for none)")
    a = ap.parse_args()
    if a.socket == "":
        a.socket = None
    if a.cmd == "leg":
        print(json.dumps(leg(a)))
    elif a.cmd == "rewrite":
        print(json.dumps(rewrite(a)))
    else:
        a.server_pids = [int(p) for p in a.server_pids.split(",") if p]
        run(a)


if __name__ == "__main__":
    main()
