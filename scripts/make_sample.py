# SPDX-License-Identifier: Apache-2.0
"""Writes the sample dataset that scripts/run.sh scans: token sequences with metadata, the shape
of an LLM training set, written by the official vortex-data writer."""

import sys

import numpy as np
import pyarrow as pa
import vortex as vx


def main(path: str, rows: int = 200_000) -> None:
    rng = np.random.default_rng(0)
    lengths = rng.integers(16, 256, rows)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    tokens = rng.integers(0, 50_257, offsets[-1], dtype=np.int32)
    sources = np.array(["web", "books", "code", "wiki", "papers"])
    table = pa.table({
        "doc_id": pa.array(np.arange(rows, dtype=np.int64)),
        "source": pa.array(sources[rng.integers(0, len(sources), rows)]),
        "quality": pa.array(np.round(rng.random(rows), 3)),
        "n_tokens": pa.array(lengths.astype(np.int32)),
        "tokens": pa.ListArray.from_arrays(pa.array(offsets), pa.array(tokens)),
        "crawled_at": pa.array(1_600_000_000 + rng.integers(0, 10**8, rows), type=pa.timestamp("s", tz="UTC")),
    })
    vx.io.write(table, path)


if __name__ == "__main__":
    main(sys.argv[1])
