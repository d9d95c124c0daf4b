# SPDX-License-Identifier: Apache-2.0
"""`onecopy scan|take --format arrow` writes Arrow IPC streams (format/arrow_ipc.hpp) that pyarrow
reads, whose every batch passes `validate(full=True)`, and whose columns equal the interop
corpus's `.arrow` ground truth: whole files of every writer, projections, row ranges with odd
batch sizes (sliced batches), filters (including one that keeps no row) and takes.

The stream's framing is checked message by message too: continuation markers, metadata and body
lengths that are multiples of 8, every buffer at an 8-aligned body offset, and the end marker."""

from __future__ import annotations

import os
import struct
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc
import pytest

from test_interop import expected_table, normalize, same

ROOT = Path(__file__).resolve().parents[2]
CLI = Path(os.environ.get("ONECOPY_BUILD_DIR", ROOT / "build")) / "client" / "onecopy"
EOS = b"\xff\xff\xff\xff\x00\x00\x00\x00"


def run_cli(*args: str) -> bytes:
    r = subprocess.run([str(CLI), *args], capture_output=True, timeout=300)
    assert r.returncode == 0, f"onecopy {' '.join(args)}: {r.stderr.decode(errors='replace')}"
    return r.stdout


def check_framing(data: bytes) -> int:
    """Walks the encapsulated messages by hand; returns how many came before the end marker."""
    at, messages = 0, 0
    whole = pa.py_buffer(data)
    while True:
        assert len(data) - at >= 8, f"stream ends inside a message prefix at {at}"
        marker, size = struct.unpack_from("<Ii", data, at)
        assert marker == 0xFFFFFFFF, f"no continuation marker at {at}"
        if size == 0:
            assert len(data) == at + 8, "bytes after the end-of-stream marker"
            return messages
        assert size > 0 and size % 8 == 0, f"metadata size {size} at {at}"
        msg = pa.ipc.read_message(whole.slice(at))
        body = msg.body.size if msg.body is not None else 0
        assert body % 8 == 0, f"body of {body} bytes at {at}"
        at += 8 + size + body
        messages += 1


def read_stream(data: bytes) -> tuple[pa.Schema, list[pa.RecordBatch]]:
    check_framing(data)
    reader = pa.ipc.open_stream(data)
    batches = list(reader)
    for b in batches:
        b.validate(full=True)
    return reader.schema, batches


def check_table(what: str, schema: pa.Schema, batches: list[pa.RecordBatch], exp: pa.Table) -> None:
    assert schema.names == exp.schema.names, what
    got = pa.Table.from_batches(batches, schema=schema)
    assert got.num_rows == exp.num_rows, what
    for name in exp.schema.names:
        a = normalize(got.column(name), exp.column(name))
        e = exp.column(name).combine_chunks()
        assert same(a, e), f"{what}:{name} differs:\n got {a.slice(0, 5)}\n exp {e.slice(0, 5)}"


def rows_of(table: pa.Table, rows: list[int]) -> pa.Table:
    """Rows @p rows of @p table by slices: pyarrow's take has no kernel for view types."""
    return pa.concat_tables([table.slice(r, 1) for r in rows])


def vortex_files(corpus: Path, writer: str) -> list[Path]:
    return sorted(corpus.glob(f"*.{writer}.vortex"))


@pytest.mark.parametrize("writer", ["default", "ed2025-05", "ed2025-10", "compact"])
def test_scan_arrow_equals_pyarrow(corpus: Path, writer: str):
    checked = 0
    for path in vortex_files(corpus, writer):
        exp = expected_table(path)
        schema, batches = read_stream(run_cli("scan", str(path), "--format", "arrow"))
        check_table(path.name, schema, batches, exp)
        checked += 1
    assert checked > 0


def test_projection_and_sliced_batches(corpus: Path):
    """Reversed projections over row ranges that start off a byte boundary, in batches of 333
    rows: the batches are slices of decoded chunks, so bitmaps must be shifted and offsets
    rebased."""
    checked = 0
    for path in vortex_files(corpus, "default"):
        exp = expected_table(path)
        if exp.num_rows < 20:
            continue
        names = exp.schema.names[::-1][:4]
        begin, end = 13, exp.num_rows - 5
        data = run_cli("scan", str(path), "--format", "arrow", "--columns", ",".join(names),
                       "--rows", f"{begin}:{end}", "--batch-rows", "333")
        schema, batches = read_stream(data)
        assert all(len(b) <= 333 for b in batches), path.name
        check_table(path.name, schema, batches, exp.select(names).slice(begin, end - begin))
        checked += 1
    assert checked >= 10


