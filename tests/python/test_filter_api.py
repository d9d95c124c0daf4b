# SPDX-License-Identifier: Apache-2.0
"""Filtered scans and take() from Python, and the onecopy.col / onecopy.lit expression builder."""

import datetime as dt
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import vortex as vx

import onecopy
from onecopy import col, lit

N = 30_000


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> tuple[Path, pa.Table]:
    rng = np.random.default_rng(7)
    score = rng.random(N)
    table = pa.table({
        "id": pa.array(np.arange(N, dtype=np.int64)),
        "score": pa.array(score, mask=np.arange(N) % 11 == 0),  # every 11th row null
        "tag": pa.array([f"t{i % 13}" for i in range(N)]),
        "odd name": pa.array((np.arange(N) % 7).astype(np.int32)),
        "Date": pa.array((np.arange(N) % 5).astype(np.int64)),  # a keyword: must be quoted
    })
    path = tmp_path_factory.mktemp("filter") / "f.vortex"
    vx.io.write(table, str(path))
    return path, table


# ---- rendering -------------------------------------------------------------------------------

@pytest.mark.parametrize("expr, sql", [
    (col("a") == 1, "a = 1"),
    (col("a") != "x", "a != 'x'"),
    (3 < col("x"), "x > 3"),
    (2.5 >= col("x"), "x <= 2.5"),
    (col("a") < lit(1e-7), "a < 1e-07"),
    (col("a") > -2.0, "a > -2.0"),
    (col("a") == 10**19, "a = 10000000000000000000"),
    (col("s") == "it's", "s = 'it''s'"),
    (col("b") == True, "b = TRUE"),  # noqa: E712 - builds an expression
    (col("b").is_null(), "b IS NULL"),
    (col("b").is_not_null(), "b IS NOT NULL"),
    (col("a.b.c") >= 0, "a.b.c >= 0"),
    (col(["a.b", "c"]) == 1, '"a.b".c = 1'),
    (col("odd name") == 1, '"odd name" = 1'),
    (col('say "hi"') == 1, '"say ""hi""" = 1'),
    (col("date") == 1, '"date" = 1'),
    (col("Select") == 1, "Select = 1"),
    (col("_x9") == 1, "_x9 = 1"),
    (col("9x") == 1, '"9x" = 1'),
    (col("t").isin(["a", "b"]), "t IN ('a', 'b')"),
    (col("n").isin(np.array([1, 2])), "n IN (1, 2)"),
    (col("n").between(1, 5.5), "n BETWEEN 1 AND 5.5"),
    (col("s").startswith("ab'c"), "s LIKE 'ab''c%'"),
    (col("d") == dt.date(2024, 2, 9), "d = DATE '2024-02-09'"),
    (col("t") < dt.datetime(2024, 2, 9, 1, 2, 3, 4), "t < TIMESTAMP '2024-02-09 01:02:03.000004'"),
    (col("t") < dt.datetime(2024, 1, 1, 1, 30, tzinfo=dt.timezone(dt.timedelta(hours=2))),
     "t < TIMESTAMP '2023-12-31 23:30:00.000000'"),
    (col("n") == None, "n = NULL"),  # noqa: E711 - builds an expression
    ((col("a") == 1) & (col("b") == 2) & (col("c") == 3), "a = 1 AND b = 2 AND c = 3"),
    ((col("a") == 1) | (col("b") == 2) & (col("c") == 3), "a = 1 OR b = 2 AND c = 3"),
    (((col("a") == 1) | (col("b") == 2)) & (col("c") == 3), "(a = 1 OR b = 2) AND c = 3"),
    (~(col("a") == 1), "NOT a = 1"),
    (~((col("a") == 1) & (col("b") == 2)), "NOT (a = 1 AND b = 2)"),
    (~col("t").isin([1]) | ~~col("b"), "NOT t IN (1) OR NOT NOT b"),
    ((col("a") == 1) == lit(False), "(a = 1) = FALSE"),
])
def test_builder_renders_sql(expr, sql):
    assert str(expr) == sql


@pytest.mark.parametrize("make, exc", [
    (lambda: lit(float("nan")), ValueError),
    (lambda: lit(float("inf")), ValueError),
    (lambda: col("x") < float("-inf"), ValueError),
    (lambda: lit(2**64), ValueError),
    (lambda: lit(-(2**63) - 1), ValueError),
    (lambda: lit(b"bytes"), TypeError),
    (lambda: lit(object()), TypeError),
    (lambda: lit(col("a")), TypeError),
    (lambda: col(""), ValueError),
    (lambda: col("a..b"), ValueError),
    (lambda: col([]), ValueError),
    (lambda: col("s").startswith("50%"), ValueError),
    (lambda: col("s").startswith("a_b"), ValueError),
    (lambda: col("n").isin([]), ValueError),
    (lambda: col("n").isin([col("m")]), TypeError),
    (lambda: bool(col("a") == 1), TypeError),
    (lambda: 1 < col("a") < 3, TypeError),  # chained comparison asks bool() of the first
    (lambda: (col("a") == 1) and (col("b") == 2), TypeError),
    (lambda: (col("a") == 1) & True, TypeError),
    (lambda: True | (col("a") == 1), TypeError),
    (lambda: {col("a"): 1}, TypeError),  # unhashable: == builds expressions
])
def test_builder_rejects(make, exc):
    with pytest.raises(exc):
        make()


