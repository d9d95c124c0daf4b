#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes golden segments for the nested, decimal, temporal and chunked encodings.

Run with a Python that has vortex-data (0.93) and pyarrow:
    python tests/format/golden/gen_nested.py

For each case <name> it writes, next to this script:
  <name>.segment   the serialized array, exactly a flat segment as stored in a file
  <name>.specs     the segment's encoding IDs, one per line, in array_specs order
  <name>.expected  the values the oracle decodes, one row per line, rendered as:
                   null | integer | true/false | [e1,e2,...] for lists of any kind |
                   decimals: the unscaled value as Arrow stores it (i128 up to precision 38,
                   else i256), little-endian two's complement, in hex |
                   dates, times, timestamps: their integer storage value.
The C++ tests (through tests/format/nested_golden.hpp) build the same dtype by hand, decode the
segment and render each row the same way.

Cases only use encodings that the nested unit and the canonical set decode, so they test this
unit alone; the script refuses any other encoding.
"""
from decimal import Decimal

import numpy as np
import pyarrow as pa
import vortex as vx

from golden_common import serialize, write_case_files

ALLOWED = {
    "vortex.primitive", "vortex.bool", "vortex.null", "vortex.struct", "vortex.constant",
    "vortex.list", "vortex.listview", "vortex.fixed_size_list", "vortex.decimal",
    "vortex.decimal_byte_parts", "vortex.ext", "vortex.datetimeparts", "vortex.chunked",
}
rng = np.random.default_rng(20261129)


def render(arr):
    """One string per row, in the format described above."""
    t = arr.type
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t) or \
            pa.types.is_fixed_size_list(t):
        return ["null" if not arr[i].is_valid else "[" + ",".join(render(arr[i].values)) + "]"
                for i in range(len(arr))]
    if pa.types.is_decimal(t):
        width = 16 if t.precision <= 38 else 32
        return ["null" if v is None else
                int(v.scaleb(t.scale)).to_bytes(width, "little", signed=True).hex()
                for v in arr.to_pylist()]
    if pa.types.is_timestamp(t) or pa.types.is_time64(t):
        arr = arr.cast(pa.int64())
    elif pa.types.is_date32(t) or pa.types.is_time32(t):
        arr = arr.cast(pa.int32())
    return ["null" if v is None else str(v).lower() for v in arr.to_pylist()]


def write(name, arrow, compress):
    array = vx.array(arrow)
    if compress:
        array = vx.compress(array)
    segment, specs = serialize(array)
    extra = set(specs) - ALLOWED
    assert not extra, f"{name}: unexpected encodings {extra}\n{array.display_tree()}"
    rows = "\n".join(render(array.to_arrow_array())) + "\n"
    write_case_files(name, segment, specs, rows.encode())
    print(f"{name}: {len(segment)} bytes, {', '.join(specs)}")


def mask(n, p=0.2):
    return pa.array(rng.random(n) < p)


# vortex.list: i32 offsets, nulls and empty lists (uncompressed), then narrow offsets chosen by
# the compressor, then lists of lists.
write("list_i32", pa.array([[1, 2], None, [], [3, None, 5], [], [-7]] * 6, pa.list_(pa.int32())),
      compress=False)
offsets = np.concatenate([[0], np.cumsum(rng.integers(0, 5, 40))]).astype(np.int32)
elements = pa.array(rng.integers(-2**31, 2**31 - 1, offsets[-1]).astype(np.int32))
write("list_narrow_offsets", pa.ListArray.from_arrays(pa.array(offsets), elements, mask=mask(40)),
      compress=True)
write("list_nested", pa.array([[[1], [2, 3]], None, [[]], [None, [4]], [], [[5, 6, 7]]],
                              pa.list_(pa.list_(pa.int8()))), compress=False)

# vortex.listview: views out of order, overlapping, sharing elements, null and empty.
write("listview_overlap", pa.ListViewArray.from_arrays(
    pa.array([4, 0, 2, 2, 9, 1, 0], pa.int32()), pa.array([3, 2, 4, 0, 1, 5, 10], pa.int32()),
    pa.array(range(100, 110), pa.int16()),
    mask=pa.array([False, False, False, False, True, False, False])), compress=False)
write("listview_in_order", pa.array([[1, 2], None, [], [3, 4, 5]] * 5, pa.list_view(pa.int64())),
      compress=False)

# vortex.fixed_size_list, with nulls at both levels.
write("fixed_size_list", pa.array([[1, 2, 3], None, [4, None, 6], [7, 8, 9]] * 4,
                                  pa.list_(pa.int32(), 3)), compress=False)

# vortex.decimal in i16, i64, i128 and i256 storage.
def decimals(precision, scale, n, wide=pa.decimal128, digits=18):
    top = 10 ** min(precision, digits) - 1
    values = [Decimal(int(x)).scaleb(-scale) for x in rng.integers(-top, top, n, dtype=np.int64)] \
        if precision <= 18 else \
        [Decimal(int(x) * 10 ** (precision - 19)).scaleb(-scale)
         for x in rng.integers(-10**18, 10**18, n, dtype=np.int64)]
    m = rng.random(n) < 0.2
    return pa.array([None if m[i] else values[i] for i in range(n)], wide(precision, scale))

write("decimal_4_1", decimals(4, 1, 30), compress=False)
write("decimal_10_2", decimals(10, 2, 30), compress=False)
write("decimal_38_10", decimals(38, 10, 30), compress=False)
write("decimal_50_10", decimals(50, 10, 30, pa.decimal256), compress=False)
# vortex.decimal_byte_parts: what the compressor emits for decimals.
write("decimal_byte_parts", decimals(12, 3, 60, digits=9), compress=True)

# vortex.datetimeparts: what the compressor emits for timestamps (days near today with a
# constant subsecond part), with a time zone and nulls; naive seconds with negative days.
for unit, per_second in [("s", 1), ("ms", 10**3), ("us", 10**6), ("ns", 10**9)]:
    n = 100
    ticks = (rng.integers(19000, 21000, n) * 86400 + rng.integers(0, 86400, n)) * per_second \
        + 7 * per_second // 10
    write(f"timestamp_{unit}_tz", pa.array(ticks, pa.timestamp(unit, tz="Europe/Paris"),
                                           mask=rng.random(n) < 0.2), compress=True)
ticks = rng.integers(-2000, 21000, 100) * 86400 + rng.integers(0, 86400, 100)
write("timestamp_s_negative_days", pa.array(ticks, pa.timestamp("s")), compress=True)

# vortex.ext over plain storage: dates, times and timestamps.
write("date32", pa.array([0, 19000, None, -365, 2**31 - 1] * 4, pa.date32()), compress=False)
write("time64_us", pa.array([0, 86_399_999_999, None, 12_345] * 4, pa.time64("us")),
      compress=False)
write("timestamp_ms_ext", pa.array([0, -1, None, 1_700_000_000_123] * 4,
                                   pa.timestamp("ms", tz="UTC")), compress=False)

# vortex.chunked (array encoding): an empty chunk in the middle; chunks of lists.
write("chunked_i64", pa.chunked_array([pa.array([1, None, 3]), pa.array([], pa.int64()),
                                       pa.array([4, 5])]), compress=False)
write("chunked_list", pa.chunked_array([pa.array([[1], None], pa.list_(pa.int32())),
                                        pa.array([[2, 3], []], pa.list_(pa.int32()))]),
      compress=False)