def test_limit_cuts_the_last_batch(corpus: Path):
    path = corpus / "string_some_nulls.default.vortex"
    exp = expected_table(path)
    schema, batches = read_stream(run_cli("scan", str(path), "--format", "arrow", "--batch-rows",
                                          "1000", "--limit", "2501"))
    check_table(path.name, schema, batches, exp.slice(0, 2501))


def test_filter(corpus: Path):
    path = corpus / "numeric_some_nulls.default.vortex"
    exp = expected_table(path)
    mask = pc.fill_null(pc.greater(exp.column("rand_int32"), 0), False)
    schema, batches = read_stream(run_cli("scan", str(path), "--format", "arrow", "--filter",
                                          "rand_int32 > 0"))
    check_table(path.name, schema, batches, exp.filter(mask))


def test_filter_that_keeps_no_row_is_a_schema_and_the_end(corpus: Path):
    path = corpus / "numeric_some_nulls.default.vortex"
    exp = expected_table(path)
    data = run_cli("scan", str(path), "--format", "arrow", "--filter", "sorted_i64 < -9000000000000000000")
    assert check_framing(data) == 1 and data.endswith(EOS)
    schema, batches = read_stream(data)
    assert batches == [] and schema.names == exp.schema.names


def test_take(corpus: Path):
    checked = 0
    for writer in ["default", "compact"]:
        for path in vortex_files(corpus, writer):
            exp = expected_table(path)
            n = exp.num_rows
            if n == 0:
                continue
            rows = sorted({0, n - 1, n // 2, n // 3, min(n - 1, 7)}, reverse=True) + [0]
            schema, batches = read_stream(run_cli("take", str(path), ",".join(map(str, rows)),
                                                  "--format", "arrow"))
            assert len(batches) == 1, path.name
            check_table(path.name, schema, batches, rows_of(exp, rows))
            checked += 1
    assert checked >= 20


def test_take_with_columns(corpus: Path):
    path = corpus / "typed_some_nulls.default.vortex"
    exp = expected_table(path)
    names = ["ts_us_tz", "dec_38_10", "time_s"]
    rows = [5, 3, 5, 0, 99]
    schema, batches = read_stream(run_cli("take", str(path), ",".join(map(str, rows)), "--columns",
                                          ",".join(names), "--format", "arrow"))
    check_table(path.name, schema, batches, rows_of(exp.select(names), rows))


def test_every_buffer_is_8_aligned(corpus: Path):
    """pyarrow rejects misaligned buffers itself; this pins the writer's own layout: each
    record batch's body holds its buffers at multiples of 8, within the body."""
    path = corpus / "nested_some_nulls.default.vortex"
    data = run_cli("scan", str(path), "--format", "arrow", "--rows", "3:1000", "--batch-rows", "97")
    reader = pa.ipc.MessageReader.open_stream(data)
    kinds = []
    for msg in reader:
        kinds.append(msg.type)
        if msg.type != "record batch":
            continue
        assert msg.body.size % 8 == 0
        # A record batch re-read from its message has the same buffers; check their addresses
        # relative to the body.
        batch = pa.ipc.read_record_batch(msg, pa.ipc.open_stream(data).schema)
        base = msg.body.address
        for col in batch.columns:
            for buf in _buffers(col):
                assert (buf.address - base) % 8 == 0
                assert base <= buf.address and buf.address + buf.size <= base + msg.body.size
    assert kinds[0] == "schema" and kinds.count("record batch") == 11


def _buffers(arr: pa.Array):
    for b in arr.buffers():
        if b is not None and b.size:
            yield b


def test_pyarrow_reads_our_zstd_stream():
    """onecopy's writer with zstd bodies (the object class's answers): the fuzz seed
    flat_offsets_zstd, which test_arrow_ipc_read.cpp checks is what the writer writes now (its
    first byte picks the fuzz entry's dtype), read by pyarrow row by row."""
    seed = ROOT / "tests/fuzz/seeds/arrow_ipc_read/flat_offsets_zstd"
    data = seed.read_bytes()[1:]
    schema, batches = read_stream(data)
    assert schema.names == ["i", "s", "flag", "f", "n"]
    assert [b.num_rows for b in batches] == [200, 1]
    rows = range(200)
    want = {
        "i": [None if i % 7 == 0 else i * 3 for i in rows],
        "s": [None if i % 5 == 0 else f"value {i % 4}" for i in rows],
        "flag": [None if i % 3 == 0 else i % 2 == 0 for i in rows],
        "f": [i / 2 for i in rows],
        "n": [None] * 200,
    }
    for name, values in want.items():
        assert batches[0].column(name).to_pylist() == values, name
        assert batches[1].column(name).to_pylist() == values[1:2], name
    # Compressed: smaller than the same batches written without compression by pyarrow.
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as w:
        for b in batches:
            w.write_batch(b)
    assert len(data) < sink.getvalue().size
