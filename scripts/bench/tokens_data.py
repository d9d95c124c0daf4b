# SPDX-License-Identifier: Apache-2.0
"""The benchmark dataset of scripts/bench_daemon.sh and scripts/bench_e2e.sh, from one seeded
generator: token sequences with metadata, the shape of an LLM training set.

Columns: `tokens` list<int32> (lengths uniform in [64, 960], values uniform in [0, 50257)),
`label` int64 and `quality` float64 (uniform in [0, 1), rounded to 3 digits, so
`quality > 0.8` keeps about 20% of the rows). "GB" is 1e9 decoded bytes, counted as the
benchmarks count them: 4 per token, 4 per list offset, 8 for label and 8 for quality.

Shard s of n holds rows drawn from numpy's default_rng([seed, s]), so every format written from
the same (gb, seed) holds the same samples in the same shards and the same order:

    python tokens_data.py vortex DIR --gb 0.05     # DIR/tokens-00000.vortex ...
    python tokens_data.py wds DIR --gb 0.05        # DIR/tokens-00000.tar ... (WebDataset)
    python tokens_data.py mds DIR --gb 0.05        # DIR/index.json, DIR/shard.*.mds (MosaicML)
    python tokens_data.py lance DIR --gb 0.05      # DIR a Lance dataset (pylance's defaults),
                                                   # a fragment per shard
    python tokens_data.py parquet DIR --gb 0.05    # DIR/tokens-00000.parquet ... (the source that
                                                   # scripts/bench/convert_bench.py converts)

Each prints a JSON summary (rows, decoded bytes, shards, files, bytes on disk) on stdout;
ensure() writes a format once under a directory and keeps its summary beside it.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pyarrow as pa

MIN_LEN, MAX_LEN, VOCAB = 64, 960, 50_257
ROW_BYTES = 4 * (MIN_LEN + MAX_LEN) / 2 + 4 + 8 + 8  # mean decoded bytes per row
SHARD_BYTES = 256e6  # decoded bytes per shard (file), at most
MIN_SHARDS = 8  # so each of a few DataLoader workers gets shards (WebDataset needs >= workers)


def plan(gb: float) -> tuple[int, int]:
    """(rows, shards) for a dataset of about `gb` GB decoded."""
    rows = max(int(gb * 1e9 / ROW_BYTES), MIN_SHARDS)
    return rows, max(MIN_SHARDS, math.ceil(gb * 1e9 / SHARD_BYTES))


def shard_table(gb: float, seed: int, s: int) -> pa.Table:
    """Shard s of the dataset, as one table; row ids (`label` is not unique) run on globally."""
    rows, shards = plan(gb)
    begin, end = rows * s // shards, rows * (s + 1) // shards
    n = end - begin
    rng = np.random.default_rng([seed, s])
    lengths = rng.integers(MIN_LEN, MAX_LEN + 1, n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    tokens = rng.integers(0, VOCAB, int(offsets[-1]), dtype=np.int32)
    return pa.table({
        "tokens": pa.ListArray.from_arrays(pa.array(offsets), pa.array(tokens)),
        "label": pa.array(rng.integers(0, 1000, n, dtype=np.int64)),
        "quality": pa.array(np.round(rng.random(n), 3)),
    })


def decoded_bytes(t: pa.Table) -> int:
    tokens = t.column("tokens").combine_chunks()
    return 4 * len(tokens.values) + 4 * (len(tokens) + 1) + 16 * t.num_rows


# --- writers: one shard at a time, so memory stays at one shard ---------------------------------

def write_vortex(t: pa.Table, out: Path, s: int) -> list[Path]:
    import vortex as vx

    path = out / f"tokens-{s:05d}.vortex"
    vx.io.write(t, str(path))
    return [path]


def wds_samples(t: pa.Table):
    """WebDataset samples of a table: raw little-endian int32 tokens and a JSON of the rest (two
    tar members per sample: each member costs a 512-byte header plus padding to 512)."""
    tokens = t.column("tokens").combine_chunks()
    offsets = tokens.offsets.to_numpy()
    values = tokens.values.to_numpy()
    labels = t.column("label").to_numpy()
    quality = t.column("quality").to_numpy()
    for i in range(t.num_rows):
        yield {
            "tokens.bin": values[offsets[i]:offsets[i + 1]].astype("<i4").tobytes(),
            "meta.json": b'{"label": %d, "quality": %r}' % (int(labels[i]), float(quality[i])),
        }


def write_tar(samples, path: Path, first_key: int) -> int:
    """A WebDataset shard: one tar member per field, members of a sample adjacent."""
    n = 0
    with tarfile.open(path, "w") as tar:
        for i, sample in enumerate(samples):
            for field, data in sample.items():
                info = tarfile.TarInfo(f"{first_key + i:012d}.{field}")
                info.size = len(data)
                info.mtime = 0
                tar.addfile(info, io.BytesIO(data))
            n += 1
    return n


def write_parquet(t: pa.Table, out: Path, s: int) -> list[Path]:
    import pyarrow.parquet as pq

    path = out / f"tokens-{s:05d}.parquet"
    pq.write_table(t, str(path))
    return [path]


def write_lance(t: pa.Table, out: Path, s: int) -> list[Path]:
    """Shard s as a fragment of the Lance dataset at out (created by shard 0, appended to after),
    with pylance's defaults otherwise; returns every file of the dataset so far."""
    import lance

    lance.write_dataset(t, str(out), mode="create" if s == 0 else "append")
    return sorted(p for p in out.rglob("*") if p.is_file())


