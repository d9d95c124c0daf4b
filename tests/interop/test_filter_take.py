# SPDX-License-Identifier: Apache-2.0
"""Property tests for filtered scans and take, with pyarrow as the reference.

For seeded random SQL filters over the interop corpus, TPC-H SF 0.1 and a file built to stress
zone pruning, `pa.table(f.scan(filter=sql, columns=proj))` must equal the reference table
filtered by the same predicate evaluated with pyarrow.compute under SQL three-valued logic
(comparisons with null are null, AND/OR are Kleene, NOT null is null, a row is kept only when
the predicate is TRUE), projected the same way. Since each scan must return every matching
row, these also check that zone pruning never drops one.

`f.take(indices)` must equal `table.take(indices)` for random, sorted, duplicated, boundary and
empty index sets, and indices out of range must raise.

Every case is reproducible from its seed: a failure message prints the SQL and the projection.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc
import pytest
import vortex as vx

import corpus as corpus_mod
import onecopy
from test_interop import same

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

# Corpus files checked: the default writer (the compact ones are checked in test_interop.py).
CORPUS_CASES = [
    "numeric_none_nulls", "numeric_some_nulls", "numeric_all_nulls",
    "string_none_nulls", "string_some_nulls", "string_all_nulls",
    "typed_none_nulls", "typed_some_nulls", "typed_all_nulls",
    "nested_none_nulls", "nested_some_nulls", "nested_all_nulls",
    "sparse", "empty", "one_row", "one_row_str", "multi_million",
]
FILTERS_PER_CORPUS_FILE = 12  # x 17 files: ~200 filters
TPCH_FILTERS = {"lineitem": 70, "orders": 30}


# ---------------------------------------------------------------------------------------------
# Reference data


def read_arrow(path: Path) -> pa.Table:
    """The reference table; string and binary views as plain string and binary, which pyarrow's
    filter and take kernels support (TPC-H from tpchgen-cli holds views)."""
    with pa.memory_map(str(path)) as src:
        table = pa.ipc.open_file(src).read_all()
    fields = []
    for field in table.schema:
        t = {pa.string_view(): pa.string(), pa.binary_view(): pa.binary()}.get(field.type, field.type)
        fields.append(field.with_type(t))
    return table.cast(pa.schema(fields, metadata=table.schema.metadata))


def cache_dir() -> Path:
    d = Path(os.environ.get("ONECOPY_TEST_CACHE", ROOT / "build" / "test-cache"))
    d.mkdir(parents=True, exist_ok=True)
    return d


@pytest.fixture(scope="session")
def tpch() -> dict[str, tuple[Path, pa.Table]]:
    """TPC-H lineitem and orders at SF 0.1: tpchgen-cli Parquet, written again by vortex-data
    with its default options. Cached under $ONECOPY_TEST_CACHE (default build/test-cache)."""
    d = cache_dir() / "tpch-sf0.1"
    d.mkdir(parents=True, exist_ok=True)
    out = {}
    for name in ("lineitem", "orders"):
        vortex_path = d / f"tpch_{name}.default.vortex"
        if not vortex_path.exists() or not (d / f"tpch_{name}.arrow").exists():
            tables = corpus_mod.tpch_tables(d)
            corpus_mod.write_case(d, f"tpch_{name}", tables[f"tpch_{name}"], {"default": corpus_mod.WRITERS["default"]})
        out[name] = (vortex_path, read_arrow(d / f"tpch_{name}.arrow"))
    return out


# ---------------------------------------------------------------------------------------------
# Comparison (floats bit for bit: test_interop.same)


def assert_tables_equal(got: pa.Table, exp: pa.Table, what: str):
    assert got.num_rows == exp.num_rows, f"{what}: {got.num_rows} rows, expected {exp.num_rows}"
    assert got.schema.names == exp.schema.names, f"{what}: columns {got.schema.names} != {exp.schema.names}"
    for name in exp.schema.names:
        g, e = got.column(name), exp.column(name)
        g = g.combine_chunks() if g.num_chunks else pa.array([], type=g.type)
        e = e.combine_chunks() if e.num_chunks else pa.array([], type=e.type)
        if g.type != e.type:
            g = g.cast(e.type)  # field nullability flags only
        if not same(g, e):
            diff = pc.not_equal(g, e) if len(g) and not pa.types.is_nested(e.type) else None
            first = pc.index(diff, True).as_py() if diff is not None else "?"
            assert False, (f"{what}: column {name} differs (first at row {first}):\n"
                           f" got {g.slice(max(0, (first if isinstance(first, int) else 0)), 3)}\n"
                           f" exp {e.slice(max(0, (first if isinstance(first, int) else 0)), 3)}")


# ---------------------------------------------------------------------------------------------
# Columns the grammar can compare


def leaf_columns(table: pa.Table):
    """(path, array, kind) for every column a filter can name: top-level and nested struct
    leaves (a leaf is null where any struct above it is null, as SQL and onecopy see it)."""
    out = []

    def visit(path, arr):
        t = arr.type
        if pa.types.is_struct(t):
            for i, child in enumerate(arr.flatten()):
                visit(path + (t.field(i).name,), child)
            return
        kind = None
        if pa.types.is_boolean(t):
            kind = "bool"
        elif pa.types.is_integer(t):
            kind = "int"
        elif pa.types.is_floating(t) and t.bit_width > 16:
            kind = "float"
        elif pa.types.is_string(t) or pa.types.is_large_string(t):
            kind = "str"
        elif pa.types.is_binary(t) or pa.types.is_large_binary(t):
            kind = "bin"
        elif pa.types.is_date32(t):
            kind = "date"
        elif pa.types.is_timestamp(t):
            kind = "ts"
        if kind:  # decimals, times, lists, nulls: not comparable in the grammar
            out.append((path, arr, kind))

    for name in table.schema.names:
        col = table.column(name)
        visit((name,), col.combine_chunks() if col.num_chunks else pa.array([], type=col.type))
    return out


def sql_name(path) -> str:
    return ".".join('"' + p.replace('"', '""') + '"' for p in path)


INT_BOUNDS = {
    pa.int8(): (-2**7, 2**7 - 1), pa.int16(): (-2**15, 2**15 - 1), pa.int32(): (-2**31, 2**31 - 1),
    pa.int64(): (-2**63, 2**63 - 1), pa.uint8(): (0, 2**8 - 1), pa.uint16(): (0, 2**16 - 1),
    pa.uint32(): (0, 2**32 - 1), pa.uint64(): (0, 2**64 - 1),
}
LIT_MIN, LIT_MAX = -2**63 + 1, 2**64 - 1  # integer literals the grammar reads
EPOCH = dt.datetime(1970, 1, 1)


class Lit:
    """A literal: its SQL text and the pyarrow scalar (or out-of-range int) it compares as."""

    def __init__(self, sql: str, value, kind: str):
        self.sql, self.value, self.kind = sql, value, kind


class Column:
    """One comparable column and seeded literals drawn from its values."""

    def __init__(self, path, arr: pa.Array, kind: str, rng: np.random.Generator):
        self.path, self.arr, self.kind, self.rng = path, arr, kind, rng
        self.sql = sql_name(path)
        values = arr.drop_null()
        if kind == "float":
            values = values.filter(pc.is_finite(values))
        if kind == "ts":  # stored integers in the column's unit
            values = values.cast(pa.int64())
        self.values = values
        self._sorted = None

    # -- literal sampling: min, max, quantiles, random values, just outside, far outside
    def sample(self):
        v = self.values
        if len(v) == 0:
            return None
        r = self.rng.random()
        if r < 0.5:
            return v[int(self.rng.integers(len(v)))].as_py()
        if r < 0.8:
            q = float(self.rng.choice([0.0, 0.01, 0.25, 0.5, 0.75, 0.99, 1.0]))
            if self._sorted is None:
                self._sorted = v.take(pc.sort_indices(v))
            return self._sorted[min(len(v) - 1, int(q * (len(v) - 1)))].as_py()
        mm = pc.min_max(v)
        return (mm["min"] if self.rng.random() < 0.5 else mm["max"]).as_py()

    def literal(self) -> Lit:
        rng, k = self.rng, self.kind
        x = self.sample()
        outside = rng.random() < 0.15
        if k == "bool":
            b = bool(rng.random() < 0.5) if x is None else x
            return Lit("TRUE" if b else "FALSE", pa.scalar(b), k)
        if k == "int":
            if x is None or outside:
                lo, hi = INT_BOUNDS[self.arr.type]
                x = int(rng.choice([lo - 1, hi + 1, lo, hi, 0, -1, 1 << 40, -(1 << 40), 2**63, 2**64 - 1]))
                x = int(min(max(x, LIT_MIN), LIT_MAX))
            elif rng.random() < 0.2:
                x = int(x) + int(rng.choice([-1, 1]))
                x = int(min(max(x, LIT_MIN), LIT_MAX))
            if rng.random() < 0.1 and abs(x) < 2**52:  # a float literal against an integer column
                f = x + 0.5
                return Lit(repr(f), pa.scalar(f, pa.float64()), "float")
            return Lit(str(x), x, "int")
        if k == "float":
            if x is None or outside:
                x = float(rng.choice([-1e300, 1e300, 0.0, -0.0, 1e-300, 123456.5]))
            x = float(x)
            if rng.random() < 0.2 and x == int(x) and abs(x) < 2**62:
                return Lit(str(int(x)), pa.scalar(x, pa.float64()), "float")
            return Lit(repr(x), pa.scalar(x, pa.float64()), "float")
        if k in ("str", "bin"):
            if k == "bin" and x is not None:
                try:
                    x = x.decode("utf-8")
                except UnicodeDecodeError:
                    x = None
            if x is None or outside or "\x00" in x:
                x = str(rng.choice(["", "a", "zzzz", "\u00ff\u00ff", "Berlin", "https://", "label-5"]))
            return self._string_lit(x)
        if k == "date":
            if x is None or outside:
                x = EPOCH.date() + dt.timedelta(days=int(rng.choice([-40000, 40000, 0, -1])))
            return Lit(f"DATE '{x.isoformat()}'", pa.scalar(x, pa.date32()), k)
        if k == "ts":
            t = self.arr.type
            if x is None or outside:
                micros = int(rng.choice([0, -10**12, 10**16, 1_700_000_000_500_000]))
            else:
                micros = {"s": x * 10**6, "ms": x * 1000, "us": x, "ns": x // 1000}[t.unit]
                if rng.random() < 0.2:
                    micros += int(rng.choice([-1, 1, 500_000]))
            when = EPOCH + dt.timedelta(microseconds=micros)
            text = when.strftime("%Y-%m-%d %H:%M:%S") + (f".{when.microsecond:06d}" if when.microsecond or rng.random() < 0.3 else "")
            return Lit(f"TIMESTAMP '{text}'", micros, k)
        raise AssertionError(k)

    def _string_lit(self, s: str) -> Lit:
        t = pa.binary() if self.kind == "bin" else pa.string()
        v = s.encode() if self.kind == "bin" else s
        return Lit("'" + s.replace("'", "''") + "'", pa.scalar(v, t), self.kind)

    def like_prefix(self):
        x = self.sample()
        if self.kind == "bin" and x is not None:
            try:
                x = x.decode("utf-8")
            except UnicodeDecodeError:
                x = None
        if x is None or "\x00" in x:
            x = ""
        x = x[: int(self.rng.integers(0, len(x) + 1))] if self.rng.random() < 0.9 else x + "x"
        return x.split("%")[0].split("_")[0]


CMP = {"=": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater,
       ">=": pc.greater_equal}
MIRROR = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def const_mask(arr: pa.Array, value) -> pa.Array:
    """`value` (True/False/None) where arr is valid, null where it is null."""
    if value is None:
        return pa.nulls(len(arr), pa.bool_())
    return pa.array(np.full(len(arr), value), mask=np.asarray(arr.is_null()))


def int_compare(arr: pa.Array, op: str, x: int) -> pa.Array:
    """Exact integer comparison, also for literals outside the column's type."""
    lo, hi = INT_BOUNDS[arr.type]
    if x < lo or x > hi:
        below = x < lo
        result = {"=": False, "!=": True, "<": not below, "<=": not below, ">": below, ">=": below}[op]
        return const_mask(arr, result)
    return CMP[op](arr, pa.scalar(x, arr.type))


