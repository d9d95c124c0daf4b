# SPDX-License-Identifier: Apache-2.0
"""Errors for people (issue 40): what the CLI and the Python package say when a file is not Vortex,
truncated, missing, or read with a bad row range; source positions only under ONECOPY_DEBUG=1;
S3's missing bucket apart from its missing key, and missing credentials failing at once with the
chain tried (moto's server, tests/servers/moto.sh); `onecopy inspect` on one screen."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import vortex as vx

import onecopy

ROOT = Path(__file__).resolve().parents[2]
ONECOPY = Path(os.environ.get("ONECOPY_BUILD_DIR", ROOT / "build")) / "client" / "onecopy"
sys.path.insert(0, str(ROOT / "tests" / "net"))
import test_s3_servers as servers  # noqa: E402  (how the S3 tests start moto and make buckets)

N = 50_000


def cli(*args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([str(ONECOPY), *map(str, args)], capture_output=True, text=True, timeout=120,
                          env=env)


def without_debug() -> dict:
    return {k: v for k, v in os.environ.items() if k != "ONECOPY_DEBUG"}


@pytest.fixture(scope="module")
def tokens(tmp_path_factory) -> Path:
    """A sample token file of three columns, as the main job reads."""
    rng = np.random.default_rng(7)
    lengths = rng.integers(1, 40, N)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    table = pa.table({
        "id": pa.array(np.arange(N, dtype=np.int64)),
        "tokens": pa.ListArray.from_arrays(pa.array(offsets),
                                           pa.array(rng.integers(0, 50_000, offsets[-1]).astype(np.int32))),
        "label": pa.array(rng.integers(0, 10, N).astype(np.int64)),
    })
    path = tmp_path_factory.mktemp("tokens") / "tokens.vortex"
    vx.io.write(table, str(path))
    return path


def test_source_positions_only_under_onecopy_debug(tmp_path):
    missing = tmp_path / "missing.vortex"
    plain = cli("scan", missing, env=without_debug())
    assert plain.returncode == 1
    assert f"onecopy: not_found: {missing}: no such file or directory" in plain.stderr
    assert "[at " not in plain.stderr
    debug = cli("scan", missing, env=dict(without_debug(), ONECOPY_DEBUG="1"))
    assert debug.returncode == 1
    assert f"{missing}: no such file or directory [at " in debug.stderr
    assert "open_uri.cpp:" in debug.stderr


def test_a_parquet_file_is_named_as_such(tmp_path):
    path = tmp_path / "data.vortex"  # the name does not matter, the bytes do
    pq.write_table(pa.table({"a": list(range(1000))}), path)
    out = cli("inspect", path)
    assert out.returncode == 1
    assert f"corrupt: {path} is not a Vortex file (Parquet magic PAR1 found)" in out.stderr
    with pytest.raises(onecopy.OnecopyError) as e:
        onecopy.open(path)
    assert e.value.code == "corrupt"
    assert "not a Vortex file (Parquet magic PAR1 found)" in str(e.value)


def test_a_truncated_vortex_file_says_truncated(tmp_path, tokens):
    cut = tmp_path / "cut.vortex"
    data = tokens.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    out = cli("scan", cut)
    assert out.returncode == 1
    assert (f"corrupt: {cut} is truncated: it starts with the Vortex magic VTXF but its {len(data) // 2} "
            "bytes do not end with it") in out.stderr
    assert "Parquet" not in out.stderr
    with pytest.raises(onecopy.OnecopyError, match="is truncated"):
        onecopy.open(cut)
    junk = tmp_path / "junk.vortex"
    junk.write_bytes(b"plain text, not columns\n" * 100)
    out = cli("scan", junk)
    assert f"{junk} is not a Vortex file (it does not end with the magic VTXF)" in out.stderr


def test_reversed_and_empty_row_ranges_are_refused_with_the_reason(tokens):
    reversed_ = cli("scan", tokens, "--rows", "10:5")
    assert reversed_.returncode == 2
    assert "onecopy: --rows: row range 10:5 is reversed (end before begin)" in reversed_.stderr
    assert "outside" not in reversed_.stderr
    empty = cli("scan", tokens, "--rows", "5:5")
    assert empty.returncode == 2
    assert "onecopy: --rows: row range 5:5 is empty (END is exclusive)" in empty.stderr
    past = cli("scan", tokens, "--rows", f"10:{N + 1}")
    assert past.returncode == 1
    assert f"row range 10:{N + 1} ends past the file's {N} rows" in past.stderr
    f = onecopy.open(tokens)
    with pytest.raises(onecopy.OnecopyError) as e:
        f.scan(row_range=(10, 5)).read_all()
    assert e.value.code == "invalid"
    assert "row range 10:5 is reversed (end before begin)" in str(e.value)


def test_listings_that_match_nothing_say_so(tmp_path):
    out = cli("scan", tmp_path / "*.vortex")
    assert out.returncode == 1
    assert f"not_found: no Vortex files match {tmp_path}/*.vortex" in out.stderr
    with pytest.raises(onecopy.OnecopyError) as e:
        onecopy.expand(tmp_path / "nothing-here")
    assert e.value.code == "not_found"
    assert f"{tmp_path / 'nothing-here'}: no such file or directory" in str(e.value)


def test_inspect_fits_one_screen_and_verbose_gives_the_tree(tokens):
    out = cli("inspect", tokens)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) <= 25, out.stdout
    assert lines[0] == f"file:    {tokens}"
    assert lines[1].startswith("size:    ") and f"({tokens.stat().st_size} bytes; footer " in lines[1]
    assert "rows:    50000" in lines
    assert "columns: 3" in lines
    stats = {"id": "zone map, min=0 max=49999, nulls=0", "tokens": "zone map, nulls=0",
             "label": "zone map, min=0 max=9, nulls=0"}
    for name, dtype in (("id", "i64"), ("tokens", "list<i32"), ("label", "i64")):
        line = next(line for line in lines if line.startswith(f"  {name}: "))
        assert line.startswith(f"  {name}: {dtype}"), line
        assert " chunk" in line and line.endswith(stats[name]), line
    assert "vortex.list" in next(line for line in lines if line.startswith("  tokens: "))
    assert "--verbose" in lines[-1]
    verbose = cli("inspect", tokens, "--verbose")
    assert verbose.returncode == 0, verbose.stderr
    assert "layout:" in verbose.stdout and "vortex.flat" in verbose.stdout
    assert len(verbose.stdout.splitlines()) > len(lines)
    assert "--verbose" in cli("inspect", "--help").stdout


# ---- S3 (moto) ---------------------------------------------------------------------------------

def test_a_missing_bucket_and_a_missing_key_read_differently(moto, tmp_path, tokens):
    bucket, s3 = servers.make_bucket(moto)
    s3.upload_file(str(tokens), bucket, "ds/tokens.vortex")
    env = dict(servers.s3_env(moto, moto["S3_ENDPOINT"], bucket), ONECOPY_LOG_LEVEL="warn")
    env.pop("ONECOPY_DEBUG", None)
    assert "rows:    50000" in cli("inspect", f"s3://{bucket}/ds/tokens.vortex", env=env).stdout

    commands = {"inspect": lambda uri: ["inspect", uri], "scan": lambda uri: ["scan", uri],
                "cp": lambda uri: ["cp", uri, tmp_path / "x"]}
    for name, args in commands.items():
        out = cli(*args(f"s3://{bucket}/ds/nope.vortex"), env=env)
        assert out.returncode == 1, name
        assert "no such key" in out.stderr and "bucket does not exist" not in out.stderr, out.stderr
        assert "HTTP 404" in out.stderr and "[at " not in out.stderr
        out = cli(*args(f"s3://no-such-bucket-{bucket}/ds/tokens.vortex"), env=env)
        assert out.returncode == 1, name
        assert "bucket does not exist" in out.stderr and "no such key" not in out.stderr, out.stderr

    listing = cli("ls", f"s3://no-such-bucket-{bucket}/", env=env)
    assert listing.returncode == 1
    assert "bucket does not exist (HTTP 404 NoSuchBucket)" in listing.stderr
    empty = cli("scan", f"s3://{bucket}/none/", env=env)
    assert empty.returncode == 1
    assert f"no Vortex files match s3://{bucket}/none/" in empty.stderr
    glob = cli("scan", f"s3://{bucket}/ds/*.parquet", env=env)
    assert f"no Vortex files match s3://{bucket}/ds/*.parquet" in glob.stderr


def test_missing_credentials_fail_at_once_naming_the_chain(moto):
    bucket, _ = servers.make_bucket(moto)
    env = servers.no_keys(servers.s3_env(moto, moto["S3_ENDPOINT"], bucket))
    env.update(AWS_EC2_METADATA_DISABLED="true", HOME="/nonexistent-oc-home", ONECOPY_LOG_LEVEL="debug")
    for k in ("AWS_PROFILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
              "ONECOPY_DEBUG"):
        env.pop(k, None)
    for args in (["ls", f"s3://{bucket}/"], ["inspect", f"s3://{bucket}/k.vortex"]):
        out = cli(*args, env=env)
        assert out.returncode == 1, args
        err = out.stderr
        assert "not_found: no AWS credentials found (tried env: AWS_ACCESS_KEY_ID is not set; profile: " in err
        assert "container: " in err and "imds: disabled by AWS_EC2_METADATA_DISABLED" in err
        assert "set some, or use anonymous access for public buckets" in err
        # Not retried: no backoff logged, no attempt count, and no listing to tell key from bucket.
        assert "retrying" not in err and "attempts" not in err, err
        assert "no such key" not in err and "bucket does not exist" not in err
