#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes golden segments for vortex.alp, vortex.alprd, vortex.runend and vortex.sparse.

Run with the Python that has the reference writer (vortex-data 0.93, pyarrow):
    /tmp/venvtest/bin/python tests/format/golden/gen_alp.py

For each case <name> it writes, next to this script:
  <name>.segment   the flat segment bytes of vx.compress(data), as stored in a file;
  <name>.specs     the encoding IDs of the segment's array_specs, one per line;
  <name>.expected  the oracle's decoded values (arr.to_arrow_array()), as
                   golden_common.typed_values describes.
The data are seeded, so reruns reproduce the files unless the writer changes.
"""
import numpy as np
import pyarrow as pa
import vortex as vx

from golden_common import serialize, typed_values, write_case_files


def write_case(name, data, must_contain):
    arr = vx.compress(vx.array(data))
    segment, specs = serialize(arr)
    assert must_contain in specs, f"{name}: {must_contain} not in {specs}\n{arr.display_tree()}"
    write_case_files(name, segment, specs, typed_values(arr))
    print(f"{name}: {len(segment)} bytes, {specs}")


def main():
    rng = np.random.default_rng(20240611)

    # ALP: two-decimal values with specials (NaN, infinities, -0.0 become patches) and nulls.
    x = np.round(rng.uniform(-500, 500, 1024), 2)
    x[[3, 100, 700, 701]] = [np.nan, np.inf, -0.0, -np.inf]
    write_case("alp_f64_patches_nulls", pa.array(x, mask=rng.uniform(size=1024) < 0.1), "vortex.alp")
    y = np.round(rng.uniform(0, 100, 1024), 1).astype(np.float32)
    y[[5, 6]] = [np.nan, -0.0]
    write_case("alp_f32_patches", pa.array(y), "vortex.alp")
    # ALP whose integers are sparse (mostly 12.34) or run-end encoded, so that every child is an
    # encoding of this unit or a primitive array.
    v = np.full(1024, 12.34)
    idx = rng.choice(1024, 30, replace=False)
    v[idx] = np.round(rng.uniform(-100, 100, 30), 2)
    v[idx[:2]] = [np.nan, -0.0]
    write_case("alp_f64_sparse_encoded", pa.array(v), "vortex.sparse")
    write_case("alp_f32_sparse_encoded", pa.array(v.astype(np.float32)), "vortex.sparse")
    r = np.repeat(np.round(rng.uniform(-100, 100, 20), 3), rng.integers(20, 60, 20))
    write_case("alp_f64_runend_encoded", pa.array(r), "vortex.runend")

    # ALP-RD: full-precision random doubles and floats.
    write_case("alprd_f64", pa.array(rng.uniform(0, 1, 1024),
                                     mask=rng.uniform(size=1024) < 0.05), "vortex.alprd")
    write_case("alprd_f32", pa.array(rng.uniform(0, 1, 1024).astype(np.float32)), "vortex.alprd")

    # Run-end: runs of wide integers; runs of floats with null runs (the writer puts these
    # under a dictionary, as run-end dictionary codes with nulls).
    run_lengths = rng.integers(3, 9, 200)
    runs = np.repeat(rng.integers(-1 << 40, 1 << 40, 200), run_lengths)
    write_case("runend_i64", pa.array(runs), "vortex.runend")
    null_runs = np.repeat(rng.uniform(size=200) < 0.2, run_lengths)
    write_case("runend_codes_nulls", pa.array(runs * 0.37, mask=null_runs), "vortex.runend")

    # Sparse: mostly one value, mostly null floats, mostly null strings.
    ints = np.where(rng.uniform(size=1024) < 0.02, rng.integers(0, 1 << 40, 1024), 123456789)
    write_case("sparse_i64", pa.array(ints), "vortex.sparse")
    floats = [None] * 1024
    for i in rng.choice(1024, 16, replace=False):
        floats[i] = float(rng.normal())
    write_case("sparse_f64_nulls", pa.array(floats, pa.float64()), "vortex.sparse")
    strings = [None] * 1024
    for i in rng.choice(1024, 16, replace=False):
        strings[i] = f"s{i}"
    write_case("sparse_utf8_nulls", pa.array(strings, pa.string()), "vortex.sparse")


if __name__ == "__main__":
    main()