def write_wds(t: pa.Table, out: Path, s: int, first_key: int) -> list[Path]:
    path = out / f"tokens-{s:05d}.tar"
    write_tar(wds_samples(t), path, first_key)
    return [path]


MDS_COLUMNS = {"tokens": "ndarray:int32", "label": "int64", "quality": "float64"}


def mds_size_limit(gb: float) -> int:
    """MDSWriter's size_limit for about one MDS shard per generator shard (it bounds a shard's
    encoded bytes)."""
    return int(gb * 1e9 / plan(gb)[1] * 1.02) + 65536


def mds_samples(t: pa.Table):
    tokens = t.column("tokens").combine_chunks()
    offsets = tokens.offsets.to_numpy()
    values = tokens.values.to_numpy()
    labels = t.column("label").to_numpy()
    quality = t.column("quality").to_numpy()
    for i in range(t.num_rows):
        yield {"tokens": values[offsets[i]:offsets[i + 1]], "label": int(labels[i]), "quality": float(quality[i])}


def ensure(fmt: str, root: Path, gb: float, seed: int) -> dict:
    """The summary of @fmt written under root/fmt, writing it first unless root/fmt.summary.json
    says it was written for (gb, seed); the writer runs in a child process, so the caller
    imports neither vortex-data nor Streaming (and torch)."""
    out, stamp = root / fmt, root / f"{fmt}.summary.json"
    s = json.loads(stamp.read_text()) if stamp.exists() else {}
    if s.get("gb") == gb and s.get("seed") == seed:
        return s
    shutil.rmtree(out, ignore_errors=True)
    got = subprocess.run([sys.executable, __file__, fmt, str(out), "--gb", str(gb), "--seed", str(seed)], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    s = dict(json.loads(got), gb=gb, seed=seed)
    stamp.write_text(json.dumps(s))  # last: a summary means the format is complete
    return s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("format", choices=["vortex", "wds", "mds", "parquet", "lance"])
    ap.add_argument("out", type=Path)
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    rows, shards = plan(a.gb)
    total, files, first = 0, [], 0
    writer = None
    if a.format == "mds":
        from streaming import MDSWriter

        writer = MDSWriter(out=str(a.out), columns=MDS_COLUMNS, size_limit=mds_size_limit(a.gb))
    for s in range(shards):
        t = shard_table(a.gb, a.seed, s)
        total += decoded_bytes(t)
        if a.format == "vortex":
            files += write_vortex(t, a.out, s)
        elif a.format == "parquet":
            files += write_parquet(t, a.out, s)
        elif a.format == "wds":
            files += write_wds(t, a.out, s, first)
        elif a.format == "lance":
            files = write_lance(t, a.out, s)
        else:
            for sample in mds_samples(t):
                writer.write(sample)
        first += t.num_rows
        print(f"[tokens_data] {a.format} shard {s + 1}/{shards}", file=sys.stderr)
    if writer is not None:
        writer.finish()
        files = sorted(p for p in a.out.iterdir() if p.is_file())
    json.dump({"format": a.format, "rows": rows, "shards": shards, "decoded_bytes": total,
               "files": [str(p) for p in files], "stored_bytes": sum(os.path.getsize(p) for p in files)},
              sys.stdout)
    print()


if __name__ == "__main__":
    main()
