# SPDX-License-Identifier: Apache-2.0
"""What another user can read through onecopyd: only what it could read itself, plus the S3 and
http(s) access the operator grants (docs/security.md).

The client runs as uid 65534 (setpriv; these tests need root, and say so when they skip). It is
tests/onecopy-test-client, the client library as a plain program, copied with the data into a
directory that user can reach (the build directory may be private to root)."""

import json
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import vortex as vx

from test_daemon import Daemon
from test_hostile import serve_file, TEST_CLIENT

NOBODY = 65534
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a client as another user")


@pytest.fixture
def place():
    """A directory uid 65534 reaches, with the test client in it."""
    where = Path(tempfile.mkdtemp(prefix="onecopy-authority-", dir="/tmp"))
    os.chmod(where, 0o755)
    shutil.copy2(TEST_CLIENT, where / "client")
    os.chmod(where / "client", 0o755)
    yield where
    shutil.rmtree(where, ignore_errors=True)


def write(path: Path, n=1000, mode=0o644):
    vx.io.write(pa.table({"id": pa.array(np.arange(n, dtype=np.int64))}), str(path))
    os.chmod(path, mode)


def as_nobody(place: Path, sock: str, *args) -> subprocess.CompletedProcess:
    return subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                           str(place / "client"), sock, *args], capture_output=True, text=True, timeout=60,
                          cwd=place)


def daemon_for(place: Path, config: str = "") -> Daemon:
    run = place / f"daemon{len(list(place.glob('daemon*')))}"
    run.mkdir()
    os.chmod(run, 0o755)
    d = Daemon(run, config=config)
    os.chmod(d.sock, 0o666)  # the other user may connect; what it may read is the question
    return d


def test_another_user_reads_its_own_files_and_not_others(place):
    write(place / "open.vortex")
    write(place / "secret.vortex", mode=0o600)  # root's alone
    private = place / "private"
    private.mkdir(mode=0o700)
    write(private / "inner.vortex")  # readable, inside a directory it cannot enter
    d = daemon_for(place)
    try:
        ok = as_nobody(place, d.sock, "scan", str(place / "open.vortex"))
        assert ok.returncode == 0 and ok.stdout.strip() == "rows 1000", ok
        # Relative paths mean what the client meant: its own working directory.
        rel = as_nobody(place, d.sock, "scan", "open.vortex")
        assert rel.stdout.strip() == "rows 1000", rel
        for target in (place / "secret.vortex", private / "inner.vortex"):
            r = as_nobody(place, d.sock, "scan", str(target))
            assert r.returncode == 1 and "error denied" in r.stdout and "Permission denied" in r.stdout, r
        # Nor can it list a directory it cannot read.
        r = as_nobody(place, d.sock, "list", str(private) + "/")
        assert r.returncode == 1 and "inner.vortex" not in r.stdout, r
        # Root, through the same daemon, reads all three: the daemon's own rights never mattered.
        assert "rows 1000" in subprocess.run([str(place / "client"), d.sock, "scan", str(place / "secret.vortex")],
                                             capture_output=True, text=True, timeout=60).stdout
        assert d.proc.poll() is None
    finally:
        d.stop()


def test_a_user_sees_its_own_scans_in_status_and_root_sees_all(place):
    write(place / "mine.vortex", n=700)
    write(place / "roots.vortex", n=900, mode=0o600)
    d = daemon_for(place)
    try:
        root = subprocess.run([str(place / "client"), d.sock, "scan", str(place / "roots.vortex")],
                              capture_output=True, text=True, timeout=60)
        assert root.stdout.strip() == "rows 900", root
        assert as_nobody(place, d.sock, "scan", str(place / "mine.vortex")).stdout.strip() == "rows 700"
        seen = as_nobody(place, d.sock, "status", "-")
        assert seen.returncode == 0, seen
        scans = json.loads(seen.stdout)["scans"]
        assert [(s["uid"], s["uri"], s["rows"]) for s in scans] == [(NOBODY, str(place / "mine.vortex"), 700)]
        every = json.loads(subprocess.run([str(place / "client"), d.sock, "status", "-"], capture_output=True,
                                          text=True, timeout=60, check=True).stdout)["scans"]
        assert sorted((s["uid"], s["rows"]) for s in every) == [(0, 900), (NOBODY, 700)]
    finally:
        d.stop()


def test_another_user_reaches_a_loopback_http_server_only_when_the_config_names_it(place):
    write(place / "served.vortex")
    srv = serve_file(place / "served.vortex")
    url = f"http://127.0.0.1:{srv.server_address[1]}/served.vortex"
    try:
        for config, served in (("", False), ('daemon_http_hosts = "*"\n', False),
                               ('daemon_http_hosts = "127.0.0.1"\n', True)):
            d = daemon_for(place, config + 'net_pool_bytes = "8MiB"\n')
            try:
                r = as_nobody(place, d.sock, "scan", url)
                if served:
                    assert r.returncode == 0 and r.stdout.strip() == "rows 1000", r
                else:
                    assert r.returncode == 1 and "error denied" in r.stdout, r
            finally:
                d.stop()
    finally:
        srv.shutdown()


def test_s3_grants_follow_the_peer_uid(place):
    # No object store is needed to see who is refused: the policy answers before any request.
    d = daemon_for(place, f'daemon_s3_grants = ["uid={NOBODY}: s3://team-bucket/nobody/"]\n')
    try:
        theirs = as_nobody(place, d.sock, "scan", "s3://team-bucket/root/x.vortex")
        assert theirs.returncode == 1 and "error denied" in theirs.stdout and f"uid {NOBODY}" in theirs.stdout
        listing = as_nobody(place, d.sock, "list", "s3://team-bucket/")
        assert listing.returncode == 1 and "error denied" in listing.stdout
        root = subprocess.run([str(place / "client"), d.sock, "scan", "s3://team-bucket/nobody/x.vortex"],
                              capture_output=True, text=True, timeout=60)
        assert root.returncode == 1 and "uid 0" in root.stdout and "daemon_s3_grants" in root.stdout
    finally:
        d.stop()