def compare(c: Column, op: str, lit: Lit) -> pa.Array:
    arr = c.arr
    if lit.kind == "int" and c.kind == "int":
        return int_compare(arr, op, lit.value)
    if c.kind == "ts":  # stored integers vs the literal's instant, exactly, in the finer unit
        ints, micros = arr.cast(pa.int64()), lit.value
        unit = arr.type.unit
        if unit == "ns":
            return int_compare(ints, op, micros * 1000)
        if unit != "us":
            ints = pc.multiply_checked(ints, 10**6 if unit == "s" else 1000)
        return int_compare(ints, op, micros)
    if lit.kind == "float" or c.kind == "float":
        v = lit.value if isinstance(lit.value, pa.Scalar) else pa.scalar(float(lit.value), pa.float64())
        return CMP[op](arr.cast(pa.float64()), v)
    return CMP[op](arr, lit.value)


# ---------------------------------------------------------------------------------------------
# Filter generation: (sql, mask) pairs built together


class FilterGen:
    def __init__(self, table: pa.Table, seed: int, atoms=None):
        self.rng = np.random.default_rng(seed)
        self.n = table.num_rows
        self.columns = [Column(p, a, k, self.rng) for p, a, k in leaf_columns(table)]
        self.atoms = atoms or ["cmp", "cmp", "cmp", "in", "between", "null", "like", "bool", "cmp_null"]

    def column(self, kinds=None) -> Column | None:
        cands = [c for c in self.columns if kinds is None or c.kind in kinds]
        return cands[int(self.rng.integers(len(cands)))] if cands else None

    def atom(self):
        rng = self.rng
        for _ in range(20):
            what = self.atoms[int(rng.integers(len(self.atoms)))]
            if what == "cmp":
                c = self.column()
                op = str(rng.choice(list(CMP)))
                lit = c.literal()
                if rng.random() < 0.2:  # literal on the left
                    return f"{lit.sql} {op} {c.sql}", compare(c, MIRROR[op], lit), {c.path[0]}
                return f"{c.sql} {op} {lit.sql}", compare(c, op, lit), {c.path[0]}
            if what == "in":
                c = self.column([k for k in ("int", "float", "str", "bin", "date", "ts", "bool")])
                lits = [c.literal() for _ in range(int(rng.integers(1, 6)))]
                mask = compare(c, "=", lits[0])
                for lit in lits[1:]:
                    mask = pc.or_kleene(mask, compare(c, "=", lit))
                neg = rng.random() < 0.3
                sql = f"{c.sql} {'NOT ' if neg else ''}IN ({', '.join(l.sql for l in lits)})"
                return sql, pc.invert(mask) if neg else mask, {c.path[0]}
            if what == "between":
                c = self.column(["int", "float", "str", "bin", "date", "ts"])
                if c is None:
                    continue
                lo, hi = c.literal(), c.literal()
                mask = pc.and_kleene(compare(c, ">=", lo), compare(c, "<=", hi))
                neg = rng.random() < 0.3
                sql = f"{c.sql} {'NOT ' if neg else ''}BETWEEN {lo.sql} AND {hi.sql}"
                return sql, pc.invert(mask) if neg else mask, {c.path[0]}
            if what == "null":
                c = self.column()
                neg = rng.random() < 0.5
                mask = c.arr.is_valid() if neg else c.arr.is_null()
                return f"{c.sql} IS {'NOT ' if neg else ''}NULL", mask, {c.path[0]}
            if what == "like":
                c = self.column(["str", "bin"])
                if c is None:
                    continue
                p = c.like_prefix()
                exact = rng.random() < 0.15
                pattern = p if exact else p + "%"
                if exact:
                    mask = compare(c, "=", c._string_lit(p))
                else:
                    mask = pc.starts_with(c.arr.cast(pa.binary()) if c.kind == "bin" else c.arr,
                                          p.encode() if c.kind == "bin" else p) if len(c.arr) else pa.array([], pa.bool_())
                neg = rng.random() < 0.3
                sql = f"{c.sql} {'NOT ' if neg else ''}LIKE '{pattern.replace(chr(39), chr(39) * 2)}'"
                return sql, pc.invert(mask) if neg else mask, {c.path[0]}
            if what == "bool":
                c = self.column(["bool"])
                if c is None:
                    continue
                return c.sql, c.arr, {c.path[0]}
            if what == "cmp_null":  # `col op NULL` is NULL everywhere
                c = self.column()
                op = str(rng.choice(list(CMP)))
                return f"{c.sql} {op} NULL", pa.nulls(self.n, pa.bool_()), {c.path[0]}
        raise AssertionError("no atom")

    def expr(self, depth: int):
        rng = self.rng
        if depth == 0 or rng.random() < 0.35:
            return self.atom()
        r = rng.random()
        if r < 0.2:
            sql, mask, cols = self.expr(depth - 1)
            return f"NOT ({sql})", pc.invert(mask), cols
        parts = [self.expr(depth - 1) for _ in range(int(rng.integers(2, 4)))]
        fn, word = (pc.and_kleene, "AND") if r < 0.6 else (pc.or_kleene, "OR")
        mask = parts[0][1]
        for p in parts[1:]:
            mask = fn(mask, p[1])
        return f" {word} ".join(f"({p[0]})" for p in parts), mask, set().union(*(p[2] for p in parts))


