# SPDX-License-Identifier: Apache-2.0
"""onecopyd started for real on a temporary socket: status, scans over pooled memfd slabs,
filters, malformed frames, killed clients, SIGHUP, SIGTERM and sd_notify.

$ONECOPYD names the daemon binary (scripts/test.sh runs these tests again with the ASan + UBSan
build's); every daemon's log is checked for sanitizer reports when it stops."""

import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import textwrap
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import vortex as vx

import onecopy

ROOT = Path(__file__).resolve().parents[2]


def _binary(name: str) -> Path:
    lib = os.environ.get("ONECOPY_LIBRARY")
    build = Path(lib).parent.parent if lib else ROOT / "build"
    return build / name


ONECOPYD = Path(os.environ["ONECOPYD"]) if os.environ.get("ONECOPYD") else _binary("onecopyd")
CLI = _binary("client/onecopy")
SANITIZER_REPORTS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")


def assert_no_sanitizer_report(log: str) -> None:
    """An instrumented daemon reports memory errors, leaks at exit and undefined behaviour on
    stderr; any of them fails the test that ran it."""
    for marker in SANITIZER_REPORTS:
        assert marker not in log, log[log.index(marker) - 200:][:4000]


class Daemon:
    def __init__(self, tmp: Path, config: str = "", env: dict | None = None, sock: str | None = None,
                 prefix: list | None = None):
        self.sock = sock or str(tmp / "d.sock")
        self.config = tmp / "onecopyd.toml"
        self.config.write_text(config)
        self.log = tmp / "onecopyd.log"
        self.notify_path = str(tmp / "notify.sock")
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(self.notify_path)
        e = dict(os.environ, NOTIFY_SOCKET=self.notify_path, **(env or {}))
        # @prefix runs the daemon under another command that execs it (prlimit, say).
        self.proc = subprocess.Popen([*(prefix or []), str(ONECOPYD), "--config", str(self.config), "--socket", self.sock],
                                     env=e, stderr=open(self.log, "w"))
        self.notify.settimeout(10)
        self.ready = self.notify.recv(4096).decode()
        self.client = onecopy.Client(self.sock)

    def notifications(self, timeout=2.0) -> str:
        """Notifications that arrive within @timeout s, stopping 0.2 s after the last one."""
        deadline = time.time() + timeout
        self.notify.settimeout(timeout)
        out = ""
        try:
            while time.time() < deadline:
                out += self.notify.recv(4096).decode() + "\n"
                self.notify.settimeout(0.2)
        except (socket.timeout, BlockingIOError):
            pass
        return out

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(30)
        self.notify.close()
        assert_no_sanitizer_report(self.log.read_text())


@pytest.fixture
def daemon(tmp_path):
    d = Daemon(tmp_path)
    yield d
    d.stop()


@pytest.fixture(scope="module")
def data_file(tmp_path_factory):
    rng = np.random.default_rng(7)
    n = 50_000
    table = pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "score": pa.array(rng.random(n)),
        "tag": pa.array([None if i % 17 == 0 else f"t{i % 13}" for i in range(n)]),
    })
    path = tmp_path_factory.mktemp("daemon") / "data.vortex"
    vx.io.write(table, str(path))
    return path, table


PROTOCOL = 2  # daemon/wire.hpp kProtocolVersion


def _frame(body: bytes, version=PROTOCOL) -> bytes:
    return struct.pack("<II", version, len(body)) + body


SCHEMA = ROOT / "daemon" / "protocol.fbs"


def _encode(tmp: Path, body_type: str, body: dict) -> bytes:
    """One frame of the protocol, built by flatc (the build's own FlatBuffers compiler) from JSON."""
    src = tmp / "msg.json"
    src.write_text(json.dumps({"body_type": body_type, "body": body}))
    subprocess.run(["flatc", "-b", "-o", str(tmp), str(SCHEMA), str(src)], check=True)
    return _frame((tmp / "msg.bin").read_bytes())


def _decode(tmp: Path, frame: bytes) -> dict:
    (tmp / "reply.bin").write_bytes(frame[8:])
    subprocess.run(["flatc", "--json", "--strict-json", "--raw-binary", "-o", str(tmp), str(SCHEMA),
                    "--", str(tmp / "reply.bin")], check=True)
    return json.loads((tmp / "reply.json").read_text())