# ---- filtered scans agree with pyarrow.compute over a full read --------------------------------

def _cases(t: pa.Table):
    score, tag, ident = t["score"], t["tag"], t["id"]
    return [
        ("id < 100", col("id") < 100, pc.less(ident, 100)),
        ("score > 0.5 AND tag IN ('t1', 't3')", (col("score") > 0.5) & col("tag").isin(["t1", "t3"]),
         pc.and_(pc.greater(score, 0.5), pc.is_in(tag, pa.array(["t1", "t3"])))),
        ("score IS NULL OR id BETWEEN 1000 AND 1010",
         col("score").is_null() | col("id").between(1000, 1010),
         pc.or_(pc.is_null(score), pc.and_(pc.greater_equal(ident, 1000), pc.less_equal(ident, 1010)))),
        ("tag LIKE 't1%'", col("tag").startswith("t1"), pc.starts_with(tag, "t1")),
        ("NOT score >= 0.25", ~(col("score") >= 0.25), pc.invert(pc.greater_equal(score, 0.25))),
        ('"odd name" = 3 AND "Date" != 0', (col("odd name") == 3) & (col("Date") != 0),
         pc.and_(pc.equal(t["odd name"], 3), pc.not_equal(t["Date"], 0))),
        ("id > 29990 AND id < 20", (col("id") > 29990) & (col("id") < 20), pc.and_(pc.greater(ident, 29990),
                                                                                   pc.less(ident, 20))),
    ]


def test_filtered_scan_matches_pyarrow(data):
    path, table = data
    f = onecopy.open(path)
    for sql, expr, mask in _cases(table):
        assert str(expr) == sql
        want = table.filter(mask).to_pylist()
        assert pa.table(f.scan(filter=sql)).to_pylist() == want, sql
        assert pa.table(f.scan(filter=expr)).to_pylist() == want, sql


def test_filter_with_projection_batches_and_row_range(data):
    path, table = data
    got = pa.table(onecopy.open(path).scan(columns=["id"], filter=col("tag") == "t5", batch_rows=1000,
                                           row_range=(5000, 20000)))
    assert got.column_names == ["id"]
    part = table.slice(5000, 15000)
    assert got["id"].to_pylist() == part.filter(pc.equal(part["tag"], "t5"))["id"].to_pylist()


def test_empty_filter_string_keeps_every_row(data):
    path, _ = data
    assert pa.table(onecopy.open(path).scan(columns=["id"], filter="")).num_rows == N


def test_bad_filter_points_at_the_token(data):
    path, _ = data
    with pytest.raises(onecopy.OnecopyError) as e:
        onecopy.open(path).scan(filter="id < < 3")
    assert "^" in str(e.value)


@pytest.mark.parametrize("flt", ["nope = 1", col("nope") == 1])
def test_unknown_filter_column_is_named(data, flt):
    path, _ = data
    with pytest.raises(onecopy.OnecopyError) as e:
        onecopy.open(path).scan(filter=flt)
    assert "nope" in str(e.value)


def test_filter_of_wrong_type_is_a_type_error(data):
    path, _ = data
    with pytest.raises(TypeError):
        onecopy.open(path).scan(filter=42)


# ---- take ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("indices", [[5, 3, 29_999, 3, 0, 12_345, 5], np.array([7, 7, 1, 20_000], dtype=np.int64),
                                     range(100, 90, -1)])
def test_take_matches_pyarrow_take(data, indices):
    path, table = data
    got = pa.table(onecopy.open(path).take(indices))
    assert got.to_pylist() == table.take(pa.array(list(indices))).to_pylist()


def test_take_projects_columns(data):
    path, table = data
    got = pa.table(onecopy.open(path).take([9, 2], columns=["tag", "id"]))
    assert got.column_names == ["tag", "id"]
    assert got.to_pylist() == table.select(["tag", "id"]).take([9, 2]).to_pylist()


def test_take_is_one_batch(data):
    path, _ = data
    reader = pa.RecordBatchReader.from_stream(onecopy.open(path).take([1, 29_000, 2]))
    assert [b.num_rows for b in reader] == [3]


def test_take_rejects_bad_indices(data):
    path, _ = data
    f = onecopy.open(path)
    with pytest.raises(ValueError):
        f.take([1, -1])
    with pytest.raises(onecopy.OnecopyError) as e:
        f.take([0, N])
    assert e.value.code == "invalid"
    with pytest.raises(onecopy.OnecopyError) as e:
        f.take([0], columns=["nope"])
    assert "nope" in str(e.value)
