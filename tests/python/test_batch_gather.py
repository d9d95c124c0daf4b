# SPDX-License-Identifier: Apache-2.0
"""onecopy.Batches (client/batch_gather.hpp), the one-copy gather across record batches behind
shuffled batches, against pyarrow's own take over the concatenated batches, for every layout it
gathers: nulls, offsets, slices, nesting; and its errors."""

import decimal

import numpy as np
import pyarrow as pa
import pytest

import onecopy


def _batches(rng, sizes):
    """Record batches of every layout Batches gathers, with nulls; some batches are slices."""
    out = []
    for k, n in enumerate(sizes):
        valid = rng.random(n) > 0.2
        ints = pa.array(rng.integers(-2**40, 2**40, n), mask=~valid)
        words = [None if not v else "w" * int(rng.integers(0, 7)) + str(i) for i, v in enumerate(valid)]
        lists = [None if rng.random() < 0.1 else list(rng.integers(0, 1000, int(rng.integers(0, 5))).astype(np.int32))
                 for _ in range(n)]
        t = pa.table({
            "i64": ints,
            "u8": pa.array(rng.integers(0, 255, n).astype(np.uint8)),
            "f32": pa.array(rng.random(n).astype(np.float32)),
            "f16": pa.array(rng.random(n).astype(np.float16)),
            "flag": pa.array([None if rng.random() < 0.1 else bool(rng.random() < 0.5) for _ in range(n)], pa.bool_()),
            "name": pa.array(words, pa.string()),
            "blob": pa.array([w.encode() if w else None for w in words], pa.large_binary()),
            "tokens": pa.array(lists, pa.list_(pa.int32())),
            "big": pa.array(lists, pa.large_list(pa.int32())),
            "pair": pa.array([[i, -i] for i in range(n)], pa.list_(pa.int64(), 2)),
            "fixed": pa.array([bytes([i % 256] * 3) for i in range(n)], pa.binary(3)),
            "dec": pa.array([decimal.Decimal(i) / 100 for i in range(n)], pa.decimal128(12, 2)),
            "ts": pa.array(rng.integers(0, 2**40, n), pa.timestamp("us", "UTC")),
            "day": pa.array(rng.integers(0, 20000, n).astype(np.int32), pa.date32()),
            "meta": pa.array([None if i % 7 == 0 else {"a": i, "s": str(i)} for i in range(n)],
                             pa.struct([("a", pa.int32()), ("s", pa.string())])),
            "tags": pa.array([[{"k": str(i), "v": [i]}] for i in range(n)],
                             pa.list_(pa.struct([("k", pa.string()), ("v", pa.list_(pa.int16()))]))),
            "kv": pa.array([[(str(i), i)] for i in range(n)], pa.map_(pa.string(), pa.int32())),
            "nothing": pa.nulls(n),
        })
        batch = t.to_batches()[0] if t.num_rows else pa.RecordBatch.from_pylist([], schema=t.schema)
        out.append(batch.slice(k % 3, n - 2 * (k % 3)) if n > 6 else batch)
    return out


def test_take_equals_pyarrow_for_every_layout():
    rng = np.random.default_rng(7)
    batches = _batches(rng, [40, 0, 17, 64, 5])
    schema = batches[0].schema
    expect = pa.Table.from_batches(batches, schema=schema).combine_chunks()
    gathered = onecopy.Batches(batches, schema)
    assert gathered.num_rows == expect.num_rows
    shuffled = rng.permutation(expect.num_rows)
    for rows in (shuffled[:50], shuffled, np.arange(expect.num_rows), np.array([3, 3, 0, 3]), np.array([], np.int64)):
        got = gathered.take(rows)
        got.validate(full=True)
        assert got.schema == schema
        assert pa.table(got).equals(expect.take(pa.array(rows, pa.int64()))), rows


def test_take_is_independent_of_the_batches_it_came_from():
    batch = pa.record_batch({"x": pa.array(np.arange(10))})
    gathered = onecopy.Batches([batch], batch.schema)
    out = gathered.take([9, 1])
    del gathered, batch
    assert out.column(0).to_pylist() == [9, 1]


def test_rows_past_the_end_and_unsupported_layouts_are_clear_errors():
    batch = pa.record_batch({"x": pa.array([1, 2, 3])})
    gathered = onecopy.Batches([batch], batch.schema)
    with pytest.raises(onecopy.OnecopyError, match="past the 3 rows") as e:
        gathered.take([0, 3])
    assert e.value.code == "invalid"
    with pytest.raises(onecopy.OnecopyError, match="negative"):
        gathered.take([-1])
    coded = pa.record_batch({"d": pa.array(["a", "b", "a"]).dictionary_encode()})
    with pytest.raises(onecopy.OnecopyError, match="dictionary") as e:
        onecopy.Batches([coded], coded.schema)
    assert e.value.code == "unsupported"


def _views(rng, sizes):
    """Batches of string and binary views (values inlined and not, nulls, slices, nested), which
    pyarrow's take does not gather: compared as Python values."""
    out = []
    for k, n in enumerate(sizes):
        words = [None if rng.random() < 0.2 else "v" * int(rng.integers(0, 30)) + str(i) for i in range(n)]
        t = pa.table({
            "s": pa.array(words, pa.string_view()),
            "b": pa.array([w.encode() if w else None for w in words[::-1]], pa.binary_view()),
            "l": pa.array([None if w is None else [w, "x" * 20] for w in words], pa.list_(pa.string_view())),
            "i": pa.array(np.arange(n)),
        })
        batch = t.to_batches()[0] if n else pa.RecordBatch.from_pylist([], schema=t.schema)
        out.append(batch.slice(k % 3, n - 2 * (k % 3)) if n > 6 else batch)
    return out


def test_take_gathers_string_and_binary_views():
    rng = np.random.default_rng(11)
    batches = _views(rng, [30, 0, 9, 50])
    schema = batches[0].schema
    rows = pa.Table.from_batches(batches, schema=schema).to_pylist()
    gathered = onecopy.Batches(batches, schema)
    for pick in (rng.permutation(len(rows)), np.array([2, 2, 0]), np.array([], np.int64)):
        got = gathered.take(pick)
        got.validate(full=True)
        assert got.schema == schema
        assert got.to_pylist() == [rows[i] for i in pick]
    # The values are copied: the result outlives its inputs and goes through the C stream.
    out = gathered.take(np.arange(len(rows))[::-1])
    del gathered, batches
    again = pa.table(pa.RecordBatchReader.from_batches(out.schema, [out]))
    assert again.to_pylist() == rows[::-1]


def test_a_view_outside_its_data_buffer_is_an_error():
    good = pa.array(["a" * 20, "b" * 20], pa.string_view())
    views = bytearray(good.buffers()[1].to_pybytes())
    views[16 + 12:16 + 16] = (1000).to_bytes(4, "little")  # row 1's offset, past its buffer
    bad = pa.Array.from_buffers(pa.string_view(), 2, [None, pa.py_buffer(bytes(views)), good.buffers()[2]])
    batch = pa.record_batch({"s": bad})
    with pytest.raises(onecopy.OnecopyError, match="outside its data buffer") as e:
        onecopy.Batches([batch], batch.schema).take([0, 1])
    assert e.value.code == "invalid"
