#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes golden segments for vortex.pco, as the compact writer of vortex-data 0.93 makes them.

Run with the Python that has the reference writer (vortex-data 0.93, pyarrow):
    .venv/bin/python tests/format/golden/gen_pco.py

vortex-data's Python API has no pco constructor, so each case is written to a file with the
compact writer, scanned back (the scan keeps the pco array as stored) and serialized. Each case
checks that the column came back as vortex.pco at the root. For each case <name> it writes,
next to this script, the three files golden_common.py describes (typed_values `.expected`,
read by tests/format/alp_golden.hpp). The data are seeded: reruns reproduce the files unless
the writer changes.
"""
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import vortex as vx

from golden_common import serialize, typed_values, write_case_files

rng = np.random.default_rng(20261203)


def write_case(name, arrow):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "c.vortex"
        vx.io.VortexWriteOptions.compact().write(pa.table({"c": arrow}), str(path))
        arr = vx.open(str(path)).scan().read_all().field("c")
    first = arr.display_tree().splitlines()[0]
    assert "vortex.pco(" in first, f"{name}: wanted vortex.pco, got {first}"
    segment, specs = serialize(arr)
    write_case_files(name, segment, specs, typed_values(arr))
    print(f"{name}: {len(segment)} bytes, {specs}")


def nulls(n, p):
    return rng.random(n) < p


def main():
    n = 12000  # 8192-value pages: two pages, the second one short
    # Classic floats with 20% nulls: pages count valid values only.
    write_case("pco_f64_nulls", pa.array(rng.standard_normal(n), mask=nulls(n, 0.2)))
    write_case("pco_f32_normal", pa.array(rng.standard_normal(n).astype(np.float32)))
    # A random walk: consecutive deltas.
    walk = np.cumsum(rng.integers(-1000, 1000, n)).astype(np.int64) + 10**12
    write_case("pco_i64_walk", pa.array(walk))
    # Multiples of 1009 plus a small remainder (IntMult territory), with nulls.
    mult = (rng.integers(0, 10**6, n) * 1009 + rng.integers(0, 3, n)).astype(np.int64)
    write_case("pco_i64_mult_nulls", pa.array(mult, mask=nulls(n, 0.1)))
    write_case("pco_u32_skewed", pa.array(rng.geometric(0.001, n).astype(np.uint32)))
    write_case("pco_i16_walk", pa.array(np.cumsum(rng.integers(-3, 4, n)).astype(np.int16)))
    sine = np.sin(np.arange(n) / 50)
    write_case("pco_u16_sine_half_null", pa.array((sine * 30000 + 32000).astype(np.uint16),
                                                  mask=nulls(n, 0.5)))
    write_case("pco_i32_sine", pa.array((sine * 2e9).astype(np.int32)))
    write_case("pco_f16", pa.array(rng.standard_normal(n).astype(np.float16), mask=nulls(n, 0.05)))


if __name__ == "__main__":
    main()