def random_projection(rng, names, filter_cols):
    """None (every column), or a random non-empty subset in random order, sometimes without any
    filter column."""
    r = rng.random()
    if r < 0.15:
        return None
    pool = list(names)
    if r < 0.45:
        rest = [n for n in pool if n not in filter_cols]
        pool = rest or pool
    k = int(rng.integers(1, min(len(pool), 4) + 1))
    return [pool[i] for i in rng.choice(len(pool), k, replace=False)]


def check_filters(path, table: pa.Table, seed: int, count: int, atoms=None, depth=3):
    """@path: a local Path or any URI onecopy.open takes (rados_scan_check.py passes rados://)."""
    f = onecopy.open(path)
    name = path.name if isinstance(path, Path) else str(path)
    gen = FilterGen(table, seed, atoms)
    if not gen.columns:
        pytest.skip(f"{name}: no comparable column")
    for i in range(count):
        sql, mask, cols = gen.expr(depth)
        proj = random_projection(gen.rng, table.schema.names, cols)
        if len(mask) != table.num_rows:  # an atom over an empty table
            mask = pa.array(np.zeros(table.num_rows, dtype=bool))
        exp = (table if proj is None else table.select(proj)).filter(mask)  # null -> dropped
        what = f"{name} seed={seed} #{i} filter={sql!r} columns={proj}"
        try:
            got = pa.table(f.scan(filter=sql, columns=proj))
        except Exception as e:  # noqa: BLE001 - reported with the case that raised it
            raise AssertionError(f"{what}: {type(e).__name__}: {e}") from e
        assert_tables_equal(got, exp, what)


