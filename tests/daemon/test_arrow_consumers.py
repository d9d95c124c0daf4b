# SPDX-License-Identifier: Apache-2.0
"""Every Arrow consumer reads a scan directly: pyarrow, DuckDB and Polars, over an in-process
scan, a daemon stream and a daemon cursor. Each offers its schema before any batch is taken
(DuckDB asks for it first) and is read once."""

import duckdb
import polars as pl
import pyarrow as pa
import pytest

import onecopy
from test_daemon import Daemon


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    # A limit of 3 unreleased batches: every consumer below keeps more than that.
    d = Daemon(tmp_path_factory.mktemp("consumers"), config="daemon_client_max_batches_in_flight = 3\n")
    yield d
    assert d.client.status()["errors"] == 0
    d.stop()


@pytest.fixture(scope="module")
def data_file(tmp_path_factory):
    import numpy as np
    import vortex as vx

    n = 20_000
    rng = np.random.default_rng(4)
    table = pa.table({"id": pa.array(np.arange(n, dtype=np.int64)),
                      "score": pa.array(rng.random(n)),
                      "city": pa.array([["Oslo", "Lima", "Pune"][i % 3] for i in range(n)])})
    path = tmp_path_factory.mktemp("consumers-data") / "t.vortex"
    vx.io.write(table, str(path))
    return str(path), table


SOURCES = ["in-process", "daemon stream", "daemon cursor"]


def _scan(source, daemon, path):
    """A fresh scan of `path` in 20 batches of 1,000 rows, from `source`."""
    if source == "in-process":
        return onecopy.open(path).scan(batch_rows=1000)
    if source == "daemon stream":
        return daemon.client.scan_stream(path, batch_rows=1000)
    return daemon.client.scan(path, batch_rows=1000)


@pytest.mark.parametrize("source", SOURCES)
def test_the_schema_comes_before_the_data_and_consumes_nothing(source, daemon, data_file):
    path, table = data_file
    s = _scan(source, daemon, path)
    assert pa.schema(s) == s.schema == onecopy.open(path).schema
    assert pa.schema(s).names == table.column_names
    assert s.read_all().num_rows == table.num_rows  # the schema took no batch


@pytest.mark.parametrize("source", SOURCES)
def test_pyarrow_reads_a_scan(source, daemon, data_file):
    path, table = data_file
    got = pa.table(_scan(source, daemon, path))
    assert got.to_pydict() == table.to_pydict()


@pytest.mark.parametrize("source", SOURCES)
def test_duckdb_reads_a_scan(source, daemon, data_file):
    path, table = data_file
    s = _scan(source, daemon, path)
    got = duckdb.sql("select city, count(*) as n, sum(id) as ids, round(sum(score), 6) as score "
                     "from s group by city order by city").fetchall()
    want = {}
    for i, score, city in zip(*(table[c].to_pylist() for c in ("id", "score", "city"))):
        n, ids, total = want.get(city, (0, 0, 0.0))
        want[city] = (n + 1, ids + i, total + score)
    assert [(c, n, ids) for c, n, ids, _ in got] == [(c, *want[c][:2]) for c in sorted(want)]
    assert [sc for *_, sc in got] == pytest.approx([want[c][2] for c in sorted(want)])


@pytest.mark.parametrize("source", SOURCES)
def test_polars_reads_a_scan(source, daemon, data_file):
    path, table = data_file
    df = pl.DataFrame(_scan(source, daemon, path))
    assert df.height == table.num_rows
    assert df["id"].to_list() == table["id"].to_pylist()
    assert df["city"].to_list() == table["city"].to_pylist()


@pytest.mark.parametrize("source", SOURCES)
def test_a_scan_is_read_once_with_a_clear_error(source, daemon, data_file):
    path, _ = data_file
    s = _scan(source, daemon, path)
    assert pa.table(s).num_rows > 0
    if source == "daemon cursor":
        assert pa.table(s).num_rows == 0  # a cursor goes on from where it stands: at its end
    else:
        with pytest.raises(onecopy.OnecopyError, match="already consumed"):
            pa.table(s)
