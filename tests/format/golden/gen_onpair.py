#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes golden segments for vortex.onpair, using the vortex-data writer as the oracle. Run with
the Python that has vortex-data (0.93) and pyarrow installed:

    /tmp/venvtest/bin/python tests/format/golden/gen_onpair.py

For each case NAME it writes, next to this script, the same three files as gen_strings.py
(through golden_common.py; tests/format/strings_golden.hpp reads them):

  NAME.segment   the serialized array: exactly a flat segment as stored in a Vortex file
  NAME.specs     the encoding IDs that the segment's nodes index, one per line
  NAME.expected  the values the oracle decodes, as a zstd frame holding one record per row:
                 u8 valid, u32 LE byte count, then the bytes (0 bytes for a null row)

The default compressor picks OnPair for utf8 only (binary goes to FSST), so the binary case takes
a utf8 OnPair array and re-types it as binary through the IPC round trip; the oracle then decodes
it as binary. Each case checks that the oracle chose vortex.onpair at the root.
"""

import numpy as np
import pyarrow as pa
import vortex as vx
from vortex.serde import decode_ipc_array_buffers, encode_ipc_array_buffers

from golden_common import write_row_records_case

rng = np.random.default_rng(20250611)


def write_case(name, arr):
    write_row_records_case(name, arr, "vortex.onpair")


def words(n, alphabet, shortest, longest):
    return ["".join(rng.choice(alphabet, int(rng.integers(shortest, longest + 1))))
            for _ in range(n)]


LATIN = list("abcdefghijklmnopqrstuvwxyz")
UNICODE = list("абвгдежзийклмнопрстуфхцчшщыэюя") + list("äöüß€名前☃")

# High-cardinality e-mail addresses with nulls: the array has a validity child.
emails = [None if i % 3 == 0 else f"user{i}@example.com" for i in range(1000)]
write_case("onpair_emails_nulls", vx.compress(vx.array(pa.array(emails))))

# Short random words, every tenth one empty.
latin = ["" if i % 10 == 0 else w for i, w in enumerate(words(600, LATIN, 1, 8))]
write_case("onpair_words", vx.compress(vx.array(pa.array(latin))))

# Multi-byte UTF-8: tokens may cut characters apart.
write_case("onpair_unicode", vx.compress(vx.array(pa.array(words(500, UNICODE, 1, 6)))))

# Binary: the same node re-typed, decoded by the oracle as binary.
urls = vx.compress(vx.array(pa.array([f"https://site{i % 97}.org/p/{i}" for i in range(700)])))
array_buffers, _ = encode_ipc_array_buffers(urls)
_, binary_dtype = encode_ipc_array_buffers(vx.array(pa.array([b""], type=pa.binary())))
write_case("onpair_binary", decode_ipc_array_buffers(array_buffers, binary_dtype))
