# SPDX-License-Identifier: Apache-2.0
"""Writes the sample dataset that scripts/run.sh trains on: token sequences with a label and a
quality score, the shape of an LLM training set, as Vortex files written by the official
vortex-data writer.

    python scripts/make_sample.py DIR [--rows N] [--files K]
"""

import argparse
from pathlib import Path

import numpy as np
import pyarrow as pa
import vortex as vx

SOURCES = np.array(["web", "books", "code", "wiki", "papers"])


def part(rng: np.random.Generator, first: int, rows: int) -> pa.Table:
    lengths = rng.integers(16, 256, rows)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    source = rng.integers(0, len(SOURCES), rows)
    tokens = rng.integers(0, 50_257, offsets[-1], dtype=np.int32)
    # A fifth of each document's tokens come from a band its source owns, so the example model
    # has something to learn.
    owner = np.repeat(source, lengths)
    banded = rng.random(offsets[-1]) < 0.2
    tokens[banded] = (owner[banded] * 1000 + rng.integers(0, 1000, int(banded.sum()))).astype(np.int32)
    return pa.table({
        "doc_id": pa.array(np.arange(first, first + rows, dtype=np.int64)),
        "source": pa.array(SOURCES[source]),
        "label": pa.array(source.astype(np.int32)),
        "quality": pa.array(np.round(rng.random(rows), 3)),
        "n_tokens": pa.array(lengths.astype(np.int32)),
        "tokens": pa.ListArray.from_arrays(pa.array(offsets), pa.array(tokens)),
        "crawled_at": pa.array(1_600_000_000 + rng.integers(0, 10**8, rows), type=pa.timestamp("s", tz="UTC")),
    })


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--rows", type=int, default=200_000, help="rows in all (default 200000)")
    ap.add_argument("--files", type=int, default=4, help="files to spread them over (default 4)")
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    first = 0
    for k in range(args.files):
        rows = args.rows // args.files + (1 if k < args.rows % args.files else 0)
        path = args.dir / f"part-{k:03d}.vortex"
        vx.io.write(part(rng, first, rows), str(path.with_suffix(".tmp")))
        path.with_suffix(".tmp").rename(path)  # a half-written file never looks like data
        first += rows


if __name__ == "__main__":
    main()
