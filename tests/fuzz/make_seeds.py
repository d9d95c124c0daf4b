# SPDX-License-Identifier: Apache-2.0
"""Writes the small Vortex files that seed the fuzzers and the corrupt-file tests
(tests/fuzz/seeds/open_scan/*.vortex). Run with the project venv's Python; the output is
checked in so that tests need no writer."""

from pathlib import Path

import numpy as np
import pyarrow as pa
import vortex as vx

OUT = Path(__file__).resolve().parent / "seeds" / "open_scan"


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    n = 3000
    mixed = pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "small": pa.array(rng.integers(0, 100, n, dtype=np.int32), mask=rng.random(n) < 0.1),
        "price": pa.array(np.round(rng.random(n) * 100, 2)),
        "city": pa.array([["Oslo", "Lima", "Pune"][i % 3] for i in range(n)]),
        "flag": pa.array(rng.random(n) < 0.5),
        "tags": pa.array([[int(x) for x in rng.integers(0, 9, i % 4)] for i in range(n)], type=pa.list_(pa.int32())),
        "ts": pa.array(1_700_000_000 + np.arange(n), type=pa.timestamp("s", tz="UTC")),
    })
    vx.io.write(mixed, str(OUT / "mixed.vortex"))
    vx.io.write(pa.table({"x": pa.array([1, 2, 3], type=pa.int8())}), str(OUT / "tiny.vortex"))
    vx.io.VortexWriteOptions.compact().write(pa.table({"s": pa.array([f"row {i}" for i in range(500)])}),
                                             str(OUT / "compact_strings.vortex"))
    write_zoned()


def write_zoned():
    """Sorted columns over seven 8192-row zones, for the pruning tests: strings whose shared
    prefix is longer than the 64-byte bound, floats with NaN and nulls, nullable ints."""
    n = 50_000
    ids = np.arange(n, dtype=np.int64)
    score = ids / 10.0
    score[ids % 97 == 0] = np.nan
    vx.io.write(pa.table({
        "id": pa.array(ids),
        "grp": pa.array((ids // 1000).astype(np.int32), mask=(ids >= 40_000) & (ids < 41_000)),
        "name": pa.array(["k" * 70 + f"{i // 1000:04d}" for i in range(n)]),
        "score": pa.array(score, mask=ids % 89 == 0),
        "flag": pa.array(ids < 8192),
        "day": pa.array((ids // 500).astype(np.int32), type=pa.date32()),
    }), str(OUT / "zoned.vortex"))


if __name__ == "__main__":
    main()
