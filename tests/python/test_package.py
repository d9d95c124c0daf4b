# SPDX-License-Identifier: Apache-2.0
"""The onecopy Python package: open, schema, scan through the Arrow PyCapsule protocol, errors."""

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import vortex as vx

import onecopy


@pytest.fixture(scope="module")
def small_file(tmp_path_factory) -> tuple[Path, pa.Table]:
    rng = np.random.default_rng(42)
    n = 30_000
    table = pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "score": pa.array(rng.random(n)),
        "tag": pa.array([f"t{i % 13}" for i in range(n)]),
    })
    path = tmp_path_factory.mktemp("pkg") / "small.vortex"
    vx.io.write(table, str(path))
    return path, table


def test_open_reports_rows_and_schema(small_file):
    path, table = small_file
    f = onecopy.open(path)
    assert f.row_count == table.num_rows == len(f)
    assert f.schema.names == ["id", "score", "tag"]
    assert f.schema.field("id").type == pa.int64()


def test_scan_imports_into_pyarrow_without_copy(small_file):
    path, table = small_file
    f = onecopy.open(path)
    got = pa.table(f.scan())
    # Strings arrive as Arrow string views by default (as vortex-data gives them), with offsets
    # on request; the values are the same either way.
    assert got.schema.field("tag").type == pa.string_view() == f.schema.field("tag").type
    for name in table.column_names:
        want = table.column(name).cast(got.schema.field(name).type)
        assert got.column(name).combine_chunks().equals(want.combine_chunks()), name
    offsets = pa.table(f.scan(strings="offsets"))
    assert offsets.schema == table.schema == f.schema_with(strings="offsets")
    assert offsets.equals(table)
    taken = pa.table(f.take([5, 1, 5], strings="offsets"))
    assert taken.schema.field("tag").type == pa.string()
    assert taken.column("tag").to_pylist() == [table.column("tag")[i].as_py() for i in (5, 1, 5)]
    with pytest.raises(ValueError, match="views"):
        f.scan(strings="large")


def test_scan_is_single_use(small_file):
    path, _ = small_file
    s = onecopy.open(path).scan(columns=["id"])
    pa.table(s)
    with pytest.raises(onecopy.OnecopyError):
        pa.table(s)


def test_unconsumed_scan_and_closed_file_release_cleanly(small_file):
    path, _ = small_file
    f = onecopy.open(path)
    s = f.scan()
    del f  # the stream keeps what it needs alive
    assert pa.table(s).num_rows == 30_000
    onecopy.open(path).scan()  # dropped without being read


def test_inspect_returns_the_layout_tree(small_file):
    path, _ = small_file
    info = onecopy.open(path).inspect()
    assert info["rows"] == 30_000
    assert info["layout"]["encoding"] == "vortex.struct"
    assert len(info["layout"]["children"]) == 3


def test_garbage_is_a_corrupt_error(tmp_path):
    bad = tmp_path / "bad.vortex"
    bad.write_bytes(b"not a vortex file at all, just text" * 10)
    with pytest.raises(onecopy.OnecopyError) as e:
        onecopy.open(bad)
    assert e.value.code == "corrupt"
    assert "VTXF" in str(e.value)
