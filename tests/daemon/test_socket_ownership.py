# SPDX-License-Identifier: Apache-2.0
"""One onecopyd per socket (daemon/socket_claim.hpp), with real daemon processes: a second daemon
on a live socket exits non-zero with a message naming it and the first keeps serving, a clean
stop (SIGTERM, SIGINT) removes the socket file it made, and a stale socket file left by a killed
daemon is replaced."""

import os
import signal
import socket
import subprocess

import pyarrow as pa
import pytest

from test_daemon import ONECOPYD, Daemon, assert_no_sanitizer_report, data_file  # noqa: F401 (fixture)


def _second(tmp_path, sock: str) -> subprocess.CompletedProcess:
    cfg = tmp_path / "second.toml"
    cfg.write_text("")
    return subprocess.run([str(ONECOPYD), "--config", str(cfg), "--socket", sock], capture_output=True,
                          text=True, timeout=60)


def test_a_second_daemon_exits_with_the_reason_and_the_first_keeps_serving(tmp_path, data_file):
    path, table = data_file
    first = Daemon(tmp_path)
    try:
        before = os.stat(first.sock).st_ino
        r = _second(tmp_path, first.sock)
        assert r.returncode != 0
        assert f"another onecopyd (pid {first.proc.pid}) already serves {first.sock}" in r.stderr, r.stderr
        assert "Address already in use" in r.stderr
        assert_no_sanitizer_report(r.stderr)
        # The same socket file, and the first daemon still answers and scans on it.
        assert os.stat(first.sock).st_ino == before
        assert first.proc.poll() is None
        assert first.client.status()["version"]
        got = pa.table(first.client.scan_stream(str(path), columns=["id"]))
        assert got.column("id").to_pylist() == table.column("id").to_pylist()
    finally:
        first.stop()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_clean_stop_removes_the_socket_it_made(tmp_path, sig):
    d = Daemon(tmp_path)
    assert os.path.exists(d.sock) and os.path.exists(d.sock + ".lock")
    d.proc.send_signal(sig)
    assert d.proc.wait(30) == 0
    d.stop()
    assert not os.path.exists(d.sock)
    assert not os.path.exists(d.sock + ".lock")


def test_a_stale_socket_file_is_replaced(tmp_path, data_file):
    path, table = data_file
    sock = str(tmp_path / "stale.sock")
    # What a daemon killed with SIGKILL leaves: a socket file nobody listens on.
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.bind(sock)
    s.close()
    with pytest.raises(ConnectionRefusedError):
        socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET).connect(sock)
    d = Daemon(tmp_path, sock=sock)
    try:
        got = pa.table(d.client.scan_stream(str(path), columns=["id"]))
        assert got.num_rows == table.num_rows
        assert "replaced a stale socket file" in d.log.read_text()
    finally:
        d.stop()


def test_a_killed_daemon_can_be_replaced_at_once(tmp_path):
    first = Daemon(tmp_path)
    first.proc.kill()
    first.proc.wait(30)
    first.notify.close()
    assert os.path.exists(first.sock)  # SIGKILL leaves the file; its lock died with the process
    (tmp_path / "second").mkdir()
    second = Daemon(tmp_path / "second", sock=first.sock)
    try:
        assert second.client.status()["clients"] == 1
    finally:
        second.stop()
    assert not os.path.exists(first.sock)


def test_a_file_that_is_not_a_socket_is_kept(tmp_path):
    sock = tmp_path / "not-a-socket"
    sock.write_text("precious")
    r = _second(tmp_path, str(sock))
    assert r.returncode != 0
    assert "exists and is not a socket" in r.stderr
    assert sock.read_text() == "precious"