# ---------------------------------------------------------------------------------------------
# Filters


@pytest.mark.parametrize("case", CORPUS_CASES)
def test_filters_on_corpus_equal_pyarrow(corpus: Path, case: str):
    path = corpus / f"{case}.default.vortex"
    if not path.exists():
        pytest.skip(f"{path.name} not in this corpus (--corpus-small)")
    table = read_arrow(corpus / f"{case}.arrow")
    count = FILTERS_PER_CORPUS_FILE // 3 if case == "multi_million" else FILTERS_PER_CORPUS_FILE
    check_filters(path, table, seed=sum(map(ord, case)), count=count)


@pytest.mark.parametrize("case", ["numeric_some_nulls", "numeric_none_nulls", "typed_some_nulls"])
def test_filters_on_compact_corpus_equal_pyarrow(corpus: Path, case: str):
    """Compact files: their number columns are vortex.pco."""
    path = corpus / f"{case}.compact.vortex"
    assert "vortex.pco" in str(onecopy.open(path).inspect()), f"{path.name} holds no pco column"
    table = read_arrow(corpus / f"{case}.arrow")
    count = FILTERS_PER_CORPUS_FILE // 3 if case == "multi_million" else FILTERS_PER_CORPUS_FILE
    check_filters(path, table, seed=sum(map(ord, case)), count=count)


