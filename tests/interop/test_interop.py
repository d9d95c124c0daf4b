# SPDX-License-Identifier: Apache-2.0
"""Every column of every corpus file, read by onecopy, equals what pyarrow holds for the same data."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.ipc
import pytest
import vortex as vx

import onecopy


def expected_table(path: Path) -> pa.Table:
    name = path.name.split(".")[0]
    with pa.memory_map(str(path.parent / f"{name}.arrow")) as src:
        return pa.ipc.open_file(src).read_all()


def vortex_files(corpus: Path):
    return sorted(corpus.glob("*.vortex"))


def normalize(actual: pa.ChunkedArray, expected: pa.ChunkedArray) -> pa.Array:
    """Casts where only field nullability flags differ (Vortex keeps its own)."""
    a = actual.combine_chunks() if actual.num_chunks else pa.array([], type=actual.type)
    if a.type != expected.type:
        a = a.cast(expected.type)
    return a


def same(actual: pa.Array, expected: pa.Array) -> bool:
    """Arrow equality, except that floats compare bit for bit (NaN == NaN, -0.0 != 0.0)."""
    if actual.equals(expected):
        return True
    if not pa.types.is_floating(expected.type) or len(actual) != len(expected):
        return False
    valid = expected.is_valid()
    if not actual.is_valid().equals(valid):
        return False
    width = {16: pa.uint16(), 32: pa.uint32(), 64: pa.uint64()}[expected.type.bit_width]
    bits = lambda a: a.filter(valid).view(width)  # noqa: E731
    return bits(actual).equals(bits(expected))


class ReadError:
    """An error from opening a scan (OnecopyError) or from reading it (raised by pyarrow with
    onecopy's message, which starts with the error class: "unsupported: ...")."""

    def __init__(self, e: Exception):
        self.message = str(e)
        self.code = e.code if isinstance(e, onecopy.OnecopyError) else self.message.split(":", 1)[0]

    def __str__(self):
        return self.message


def column_or_error(f: onecopy.VortexFile, name: str):
    try:
        return pa.table(f.scan(columns=[name])).column(0), None
    except (onecopy.OnecopyError, pa.ArrowInvalid) as e:
        return None, ReadError(e)


def test_corpus_is_complete(corpus: Path):
    files = vortex_files(corpus)
    assert len(files) >= 40, f"corpus too small: {len(files)} files"
    writers = {p.name.split(".")[1] for p in files}
    assert writers == {"default", "compact", "ed2025-05", "ed2025-10"}


def test_every_file_opens_with_the_right_shape(corpus: Path):
    for path in vortex_files(corpus):
        f = onecopy.open(path)
        exp = expected_table(path)
        assert f.row_count == exp.num_rows, path.name
        assert f.schema.names == exp.schema.names, path.name


@pytest.mark.parametrize("writer", ["default", "ed2025-05", "ed2025-10", "compact"])
def test_every_column_equals_pyarrow(corpus: Path, writer: str):
    checked = 0
    for path in sorted(corpus.glob(f"*.{writer}.vortex")):
        f = onecopy.open(path)
        exp = expected_table(path)
        for name in exp.schema.names:
            got, err = column_or_error(f, name)
            assert err is None, f"{path.name}:{name}: {err}"
            a = normalize(got, exp.column(name))
            e = exp.column(name).combine_chunks()
            assert same(a, e), f"{path.name}:{name} differs:\n got {a.slice(0, 5)}\n exp {e.slice(0, 5)}"
            checked += 1
    assert checked > 0


def test_zone_maps_decode(corpus: Path):
    zoned = 0
    for path in vortex_files(corpus):
        info = onecopy.open(path).inspect()
        assert info["zone_errors"] == [], path.name
        zoned += str(info["layout"]).count("zone_len")
    assert zoned > 100


def test_whole_table_import_matches(corpus: Path):
    for path in sorted(corpus.glob("*.default.vortex")):
        exp = expected_table(path)
        got = pa.table(onecopy.open(path).scan())
        assert got.num_rows == exp.num_rows
        assert got.column_names == exp.column_names


def test_projection_order_and_row_range(corpus: Path):
    path = corpus / "numeric_some_nulls.default.vortex"
    exp = expected_table(path)
    f = onecopy.open(path)
    t = pa.table(f.scan(columns=["sorted_i64", "flag"], row_range=(1000, 9000), batch_rows=777))
    assert t.column_names == ["sorted_i64", "flag"]
    assert t.num_rows == 8000
    assert t.column("sorted_i64").combine_chunks().equals(exp.column("sorted_i64").slice(1000, 8000).combine_chunks())
    assert max(len(b) for b in t.to_batches()) <= 777


def test_bad_requests_raise_clear_errors(corpus: Path, tmp_path: Path):
    f = onecopy.open(corpus / "numeric_none_nulls.default.vortex")
    with pytest.raises(onecopy.OnecopyError) as e:
        f.scan(columns=["no_such_column"])
    assert e.value.code == "not_found"
    with pytest.raises(onecopy.OnecopyError) as e:
        onecopy.open(tmp_path / "missing.vortex")
    assert e.value.code == "not_found"
    with pytest.raises(onecopy.OnecopyError) as e:
        f.scan(row_range=(10, 10**12))
    assert e.value.code == "invalid"


def test_vortex_reads_what_we_compare_against(corpus: Path):
    """Guards the oracle itself: vortex-data reads its own files back to the same table."""
    path = corpus / "string_some_nulls.default.vortex"
    exp = expected_table(path)
    got = vx.open(str(path)).to_arrow().read_all()
    for name in exp.schema.names:
        assert got.column(name).combine_chunks().cast(exp.schema.field(name).type).equals(
            exp.column(name).combine_chunks()), name
