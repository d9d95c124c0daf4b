#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes golden segments for fastlanes.bitpacked, fastlanes.for, vortex.zigzag and
vortex.sequence.

Run with the Python that has the reference writer (vortex-data 0.93, pyarrow):
    /tmp/venvtest/bin/python tests/format/golden/gen_fastlanes.py

For each case <name> it writes, next to this script, <name>.segment (the flat segment bytes),
<name>.specs (the array_specs, one encoding ID per line) and <name>.expected (the oracle's
decoded values, as golden_common.typed_values describes). The data are seeded, so reruns
reproduce the files unless the writer changes.
"""
import numpy as np
import pyarrow as pa
import vortex as vx

from golden_common import serialize, typed_values, write_case_files

rng = np.random.default_rng(20240611)


def write_array(name, arr, must_contain):
    segment, specs = serialize(arr)
    tree = arr.display_tree()
    for needle in must_contain:
        assert needle in tree, f"{name}: {needle} not in\n{tree}"
    write_case_files(name, segment, specs, typed_values(arr))
    print(f"{name}: {len(segment)} bytes, {specs}")


def compressed(values, arrow_type=None):
    return vx.compress(vx.array(pa.array(values, type=arrow_type)))


# Bit packing at one width per unsigned type, with a partial last block.
for ptype, width, rows in [("uint8", 3, 1500), ("uint16", 7, 1300), ("uint32", 13, 1100),
                           ("uint64", 21, 1030)]:
    values = rng.integers(0, 1 << width, rows, dtype=np.uint64).astype(ptype)
    values[7] = (1 << width) - 1  # the widest value fixes the bit width
    write_array(f"bitpacked_{ptype[0]}{ptype[4:]}_w{width}", compressed(values),
                [f"fastlanes.bitpacked.v2({ptype[0]}{ptype[4:]}, len={rows})",
                 f"bit_width: {width}"])

# Outliers too wide for the packed width become patches (with chunk offsets).
values = rng.integers(0, 100, 3000).astype(np.uint32)
values[::500] = 1 << 30
write_array("bitpacked_u32_patches", compressed(values), ["patch_indices", "patch_chunk_offsets"])

# Nullable values: the validity child follows the packed buffer.
values = [None if i % 7 == 3 else int(v) for i, v in enumerate(rng.integers(0, 1 << 20, 2100))]
write_array("bitpacked_i32_nulls", compressed(values, pa.int32()),
            ["fastlanes.bitpacked", "validity"])

# Frame of reference over bit packing, signed and unsigned references.
write_array("for_i32", compressed(rng.integers(1000, 1100, 3000).astype(np.int32)),
            ["fastlanes.for", "global_reference: 1000i32"])
write_array("for_i64_negative", compressed(rng.integers(-100, 100, 2500).astype(np.int64)),
            ["fastlanes.for", "global_reference: -100i64"])
write_array("for_i8", compressed(rng.integers(-128, -100, 1500).astype(np.int8)),
            ["fastlanes.for", "global_reference: -128i8"])

# A slice leaves the packed blocks whole and records an offset into the first one.
sliced = compressed(rng.integers(1000, 1100, 3000).astype(np.int32)).slice(100, 2500)
write_array("for_bitpacked_sliced", sliced, ["fastlanes.for", "offset: 100"])

# ZigZag over a primitive child (the compressor prefers FoR for such data).
zigzag = vx.ZigZagArray.encode(vx.array(pa.array(rng.integers(-50, 50, 1500).astype(np.int16))))
write_array("zigzag_i16", zigzag, ["vortex.zigzag"])
zigzag = vx.ZigZagArray.encode(vx.array(pa.array(
    np.array([0, -1, 1, -(1 << 63), (1 << 63) - 1, 12345, -12345], dtype=np.int64))))
write_array("zigzag_i64_extremes", zigzag, ["vortex.zigzag"])

# Sequences: base + i * multiplier.
write_array("sequence_i64", compressed(np.arange(3000, dtype=np.int64) * 3 + 7),
            ["vortex.sequence", "base: 7i64, multiplier: 3i64"])
write_array("sequence_i32_descending", compressed(1000 - np.arange(2000, dtype=np.int32) * 5),
            ["vortex.sequence", "multiplier: -5"])
