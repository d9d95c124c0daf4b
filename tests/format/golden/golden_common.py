# SPDX-License-Identifier: Apache-2.0
"""Helpers shared by the gen_*.py scripts next to this file.

Each case NAME is three files here: NAME.segment (the serialized array, exactly a flat segment
as stored in a Vortex file), NAME.specs (the encoding IDs that the segment's nodes index, one per
line) and NAME.expected (the values the oracle decodes, in one of the formats below).
"""
import pathlib
import struct

import pyarrow as pa
import vortex as vx

HERE = pathlib.Path(__file__).resolve().parent
PTYPES = {pa.int8(): "i8", pa.int16(): "i16", pa.int32(): "i32", pa.int64(): "i64",
          pa.uint8(): "u8", pa.uint16(): "u16", pa.uint32(): "u32", pa.uint64(): "u64",
          pa.float16(): "f16", pa.float32(): "f32", pa.float64(): "f64"}


def serialize(arr):
    """The segment bytes of arr and the encoding IDs its nodes index."""
    ctx = vx.ArrayContext()
    segment = b"".join(arr.serialize(ctx))
    return segment, str(ctx).split(", ")


def write_case_files(name, segment, specs, expected):
    """Writes the three files of case name; expected is the .expected file's bytes."""
    (HERE / f"{name}.segment").write_bytes(segment)
    (HERE / f"{name}.specs").write_bytes(("\n".join(specs) + "\n").encode())
    (HERE / f"{name}.expected").write_bytes(expected)


def typed_values(arr):
    """The `.expected` format of gen_alp.py and gen_fastlanes.py (read by alp_golden.hpp):
    one text line "<type> <nullable 0|1> <rows>\\n", where <type> is a ptype (i8..u64, f32,
    f64) or utf8, then one validity byte (0 or 1) per row, then for a ptype the raw
    little-endian values (rows x width, nulls zeroed), for utf8 (rows + 1) u32 little-endian
    offsets and the concatenated bytes."""
    nullable = arr.dtype.is_nullable()
    arrow = arr.to_arrow_array()
    arrow = arrow.combine_chunks() if isinstance(arrow, pa.ChunkedArray) else arrow
    n = len(arrow)
    valid = bytes(0 if v is None else 1 for v in arrow.to_pylist())
    if arrow.type == pa.string() or arrow.type == pa.string_view():
        head = f"utf8 {int(nullable)} {n}\n".encode()
        offsets, data = [0], b""
        for v in arrow.to_pylist():
            data += (v or "").encode()
            offsets.append(len(data))
        return head + valid + struct.pack(f"<{n + 1}I", *offsets) + data
    np_values = arrow.fill_null(0).to_numpy(zero_copy_only=False)
    head = f"{PTYPES[arrow.type]} {int(nullable)} {n}\n".encode()
    return head + valid + np_values.astype(np_values.dtype.newbyteorder("<")).tobytes()


def row_records(arr):
    """The `.expected` format of gen_strings.py and gen_onpair.py (read by strings_golden.hpp):
    a zstd frame (so large cases stay small) holding one record per row: u8 valid, u32 LE byte
    count, then the bytes (the UTF-8 or binary value, or a primitive's little-endian bytes;
    0 bytes for a null row)."""
    arrow = arr.to_arrow_array()
    out = bytearray()
    if pa.types.is_primitive(arrow.type):
        width = arrow.type.bit_width // 8
        values = arrow.fill_null(0).to_numpy(zero_copy_only=False).tobytes()
        for i in range(len(arrow)):
            if arrow[i].is_valid:
                out += struct.pack("<BI", 1, width) + values[i * width:(i + 1) * width]
            else:
                out += struct.pack("<BI", 0, 0)
    else:
        for v in arrow.to_pylist():
            if v is None:
                out += struct.pack("<BI", 0, 0)
            else:
                b = v.encode("utf-8") if isinstance(v, str) else bytes(v)
                out += struct.pack("<BI", 1, len(b)) + b
    return pa.Codec("zstd").compress(bytes(out), asbytes=True)


def write_row_records_case(name, arr, root_encoding):
    """Writes case name of arr, whose root must be encoded as root_encoding, with a
    row_records .expected file."""
    tree = arr.display_tree()
    first = tree.splitlines()[0]
    assert f"root: {root_encoding}(" in first, f"{name}: wanted {root_encoding}, got {first}"
    segment, specs = serialize(arr)
    write_case_files(name, segment, specs, row_records(arr))
    print(f"{name}: {len(segment)} B segment, specs {specs}\n{tree}")
