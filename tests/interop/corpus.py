# SPDX-License-Identifier: Apache-2.0
"""The interop corpus: tables written by the official `vortex-data` writer.

Every case is a pyarrow table built from a fixed seed. `write_corpus(dir)` writes each case as
`<case>.<writer>.vortex` (writer: default, compact, and two older editions) next to
`<case>.arrow`, the same table in Arrow IPC form, which the tests treat as ground truth.

Run as a script to (re)build a corpus: python tests/interop/corpus.py DIR [--large]
"""

from __future__ import annotations

import argparse
import decimal
import json
import string
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc
import vortex as vx

CORPUS_VERSION = 1

WRITERS = {
    "default": lambda: vx.io.VortexWriteOptions.default(),
    "compact": lambda: vx.io.VortexWriteOptions.compact(),
    # Editions restrict the writer to what older readers know: files as Vortex 0.36 and 0.73 write.
    "ed2025-05": lambda: vx.io.VortexWriteOptions.default().with_edition("core2025.05.0"),
    "ed2025-10": lambda: vx.io.VortexWriteOptions.default().with_edition("core2025.10.0"),
}


def _struct_mask(rng, n, kind):
    m = _nulls(rng, n, kind)
    return None if m is None else pa.array(m, type=pa.bool_())


def _nulls(rng, n, kind):
    """A validity mask: 'none', 'some' (~20% null) or 'all'."""
    if kind == "none":
        return None
    if kind == "all":
        return np.ones(n, dtype=bool)
    return rng.random(n) < 0.2


def _words(rng, n, alphabet, lo, hi):
    lens = rng.integers(lo, hi + 1, n)
    chars = np.array(list(alphabet))
    return ["".join(rng.choice(chars, k)) for k in lens]


