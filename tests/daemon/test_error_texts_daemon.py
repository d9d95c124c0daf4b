# SPDX-License-Identifier: Apache-2.0
"""Errors for people through onecopyd (issue 40): a listing of a local path that does not exist or
of a pattern that matches nothing is an error naming it; a Parquet file is named as such; no
source position crosses the socket, even from a daemon started with ONECOPY_DEBUG=1."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import onecopy
from test_daemon import Daemon


def test_list_of_a_missing_local_path_is_not_found(tmp_path):
    d = Daemon(tmp_path)
    try:
        missing = str(tmp_path / "no" / "such.vortex")
        with pytest.raises(onecopy.OnecopyError) as e:
            d.client.list(missing)
        assert e.value.code == "not_found"
        assert f"{missing}: no such file or directory" in str(e.value)
        with pytest.raises(onecopy.OnecopyError) as e:
            d.client.list(str(tmp_path / "*.vortex"))
        assert e.value.code == "not_found"
        assert f"no Vortex files match {tmp_path}/*.vortex" in str(e.value)
    finally:
        d.stop()


def test_a_parquet_file_through_the_daemon_without_positions(tmp_path):
    d = Daemon(tmp_path, env={"ONECOPY_DEBUG": "1"})
    try:
        path = tmp_path / "data.vortex"
        pq.write_table(pa.table({"a": list(range(100))}), path)
        with pytest.raises(onecopy.OnecopyError) as e:
            list(d.client.scan(str(path)))
        assert e.value.code == "corrupt"
        assert "not a Vortex file (Parquet magic PAR1 found)" in str(e.value)
        assert "[at " not in str(e.value)  # the daemon's describe(), whatever its environment
        assert d.proc.poll() is None
    finally:
        d.stop()
