# SPDX-License-Identifier: Apache-2.0
"""Fixtures that every pytest suite under tests/ shares: moto's S3 server, and a bucket on it that
this process reads S3 from (the servers' own suite, tests/net/test_s3_servers.py, starts moto with
TLS under the same fixture name)."""

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "net"))
import test_s3_servers as servers  # noqa: E402


@pytest.fixture(scope="module")
def moto(tmp_path_factory):
    """moto's S3 server (tests/servers/moto.sh), one per test module, started as the S3 tests
    start it: one that does not start fails the tests that need it."""
    state = tmp_path_factory.mktemp("moto")
    yield servers.start("moto", state)
    servers.stop("moto", state)


@pytest.fixture
def moto_bucket(moto, monkeypatch):
    """A new bucket on moto: (name, boto3 client, the AWS_* environment that reaches it). This
    process reads S3 with that environment from now on (onecopy's in-process reads, `onecopy`
    commands it starts)."""
    import onecopy

    name, s3 = servers.make_bucket(moto)
    env = {k: v for k, v in servers.s3_env(moto, moto["S3_ENDPOINT"], name).items() if k.startswith("AWS_")}
    for key in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(key)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    onecopy.reload_settings()  # this process's S3 client reads the new endpoint
    return name, s3, env
