# SPDX-License-Identifier: Apache-2.0
"""Writes the pyarrow-produced Arrow IPC streams that tests/format/test_arrow_ipc_read.cpp reads
(an Arrow writer other than onecopy's own). Run with the project venv's Python from anywhere;
the output is checked in, so the tests need no pyarrow:

  pyarrow_offsets.arrows  two record batches (3 rows, then 2) of every type onecopy's writer
                          writes, strings as Utf8/Binary
  pyarrow_views.arrows    one batch of Utf8View/BinaryView columns, short and long values
  pyarrow_offsets_zstd.arrows   pyarrow_offsets.arrows with zstd-compressed bodies (pyarrow
                                writes small buffers raw behind a -1 length)
  pyarrow_zstd_big.arrows       4000 rows (k: i64 = i % 100, s: utf8 = "row {i % 10}") in
                                batches of 1500, zstd-compressed

The values are repeated in the test, which builds the same columns and compares them row by row.
"""

from decimal import Decimal
from pathlib import Path

import pyarrow as pa

OUT = Path(__file__).resolve().parent


def offsets_table():
    schema = pa.schema([
        pa.field("i64", pa.int64(), nullable=True),
        pa.field("u8", pa.uint8(), nullable=False),
        pa.field("f64", pa.float64(), nullable=False),
        pa.field("flag", pa.bool_(), nullable=True),
        pa.field("s", pa.utf8(), nullable=True),
        pa.field("bin", pa.binary(), nullable=False),
        pa.field("nothing", pa.null(), nullable=True),
        pa.field("dec", pa.decimal128(10, 2), nullable=True),
        pa.field("day", pa.date32(), nullable=False),
        pa.field("ts", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("tags", pa.list_(pa.field("item", pa.int32(), nullable=False)), nullable=False),
        pa.field("pair", pa.list_(pa.field("item", pa.float32(), nullable=False), 2), nullable=False),
        pa.field("st", pa.struct([pa.field("a", pa.int32(), nullable=False),
                                  pa.field("b", pa.utf8(), nullable=True)]), nullable=True),
    ])
    rows = {
        "i64": [1, None, 3, -4, None],
        "u8": [1, 2, 3, 4, 255],
        "f64": [0.5, -1.25, 3.0, 1e300, 0.0],
        "flag": [True, None, False, True, False],
        "s": ["a", None, "ccc", "", "a longer string value"],
        "bin": [b"\x00\x01", b"", b"xyz", b"\xff", b"q"],
        "nothing": [None] * 5,
        "dec": [Decimal("1.25"), None, Decimal("-3.50"), Decimal("12345678.90"), Decimal("0.00")],
        "day": [0, 1, 19000, -1, 365],
        "ts": [0, 1_700_000_000_000_000, -1, 42, 7],
        "tags": [[1, 2], [], [3], [4, 5, 6], []],
        "pair": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0], [9.0, 10.0]],
        "st": [{"a": 1, "b": "x"}, None, {"a": 3, "b": None}, {"a": 4, "b": "yy"}, {"a": 5, "b": "z"}],
    }
    return pa.Table.from_pydict(rows, schema=schema)


def views_table():
    schema = pa.schema([
        pa.field("sv", pa.string_view(), nullable=True),
        pa.field("bv", pa.binary_view(), nullable=False),
    ])
    return pa.Table.from_pydict({
        "sv": ["short", None, "a value longer than twelve bytes", "", "twelve bytes"],
        "bv": [b"\x01", b"thirteen byte", b"", b"another long binary value", b"x"],
    }, schema=schema)


def big_table():
    schema = pa.schema([
        pa.field("k", pa.int64(), nullable=False),
        pa.field("s", pa.utf8(), nullable=False),
    ])
    n = 4_000
    return pa.Table.from_pydict({
        "k": [i % 100 for i in range(n)],
        "s": [f"row {i % 10}" for i in range(n)],
    }, schema=schema)


def write(path, table, max_chunksize, compression=None):
    options = pa.ipc.IpcWriteOptions(compression=compression)
    with pa.OSFile(str(path), "wb") as sink, \
            pa.ipc.new_stream(sink, table.schema, options=options) as w:
        for batch in table.to_batches(max_chunksize=max_chunksize):
            w.write_batch(batch)


def main():
    write(OUT / "pyarrow_offsets.arrows", offsets_table(), 3)
    write(OUT / "pyarrow_views.arrows", views_table(), 5)
    write(OUT / "pyarrow_offsets_zstd.arrows", offsets_table(), 3, "zstd")
    write(OUT / "pyarrow_zstd_big.arrows", big_table(), 1500, "zstd")


if __name__ == "__main__":
    main()