class RawClient:
    """One connection speaking the protocol by hand, so that a test can send what it likes. An
    Open of a local path carries the file's descriptor, as the client library sends it, unless
    `attach=False`."""

    def __init__(self, daemon, tmp: Path, hello=True):
        self.tmp = tmp
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.connect(daemon.sock)
        self.sock.settimeout(10)
        if hello:
            assert self.ask("Hello", {"version": PROTOCOL, "client": "test"}, "HelloReply")

    def tell(self, body_type: str, body: dict, attach: bool = True) -> None:
        frame = _encode(self.tmp, body_type, body)
        uri = body.get("uri", "")
        if body_type == "Open" and attach and "://" not in uri and os.path.exists(uri):
            fd = os.open(uri, os.O_RDONLY)
            try:
                self.sock.sendmsg([frame], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", fd))])
            finally:
                os.close(fd)
        else:
            self.sock.send(frame)

    def next(self) -> dict:
        return _decode(self.tmp, self.sock.recv(1 << 20))  # a SlabAdded's fd is dropped by the kernel

    def ask(self, body_type: str, body: dict, want: str, attach: bool = True) -> dict:
        """Sends a message; returns the body of the first reply of type @want or Error."""
        self.tell(body_type, body, attach)
        while True:
            m = self.next()
            if m["body_type"] in (want, "Error"):
                return m


def test_ready_and_status(daemon):
    assert "READY=1" in daemon.ready
    s = daemon.client.status()
    for key in ("version", "uptime_ms", "clients", "active_scans", "batches_in_flight",
                "bytes_delivered", "batches_delivered", "gbps_10s", "requests_in_flight", "errors",
                "bytes_copied", "copies_per_byte", "pool_bytes", "pool_limit_bytes",
                "worker_threads", "slabs_sent", "gpu_devices", "gpu_memory_used_bytes",
                "gpu_memory_total_bytes"):
        assert key in s, key
    assert s["clients"] == 1  # the status connection itself
    assert s["batches_in_flight"] == 0
    cli = subprocess.run([str(CLI), "status", "--json", "--socket", daemon.sock], capture_output=True,
                         text=True, check=True)
    assert json.loads(cli.stdout)["version"] == s["version"]
    env = dict(os.environ, ONECOPY_SOCKET=daemon.sock)
    text = subprocess.run([str(CLI), "status"], capture_output=True, text=True, check=True, env=env)
    assert "batches in flight" in text.stdout
    if Path("/dev/nvidia0").exists():  # a GPU machine: the counts must be real
        assert s["gpu_devices"] >= 1 and 0 < s["gpu_memory_used_bytes"] <= s["gpu_memory_total_bytes"]
        assert re.search(r"^GPU: +\d+ devices", text.stdout, re.M)
    else:  # no GPU here (or a build without CUDA): zero devices and no memory
        assert (s["gpu_devices"], s["gpu_memory_used_bytes"], s["gpu_memory_total_bytes"]) == (0, 0, 0)
        assert re.search(r"^GPU: +none$", text.stdout, re.M)
    assert s["devices"] == []  # no device scan has run: no device in use


def test_a_device_scan_on_a_daemon_without_that_device_is_a_cuda_error(daemon, data_file):
    # Asked for a device it does not have, onecopyd answers Error{cuda} naming the device and
    # why (no driver or device here; a GPU machine has no cuda:63), and serves host scans on.
    path, table = data_file
    with pytest.raises(onecopy.OnecopyError) as e:
        daemon.client.scan(str(path), device="cuda:63")
    assert e.value.code == "cuda"
    assert "onecopyd has no CUDA device cuda:63" in str(e.value)
    assert pa.table(daemon.client.scan(str(path))).num_rows == table.num_rows
    s = daemon.client.status()
    assert s["devices"] == [] and s["requests_refused"] >= 1


def test_scan_equals_pyarrow(daemon, data_file):
    path, table = data_file
    got = pa.Table.from_batches(list(daemon.client.scan(str(path), batch_rows=8192)))
    assert got.num_rows == table.num_rows
    assert got.schema.field("tag").type == pa.string_view()  # the default, views of the slab
    for name in table.column_names:
        want = table.column(name).cast(got.schema.field(name).type)
        assert got.column(name).combine_chunks().equals(want.combine_chunks()), name
    offsets = pa.Table.from_batches(list(daemon.client.scan(str(path), batch_rows=8192, strings="offsets")))
    assert offsets.schema == table.schema
    assert offsets.equals(table)
    del got, offsets
    deadline = time.time() + 2
    while daemon.client.status()["batches_in_flight"] and time.time() < deadline:
        time.sleep(0.05)
    s = daemon.client.status()
    assert s["batches_in_flight"] == 0
    assert s["bytes_delivered"] > 0


def test_a_client_that_hangs_up_on_unread_batches_is_no_error(daemon, data_file):
    """A trainer that stops mid-scan and exits leaves batches on their way unread; the daemon
    sees the connection reset, a hang-up like any other."""
    path, _ = data_file
    script = ("import onecopy, os, sys; c = onecopy.Client(sys.argv[1]); it = c.scan(sys.argv[2], batch_rows=500); "
              "next(it); os._exit(0)")
    for _ in range(3):
        subprocess.run([sys.executable, "-c", script, daemon.sock, str(path)], check=True, timeout=60)
    deadline = time.time() + 5
    while daemon.client.status()["clients"] > 1 and time.time() < deadline:
        time.sleep(0.05)
    s = daemon.client.status()
    assert s["clients"] == 1 and s["active_scans"] == 0
    assert s["errors"] == 0
    assert "reset by peer" not in daemon.log.read_text()


def test_scan_with_filter_and_columns(daemon, data_file):
    path, table = data_file
    got = pa.Table.from_batches(list(daemon.client.scan(str(path), columns=["id", "tag"],
                                                        filter="id >= 1000 AND id < 1100")))
    assert got.column_names == ["id", "tag"]
    assert got.column("id").to_pylist() == list(range(1000, 1100))
    assert got.column("tag").to_pylist() == table.column("tag").to_pylist()[1000:1100]


def test_scan_errors_are_reported(daemon, tmp_path):
    # A local file is opened by the client itself, so a missing one fails before the daemon.
    with pytest.raises(onecopy.OnecopyError) as e:
        list(daemon.client.scan(str(tmp_path / "missing.vortex")))
    assert e.value.code == "not_found"
    junk = tmp_path / "junk.vortex"
    junk.write_bytes(b"not a vortex file " * 64)
    with pytest.raises(onecopy.OnecopyError, match="onecopyd") as e:
        list(daemon.client.scan(str(junk)))
    assert e.value.code == "corrupt"
    assert "[at " not in str(e.value)  # no position in the daemon's (or the library's) source
    assert daemon.proc.poll() is None


def _send_bad(daemon, payloads):
    for payload in payloads:
        bad = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        bad.connect(daemon.sock)
        bad.send(payload)
        bad.settimeout(5)
        try:
            while bad.recv(1 << 16):
                pass  # an Error message, then EOF
        except ConnectionResetError:
            pass
        bad.close()


def test_malformed_frames_disconnect_only_that_client(daemon, data_file):
    other = daemon.client.scan(str(data_file[0]), batch_rows=1000)
    first = next(other)
    _send_bad(daemon, (b"garbage", _frame(b"\x00" * 16), _frame(b"x" * 64, version=9)))
    assert daemon.proc.poll() is None
    assert first.num_rows == 1000 and next(other).num_rows == 1000  # the other client goes on
    s = daemon.client.status()
    assert s["errors"] >= 3
    assert "disconnecting client" in daemon.log.read_text()


def test_oversized_frame_disconnects(tmp_path):
    d = Daemon(tmp_path, config='daemon_max_message_bytes = "16KiB"\n')
    try:
        _send_bad(d, (_frame(b"y" * (64 << 10)),))
        assert d.proc.poll() is None
        assert d.client.status()["errors"] >= 1
        assert "over the 16384-byte limit" in d.log.read_text()
    finally:
        d.stop()


def test_killed_client_leases_are_reclaimed(daemon, data_file):
    path, _ = data_file
    holder = textwrap.dedent(f"""
        import sys, time, onecopy
        it = onecopy.Client({daemon.sock!r}).scan({str(path)!r}, batch_rows=1000)
        held = [next(it), next(it), next(it)]
        print("holding", flush=True)
        time.sleep(60)
    """)
    p = subprocess.Popen([sys.executable, "-c", holder], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "holding"
        s = daemon.client.status()
        assert s["batches_in_flight"] >= 3
        assert s["active_scans"] == 1
        p.kill()
        p.wait()
        deadline = time.time() + 1.0
        while time.time() < deadline:
            s = daemon.client.status()
            if s["batches_in_flight"] == 0:
                break
            time.sleep(0.02)
        assert s["batches_in_flight"] == 0
        assert s["active_scans"] == 0
        assert s["pool_bytes"] == 0
    finally:
        if p.poll() is None:
            p.kill()


def _in_a_slab(address: int) -> bool:
    """Whether @address lies in one of the daemon's slabs mapped into this process."""
    for line in Path("/proc/self/maps").read_text().splitlines():
        span, *rest = line.split(maxsplit=5)
        begin, end = (int(x, 16) for x in span.split("-"))
        if begin <= address < end:
            return "memfd:onecopy-slab" in line
    return False


def test_kept_batches_are_copied_out_within_the_limit(tmp_path, data_file):
    # A limit of 4 unreleased batches: a consumer that keeps every batch holds two leases (half)
    # and gets the rest as copies, released at once, so the daemon never waits on it.
    path, table = data_file
    d = Daemon(tmp_path, config="daemon_client_max_batches_in_flight = 4\n")
    try:
        it = d.client.scan(str(path), batch_rows=1000)
        held = [next(it) for _ in range(6)]
        time.sleep(0.2)
        assert d.client.status()["batches_in_flight"] <= 4
        in_slab = [_in_a_slab(b.column(0).buffers()[1].address) for b in held]
        assert in_slab == [True, True, False, False, False, False], in_slab
        held += list(it)
        got = pa.Table.from_batches(held)
        for name in table.column_names:
            want = table.column(name).cast(got.schema.field(name).type)
            assert got.column(name).combine_chunks().equals(want.combine_chunks()), name
        del held, got
        # Consumed one at a time, every batch is a view of a slab.
        views = [_in_a_slab(b.column(0).buffers()[1].address) for b in d.client.scan(str(path), batch_rows=1000)]
        assert len(views) == 50 and all(views)
    finally:
        d.stop()


def test_a_client_keeping_every_batch_gets_copies_and_finishes(tmp_path, data_file):
    # The C client library (from $ONECOPYD's build: under ASan in scripts/test.sh's second pass)
    # keeps 50 batches under a limit of 3: the copies it makes must hold the right bytes.
    path, table = data_file
    client = ONECOPYD.parent / "tests" / "onecopy-test-client"
    d = Daemon(tmp_path, config="daemon_client_max_batches_in_flight = 3\n")
    try:
        p = subprocess.run([str(client), d.sock, "scan", str(path), "--keep"], capture_output=True, text=True,
                           timeout=120)
        assert_no_sanitizer_report(p.stderr)
        assert p.returncode == 0, p.stdout + p.stderr
        assert p.stdout.split() == ["rows", "50000", "sum", str(sum(table["id"].to_pylist()))]
        assert d.client.status()["errors"] == 0
    finally:
        d.stop()


def test_sighup_reloads_log_level(daemon):
    daemon.config.write_text('log_level = "debug"\n')
    daemon.proc.send_signal(signal.SIGHUP)
    notes = daemon.notifications()
    assert "RELOADING=1" in notes
    assert "log_level=debug" in daemon.log.read_text()
    daemon.client.status()
    assert daemon.proc.poll() is None


def test_bad_config_is_rejected_with_key_and_line(tmp_path):
    cfg = tmp_path / "bad.toml"
    cfg.write_text('log_level = "info"\nno_such_knob = 3\n')
    r = subprocess.run([str(ONECOPYD), "--config", str(cfg), "--socket", str(tmp_path / "s")],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode != 0
    assert "no_such_knob" in r.stderr and "bad.toml:2" in r.stderr


def test_sigterm_exits_zero_and_says_stopping(daemon):
    daemon.proc.send_signal(signal.SIGTERM)
    assert daemon.proc.wait(10) == 0
    assert "STOPPING=1" in daemon.notifications()


def test_watchdog_pings(tmp_path):
    d = Daemon(tmp_path, env={"WATCHDOG_USEC": "200000"})
    try:
        assert "WATCHDOG=1" in d.notifications(timeout=2.0)
    finally:
        d.stop()


def test_peer_credentials_not_allowed_are_refused(tmp_path):
    d = Daemon(tmp_path, config='daemon_allowed_uids = "4242"\ndaemon_allowed_gids = ""\n')
    try:
        with pytest.raises(onecopy.OnecopyError):
            d.client.status()
        assert "not allowed" in d.log.read_text()
    finally:
        d.stop()


def test_socket_activation(tmp_path, data_file):
    path = str(tmp_path / "activated.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen()
    fd = listener.fileno()

    # LISTEN_PID must name the daemon itself: the shell moves the socket to fd 3, exports its
    # own pid, then execs the daemon.
    script = f'exec 3<&{fd}; export LISTEN_PID=$$; exec "{ONECOPYD}" --socket /nonexistent/x.sock'
    p = subprocess.Popen(["bash", "-c", script], env=dict(os.environ, LISTEN_FDS="1"), pass_fds=(fd,),
                         stderr=subprocess.PIPE, text=True)
    try:
        listener.close()
        deadline = time.time() + 5
        while True:
            try:
                s = onecopy.Client(path).status()
                break
            except onecopy.OnecopyError:
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
        assert s["clients"] == 1
        got = pa.Table.from_batches(list(onecopy.Client(path).scan(str(data_file[0]), columns=["id"])))
        assert got.num_rows == data_file[1].num_rows
    finally:
        p.send_signal(signal.SIGTERM)
        assert p.wait(30) == 0
        err = p.stderr.read()
        assert "systemd passed" in err
        assert_no_sanitizer_report(err)


def test_abandoned_scan_is_cancelled(daemon, data_file):
    it = daemon.client.scan(str(data_file[0]), batch_rows=1000)
    held = next(it)
    it.close()  # drops the stream: Cancel
    deadline = time.time() + 2
    while daemon.client.status()["active_scans"] and time.time() < deadline:
        time.sleep(0.02)
    s = daemon.client.status()
    assert s["active_scans"] == 0
    assert s["batches_in_flight"] >= 1  # the batch still held keeps its lease
    del held


def test_slow_open_does_not_stall_other_clients(tmp_path):
    daemon = Daemon(tmp_path, config='daemon_http_hosts = "127.0.0.1"\n')
    # A real HTTP server that reads the daemon's request and then answers nothing until the test
    # closes the connection: the open stays in progress for as long as the test wants.
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    conns, asked = [], threading.Event()

    def serve():
        c, _ = srv.accept()
        conns.append(c)
        data = b""
        while b"\r\n\r\n" not in data:
            data += c.recv(4096)
        asked.set()

    threading.Thread(target=serve, daemon=True).start()
    failed = []

    def slow_client():
        try:
            list(daemon.client.scan(f"http://127.0.0.1:{srv.getsockname()[1]}/big.vortex"))
        except onecopy.OnecopyError as e:
            failed.append(e)

    t = threading.Thread(target=slow_client)
    t.start()
    try:
        assert asked.wait(10)
        s = daemon.client.status()  # answered while the other client's open is waiting
        conns[0].setblocking(False)
        with pytest.raises(BlockingIOError):  # not closed: the daemon still waits for an answer
            conns[0].recv(1, socket.MSG_PEEK)
        assert t.is_alive()
        assert s["active_scans"] == 0
        assert s["requests_in_flight"] == 1  # the open, on a worker
    finally:
        for c in conns:
            c.close()
        srv.close()
        t.join(30)
    assert failed  # the server hung up, so the open failed, and only that client saw it
    assert daemon.proc.poll() is None
    daemon.stop()


def test_client_limits_on_open_files_and_scans(tmp_path, data_file):
    d = Daemon(tmp_path, config="daemon_client_max_open_files = 2\ndaemon_client_max_scans = 1\n")
    try:
        c = RawClient(d, tmp_path)
        uri = str(data_file[0])
        files = [c.ask("Open", {"request": i, "uri": uri}, "Opened") for i in (1, 2)]
        assert [f["body_type"] for f in files] == ["Opened", "Opened"]
        third = c.ask("Open", {"request": 3, "uri": uri}, "Opened")
        assert third["body_type"] == "Error" and third["body"]["request"] == 3
        assert "daemon_client_max_open_files" in third["body"]["message"]

        scan = {"request": 4, "file": files[0]["body"]["file"], "batch_rows": 1000}
        assert c.ask("Scan", scan, "ScanBegin")["body_type"] == "ScanBegin"
        second = c.ask("Scan", dict(scan, request=5), "ScanBegin")
        assert second["body_type"] == "Error" and second["body"]["request"] == 5
        assert "daemon_client_max_scans" in second["body"]["message"]

        # Still connected and served.
        assert c.ask("StatusRequest", {}, "StatusReply")["body"]["active_scans"] == 1
        c.sock.close()
    finally:
        d.stop()


def test_status_counts_deliveries_and_copies(tmp_path, data_file):
    d = Daemon(tmp_path, config="daemon_worker_threads = 3\ndaemon_io_threads = 2\n")
    try:
        s = d.client.status()
        assert s["worker_threads"] == 3 + 2  # decode threads, and those for opens and plans
        assert s["batches_delivered"] == 0 and s["copies_per_byte"] == 0
        assert s["bytes_fetched"] == 0 and s["s3_requests"] == 0 and s["s3_retries"] == 0
        # Strings arrive as views (the default), which lie in the slab like every other buffer:
        # the dictionary's values and the views gathered from them were decoded there.
        tag_in_slab = []
        for b in d.client.scan(str(data_file[0]), batch_rows=5000):
            tag = b.column("tag")
            assert tag.type == pa.string_view()
            tag_in_slab.append(all(_in_a_slab(buf.address) for buf in tag.buffers()[1:] if buf and buf.size))
        assert len(tag_in_slab) == 10 and all(tag_in_slab), tag_in_slab
        s = d.client.status()
        # Every segment of the file was read once (the footer's own reads are not scans').
        assert 0 < s["bytes_fetched"] <= data_file[0].stat().st_size
        assert s["s3_requests"] == 0  # a local file
        assert s["batches_delivered"] == 10
        assert s["bytes_delivered"] > 50_000 * 8  # the id column alone
        # Every byte delivered was decoded where the client maps it, or copied there once; this
        # file's columns are all compressed, so every byte was decoded in the slab.
        assert s["bytes_in_place"] + s["bytes_copied"] == s["bytes_delivered"]
        assert s["bytes_copied_after_decode"] == 0
        assert s["bytes_in_place"] == s["bytes_delivered"]
        assert s["copies_per_byte"] == 0
        assert s["gbps_10s"] > 0
        assert s["requests_in_flight"] == 0
        assert s["pool_limit_bytes"] == 16 << 30
    finally:
        d.stop()


METRIC_LINE = re.compile(r'^(onecopy_[a-z0-9_]+)(\{[a-z_]+="[^"\\]*"\})? (-?[0-9.e+-]+)$')


def _parse_prometheus(text: str) -> dict:
    """A strict reader of the text exposition format onecopy writes: every sample follows its own
    HELP and TYPE lines, counters end in _total."""
    samples, types, helped = {}, {}, set()
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name, help_text = line[7:].split(" ", 1)
            assert name.startswith("onecopy_") and help_text, line
            helped.add(name)
        elif line.startswith("# TYPE "):
            name, kind = line[7:].split(" ")
            assert kind in ("counter", "gauge"), line
            assert name in helped, line
            assert (kind == "counter") == name.endswith("_total"), line
            types[name] = kind
        else:
            m = METRIC_LINE.match(line)
            assert m, line
            assert m.group(1) in types and m.group(1) not in samples, line
            samples[m.group(1)] = (m.group(2), float(m.group(3)))
    return samples


def test_metrics_in_prometheus_format_match_status(daemon, data_file):
    assert sum(1 for _ in daemon.client.scan(str(data_file[0]), batch_rows=10_000)) == 5
    status = json.loads(subprocess.run([str(CLI), "status", "--json", "--socket", daemon.sock],
                                       capture_output=True, text=True, check=True).stdout)
    text = subprocess.run([str(CLI), "metrics", "--socket", daemon.sock], capture_output=True,
                          text=True, check=True).stdout
    m = _parse_prometheus(text)
    assert m["onecopy_build_info"] == (f'{{version="{status["version"]}"}}', 1.0)
    same = {"clients": "clients", "active_scans": "active_scans",
            "batches_in_flight": "batches_in_flight", "delivered_bytes_total": "bytes_delivered",
            "delivered_batches_total": "batches_delivered", "errors_total": "errors",
            "copied_bytes_total": "bytes_copied", "copies_per_byte": "copies_per_byte",
            "pool_bytes": "pool_bytes", "pool_limit_bytes": "pool_limit_bytes",
            "requests_in_flight": "requests_in_flight", "worker_threads": "worker_threads",
            "slabs_sent_total": "slabs_sent", "gpu_devices": "gpu_devices",
            "gpu_memory_total_bytes": "gpu_memory_total_bytes"}
    for metric, key in same.items():
        assert m["onecopy_" + metric][1] == status[key], metric
    assert m["onecopy_delivered_batches_total"][1] == 5
    assert m["onecopy_uptime_seconds"][1] >= status["uptime_ms"] / 1000
    assert m["onecopy_delivered_gigabytes_per_second"][1] > 0 and status["gbps_10s"] > 0


@pytest.fixture(scope="module")
def big_file(tmp_path_factory):
    """32 MB: four 8-byte columns of a million rows, in chunks of 131072 rows (1 MiB a column)."""
    n = 1_000_000
    rng = np.random.default_rng(11)
    table = pa.table({"id": pa.array(np.arange(n, dtype=np.int64)), "x": pa.array(rng.random(n)),
                      "y": pa.array(rng.random(n)), "z": pa.array(rng.random(n))})
    path = tmp_path_factory.mktemp("daemon-big") / "big.vortex"
    vx.io.write(table, str(path))
    return path, table


def _wait_status(client, pred, timeout=2.0):
    deadline = time.time() + timeout
    while True:
        s = client.status()
        if pred(s) or time.time() > deadline:
            return s
        time.sleep(0.02)


def test_batches_share_slabs_and_equal_in_process_scan(daemon, data_file):
    path, _ = data_file
    local = list(pa.RecordBatchReader.from_stream(onecopy.open(str(path)).scan(batch_rows=1000)))
    n = 0
    for got in daemon.client.scan(str(path), batch_rows=1000):  # each released in turn
        assert got.equals(local[n])
        n += 1
    assert n == len(local) == 50
    s = daemon.client.status()
    assert s["batches_delivered"] == 50
    # 50 batches of ~30 KB fit one 64 MiB slab: its descriptor went once, not once per batch.
    assert s["slabs_sent"] == 1


def test_each_client_gets_its_own_slabs(tmp_path, data_file):
    d = Daemon(tmp_path, config='daemon_slab_bytes = "64MiB"\n')
    try:
        a = d.client.scan(str(data_file[0]), batch_rows=1000)
        b = d.client.scan(str(data_file[0]), batch_rows=1000)
        first_a, first_b = next(a), next(b)  # one slab would hold both, but they never share
        s = _wait_status(d.client, lambda s: s["requests_in_flight"] == 0)
        assert s["slabs_sent"] == 2 and s["pool_bytes"] == 2 * (64 << 20)
        assert first_a.equals(first_b)
        del first_a, first_b
        a.close()
        b.close()
        assert _wait_status(d.client, lambda s: s["pool_bytes"] == 0)["pool_bytes"] == 0
    finally:
        d.stop()


def test_slab_ranges_are_reused_after_release(tmp_path, big_file):
    path, table = big_file
    d = Daemon(tmp_path, config='daemon_slab_bytes = "8MiB"\ndaemon_client_max_batches_in_flight = 1\n')
    try:
        pools, ids = [], []
        for b in d.client.scan(str(path), columns=["id", "x"], batch_rows=8192):  # released in turn
            ids.append(b.column(0)[0].as_py())
            pools.append(d.client.status()["pool_bytes"])
            del b
        assert ids == list(range(0, table.num_rows, 8192))
        s = d.client.status()
        assert s["batches_delivered"] == len(ids) == 123
        assert s["bytes_delivered"] >= 16_000_000  # twice the slab, at least
        assert s["slabs_sent"] == 1  # one 8 MiB slab carried them all
        assert max(pools) == 8 << 20
    finally:
        d.stop()


def test_batch_larger_than_a_slab_gets_its_own(tmp_path, big_file):
    path, table = big_file
    d = Daemon(tmp_path, config='daemon_slab_bytes = "2MiB"\ndaemon_client_max_batches_in_flight = 1\n')
    try:
        got, pools = [], []
        for b in d.client.scan(str(path), columns=["x", "y", "z", "id"]):  # 4 MiB batches
            got.append(b.column(0).to_numpy().copy())
            pools.append(_wait_status(d.client, lambda s: s["requests_in_flight"] == 0)["pool_bytes"])
            del b
        assert np.array_equal(np.concatenate(got), table.column("x").to_numpy())
        s = d.client.status()
        assert s["slabs_sent"] == s["batches_delivered"] == len(got) == 8  # a slab each
        # The one held and the one decoded ahead, at most, and the one slab the session decodes
        # into (these batches never fit it): a released batch's slab is gone.
        assert max(pools) <= 2 * (4 << 20) + (2 << 20)
        # Decoded on the heap for want of room, so copied after decode, all of it.
        assert s["bytes_copied_after_decode"] == s["bytes_copied"] == s["bytes_delivered"]
        assert min(pools) >= 1_000_000
    finally:
        d.stop()


def _http_file(path: Path, go: threading.Event, asked: threading.Event) -> ThreadingHTTPServer:
    """Serves @path over HTTP/1.1 with byte ranges, each request held until @go is set."""
    data = path.read_bytes()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _serve(self, body: bool):
            asked.set()
            go.wait(30)
            start, end = 0, len(data) - 1
            if rng := self.headers.get("Range"):
                a, b = rng.split("=", 1)[1].split("-")
                start, end = (len(data) - int(b), end) if a == "" else (int(a), min(int(b or end), end))
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
            else:
                self.send_response(200)
            self.send_header("Content-Length", str(end + 1 - start))
            self.end_headers()
            if body:
                self.wfile.write(data[start:end + 1])

        def do_GET(self):
            self._serve(True)

        def do_HEAD(self):
            self._serve(False)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def test_cancelled_open_sends_nothing_and_keeps_no_file(tmp_path, data_file):
    d = Daemon(tmp_path, config='daemon_client_max_open_files = 1\ndaemon_http_hosts = "127.0.0.1"\n')
    go, asked = threading.Event(), threading.Event()
    srv = _http_file(data_file[0], go, asked)
    url = f"http://127.0.0.1:{srv.server_address[1]}/data.vortex"
    try:
        c = RawClient(d, tmp_path)
        c.tell("Open", {"request": 7, "uri": url})
        assert asked.wait(10)
        refused = c.ask("Open", {"request": 8, "uri": str(data_file[0])}, "Opened")
        assert refused["body_type"] == "Error" and refused["body"]["request"] == 8  # 7 counts
        c.tell("Cancel", {"scan": 0, "request": 7})
        # A cancelled open still holds its worker, so it counts until its work has ended.
        still = c.ask("Open", {"request": 9, "uri": str(data_file[0])}, "Opened")
        assert still["body_type"] == "Error" and "daemon_client_max_open_files" in still["body"]["message"]
        go.set()  # the cancelled open now succeeds on its worker
        assert _wait_status(d.client, lambda s: s["requests_in_flight"] == 0)["requests_in_flight"] == 0
        local = c.ask("Open", {"request": 11, "uri": str(data_file[0])}, "Opened")
        assert local["body_type"] == "Opened"  # its work ended: it no longer counts
        c.tell("Close", {"file": local["body"]["file"]})
        c.tell("Open", {"request": 10, "uri": url})
        seen = []
        while not seen or seen[-1]["body"].get("request") != 10:
            seen.append(c.next())
        # Nothing for request 7, and its file was not kept: the limit of one admits request 10.
        assert [m["body_type"] for m in seen] == ["Opened"], seen
        assert seen[0]["body"]["rows"] == data_file[1].num_rows
        assert d.proc.poll() is None
    finally:
        srv.shutdown()
        d.stop()


def test_close_drops_the_file_and_its_scans_finish(tmp_path, data_file):
    d = Daemon(tmp_path, config="daemon_client_max_open_files = 1\n")
    try:
        c = RawClient(d, tmp_path)
        f = c.ask("Open", {"request": 1, "uri": str(data_file[0])}, "Opened")["body"]["file"]
        assert c.ask("Scan", {"request": 2, "file": f, "batch_rows": 10_000}, "ScanBegin")["body_type"] == "ScanBegin"
        c.tell("Close", {"file": f})
        rows = 0
        while True:
            m = c.next()
            if m["body_type"] == "Batch":
                rows += m["body"]["rows"]
                c.tell("Release", {"lease": m["body"]["lease"]})
            elif m["body_type"] == "ScanEnd":
                break
            else:
                assert m["body_type"] == "SlabAdded", m
        assert rows == data_file[1].num_rows  # the scan went on to its end
        gone = c.ask("Scan", {"request": 3, "file": f}, "ScanBegin")
        assert gone["body_type"] == "Error" and "no open file" in gone["body"]["message"]
        assert c.ask("Open", {"request": 4, "uri": str(data_file[0])}, "Opened")["body_type"] == "Opened"
        c.tell("Close", {"file": f})  # closed already: a protocol error ends the connection
        m = c.next()
        assert m["body_type"] == "Error", m
        assert c.sock.recv(1 << 16) == b""
        assert "Close of unknown file" in d.log.read_text()
    finally:
        d.stop()


# ---- sharded scans and resuming after a daemon restart (PROTOCOL.md "Sharding and resuming") ----

RESUME_FILTER = "score > 0.25"


def _rows(batches) -> list:
    """(id, score) of every row, copied out so that no batch (and no lease) is kept."""
    out = []
    for b in batches:
        out.extend(zip(b.column("id").to_pylist(), b.column("score").to_pylist()))
    return out


def _local_rows(path, filter=RESUME_FILTER) -> list:
    return _rows(pa.RecordBatchReader.from_stream(onecopy.open(path).scan(columns=["id", "score"], filter=filter)))


def _kill(d: Daemon) -> None:
    d.proc.send_signal(signal.SIGKILL)
    d.proc.wait(10)
    d.notify.close()


@pytest.mark.parametrize("shard", [{}, {"rank": 1, "world_size": 2, "shuffle": True, "seed": 3, "unit_rows": 2000}],
                         ids=["unsharded", "rank1of2"])
def test_scan_resumes_after_the_daemon_is_killed(tmp_path, data_file, shard):
    path, _ = data_file
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = Daemon(tmp_path / "a")
    restarted = []
    try:
        if shard:  # the same shard, read without interruption
            want = _rows(first.client.scan(str(path), columns=["id", "score"], filter=RESUME_FILTER, **shard))
            assert 0 < len(want) < len(_local_rows(path))
        else:
            want = _local_rows(path)
        it = first.client.scan(str(path), columns=["id", "score"], filter=RESUME_FILTER, batch_rows=500,
                               resume=True, reconnect_timeout=20, **shard)
        got = _rows(next(it) for _ in range(7))
        before = it.position
        assert before[1] > 0 or before[0] > 0
        _kill(first)
        # The new daemon comes up a little later, so the cursor has to retry its connection.
        starter = threading.Timer(0.5, lambda: restarted.append(Daemon(tmp_path / "b", sock=first.sock)))
        starter.start()
        got += _rows(it)
        starter.join()
        assert it.reconnects == 1
        assert restarted[0].client.status()["batches_delivered"] > 0  # the rest came from the new daemon
        assert len(got) == len(want)
        assert got == want  # no row repeated or lost, in the same order
    finally:
        if first.proc.poll() is None:
            first.stop()
        for d in restarted:
            d.stop()


def test_lost_daemon_without_resume_is_a_clear_io_error(tmp_path, data_file):
    d = Daemon(tmp_path)
    try:
        it = d.client.scan(str(data_file[0]), batch_rows=500, filter=RESUME_FILTER)
        n = len(_rows([next(it)]))
        _kill(d)
        with pytest.raises(onecopy.OnecopyError) as e:
            for b in it:  # batches the daemon sent before it died still arrive
                n += b.num_rows
        assert e.value.code == "io"
        assert "daemon connection lost" in str(e.value)
        assert n < len(_local_rows(data_file[0]))
        assert next(it, None) is None  # the cursor is closed, not stuck
    finally:
        d.stop()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _http_raw(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(data)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


def test_metrics_port_serves_prometheus_text(tmp_path, data_file):
    port = _free_port()
    d = Daemon(tmp_path, config=f"daemon_metrics_port = {port}\ndaemon_metrics_timeout_ms = 300\n")
    try:
        assert sum(1 for _ in d.client.scan(str(data_file[0]), batch_rows=10_000)) == 5
        status = d.client.status()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            assert r.status == 200
            assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            m = _parse_prometheus(r.read().decode())
        assert m["onecopy_delivered_batches_total"][1] == 5
        assert m["onecopy_delivered_bytes_total"][1] == status["bytes_delivered"]
        assert m["onecopy_slabs_sent_total"][1] == status["slabs_sent"] == 1
        assert m["onecopy_build_info"][0] == f'{{version="{status["version"]}"}}'
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/other", timeout=5)
        assert e.value.code == 404
        assert _http_raw(port, b"NONSENSE\r\n\r\n").startswith(b"HTTP/1.1 400 ")
        assert _http_raw(port, b"DELETE /metrics HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 405 ")
        big = b"GET /metrics HTTP/1.1\r\nX-Pad: " + b"a" * (9 << 10) + b"\r\n\r\n"
        assert _http_raw(port, big).startswith(b"HTTP/1.1 400 ")  # over the 8 KiB default
        # A client that sends half a request and waits is cut off after the timeout (300 ms).
        with socket.create_connection(("127.0.0.1", port), timeout=5) as slow:
            slow.sendall(b"GET /metr")
            t0 = time.time()
            assert slow.recv(100) == b""
            assert 0.2 < time.time() - t0 < 3
        assert d.proc.poll() is None
        # HTTP connections are not protocol clients: the status connection and the scan's,
        # which the client library keeps for its next scan.
        assert d.client.status()["clients"] == 2
    finally:
        d.stop()


def test_resume_waits_for_a_daemon_that_is_not_up_yet(tmp_path, data_file):
    sock = str(tmp_path / "later.sock")
    (tmp_path / "d").mkdir()
    started = []
    starter = threading.Timer(0.5, lambda: started.append(Daemon(tmp_path / "d", sock=sock)))
    starter.start()
    try:
        it = onecopy.Client(sock).scan(str(data_file[0]), columns=["id"], resume=True, reconnect_timeout=20)
        assert it.reconnects == 1
        assert sum(b.num_rows for b in it) == data_file[1].num_rows
    finally:
        starter.join()
        for d in started:
            d.stop()


def test_resume_gives_up_after_the_timeout(tmp_path, data_file):
    d = Daemon(tmp_path)
    try:
        it = d.client.scan(str(data_file[0]), batch_rows=500, resume=True, reconnect_timeout=0.5)
        next(it)
        _kill(d)
        t0 = time.monotonic()
        with pytest.raises(onecopy.OnecopyError) as e:
            for _ in it:
                pass
        assert e.value.code == "io"
        assert "cannot connect to onecopyd" in str(e.value) and "gave up after 0.5 s" in str(e.value)
        assert 0.4 < time.monotonic() - t0 < 5
    finally:
        d.stop()


def test_metrics_port_refuses_a_non_loopback_address(tmp_path):
    cfg = tmp_path / "m.toml"
    cfg.write_text('daemon_metrics_port = 9187\ndaemon_metrics_address = "0.0.0.0"\n')
    r = subprocess.run([str(ONECOPYD), "--config", str(cfg), "--socket", str(tmp_path / "s")],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode != 0
    assert "daemon_metrics_address" in r.stderr and "loopback" in r.stderr


def test_sharded_scans_partition_the_rows(daemon, data_file):
    path, table = data_file
    spec = dict(columns=["id"], filter="id >= 100", unit_rows=1500, shuffle=True, seed=9, batch_rows=700)

    def read(epoch):
        parts = {}
        for rank in range(3):
            for worker in range(2):
                it = daemon.client.scan(str(path), rank=rank, world_size=3, worker=worker, num_workers=2,
                                        epoch=epoch, **spec)
                parts[rank, worker] = [i for b in it for i in b.column("id").to_pylist()]
                assert it.units in (5, 6)  # 34 units of at most 1500 rows, dealt to 6 shards
        return parts

    e0 = read(0)
    ids = [i for part in e0.values() for i in part]
    assert sorted(ids) == list(range(100, table.num_rows))  # every row once
    assert read(0) == e0  # the same order for the same seed and epoch
    e1 = read(1)
    assert e1 != e0  # another epoch deals the units in another order
    assert sorted(i for part in e1.values() for i in part) == sorted(ids)


def test_bad_shard_specs_are_error_replies(daemon, data_file):
    path = str(data_file[0])
    with pytest.raises(onecopy.OnecopyError, match="rank 3 is not below world_size 3") as e:
        daemon.client.scan(path, rank=3, world_size=3)
    assert e.value.code == "invalid"
    with pytest.raises(onecopy.OnecopyError, match="start unit 9 is past") as e:
        daemon.client.scan(path, world_size=1, start=(9, 0))
    assert e.value.code == "invalid"
    with pytest.raises(ValueError, match="row_range"):
        daemon.client.scan(path, rank=0, world_size=2, row_range=(0, 10))
    # The connection-level protocol stays intact: a raw sharded Scan with a row range gets an Error
    # and the same connection goes on.
    c = RawClient(daemon, Path(daemon.sock).parent)
    f = c.ask("Open", {"request": 1, "uri": path}, "Opened")["body"]["file"]
    bad = c.ask("Scan", {"request": 2, "file": f, "sharded": True, "has_row_range": True, "row_end": 10}, "ScanBegin")
    assert bad["body_type"] == "Error" and bad["body"]["code"] == "invalid"
    assert "row range" in bad["body"]["message"]
    worse = c.ask("Scan", {"request": 3, "file": f, "sharded": True, "worker": 2, "num_workers": 2}, "ScanBegin")
    assert worse["body_type"] == "Error" and worse["body"]["request"] == 3
    assert "worker 2 is not below num_workers 2" in worse["body"]["message"]
    ok = c.ask("Scan", {"request": 4, "file": f, "sharded": True, "world_size": 2, "rank": 1, "unit_rows": 10000,
                        "batch_rows": 100000}, "ScanBegin")
    assert ok["body_type"] == "ScanBegin" and ok["body"]["units"] == 2
    while (m := _decode(c.tmp, c.sock.recv(1 << 20)))["body_type"] != "Batch":
        pass
    # Each batch is one whole unit here: the position after the first is the end of unit 0.
    assert m["body"]["rows"] == 10000
    assert (m["body"].get("unit", 0), m["body"]["unit_rows"]) == (0, 10000)
    c.sock.close()