def numeric_table(rng, n, nulls):
    cols = {}
    for t in ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]:
        info = np.iinfo(t)
        cols[f"rand_{t}"] = pa.array(rng.integers(info.min, info.max, n, dtype=t, endpoint=True),
                                     mask=_nulls(rng, n, nulls))
    cols["narrow_i64"] = pa.array(rng.integers(1_000_000, 1_000_900, n), mask=_nulls(rng, n, nulls))
    outliers = rng.integers(0, 100, n).astype(np.int64)
    outliers[rng.random(n) < 0.01] = 1 << 40
    cols["outliers_i64"] = pa.array(outliers, mask=_nulls(rng, n, nulls))
    cols["negative_i32"] = pa.array(rng.integers(-50, 50, n, dtype=np.int32), mask=_nulls(rng, n, nulls))
    cols["sorted_i64"] = pa.array(np.arange(n, dtype=np.int64) * 7 + 3, mask=_nulls(rng, n, nulls))
    cols["constant_i32"] = pa.array(np.full(n, 42, dtype=np.int32), mask=_nulls(rng, n, nulls))
    cols["runs_i64"] = pa.array(np.repeat(rng.integers(0, 1000, n // 100 + 1), 100)[:n], mask=_nulls(rng, n, nulls))
    cols["price_f64"] = pa.array(np.round(rng.random(n) * 1000, 2), mask=_nulls(rng, n, nulls))
    cols["price_f32"] = pa.array(np.round(rng.random(n) * 100, 1).astype(np.float32), mask=_nulls(rng, n, nulls))
    cols["random_f64"] = pa.array(rng.standard_normal(n), mask=_nulls(rng, n, nulls))
    cols["random_f32"] = pa.array(rng.standard_normal(n).astype(np.float32), mask=_nulls(rng, n, nulls))
    special = np.round(rng.random(n) * 10, 3)
    specials = np.array([np.nan, -0.0, np.inf, -np.inf, 0.0])
    pick = rng.random(n) < 0.05
    special[pick] = specials[rng.integers(0, len(specials), pick.sum())]
    cols["special_f64"] = pa.array(special, mask=_nulls(rng, n, nulls))
    cols["flag"] = pa.array(rng.random(n) < 0.3, mask=_nulls(rng, n, nulls))
    cols["const_flag"] = pa.array(np.ones(n, dtype=bool), mask=_nulls(rng, n, nulls))
    return pa.table(cols)


def string_table(rng, n, nulls):
    cols = {}
    cols["short"] = pa.array(_words(rng, n, string.ascii_lowercase, 0, 10), mask=_nulls(rng, n, nulls))
    cols["long"] = pa.array(_words(rng, n, string.ascii_letters + " ", 20, 200), mask=_nulls(rng, n, nulls))
    cols["unicode"] = pa.array(_words(rng, n, "aäöü€漢字😀ß ", 1, 12), mask=_nulls(rng, n, nulls))
    cities = ["Berlin", "Paris", "Zürich", "Tokyo", "São Paulo", "", "New York"]
    cols["low_card"] = pa.array([cities[i] for i in rng.integers(0, len(cities), n)], mask=_nulls(rng, n, nulls))
    urls = [f"https://example.com/{rng.choice(['shop', 'blog', 'wiki'])}/item/{i}?ref={i % 97}" for i in range(n)]
    cols["high_card"] = pa.array(urls, mask=_nulls(rng, n, nulls))
    cols["const_str"] = pa.array(["same"] * n, mask=_nulls(rng, n, nulls))
    cols["blob"] = pa.array([bytes(rng.integers(0, 256, k, dtype=np.uint8)) for k in rng.integers(0, 40, n)],
                            type=pa.binary(), mask=_nulls(rng, n, nulls))
    cols["low_card_bin"] = pa.array([c.encode() for c in (cities[i] for i in rng.integers(0, len(cities), n))],
                                    type=pa.binary(), mask=_nulls(rng, n, nulls))
    return pa.table(cols)


def typed_table(rng, n, nulls):
    cols = {}
    cents = rng.integers(-10**8, 10**8, n)
    cols["dec_10_2"] = pa.array([decimal.Decimal(int(c)).scaleb(-2) for c in cents], type=pa.decimal128(10, 2),
                                mask=_nulls(rng, n, nulls))
    big = rng.integers(-10**17, 10**17, n)
    cols["dec_38_10"] = pa.array([decimal.Decimal(int(b) * 10**12 + 7).scaleb(-10) for b in big],
                                 type=pa.decimal128(38, 10), mask=_nulls(rng, n, nulls))
    days = rng.integers(-20000, 30000, n).astype(np.int32)
    cols["date32"] = pa.array(days, type=pa.date32(), mask=_nulls(rng, n, nulls))
    secs = rng.integers(0, 86400, n).astype(np.int32)
    cols["time_s"] = pa.array(secs, type=pa.time32("s"), mask=_nulls(rng, n, nulls))
    cols["time_us"] = pa.array(secs.astype(np.int64) * 1_000_000 + 17, type=pa.time64("us"), mask=_nulls(rng, n, nulls))
    base = 1_700_000_000
    stamps = base + rng.integers(0, 10**7, n)
    cols["ts_s"] = pa.array(stamps, type=pa.timestamp("s"), mask=_nulls(rng, n, nulls))
    cols["ts_ms_utc"] = pa.array(stamps * 1000 + rng.integers(0, 1000, n), type=pa.timestamp("ms", tz="UTC"),
                                 mask=_nulls(rng, n, nulls))
    cols["ts_us_tz"] = pa.array(stamps * 10**6, type=pa.timestamp("us", tz="Europe/Berlin"), mask=_nulls(rng, n, nulls))
    cols["ts_ns"] = pa.array(stamps * 10**9 + rng.integers(0, 10**9, n), type=pa.timestamp("ns"),
                             mask=_nulls(rng, n, nulls))
    return pa.table(cols)


def nested_table(rng, n, nulls):
    cols = {}
    lens = rng.integers(0, 6, n)
    lists = [list(rng.integers(0, 1000, k).astype(int)) for k in lens]
    cols["list_i32"] = pa.array(lists, type=pa.list_(pa.int32()), mask=_nulls(rng, n, nulls))
    cols["list_str"] = pa.array([[f"w{x}" for x in l] for l in lists], type=pa.list_(pa.string()),
                                mask=_nulls(rng, n, nulls))
    cols["nested_list"] = pa.array([[l, l[:1]] for l in lists], type=pa.list_(pa.list_(pa.int32())),
                                   mask=_nulls(rng, n, nulls))
    cols["fixed_f32"] = pa.array([list(rng.random(3).astype(np.float32)) for _ in range(n)],
                                 type=pa.list_(pa.float32(), 3), mask=_nulls(rng, n, nulls))
    inner = pa.StructArray.from_arrays(
        [pa.array(rng.integers(0, 100, n)), pa.array(_words(rng, n, "xyz", 1, 4))], names=["x", "name"],
        mask=_struct_mask(rng, n, nulls))
    cols["point"] = pa.StructArray.from_arrays(
        [inner, pa.array(rng.random(n))], names=["inner", "weight"], mask=_struct_mask(rng, n, nulls))
    return pa.table(cols)


def sparse_table(rng, n, nulls):
    mostly_null = rng.integers(0, 10**6, n).astype(np.int64)
    sparse_mask = rng.random(n) > 0.01
    mostly_zero = np.zeros(n, dtype=np.int64)
    hits = rng.random(n) < 0.01
    mostly_zero[hits] = rng.integers(1, 10**6, hits.sum())
    return pa.table({
        "mostly_null": pa.array(mostly_null, mask=sparse_mask),
        "mostly_zero": pa.array(mostly_zero, mask=_nulls(rng, n, nulls)),
        "mostly_null_str": pa.array(_words(rng, n, "ab", 1, 5), mask=sparse_mask),
        "all_null": pa.nulls(n, type=pa.int32()),
        "null_type": pa.nulls(n),
    })


def cases(large: bool):
    """(name, table) pairs; every one is deterministic."""
    out = []
    for nulls in ["none", "some", "all"]:
        for maker in [numeric_table, string_table, typed_table, nested_table]:
            rng = np.random.default_rng(["none", "some", "all"].index(nulls) * 10 + 7)
            out.append((f"{maker.__name__.removesuffix('_table')}_{nulls}_nulls", maker(rng, 20_000, nulls)))
    out.append(("sparse", sparse_table(np.random.default_rng(11), 50_000, "some")))
    out.append(("empty", numeric_table(np.random.default_rng(1), 0, "none")))
    out.append(("one_row", pa.concat_tables([numeric_table(np.random.default_rng(2), 1, "some")])))
    out.append(("one_row_str", string_table(np.random.default_rng(3), 1, "none")))
    if large:
        rng = np.random.default_rng(5)
        n = 3_000_000
        out.append(("multi_million", pa.table({
            "id": pa.array(np.arange(n, dtype=np.int64)),
            "value": pa.array(np.round(rng.random(n) * 100, 2)),
            "bucket": pa.array(rng.integers(0, 50, n, dtype=np.int32)),
            "label": pa.array([f"label-{i % 1000}" for i in range(n)]),
        })))
    return out


def tpch_tables(workdir: Path):
    """TPC-H lineitem and orders at scale factor 0.1 from tpchgen-cli (Parquet -> pyarrow)."""
    import subprocess
    import pyarrow.parquet as pq

    out_dir = workdir / "tpch"
    out_dir.mkdir(parents=True, exist_ok=True)
    tables = {}
    for table in ["lineitem", "orders"]:
        path = out_dir / f"{table}.parquet"
        if not path.exists():
            cli = Path(sys.executable).parent / "tpchgen-cli"
            subprocess.run([str(cli), "parquet", "-s", "0.1", f"--tables={table}", f"--output-dir={out_dir}"],
                           check=True)
        tables[f"tpch_{table}"] = pq.read_table(path)
    return tables


def write_case(dir: Path, name: str, table: pa.Table, writers=WRITERS):
    with pa.OSFile(str(dir / f"{name}.arrow"), "wb") as sink:
        with pa.ipc.new_file(sink, table.schema) as w:
            w.write_table(table)
    for writer, options in writers.items():
        path = dir / f"{name}.{writer}.vortex"
        try:
            options().write(table, str(path))
        except RuntimeError as e:
            # An older edition cannot represent some types (fixed-size lists in core2025.05);
            # that file simply does not exist in the corpus.
            if not writer.startswith("ed") or "not permitted" not in str(e):
                raise
            path.unlink(missing_ok=True)


def write_corpus(dir: Path, large: bool = True, tpch: bool = True) -> Path:
    dir.mkdir(parents=True, exist_ok=True)
    stamp = dir / "corpus.json"
    want = {"version": CORPUS_VERSION, "vortex": vx.__version__ if hasattr(vx, "__version__") else "?",
            "large": large, "tpch": tpch}
    if stamp.exists() and json.loads(stamp.read_text()) == want:
        return dir
    for name, table in cases(large):
        write_case(dir, name, table)
    if tpch:
        for name, table in tpch_tables(dir).items():
            write_case(dir, name, table, {k: WRITERS[k] for k in ("default", "compact")})
    stamp.write_text(json.dumps(want))
    return dir


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("dir", type=Path)
    ap.add_argument("--small", action="store_true", help="skip the multi-million-row case and TPC-H")
    a = ap.parse_args()
    write_corpus(a.dir, large=not a.small, tpch=not a.small)
    print(a.dir)
