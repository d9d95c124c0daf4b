# SPDX-License-Identifier: Apache-2.0
"""The driver of scripts/bench_cache.sh: what a second epoch and a second job cost in S3 requests,
bytes and time, for onecopy (through onecopyd), MosaicML Streaming and vortex-data in-process.

    cache_bench.py run --files 40,320 --proxy URL --socket S --onecopy CLI --data DIR --tmp DIR ...
    cache_bench.py write N OUT --seed S       # (child) N Vortex files and N MDS shards into OUT
    cache_bench.py job --leg L --files N ...  # (child) one job: its phases, one JSON line each

Data (per file count N, written once under --data/N and reused): N files of 256 rows, ids
running on across files, `tokens` list<int32> of 24 to 72 tokens (uniform, values in
[0, 50257)), `quality` float64 (3 digits), file i drawn from numpy's default_rng([seed, i]):
about 32 KB per Vortex file (vortex-data's writer). The same rows as MDS (MDSWriter, columns
int64 / ndarray:int32 / float64, no compression), cut into one shard per Vortex file at each
file's end (size_limit, 64 MiB, is above any shard), so both are N objects (+ index.json).
Uploaded straight to the S3 server ($S3_ENDPOINT) as s3://bench/cache-N/part-00000.vortex ...
and s3://bench/cache-N-mds/.

Legs, each reading every row of the three columns through the counting proxy
(scripts/bench/count_proxy.py) with DataLoader(num_workers=0), batches of 64 rows, unshuffled,
and the same consumer (rows, tokens, and the sums of token values and ids, which must agree
across legs):
  onecopy    onecopy.torch.Dataset("s3://bench/cache-N/", batch_rows=64, shuffle=False) served
             by onecopyd (whose AWS_ENDPOINT_URL is the proxy); DataLoader(batch_size=None).
             "onecopy (manifest)" when `onecopy index` exists and wrote the dataset's manifest.
  streaming  streaming.StreamingDataset(remote="s3://bench/cache-N-mds/", local=a fresh directory
             per run, batch_size=64, shuffle=False), its boto3 pointed at the proxy by
             S3_ENDPOINT_URL (streaming/base/storage/download.py passes it as endpoint_url);
             DataLoader(batch_size=64, collate_fn=the common batch).
  vortex     vortex-data in-process: the keys listed once with boto3 (through the proxy), each
             object opened with vortex.open(key, store=S3Store(endpoint=proxy)) at every epoch
             and read whole, cut into batches of 64 rows; DataLoader(batch_size=None).
Phases: job A epoch 0 and epoch 1 in one process, then job B epoch 0 in a new process (Streaming's
job B reuses job A's `local`). The proxy's counters are zeroed at each phase's start; "before the
first batch" counts from then (after the imports, before the dataset is built in epoch 0) to the
first batch out of the DataLoader; samples/s is over the whole phase.

Writes a Markdown table and ratios to stdout, the results as JSON (--results) and a chart
(--chart, scripts/bench/cache_chart.py).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402

ROWS, MIN_LEN, MAX_LEN, VOCAB, BATCH = 256, 24, 72, 50_257, 64
COLUMNS = ["id", "tokens", "quality"]
MDS_COLUMNS = {"id": "int64", "tokens": "ndarray:int32", "quality": "float64"}
DATA_VERSION = 1  # bump when the generator changes: cached data is rewritten
BUCKET = "bench"
LEGS = ["onecopy", "streaming", "vortex"]
NAMES = {"onecopy": "onecopy", "streaming": "Streaming (MDS)", "vortex": "vortex-data"}
PHASES = ["A epoch 0", "A epoch 1", "B epoch 0"]
SUMS = ("samples", "tokens", "token_sum", "id_sum")


def log(msg: str) -> None:
    print(f"[bench_cache] {msg}", file=sys.stderr, flush=True)


# --- data -----------------------------------------------------------------------------------------

def file_table(seed: int, i: int):
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng([seed, i])
    lengths = rng.integers(MIN_LEN, MAX_LEN + 1, ROWS)
    offsets = np.zeros(ROWS + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    tokens = rng.integers(0, VOCAB, int(offsets[-1]), dtype=np.int32)
    return pa.table({
        "id": pa.array(np.arange(i * ROWS, (i + 1) * ROWS, dtype=np.int64)),
        "tokens": pa.ListArray.from_arrays(pa.array(offsets), pa.array(tokens)),
        "quality": pa.array(np.round(rng.random(ROWS), 3)),
    })


def write(a) -> None:
    """N Vortex files into OUT/vortex and the same rows as N MDS shards into OUT/mds; prints the
    summary (the sums every leg must reproduce)."""
    import vortex as vx
    from streaming import MDSWriter

    (a.out / "vortex").mkdir(parents=True)
    mds = MDSWriter(out=str(a.out / "mds"), columns=MDS_COLUMNS, size_limit=1 << 26)
    sums = dict.fromkeys(SUMS, 0)
    for i in range(a.n):
        t = file_table(a.seed, i)
        vx.io.write(t, str(a.out / "vortex" / f"part-{i:05d}.vortex"))
        tokens = t.column("tokens").combine_chunks()
        offsets, values, ids = tokens.offsets.to_numpy(), tokens.values.to_numpy(), t.column("id").to_numpy()
        quality = t.column("quality").to_numpy()
        for r in range(ROWS):
            mds.write({"id": int(ids[r]), "tokens": values[offsets[r]:offsets[r + 1]], "quality": float(quality[r])})
        # One shard per Vortex file: the two calls MDSWriter.write makes when a shard is full
        # (streaming/base/format/base/writer.py; size_limit alone cannot cut at a file's end,
        # as samples differ in size).
        mds.flush_shard()
        mds._reset_cache()
        sums["samples"] += ROWS
        sums["tokens"] += len(values)
        sums["token_sum"] += int(values.sum(dtype="int64"))
        sums["id_sum"] += int(ids.sum())
    mds.finish()
    shards = [p for p in (a.out / "mds").iterdir() if p.suffix == ".mds"]
    if len(shards) != a.n:
        sys.exit(f"MDSWriter wrote {len(shards)} shards for {a.n} files")
    stored = {fmt: sum(p.stat().st_size for p in (a.out / fmt).iterdir()) for fmt in ("vortex", "mds")}
    json.dump({"files": a.n, "seed": a.seed, "version": DATA_VERSION, "sums": sums, "stored_bytes": stored},
              sys.stdout)


def ensure_data(root: Path, n: int, seed: int) -> dict:
    """root/N's summary, writing the data first (in a child: it imports Streaming and torch)
    unless its summary says it was written for (n, seed, DATA_VERSION)."""
    import shutil

    out, stamp = root / str(n), root / str(n) / "summary.json"
    s = json.loads(stamp.read_text()) if stamp.exists() else {}
    if (s.get("files"), s.get("seed"), s.get("version")) == (n, seed, DATA_VERSION):
        return s
    shutil.rmtree(out, ignore_errors=True)
    log(f"writing {n} Vortex files and {n} MDS shards into {out}")
    tmp = root / f"{n}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    got = subprocess.run([sys.executable, __file__, "write", str(n), str(tmp), "--seed", str(seed)],
                         check=True, stdout=subprocess.PIPE, text=True).stdout
    (tmp / "summary.json").write_text(got)
    tmp.rename(out)  # last: a directory under its name is complete
    return json.loads(got)


# --- the counting proxy ---------------------------------------------------------------------------

def proxy_counts(proxy: str, zero: bool = False) -> dict:
    req = urllib.request.Request(f"{proxy}/__count__", method="DELETE" if zero else "GET")
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)


# --- the legs (in the job process) ----------------------------------------------------------------

def common_batch(ids, values, offsets, quality) -> dict:
    """The batch every leg hands its consumer: numpy arrays as tensors, offsets from 0."""
    import torch

    return {"id": torch.from_numpy(ids), "tokens": torch.from_numpy(values),
            "tokens.offsets": torch.from_numpy(offsets - offsets[0]), "quality": torch.from_numpy(quality)}


def mds_collate(samples: list) -> dict:
    import numpy as np

    offsets = np.zeros(len(samples) + 1, dtype=np.int32)
    np.cumsum([len(s["tokens"]) for s in samples], out=offsets[1:])
    return common_batch(np.fromiter((s["id"] for s in samples), np.int64, len(samples)),
                        np.concatenate([s["tokens"] for s in samples]), offsets,
                        np.fromiter((s["quality"] for s in samples), np.float64, len(samples)))


def arrow_batch(rb) -> dict:
    import numpy as np

    tokens = rb.column("tokens")
    offsets = tokens.offsets.to_numpy()
    values = tokens.values.slice(offsets[0], offsets[-1] - offsets[0]).to_numpy()
    return common_batch(rb.column("id").to_numpy(), np.asarray(values), offsets, rb.column("quality").to_numpy())


def consume(batch: dict, acc: dict) -> None:
    """Touches every sample: its id, its tokens (count and values)."""
    import torch

    offsets = batch["tokens.offsets"]
    b, e = int(offsets[0]), int(offsets[-1])
    acc["samples"] += int(batch["id"].numel())
    acc["tokens"] += e - b
    acc["token_sum"] += int(batch["tokens"][b:e].sum(dtype=torch.int64))
    acc["id_sum"] += int(batch["id"].sum())


class VortexObjects:
    """vortex-data over every object of an S3 prefix: listed once (boto3), each object opened and
    read whole at every iteration, in batches of BATCH rows (an IterableDataset with
    torch's class mixed in by vortex_loader)."""

    def __init__(self, prefix: str, proxy: str):
        import boto3
        from botocore.config import Config

        self.proxy = proxy
        s3 = boto3.client("s3", endpoint_url=proxy, region_name=os.environ.get("AWS_REGION", "us-east-1"),
                          config=Config(s3={"addressing_style": "path"}))
        # The data files, as onecopy expands the prefix: onecopy's manifest (_onecopy/) is not data.
        self.keys = [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
                     for o in page.get("Contents", []) if o["Key"].endswith(".vortex") and "/_onecopy/" not in o["Key"]]

    def __iter__(self):
        import vortex as vx
        from vortex.store import S3Store

        store = S3Store(BUCKET, endpoint=self.proxy, region=os.environ.get("AWS_REGION", "us-east-1"),
                        access_key_id=os.environ["AWS_ACCESS_KEY_ID"],
                        secret_access_key=os.environ["AWS_SECRET_ACCESS_KEY"], client_options={"allow_http": True})
        for key in self.keys:
            table = vx.open(key, store=store).scan(COLUMNS).to_arrow().read_all().combine_chunks()
            for rb in table.to_batches(max_chunksize=BATCH):
                yield arrow_batch(rb)


def loader(a):
    """(DataLoader, set_epoch) for @a.leg over the files of @a.files; builds the dataset."""
    import torch.utils.data as tud

    if a.leg == "onecopy":
        from onecopy.torch import Dataset

        ds = Dataset(f"s3://{BUCKET}/cache-{a.files}/", columns=COLUMNS, batch_rows=BATCH, shuffle=False,
                     socket=a.socket)
        return tud.DataLoader(ds, batch_size=None, num_workers=0), ds.set_epoch
    if a.leg == "streaming":
        from streaming import StreamingDataset

        ds = StreamingDataset(remote=f"s3://{BUCKET}/cache-{a.files}-mds/", local=a.local, batch_size=BATCH,
                              shuffle=False)
        return tud.DataLoader(ds, batch_size=BATCH, num_workers=0, collate_fn=mds_collate), None

    class _DS(VortexObjects, tud.IterableDataset):
        pass

    return tud.DataLoader(_DS(f"cache-{a.files}/", a.proxy), batch_size=None, num_workers=0), None


def job(a) -> None:
    """One job process: its phases, one JSON line each on stdout."""
    import warnings

    import torch

    torch.set_num_threads(1)
    # vortex-data's columns arrive as read-only numpy views of Arrow buffers, passed on uncopied.
    warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
    if a.leg == "onecopy":
        import onecopy.torch  # noqa: F401
    elif a.leg == "streaming":
        import streaming
        from streaming.base.util import clean_stale_shared_memory

        clean_stale_shared_memory()  # a job A that ended leaves its shared memory behind
        os.environ["S3_ENDPOINT_URL"] = a.proxy  # what Streaming's S3 downloader reads
        log(f"streaming {streaming.__version__}, S3_ENDPOINT_URL={a.proxy}")
    else:
        import vortex  # noqa: F401
        import vortex.store  # noqa: F401
    dl = set_epoch = None
    for epoch, phase in zip(a.epochs, a.phases):
        proxy_counts(a.proxy, zero=True)
        t0 = time.perf_counter()
        if dl is None:
            dl, set_epoch = loader(a)
        if set_epoch is not None:
            set_epoch(epoch)
        acc = dict.fromkeys(SUMS, 0)
        first = first_requests = None
        for batch in dl:
            if first is None:
                first = time.perf_counter() - t0
                first_requests = proxy_counts(a.proxy)["requests"]
            consume(batch, acc)
        wall = time.perf_counter() - t0
        c = proxy_counts(a.proxy)
        print(json.dumps({"phase": phase, "first_batch_s": first, "first_batch_requests": first_requests,
                          "wall_s": wall, "requests": c["requests"], "bytes": c["bytes"],
                          "by_class": c["by_class"], **acc}), flush=True)


# --- the run (the orchestrator) -------------------------------------------------------------------

def run_job(a, leg: str, n: int, phases: list[str], epochs: list[int], local: Path) -> list[dict]:
    cmd = [sys.executable, __file__, "job", "--leg", leg, "--files", str(n), "--proxy", a.proxy,
           "--socket", a.socket, "--local", str(local), "--phases", ",".join(phases),
           "--epochs", ",".join(map(str, epochs))]
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, timeout=3600).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def onecopy_index(a, n: int) -> bool:
    """Writes the manifest of cache-N with `onecopy index` when this build has it (straight to the
    S3 server, not counted); False when it has not."""
    # In this process's Python (which has vortex-data), reading the footers itself: the daemon
    # under test starts the leg with nothing cached.
    env = dict(os.environ, AWS_ENDPOINT_URL=os.environ["S3_ENDPOINT"], ONECOPY_PYTHON=sys.executable,
               ONECOPY_SOCKET="")
    if subprocess.run([a.onecopy, "index", "--help"], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL, env=env).returncode != 0:
        return False
    subprocess.run([a.onecopy, "index", "--in-process", f"s3://{BUCKET}/cache-{n}/"], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    return True


def run(a) -> None:
    files = [int(x) for x in a.files.split(",") if x]
    legs = [x for x in a.legs.split(",") if x]
    if unknown := set(legs) - set(LEGS):
        sys.exit(f"unknown legs {sorted(unknown)} (of {','.join(LEGS)})")
    s3 = bl.s3_client()
    bl.ensure_bucket(s3, BUCKET)
    results = {"rate_bits_per_s": a.rate, "seed": a.seed, "batch_rows": BATCH, "rows_per_file": ROWS,
               "runs": [], "data": {}, "reproduce": a.reproduce}
    manifest_note = None
    for n in files:
        t_n = time.perf_counter()
        summary = ensure_data(a.data, n, a.seed)
        results["data"][n] = summary
        for fmt, prefix in (("vortex", f"cache-{n}"), ("mds", f"cache-{n}-mds")):
            bl.upload_dir(s3, a.data / str(n) / fmt, BUCKET, prefix)
        st = summary["stored_bytes"]
        log(f"{n} files: Vortex {st['vortex'] / n / 1e3:.1f} KB per file, MDS {st['mds'] / n / 1e3:.1f} KB per shard "
            f"(index.json included), {summary['sums']['samples']:,} samples, uploaded")
        for leg in legs:
            name = NAMES[leg]
            if leg == "onecopy":
                if onecopy_index(a, n):
                    name = "onecopy (manifest)"
                elif manifest_note is None:
                    manifest_note = ("manifest leg skipped: this build has no `onecopy index` "
                                     f"({a.onecopy} index --help fails), so onecopy runs without a manifest")
                    log(manifest_note)
            local = a.tmp / f"streaming-local-{n}"
            t_leg = time.perf_counter()
            rows = run_job(a, leg, n, PHASES[:2], [0, 1], local) + run_job(a, leg, n, PHASES[2:], [0], local)
            for r in rows:
                r.update(files=n, leg=leg, name=name,
                         sums_ok=all(r[k] == summary["sums"][k] for k in SUMS))
                if not r["sums_ok"]:
                    log(f"WARNING: {name} {r['phase']} read {[r[k] for k in SUMS]}, the data holds "
                        f"{[summary['sums'][k] for k in SUMS]} ({', '.join(SUMS)})")
            results["runs"] += rows
            log(f"{n} files, {name}: {time.perf_counter() - t_leg:.1f} s")
        log(f"{n} files: {time.perf_counter() - t_n:.1f} s")
    results["manifest_note"] = manifest_note
    a.results.parent.mkdir(parents=True, exist_ok=True)
    a.results.write_text(json.dumps(results, indent=1))
    report(results, legs)
    print(f"\nresults: {a.results}")
    if a.chart:
        from cache_chart import draw

        print(draw(Path(a.chart), results))
    print(f"reproduce: {a.reproduce}")


def report(results: dict, legs: list[str]) -> None:
    runs = results["runs"]
    rate = results["rate_bits_per_s"]
    print(f"\n## S3 traffic of a second epoch and a second job ({results['rows_per_file']} rows per file, "
          f"batches of {results['batch_rows']}, DataLoader num_workers=0, "
          f"link {'unthrottled' if not rate else f'{rate / 1e9:g} Gbit/s'})\n")
    rows = []
    for r in runs:
        rows.append([str(r["files"]), r["name"], r["phase"], bl.fmt(r["first_batch_requests"], "d"),
                     bl.fmt(r["first_batch_s"], ".3f"), str(r["requests"]), f"{r['bytes'] / 1e6:.2f}",
                     f"{r['samples'] / r['wall_s']:,.0f}" + ("" if r["sums_ok"] else " (wrong rows!)")])
    print(bl.table(["files", "leg", "phase", "requests before first batch", "s to first batch", "S3 requests",
                    "S3 MB", "samples/s"], rows))
    kinds = [k for k in ("LIST", "HEAD", "GET", "RANGE", "PUT", "OTHER") if any(k in r["by_class"] for r in runs)]
    print("\nS3 requests by kind (scripts/bench/count_proxy.py: GET is without Range, RANGE with), and their "
          "bodies' MB:\n")
    print(bl.table(["files", "leg", "phase"] + kinds,
                   [[str(r["files"]), r["name"], r["phase"]] +
                    [f"{c['requests']} ({c['bytes'] / 1e6:.2f} MB)" if (c := r["by_class"].get(k)) else "0"
                     for k in kinds] for r in runs]))
    by = {(r["files"], r["leg"], r["phase"]): r for r in runs}
    files = sorted({r["files"] for r in runs})
    print("\nBytes of a later phase over epoch 0's (1.00: read all again; 0: served from a cache):\n")
    rows = []
    for n in files:
        for leg in legs:
            e0, e1, b0 = (by.get((n, leg, p)) for p in PHASES)
            if e0:
                rows.append([str(n), e0["name"], bl.ratio(e1["bytes"], e0["bytes"]).rstrip("×"),
                             bl.ratio(b0["bytes"], e0["bytes"]).rstrip("×")])
    print(bl.table(["files", "leg", "epoch-1 bytes / epoch-0 bytes", "job-B bytes / epoch-0 bytes"], rows))
    if "onecopy" in legs and "streaming" in legs:
        print("\nonecopy / Streaming samples/s:\n")
        rows = []
        for n in files:
            rows.append([str(n)] + [bl.ratio(by[(n, "onecopy", p)]["samples"] / by[(n, "onecopy", p)]["wall_s"],
                                             by[(n, "streaming", p)]["samples"] / by[(n, "streaming", p)]["wall_s"])
                                    for p in PHASES])
        print(bl.table(["files"] + PHASES, rows))
    bad = [r for r in runs if not r["sums_ok"]]
    print("\nevery leg and phase read all the rows: samples, tokens and the sums of token values and ids "
          "match the data" if not bad else f"\nWARNING: {len(bad)} phases did not read the data's rows")
    if results.get("manifest_note"):
        print(results["manifest_note"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("n", type=int)
    w.add_argument("out", type=Path)
    w.add_argument("--seed", type=int, default=0)
    j = sub.add_parser("job")
    j.add_argument("--leg", choices=LEGS, required=True)
    j.add_argument("--files", type=int, required=True)
    j.add_argument("--proxy", required=True)
    j.add_argument("--socket", required=True)
    j.add_argument("--local", required=True, help="Streaming's local cache directory")
    j.add_argument("--phases", type=lambda s: s.split(","), required=True)
    j.add_argument("--epochs", type=lambda s: [int(x) for x in s.split(",")], required=True)
    r = sub.add_parser("run")
    r.add_argument("--files", default="40,320,2560")
    r.add_argument("--legs", default=",".join(LEGS))
    r.add_argument("--rate", type=float, default=1e9, help="the proxy's throttle (bits/s; 0: none)")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--proxy", required=True, help="the counting proxy's URL")
    r.add_argument("--socket", required=True, help="onecopyd's socket")
    r.add_argument("--onecopy", required=True, help="the onecopy CLI")
    r.add_argument("--data", type=Path, required=True, help="where the data is written and kept")
    r.add_argument("--tmp", type=Path, required=True, help="Streaming's local directories go here")
    r.add_argument("--results", type=Path, required=True)
    r.add_argument("--chart", default="")
    r.add_argument("--reproduce", default="")
    a = ap.parse_args()
    {"write": write, "job": job, "run": run}[a.cmd](a)


if __name__ == "__main__":
    main()
