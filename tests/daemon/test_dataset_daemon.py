# SPDX-License-Identifier: Apache-2.0
"""onecopy.dataset through a real onecopyd: a local directory (listed here, each file read by
the daemon) and an s3:// prefix on moto (tests/servers/moto.sh) indexed by the daemon in one
request and read with its credentials for a client that has none; each equals the concatenation
of its files, as in process (tests/python/test_dataset.py, whose checks these reuse)."""

import os
import sys

import numpy as np
import pyarrow as pa
import pytest
import vortex as vx

import onecopy
from test_daemon import ROOT, Daemon

sys.path.insert(0, str(ROOT / "tests" / "python"))
sys.path.insert(0, str(ROOT / "tests" / "net"))
import test_s3_servers as servers  # noqa: E402  (how the S3 tests start moto and make buckets)
from test_dataset import FILTER, assert_is_concatenation, assert_rows, part, write_parts  # noqa: E402


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    return write_parts(tmp_path_factory.mktemp("dataset") / "ds")


def test_a_directory_through_the_daemon_is_the_concatenation_of_its_files(parts, tmp_path, monkeypatch):
    paths, want = parts
    root = os.path.dirname(paths[0])
    d = Daemon(tmp_path)
    try:
        ds = onecopy.dataset(root, daemon=d.sock)
        assert ds.files == paths and ds.socket == d.sock
        assert isinstance(ds.file(0), onecopy.RemoteFile)
        assert_is_concatenation(ds, want)
        assert d.client.status()["batches_delivered"] > 0
        glob = d.client.dataset(os.path.join(root, "p*.vortex"))
        assert glob.files == paths and glob.socket == d.sock
        assert_rows(glob, want)
        opened = onecopy.open(root, daemon=d.sock)
        assert isinstance(opened, onecopy.Dataset) and opened.count(FILTER) == ds.count(FILTER)
        monkeypatch.setenv("ONECOPY_SOCKET", d.sock)  # the daemon serving this machine, as nobody says
        assert onecopy.dataset(root).socket == d.sock and onecopy.Client().dataset(root).socket == d.sock
        tds = ds.to_torch(batch_rows=100, columns=["id"], unit_rows=4000, seed=1)
        assert tds.socket == d.sock
        ids = np.concatenate([b["id"].numpy() for b in tds])
        assert sorted(ids.tolist()) == want.column("id").to_pylist()
    finally:
        d.stop()


def test_an_s3_prefix_through_the_daemon_for_a_client_without_credentials(moto, parts, tmp_path, monkeypatch):
    paths, want = parts
    bucket, s3 = servers.make_bucket(moto)
    for p in paths:
        s3.upload_file(p, bucket, f"ds/{os.path.basename(p)}")
    other = tmp_path / "other.vortex"
    t = part(0, 100, 50)
    vx.io.write(t.set_column(0, "id", pa.array([str(i) for i in range(100)])), str(other))
    s3.upload_file(str(other), bucket, "mixed/z.vortex")
    s3.upload_file(paths[0], bucket, "mixed/a.vortex")
    for key in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(key)  # this process has no credentials: the daemon reads for it
    env = dict(servers.s3_env(moto, moto["S3_ENDPOINT"], bucket), ONECOPY_DAEMON_S3_GRANTS=f"*: s3://{bucket}/")
    (tmp_path / "d").mkdir()
    d = Daemon(tmp_path / "d", env=env)
    try:
        objects = [f"s3://{bucket}/ds/p{i}.vortex" for i in range(len(paths))]
        ds = d.client.dataset(f"s3://{bucket}/ds/")  # one Dataset request: the daemon's index
        assert ds.files == objects
        assert_is_concatenation(ds, want)
        glob = onecopy.open(f"s3://{bucket}/ds/p*.vortex", daemon=d.sock)
        assert isinstance(glob, onecopy.Dataset) and glob.files == objects
        assert_rows(glob.scan(columns=["id", "tag"], filter=FILTER), ds.scan(columns=["id", "tag"],
                                                                             filter=FILTER).read_all())
        with pytest.raises(onecopy.OnecopyError) as e:
            d.client.dataset(f"s3://{bucket}/mixed/").schema
        assert str(e.value) == (f"s3://{bucket}/mixed/z.vortex does not have the schema of s3://{bucket}/mixed/"
                                "a.vortex: column 'id' is int64 in the dataset and string_view in this file")
        with pytest.raises(onecopy.OnecopyError, match="no Vortex files match") as e:
            d.client.dataset(f"s3://{bucket}/none/")
        assert e.value.code == "not_found"
    finally:
        d.stop()