@pytest.mark.parametrize("name", list(TPCH_FILTERS))
def test_filters_on_tpch_equal_pyarrow(tpch, name: str):
    path, table = tpch[name]
    check_filters(path, table, seed=1000 + len(name), count=TPCH_FILTERS[name])


def zoned_table() -> pa.Table:
    """200k rows sorted by key, written in many zones: long common string prefixes (over 64
    bytes, so zone min/max are truncated), floats with NaN and infinities, nulls."""
    rng = np.random.default_rng(42)
    n = 200_000
    key = np.sort(rng.integers(-10**9, 10**9, n))
    prefix = "p" * 70 + "/common/prefix/"
    strs = [f"{prefix}{k:+012d}" for k in key]
    strs_tail = [f"{prefix}{'z' * 10}{i % 3}" for i in range(n)]  # identical past the truncation
    floats = np.sort(rng.standard_normal(n))
    floats[rng.random(n) < 0.02] = np.nan
    floats[rng.random(n) < 0.001] = np.inf
    null = lambda p: rng.random(n) < p  # noqa: E731
    table = pa.table({
        "key": pa.array(key, mask=null(0.01)),
        "s": pa.array(strs, mask=null(0.05)),
        "s_tail": pa.array(strs_tail),
        "f": pa.array(floats, mask=null(0.05)),
        "f32": pa.array(floats.astype(np.float32)),
        "day": pa.array((key // 10**5).astype(np.int32), type=pa.date32()),
        "ts": pa.array(key * 1000, type=pa.timestamp("us", tz="UTC"), mask=null(0.1)),
        "id": pa.array(np.arange(n, dtype=np.uint32)),
        "sparse": pa.array(np.arange(n, dtype=np.int64), mask=~(np.arange(n) % 5000 == 0)),
    })
    return table


@pytest.fixture(scope="session")
def zoned(tmp_path_factory) -> tuple[Path, pa.Table]:
    table = zoned_table()
    path = tmp_path_factory.mktemp("zoned") / "zoned.vortex"
    corpus_mod.WRITERS["default"]().write(table, str(path))
    return path, table


@pytest.fixture(scope="session")
def zoned_compact(tmp_path_factory) -> tuple[Path, pa.Table]:
    """The zoned table through the compact writer: its numbers are vortex.pco, zone maps too."""
    table = zoned_table()
    path = tmp_path_factory.mktemp("zoned") / "zoned.compact.vortex"
    corpus_mod.WRITERS["compact"]().write(table, str(path))
    assert "vortex.pco" in str(onecopy.open(path).inspect()), "the compact writer chose no pco"
    return path, table


@pytest.mark.parametrize("seed", range(4))
def test_pruning_never_drops_a_matching_row(zoned, seed: int):
    path, table = zoned
    check_filters(path, table, seed=seed, count=25, atoms=["cmp", "cmp", "between", "between", "like", "in"],
                  depth=2)


@pytest.mark.parametrize("seed", range(2))
def test_pruning_over_pco_columns_never_drops_a_matching_row(zoned_compact, seed: int):
    path, table = zoned_compact
    check_filters(path, table, seed=100 + seed, count=25, atoms=["cmp", "cmp", "between", "between", "in"],
                  depth=2)


def test_pruning_edges(zoned):
    """Hand-picked range edges: exact zone min/max, truncated string bounds, NaN."""
    path, table = zoned
    f = onecopy.open(path)
    key = table.column("key").combine_chunks().drop_null()
    s = table.column("s").combine_chunks().drop_null()
    prefix = "p" * 70 + "/common/prefix/"
    cases = {
        f"key = {key[0]}": pc.equal(table["key"], key[0]),
        f"key = {key[len(key) - 1]}": pc.equal(table["key"], key[len(key) - 1]),
        f"key >= {key[len(key) // 2]}": pc.greater_equal(table["key"], key[len(key) // 2]),
        f"s = '{s[12345]}'": pc.equal(table["s"], s[12345]),
        f"s >= '{s[len(s) - 1]}'": pc.greater_equal(table["s"], s[len(s) - 1]),
        f"s_tail = '{prefix}{'z' * 10}2'": pc.equal(table["s_tail"], f"{prefix}{'z' * 10}2"),
        f"s_tail > '{prefix}{'z' * 10}1'": pc.greater(table["s_tail"], f"{prefix}{'z' * 10}1"),
        f"s_tail LIKE '{prefix}{'z' * 10}%'": pc.starts_with(table["s_tail"], f"{prefix}{'z' * 10}"),
        f"s LIKE '{prefix}+0%'": pc.starts_with(table["s"], f"{prefix}+0"),
        "f > 1e308": pc.greater(table["f"], 1e308),
        "f != 0.0": pc.not_equal(table["f"], 0.0),
        "f32 < -1.5": pc.less(table["f32"].cast(pa.float64()), -1.5),
        "sparse IS NOT NULL": table["sparse"].is_valid(),
        "sparse = 195000": pc.equal(table["sparse"], 195000),
        "id BETWEEN 65535 AND 65537": pc.and_kleene(pc.greater_equal(table["id"], 65535),
                                                    pc.less_equal(table["id"], 65537)),
    }
    for sql, mask in cases.items():
        exp = table.filter(mask)
        assert_tables_equal(pa.table(f.scan(filter=sql)), exp, f"zoned filter={sql!r}")


# ---------------------------------------------------------------------------------------------
# take


def boundaries(path: Path, n: int) -> list[int]:
    """Row indices at the edges of the file's splits and of power-of-two chunkings."""
    edges = set()
    for start, end in vx.open(str(path)).splits():
        edges.update([start, end - 1, end])
    for step in (1024, 8192, 32768, 65536):
        for b in range(step, n, step)[:8]:
            edges.update([b - 1, b])
    edges.update([0, n - 1])
    return sorted(e for e in edges if 0 <= e < n)


def index_sets(rng, path: Path, n: int):
    if n == 0:
        yield "empty", np.array([], dtype=np.int64)
        return
    k = int(min(n, rng.integers(1, 300)))
    rand = rng.integers(0, n, k)
    yield "random", rand
    yield "sorted", np.sort(rand)
    yield "sorted-unique", np.unique(rand)
    yield "duplicated", np.repeat(rng.integers(0, n, max(1, k // 10)), 3)
    yield "boundaries", np.array(boundaries(path, n))
    yield "boundaries-reversed", np.array(boundaries(path, n))[::-1]
    yield "first-last", np.array([0, n - 1, 0, n - 1])
    yield "single", np.array([int(rng.integers(0, n))])
    yield "empty", np.array([], dtype=np.int64)
    yield "dense-run", np.arange(int(rng.integers(0, n)), n)[:5000]


def check_take(path: Path, table: pa.Table, seed: int):
    f = onecopy.open(path)
    rng = np.random.default_rng(seed)
    n = table.num_rows
    for kind, idx in index_sets(rng, path, n):
        proj = None if rng.random() < 0.5 else random_projection(rng, table.schema.names, set())
        as_list = rng.random() < 0.5
        arg = [int(i) for i in idx] if as_list else idx
        what = f"{path.name} take {kind} ({len(idx)} indices, {'list' if as_list else 'ndarray'}) columns={proj}"
        exp = (table if proj is None else table.select(proj)).take(pa.array(idx, type=pa.int64()))
        try:
            got = pa.table(f.take(arg, columns=proj))
        except Exception as e:  # noqa: BLE001
            raise AssertionError(f"{what}: {type(e).__name__}: {e}") from e
        assert_tables_equal(got, exp, what)


@pytest.mark.parametrize("case", CORPUS_CASES)
def test_take_on_corpus_equals_pyarrow(corpus: Path, case: str):
    path = corpus / f"{case}.default.vortex"
    if not path.exists():
        pytest.skip(f"{path.name} not in this corpus (--corpus-small)")
    check_take(path, read_arrow(corpus / f"{case}.arrow"), seed=sum(map(ord, case)))


def test_take_on_tpch_equals_pyarrow(tpch):
    for i, (path, table) in enumerate(tpch.values()):
        check_take(path, table, seed=7 + i)


def test_take_on_zoned_equals_pyarrow(zoned):
    check_take(*zoned, seed=3)


def test_take_over_pco_columns_equals_pyarrow(zoned_compact):
    check_take(*zoned_compact, seed=4)


TAKE_ERRORS = (onecopy.OnecopyError, pa.ArrowException, ValueError, IndexError, OverflowError, TypeError)


@pytest.mark.parametrize("bad", ["n", "n+1000", "negative", "mixed"])
def test_take_out_of_range_raises(tpch, bad: str):
    path, table = tpch["orders"]
    n = table.num_rows
    idx = {"n": [n], "n+1000": [0, n + 1000], "negative": [-1], "mixed": [5, 2**63 - 1, 3]}[bad]
    f = onecopy.open(path)
    with pytest.raises(TAKE_ERRORS):
        pa.table(f.take(idx))


# ---------------------------------------------------------------------------------------------
# The same filters through the expression builder and over row ranges


def test_expression_builder_equals_sql(zoned):
    path, table = zoned
    f = onecopy.open(path)
    rng = np.random.default_rng(5)
    key = table.column("key").combine_chunks().drop_null()
    for _ in range(10):
        a, b = sorted(int(key[int(i)].as_py()) for i in rng.integers(0, len(key), 2))
        x = float(rng.standard_normal())
        exprs = [
            ((onecopy.col("key") >= a) & (onecopy.col("key") <= b),
             f"key >= {a} AND key <= {b}"),
            (onecopy.col("key").between(a, b) | (onecopy.col("f") > x),
             f"key BETWEEN {a} AND {b} OR f > {x!r}"),
            (~onecopy.col("ts").is_null() & onecopy.col("s").startswith("p" * 70 + "/common/prefix/+0"),
             "ts IS NOT NULL AND s LIKE '" + "p" * 70 + "/common/prefix/+0%'"),
            (onecopy.col("id").isin([int(i) for i in rng.integers(0, table.num_rows, 5)]) | (onecopy.col("id") < 3),
             None),
        ]
        for e, sql in exprs:
            got = pa.table(f.scan(filter=e, columns=["id", "key"]))
            ref = pa.table(f.scan(filter=str(e) if sql is None else sql, columns=["id", "key"]))
            assert_tables_equal(got, ref, f"builder {e} vs {sql}")


@pytest.mark.parametrize("seed", range(2))
def test_filter_with_row_range_equals_pyarrow(tpch, seed: int):
    path, table = tpch["lineitem"]
    f = onecopy.open(path)
    gen = FilterGen(table, 500 + seed)
    for i in range(8):
        sql, mask, _ = gen.expr(2)
        begin, end = sorted(int(v) for v in gen.rng.integers(0, table.num_rows + 1, 2))
        proj = ["l_orderkey", "l_linenumber", "l_shipdate"]
        exp = table.slice(begin, end - begin).select(proj).filter(mask.slice(begin, end - begin))
        what = f"{path.name} seed={seed} #{i} rows {begin}:{end} filter={sql!r}"
        assert_tables_equal(pa.table(f.scan(filter=sql, columns=proj, row_range=(begin, end))), exp, what)


# ---------------------------------------------------------------------------------------------
# Splits decoded side by side


@pytest.mark.parametrize("threads", ["1", "2", "5"])
def test_scans_equal_pyarrow_at_every_thread_count(tpch, threads, monkeypatch):
    """Splits of independent chunk groups decode side by side (format/scan.cpp decode_window),
    TPC-H lineitem's columns being chunked at different rows: batches arrive in order and equal
    pyarrow's at any thread count, batch size and filter."""
    monkeypatch.setenv("ONECOPY_SCAN_DECODE_THREADS", threads)
    onecopy.reload_settings()
    try:
        path, table = tpch["lineitem"]
        f = onecopy.open(path)
        for batch_rows in (0, 7000):
            got = pa.table(f.scan(batch_rows=batch_rows))
            assert_tables_equal(got, table, f"threads={threads} batch_rows={batch_rows}")
            # One column: every chunk is a group of its own, decoded beside the next ones.
            for col in ("l_orderkey", "l_comment"):
                got = pa.table(f.scan(columns=[col], batch_rows=batch_rows))
                assert_tables_equal(got, table.select([col]), f"threads={threads} {col} batch_rows={batch_rows}")
        ship = table.column("l_shipdate")
        mask = pc.and_(pc.and_(pc.greater_equal(ship, pa.scalar(dt.date(1995, 1, 1))),
                               pc.less_equal(ship, pa.scalar(dt.date(1995, 3, 31)))),
                       pc.equal(table.column("l_returnflag"), "R"))
        sql = "l_shipdate BETWEEN DATE '1995-01-01' AND DATE '1995-03-31' AND l_returnflag = 'R'"
        cols = ["l_orderkey", "l_comment", "l_extendedprice"]
        got = pa.table(f.scan(filter=sql, columns=cols, batch_rows=5000))
        assert_tables_equal(got, table.select(cols).filter(mask), f"threads={threads} filter={sql!r}")
        # The same dates as users write them, plain strings (DuckDB and PostgreSQL read them so).
        plain = "l_shipdate BETWEEN '1995-01-01' AND '1995-03-31' AND l_returnflag = 'R'"
        got = pa.table(f.scan(filter=plain, columns=cols, batch_rows=5000))
        assert_tables_equal(got, table.select(cols).filter(mask), f"threads={threads} filter={plain!r}")
    finally:
        monkeypatch.undo()
        onecopy.reload_settings()
