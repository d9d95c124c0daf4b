#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes golden segments for the string encodings and vortex.dict, using the vortex-data
writer as the oracle. Run with the Python that has vortex-data (0.93) and pyarrow installed:

    /tmp/venvtest/bin/python tests/format/golden/gen_strings.py

For each case NAME it writes, next to this script (through golden_common.py):

  NAME.segment   the serialized array: exactly a flat segment as stored in a Vortex file
  NAME.specs     the encoding IDs that the segment's nodes index, one per line
  NAME.expected  the values the oracle decodes, as a zstd frame (so large cases stay small)
                 holding one record per row: u8 valid, u32 LE byte count, then the bytes
                 (the UTF-8 or binary value, or a primitive's little-endian bytes; 0 bytes
                 for a null row)

The tests (tests/format/test_*.cpp) know each case's dtype; the row count is the number of
records. The data is seeded, but the compressor's choices belong to the oracle: each case
checks that it got the encoding it is meant to exercise.
"""

import os
import tempfile

import numpy as np
import pyarrow as pa
import vortex as vx

from golden_common import write_row_records_case as write_case

rng = np.random.default_rng(20240611)


def compact_column(pa_array):
    """Writes one column with the compact strategy and reads it back still encoded."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "c.vortex")
        vx.io.VortexWriteOptions.compact().write(pa.table({"c": pa_array}), path)
        return vx.open(path).scan().read_all().field("c")


WORDS = ("the quick brown fox jumps over lazy dog vortex columnar file format reads "
         "decodes arrow strings").split()


def sentence(k):
    return " ".join(WORDS[j] for j in rng.integers(0, len(WORDS), k))


# ---- vortex.varbinview ---------------------------------------------------------------------
edge_strings = ["", "a", "exactly12byt", "thirteen byte",
                "a much longer string past the inline limit", None, "żółć ☃ 𝄞 unicode",
                "0123456789ab", None, "tail value beyond twelve"]
write_case("varbinview_utf8", vx.array(pa.array(edge_strings, type=pa.string_view())),
           "vortex.varbinview")
two_buffers = pa.concat_arrays([
    pa.array(["first long string value here", "short", None], type=pa.string_view()),
    pa.array(["second buffer long string!!", "tiny", "another quite long string value"],
             type=pa.string_view()),
])
write_case("varbinview_two_buffers", vx.array(two_buffers), "vortex.varbinview")
blobs = [bytes(rng.integers(0, 256, int(n)).astype(np.uint8)) for n in rng.integers(0, 40, 40)]
blobs[3] = b"\x00" * 20
blobs[4] = b"\xff" * 13
write_case("varbinview_binary", vx.array(pa.array(blobs, type=pa.binary_view())),
           "vortex.varbinview")

# ---- vortex.varbin -------------------------------------------------------------------------
write_case("varbin_utf8", vx.array(pa.array(edge_strings)), "vortex.varbin")
sliced = vx.array(pa.array([b"aa", b"b" * 22, b"c", None, b"\x00\x01\x02", b"dddd"],
                           type=pa.large_binary())).slice(1, 5)
write_case("varbin_sliced_i64", sliced, "vortex.varbin")

# ---- vortex.fsst ---------------------------------------------------------------------------
# A few strings with characters nowhere else force escape codes.
sentences = [sentence(int(rng.integers(3, 12))) if i % 3 else None for i in range(200)]
sentences[5] = "rare bytes: ☃ § ¶ ~ | ^"
sentences[7] = ""
write_case("fsst_utf8", vx.compress(vx.array(pa.array(sentences))), "vortex.fsst")
small_alphabet = [bytes(rng.integers(0, 4, int(rng.integers(0, 40))).astype(np.uint8))
                  for _ in range(150)]
write_case("fsst_binary", vx.compress(vx.array(pa.array(small_alphabet, type=pa.binary()))),
           "vortex.fsst")

# ---- vortex.dict (the array encoding) --------------------------------------------------------
colours = ["red", "green", "blue", "a colour name longer than twelve"]
write_case("dict_utf8", vx.compress(vx.array(pa.array(
    [colours[int(i)] if i < 4 else None for i in rng.integers(0, 5, 200)]))), "vortex.dict")
greek = ["alpha", "beta", "gamma", "delta", "epsilon"]
write_case("dict_fsst_values", vx.compress(vx.array(pa.array(
    [greek[i % 5] if i % 7 else None for i in range(200)]))), "vortex.dict")
write_case("dict_i64_nullable_codes", vx.compress(vx.array(pa.array(
    rng.choice([1000003, -7, 123456789, 42], 120), mask=rng.random(120) < 0.3))), "vortex.dict")
write_case("dict_f64", vx.compress(vx.array(pa.array(rng.choice([1.5, -2.25, 1e300, 3.0], 150)))),
           "vortex.dict")

# ---- vortex.zstd ---------------------------------------------------------------------------
# More than 8192 valid values: the compact scheme cuts frames of 8192 values.
write_case("zstd_utf8_frames",
           compact_column(pa.array(["k%d" % (i // 3) if i % 11 else None for i in range(9100)])),
           "vortex.zstd")
write_case("zstd_binary",
           compact_column(pa.array([b"\x00\x01" * (i % 7) + i.to_bytes(4, "little")
                                     for i in range(3000)], type=pa.binary())),
           "vortex.zstd")
