# SPDX-License-Identifier: Apache-2.0
"""Hostile clients against a real onecopyd, one case per attack of issue 14 (docs/security.md).

Each case asserts that the attacker gets a clear error (or is refused), that a second,
well-behaved client keeps being served at the same time (`Served`), and that the daemon's RSS
and descriptor count stay bounded (`Bounded`). tests/daemon/test_daemon.py's Daemon starts
the daemon ($ONECOPYD: scripts/test.sh runs these again against the ASan + UBSan build)."""

import os
import signal
import socket
import struct
import subprocess
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import vortex as vx

import onecopy
from test_daemon import PROTOCOL, Daemon, RawClient, _binary, _encode

TEST_CLIENT = _binary("tests/onecopy-test-client")
# The ASan build keeps freed memory in quarantine (256 MiB by default): its RSS margin is wider.
RSS_MARGIN_MIB = 512 if "asan" in str(os.environ.get("ONECOPYD", "")) else 192


# ---- what every case checks ------------------------------------------------------------------

def resources(pid: int) -> tuple[int, int]:
    """(RSS in KiB, open descriptors) of process @pid."""
    rss = next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
               if line.startswith("VmRSS:"))
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


class Bounded:
    """The daemon's RSS and descriptors, sampled through an attack, stay within a margin of where
    they started; `check()` asserts it."""

    def __init__(self, daemon, rss_mib=RSS_MARGIN_MIB, fds=64):
        self.pid = daemon.proc.pid
        self.start = resources(self.pid)
        self.peak = list(self.start)
        self.rss_mib, self.fds = rss_mib, fds

    def sample(self):
        rss, fds = resources(self.pid)
        self.peak = [max(self.peak[0], rss), max(self.peak[1], fds)]

    def check(self):
        self.sample()
        assert self.peak[0] - self.start[0] < self.rss_mib << 10, (self.start, self.peak)
        assert self.peak[1] - self.start[1] < self.fds, (self.start, self.peak)


class Served(threading.Thread):
    """A well-behaved client scanning a file again and again, checking every row, while an attack
    goes on. `stop()` returns how many scans it completed; any error it met is raised."""

    def __init__(self, client, path, table, bounded=None):
        super().__init__(daemon=True)
        self.client, self.path, self.want = client, str(path), table.column("id").to_pylist()
        self.bounded, self.scans, self.error = bounded, 0, None
        self.running = threading.Event()
        self.running.set()
        self.start()

    def run(self):
        try:
            while self.running.is_set():
                got = []
                for b in self.client.scan(self.path, columns=["id"], batch_rows=4096):
                    got += b.column("id").to_pylist()  # copied out: the batch is released
                assert got == self.want
                self.scans += 1
                if self.bounded:
                    self.bounded.sample()
        except Exception as e:  # noqa: BLE001 - re-raised in stop()
            self.error = e

    def wait_for(self, scans: int, timeout=60.0):
        deadline = time.time() + timeout
        while self.scans < scans and self.error is None and time.time() < deadline:
            time.sleep(0.02)

    def stop(self) -> int:
        self.running.clear()
        self.join(60)
        if self.error is not None:
            raise self.error
        return self.scans


@contextmanager
def under_attack(daemon, path, table, scans=3, **bounds):
    """Runs the body (the attack) while a well-behaved client scans; afterwards asserts that the
    client completed at least @scans more scans during it, the daemon lives, and its resources
    stayed bounded."""
    bounded = Bounded(daemon, **bounds)
    good = Served(onecopy.Client(daemon.sock), path, table, bounded)
    good.wait_for(1)
    before = good.scans
    yield bounded
    good.wait_for(before + scans)
    done = good.stop()
    assert done >= before + scans, f"the well-behaved client completed {done - before} scans during the attack"
    assert daemon.proc.poll() is None
    bounded.check()


def wait_idle(daemon, timeout=10.0) -> dict:
    """The daemon's status once every attacker is gone and nothing is held: the clients left are
    the asking one and the connections this process's client library keeps for reuse (two)."""
    deadline = time.time() + timeout
    while True:
        s = daemon.client.status()
        idle = s["clients"] <= 3 and s["batches_in_flight"] == 0 and s["active_scans"] == 0 and \
            s["requests_in_flight"] == 0
        if idle or time.time() > deadline:
            return s
        time.sleep(0.05)


def error_of(reply: dict) -> tuple[str, str]:
    assert reply["body_type"] == "Error", reply
    return reply["body"].get("code", ""), reply["body"].get("message", "")


# ---- data and servers ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def data(tmp_path_factory):
    n = 40_000
    rng = np.random.default_rng(3)
    table = pa.table({"id": pa.array(np.arange(n, dtype=np.int64)), "score": pa.array(rng.random(n))})
    where = tmp_path_factory.mktemp("hostile")
    os.chmod(where, 0o755)
    path = where / "data.vortex"
    vx.io.write(table, str(path))
    return path, table


@pytest.fixture
def daemon(tmp_path):
    d = Daemon(tmp_path)
    yield d
    d.stop()


class _Quiet(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass


def http_server(handler_body):
    """A ThreadingHTTPServer on 127.0.0.1 whose GET handler is @handler_body(handler)."""
    class H(_Quiet):
        def do_GET(self):  # noqa: N802 - http.server's name
            handler_body(self)
    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def serve_file(path):
    """Serves @path with byte ranges, as an object store would."""
    body = Path(path).read_bytes()

    def get(h):
        first, last = 0, len(body) - 1
        if "Range" in h.headers:
            a, b = h.headers["Range"].split("=")[1].split("-")
            first, last = int(a), min(int(b), len(body) - 1)
        h.send_response(206 if "Range" in h.headers else 200)
        h.send_header("Content-Length", str(last - first + 1))
        h.send_header("Content-Range", f"bytes {first}-{last}/{len(body)}")
        h.send_header("ETag", '"v1"')
        h.end_headers()
        h.wfile.write(body[first:last + 1])
    return http_server(get)


def stalling_server(release: threading.Event):
    """Reads a request and answers nothing until @release is set."""
    def get(h):
        release.wait(60)
    return http_server(get)


# ---- authority: what a client can make the daemon read -----------------------------------------

def test_a_local_path_sent_as_a_name_is_denied(daemon, data, tmp_path):
    path, table = data
    with under_attack(daemon, path, table):
        c = RawClient(daemon, tmp_path)
        for uri in ("/etc/shadow", str(path), "relative.vortex", "file:///etc/passwd"):
            code, message = error_of(c.ask("Open", {"request": 1, "uri": uri}, "Opened", attach=False))
            assert code == "denied" and "passes its descriptor" in message, message
        c.sock.close()


def test_local_patterns_are_not_listed_by_the_daemon(daemon, data, tmp_path):
    path, table = data
    with under_attack(daemon, path, table):
        c = RawClient(daemon, tmp_path)
        for pattern in ("/etc/*", "x" * 300, str(path.parent) + "/"):
            code, message = error_of(c.ask("List", {"request": 1, "pattern": pattern}, "Listed"))
            assert code == "invalid" and "the client expands local patterns" in message, message
        c.sock.close()
    # The client library expands local patterns itself, with its own permissions; the 300-byte
    # name that once killed the daemon is just a name, one that names no file.
    assert daemon.client.list(str(path.parent / "*.vortex")) == [str(path)]
    with pytest.raises(onecopy.OnecopyError) as e:
        daemon.client.list("x" * 300)
    assert e.value.code == "not_found" and f"{'x' * 300}: no such file or directory" in str(e.value)
    assert daemon.proc.poll() is None


def test_fifos_devices_directories_and_unreadable_descriptors_are_refused_at_once(daemon, data, tmp_path):
    path, table = data
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    fds = {"a FIFO": os.open(fifo, os.O_RDONLY | os.O_NONBLOCK), "a character device": os.open("/dev/zero", os.O_RDONLY),
           "a directory": os.open(tmp_path, os.O_RDONLY), "not open for reading": os.open(path, os.O_PATH)}
    with under_attack(daemon, path, table):
        c = RawClient(daemon, tmp_path)
        for what, fd in fds.items():
            frame = _encode(tmp_path, "Open", {"request": 3, "uri": "x"})
            c.sock.sendmsg([frame], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", fd))])
            code, message = error_of(c.next())
            assert code == "invalid" and what in message, message
        c.sock.close()
    for fd in fds.values():
        os.close(fd)
    assert wait_idle(daemon)["requests_in_flight"] == 0  # no worker waits on the FIFO


def test_s3_needs_a_grant(daemon, data, tmp_path):
    path, table = data
    with under_attack(daemon, path, table):
        with pytest.raises(onecopy.OnecopyError, match="daemon_s3_grants") as e:
            daemon.client.scan("s3://some-bucket/data.vortex")
        assert e.value.code == "denied"
        with pytest.raises(onecopy.OnecopyError, match="daemon_s3_grants") as e:
            daemon.client.list("s3://some-bucket/")
        assert e.value.code == "denied"


def test_http_is_off_by_default_and_internal_hosts_need_their_name(tmp_path, data):
    path, table = data
    srv = serve_file(path)
    url = f"http://127.0.0.1:{srv.server_address[1]}/data.vortex"
    try:
        for i, (config, outcome) in enumerate((("", "daemon_http_hosts"),
                                               ('daemon_http_hosts = "*"', "not a public address"),
                                               ('daemon_http_hosts = "127.0.0.1"', None))):
            (tmp_path / str(i)).mkdir()
            d = Daemon(tmp_path / str(i), config=config + '\nnet_pool_bytes = "8MiB"\n')
            try:
                with under_attack(d, path, table, scans=1):
                    if outcome is None:
                        got = pa.Table.from_batches(list(d.client.scan(url, columns=["id"])))
                        assert got.column("id").to_pylist() == table.column("id").to_pylist()
                    else:
                        with pytest.raises(onecopy.OnecopyError, match=outcome) as e:
                            d.client.scan(url)
                        assert e.value.code == "denied"
                    # The instance metadata service is never reached through '*'.
                    if config.endswith('"*"'):
                        with pytest.raises(onecopy.OnecopyError, match="not a public address"):
                            d.client.scan("http://169.254.169.254/latest/meta-data/x.vortex")
            finally:
                d.stop()
    finally:
        srv.shutdown()


def test_no_response_body_or_signature_reaches_a_client(tmp_path, data):
    path, table = data
    secret = b"<html>internal admin page: password=hunter2</html>"

    def leak(h):
        h.send_response(500 if "Range" in h.headers else 200)
        h.send_header("Content-Length", str(len(secret)))
        h.end_headers()
        h.wfile.write(secret)
    srv = http_server(leak)
    d = Daemon(tmp_path, config='daemon_http_hosts = "127.0.0.1"\ns3_max_attempts = 1\nnet_pool_bytes = "8MiB"\n')
    try:
        with under_attack(d, path, table, scans=1):
            url = f"http://127.0.0.1:{srv.server_address[1]}/x.vortex?X-Amz-Signature=s3cr3t&X-Amz-Security-Token=tok"
            with pytest.raises(onecopy.OnecopyError) as e:
                d.client.scan(url)
            text = str(e.value)
            assert "HTTP 500" in text or "HTTP 200" in text, text
            for leaked in ("hunter2", "s3cr3t", "tok", "[at ../"):
                assert leaked not in text.split("onecopyd:", 1)[-1], text
    finally:
        d.stop()
        srv.shutdown()


# ---- containment: nothing a client sends kills, hangs or grows the daemon -----------------------

def test_protocol_abuse_ends_only_that_connection(daemon, data, tmp_path):
    path, table = data
    with under_attack(daemon, path, table):
        abuses = [
            [("Hello", {"version": PROTOCOL}), ("Hello", {"version": PROTOCOL})],  # a second Hello
            [("Hello", {"version": PROTOCOL}), ("Release", {"lease": 12345})],
            [("Hello", {"version": PROTOCOL}), ("Close", {"file": 99})],
            [("Hello", {"version": PROTOCOL}), ("List", {"request": 1, "pattern": "s3://b/x", "offset": 5})],
            [("Hello", {"version": 1})],  # an older client
            [("Part", {"data": [1, 2, 3], "more": True}), ("Hello", {"version": PROTOCOL})],
        ]
        for messages in abuses:
            c = RawClient(daemon, tmp_path, hello=False)
            for body_type, body in messages:
                c.tell(body_type, body)
            replies = []
            try:
                while (m := c.sock.recv(1 << 16)):
                    replies.append(m)
            except (ConnectionResetError, socket.timeout):
                pass
            assert replies, messages  # at least the Error that says why
            c.sock.close()
    assert "disconnecting client" in daemon.log.read_text()


def test_a_flood_of_messages_cannot_monopolise_the_loop(daemon, data, tmp_path):
    path, table = data
    frame = _encode(tmp_path, "StatusRequest", {})
    hello = _encode(tmp_path, "Hello", {"version": PROTOCOL})
    stop = threading.Event()
    sent = [0]

    def flood():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.connect(daemon.sock)
        s.send(hello)
        s.setblocking(False)
        while not stop.is_set():  # never reads a reply
            try:
                s.send(frame)
                sent[0] += 1
            except BlockingIOError:
                time.sleep(0.001)
        s.close()

    with under_attack(daemon, path, table, scans=5) as bounded:
        floods = [threading.Thread(target=flood) for _ in range(3)]
        for f in floods:
            f.start()
        t0 = time.time()
        while time.time() - t0 < 3:
            s = daemon.client.status()  # answered promptly throughout
            bounded.sample()
            time.sleep(0.1)
        stop.set()
        for f in floods:
            f.join()
    assert sent[0] > 1000
    # Each flooder's unread replies stopped at the queue cap, and each went when it closed.
    assert wait_idle(daemon)["clients"] <= 3


def test_a_client_that_never_reads_is_paused_not_buffered(tmp_path, data):
    path, table = data
    d = Daemon(tmp_path, config='daemon_client_max_queued_bytes = "256KiB"\n')
    try:
        with under_attack(d, path, table) as bounded:
            c = RawClient(d, tmp_path)
            f = c.ask("Open", {"request": 1, "uri": str(path)}, "Opened")["body"]["file"]
            c.tell("Scan", {"request": 2, "file": f, "batch_rows": 64})
            c.sock.setblocking(False)
            frame = _encode(tmp_path, "StatusRequest", {})
            blocked = 0
            for _ in range(20_000):
                try:
                    c.sock.send(frame)
                except BlockingIOError:
                    blocked += 1
                    if blocked > 200:
                        break
                    time.sleep(0.001)
            bounded.sample()
            assert blocked > 200  # the daemon stopped reading this client
            c.sock.close()
        s = wait_idle(d)
        assert s["clients"] <= 3 and (s["batches_in_flight"], s["active_scans"]) == (0, 0)
    finally:
        d.stop()


def test_requests_count_against_a_limit_until_their_work_ends(tmp_path, data):
    path, table = data
    release = threading.Event()
    srv = stalling_server(release)
    d = Daemon(tmp_path, config='daemon_http_hosts = "127.0.0.1"\ndaemon_client_max_open_files = 64\n'
                                's3_max_attempts = 1\nnet_pool_bytes = "8MiB"\n')
    url = f"http://127.0.0.1:{srv.server_address[1]}/slow.vortex"
    try:
        with under_attack(d, path, table):
            c = RawClient(d, tmp_path)
            for i in range(20):
                c.tell("Open", {"request": 100 + i, "uri": url})
            refused = []
            while len(refused) < 12:
                code, message = error_of(c.next())
                assert "daemon_client_max_requests" in message
                refused.append(code)
            for i in range(8):  # cancelled, they still hold their workers: still refused
                c.tell("Cancel", {"scan": 0, "request": 100 + i})
            code, message = error_of(c.ask("List", {"request": 7, "pattern": "s3://b-ucket/"}, "Listed"))
            assert "daemon_client_max_requests" in message
            assert d.client.status()["requests_in_flight"] >= 2  # stalled opens, on io threads
        release.set()
        assert wait_idle(d)["requests_in_flight"] == 0
        c.sock.close()
    finally:
        release.set()
        d.stop()
        srv.shutdown()


def test_client_chosen_sizes_are_checked_against_named_limits(tmp_path, data):
    path, table = data
    d = Daemon(tmp_path, config="plan_max_pieces = 1000\ndaemon_max_batch_rows = 100000\n")
    try:
        with under_attack(d, path, table):
            for call, knob in ((lambda: d.client.scan(str(path), batch_rows=10**9), "daemon_max_batch_rows"),
                               (lambda: d.client.scan(str(path), batch_rows=1), "plan_max_pieces"),
                               (lambda: d.client.units(str(path), 1), "plan_max_pieces"),
                               (lambda: d.client.scan(str(path), world_size=2, unit_rows=1), "plan_max_pieces"),
                               (lambda: d.client.scan(str(path), columns=[f"c{i}" for i in range(20_000)]),
                                "daemon_max_scan_columns")):
                with pytest.raises(onecopy.OnecopyError, match=knob) as e:
                    list(call())
                assert e.value.code == "invalid"
            with pytest.raises(onecopy.OnecopyError, match="outside|past") as e:
                list(d.client.scan_ranges(str(path), [(0, 10), (5, 10**12)]))
            assert e.value.code == "invalid"
    finally:
        d.stop()


def test_connections_per_user_are_capped(tmp_path, data):
    path, table = data
    d = Daemon(tmp_path, config="daemon_uid_max_clients = 6\n")
    try:
        # This test's user is the attacker too, so the well-behaved client is a connection made
        # before the attack, which keeps being served.
        keeper = RawClient(d, tmp_path)
        f = keeper.ask("Open", {"request": 1, "uri": str(path)}, "Opened")["body"]["file"]
        held, refused = [], 0
        for _ in range(20):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.connect(d.sock)
            s.settimeout(0.3)  # a refused one gets its Error at once, unasked
            try:
                reply = s.recv(1 << 16)
            except socket.timeout:
                reply = None
            if reply and b"daemon_uid_max_clients" in reply:
                refused += 1
                s.close()
            else:
                held.append(s)
        assert len(held) == 5 and refused == 15
        with pytest.raises(onecopy.OnecopyError, match="daemon_uid_max_clients"):
            onecopy.Client(d.sock).status()  # the library says why it was refused
        assert keeper.ask("Scan", {"request": 2, "file": f}, "ScanBegin")["body_type"] == "ScanBegin"
        for s in held:
            s.close()
        keeper.sock.close()
        time.sleep(0.3)
        assert d.client.status()["connections_refused"] >= refused
    finally:
        d.stop()


def test_the_descriptor_budget_pauses_accepting_instead_of_spinning(tmp_path, data):
    path, table = data
    # 320 descriptors, 256 kept back: clients get 64 (sockets, files, slabs).
    d = Daemon(tmp_path, config="daemon_fd_reserve = 256\ndaemon_uid_max_clients = 1000\n",
               prefix=["prlimit", "--nofile=320:320"])
    try:
        assert d.client.status()["descriptor_budget"] == 64
        keeper = RawClient(d, tmp_path)  # connected before the attack: it is served throughout
        conns = []
        for _ in range(200):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.setblocking(False)
            try:
                s.connect(d.sock)
                conns.append(s)
            except (BlockingIOError, ConnectionRefusedError, OSError):
                s.close()
        time.sleep(0.5)
        cpu0 = sum(map(int, Path(f"/proc/{d.proc.pid}/stat").read_text().split()[13:15]))
        time.sleep(2.0)
        cpu1 = sum(map(int, Path(f"/proc/{d.proc.pid}/stat").read_text().split()[13:15]))
        ticks = os.sysconf("SC_CLK_TCK")
        assert (cpu1 - cpu0) / ticks < 0.5, "the daemon spins at its descriptor limit"
        reply = keeper.ask("StatusRequest", {}, "StatusReply")["body"]
        assert reply["descriptors"] <= 64 and reply.get("connections_refused", 0) >= 1
        for s in conns:
            s.close()
        time.sleep(0.5)
        got = pa.Table.from_batches(list(onecopy.Client(d.sock).scan(str(path), columns=["id"])))
        assert got.num_rows == table.num_rows  # accepting again once descriptors came back
        keeper.sock.close()
        assert "not accepting connections" in d.log.read_text()
    finally:
        d.stop()


def test_the_metrics_port_caps_connections_and_times_them_out(tmp_path, data):
    path, table = data
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    d = Daemon(tmp_path, config=f"daemon_metrics_port = {port}\ndaemon_metrics_max_connections = 4\n"
                                "daemon_metrics_timeout_ms = 500\n")
    try:
        with under_attack(d, path, table, fds=24) as bounded:
            idle = []
            for _ in range(60):
                s = socket.create_connection(("127.0.0.1", port))
                idle.append(s)
            time.sleep(0.2)
            bounded.sample()
            time.sleep(1.0)  # past the deadline: the four it kept are closed, unanswered
            import urllib.request
            body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
            assert "onecopy_clients" in body
            for s in idle:
                s.close()
    finally:
        d.stop()


def test_the_slab_pool_is_never_passed(tmp_path):
    n = 1_000_000
    table = pa.table({"id": pa.array(np.arange(n, dtype=np.int64)),
                      "v": pa.array(np.random.default_rng(1).random(n))})
    path = tmp_path / "big.vortex"
    vx.io.write(table, str(path))
    small = pa.table({"id": pa.array(np.arange(2000, dtype=np.int64))})
    small_path = tmp_path / "small.vortex"
    vx.io.write(small, str(small_path))
    limit = 48 << 20
    d = Daemon(tmp_path, config=f'daemon_pool_bytes = "48MiB"\ndaemon_uid_max_pool_bytes = "48MiB"\n'
                                f'daemon_slab_bytes = "2MiB"\ndaemon_pool_wait_ms = 1500\n')
    try:
        with under_attack(d, small_path, small) as bounded:
            # Hoarders: connections that take batches of 1.6 MB and never release them.
            hoarders, errors = [], []
            for i in range(6):
                c = RawClient(d, tmp_path)
                f = c.ask("Open", {"request": 1, "uri": str(path)}, "Opened")["body"]["file"]
                c.tell("Scan", {"request": 2, "file": f, "batch_rows": 100_000})
                hoarders.append(c)
            deadline = time.time() + 6
            while time.time() < deadline:
                s = d.client.status()
                assert s["pool_bytes"] <= limit, s
                bounded.sample()
                for c in hoarders:
                    c.sock.settimeout(0.01)
                    try:
                        m = c.next()
                        if m["body_type"] == "Error":
                            errors.append(m["body"]["message"])
                    except socket.timeout:
                        pass
                time.sleep(0.05)
            assert any("no room in the slab pool" in e for e in errors), errors
            for c in hoarders:
                c.sock.close()
        assert wait_idle(d)["pool_bytes"] <= limit
    finally:
        d.stop()


def test_kept_connections_give_their_slabs_to_a_batch_that_finds_no_room(tmp_path, data):
    """The client library keeps connections whose scans ended, with their slabs, for its next
    scans. When they hold the whole pool, another connection's batch does not wait for them: the
    daemon closes one, and the library connects anew when it finds it closed."""
    path, table = data
    d = Daemon(tmp_path, config='daemon_pool_bytes = "8MiB"\ndaemon_uid_max_pool_bytes = "8MiB"\n'
                                'daemon_slab_bytes = "4MiB"\ndaemon_pool_wait_ms = 1000\n',
               env={"ONECOPY_LOG_LEVEL": "debug"})

    def scans_at_once(n: int) -> None:
        """@n scans of the file started before any is read: n connections, each with its slab."""
        streams = [d.client.scan_stream(str(path), columns=["id"]) for _ in range(n)]
        for stream in streams:
            got = pa.RecordBatchReader.from_stream(stream).read_all()
            assert got.column("id").to_pylist() == table.column("id").to_pylist()

    def settled() -> dict:
        deadline = time.time() + 10
        while True:
            s = d.client.status()
            if (s["active_scans"] == 0 and s["batches_in_flight"] == 0) or time.time() > deadline:
                return s
            time.sleep(0.05)

    try:
        scans_at_once(2)
        assert settled()["pool_bytes"] == 8 << 20  # two kept connections hold the pool
        raw = RawClient(d, tmp_path)
        f = raw.ask("Open", {"request": 1, "uri": str(path)}, "Opened")["body"]["file"]
        raw.tell("Scan", {"request": 2, "file": f, "columns": ["id"]})
        while (m := raw.next())["body_type"] not in ("Batch", "Error"):
            pass
        assert m["body_type"] == "Batch", m  # not "no room in the slab pool" after 1 s
        assert "closing an idle connection" in d.log.read_text()
        raw.sock.close()
        settled()
        scans_at_once(2)  # the connection still kept, and a new one for the one closed
        assert d.proc.poll() is None
    finally:
        d.stop()


def test_allocation_failure_fails_one_scan_and_the_format_knobs_apply(tmp_path, data):
    """A file claiming 2^37 rows of one sequence-encoded chunk: by default the decode guard
    (max_decoded_bytes, a format/ knob) refuses it; raised to 1 TiB in the daemon's TOML, the
    allocation fails instead, and only that scan sees it."""
    path, table = data
    vx.io.write(vx.Array.from_range(range(0, 77777)), str(tmp_path / "seq.vortex"))
    raw = bytearray((tmp_path / "seq.vortex").read_bytes())
    marker = struct.pack("<Q", 77777)
    at = [i for i in range(len(raw) - 7) if raw[i:i + 8] == marker]
    assert len(at) == 2  # the zoned and flat layouts' row counts
    for i in at:
        raw[i:i + 8] = struct.pack("<Q", 1 << 37)
    huge = tmp_path / "huge.vortex"
    huge.write_bytes(bytes(raw))
    asan = os.environ.get("ASAN_OPTIONS", "")
    for config, code, message in (("", "corrupt", "byte limit"),
                                  ('max_decoded_bytes = "1TiB"\n', "out_of_memory", "out of memory")):
        where = tmp_path / code
        where.mkdir()
        # Under ASan a failed allocation must return null (as glibc's does), not abort.
        d = Daemon(where, config=config, env={"ASAN_OPTIONS": asan + ":allocator_may_return_null=1"})
        try:
            with under_attack(d, path, table, scans=1):
                with pytest.raises(onecopy.OnecopyError, match=message) as e:
                    list(d.client.scan(str(huge)))
                assert e.value.code == code
        finally:
            d.stop()


def test_net_and_format_knobs_in_the_toml_change_the_daemon(tmp_path, data):
    path, table = data
    release = threading.Event()
    srv = stalling_server(release)
    url = f"http://127.0.0.1:{srv.server_address[1]}/slow.vortex"
    d = Daemon(tmp_path, config='daemon_http_hosts = "127.0.0.1"\nscan_batch_rows = 1000\n'
                                'http_first_byte_timeout_ms = 300\ns3_max_attempts = 1\n')
    try:
        # format/: batches of scan_batch_rows when the client leaves batch_rows at 0.
        sizes = {b.num_rows for b in d.client.scan(str(path), columns=["id"])}
        assert sizes == {1000}
        # net/: a server that never answers times out after 300 ms, not the default 30 s.
        t0 = time.time()
        with pytest.raises(onecopy.OnecopyError) as e:
            d.client.scan(url)
        assert time.time() - t0 < 5 and e.value.code == "timeout", e.value
    finally:
        release.set()
        d.stop()
        srv.shutdown()


def test_large_replies_travel_in_parts(tmp_path):
    wide = pa.table({f"c{i}": pa.array(np.full(7, i, dtype=np.int16)) for i in range(5000)})
    wide_path = tmp_path / "wide.vortex"
    vx.io.write(wide, str(wide_path))
    long_path = tmp_path / "long.vortex"
    vx.io.write(pa.table({"id": pa.array(np.arange(1 << 20, dtype=np.int64))}), str(long_path))
    d = Daemon(tmp_path)
    try:
        got = pa.Table.from_batches(list(d.client.scan(str(wide_path))))
        assert got.equals(wide)
        units = d.client.units(str(long_path), 1)
        assert len(units) == 1 << 20 and units[12345] == (12345, 12346)
        rows = [v for b in d.client.scan(str(long_path), world_size=4096, rank=7, unit_rows=1)
                for v in b.column(0).to_pylist()]
        assert len(rows) == 256 and all(v % 4096 == 7 for v in rows)
    finally:
        d.stop()


# ---- the client library ------------------------------------------------------------------------

def test_a_forked_child_never_releases_or_reads_its_parents_batches(daemon, data):
    path, table = data
    it = daemon.client.scan(str(path), columns=["id"], batch_rows=5000)
    first = next(it)
    want = first.column("id").to_pylist()
    pid = os.fork()
    if pid == 0:  # the child: drops its copy of the batch and tries to read on
        ok = True
        try:
            del first
            next(it)
            ok = False  # it must not read on its parent's connection
        except Exception:  # noqa: BLE001
            pass
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0  # its read failed
    # Had the child released the parent's lease, the parent's own Release of it would be a
    # protocol error ending the connection; had it read, the parent would miss batches.
    assert first.column("id").to_pylist() == want
    rest = [b.num_rows for b in it]
    assert first.num_rows + sum(rest) == table.num_rows
    del first
    assert wait_idle(daemon)["batches_in_flight"] == 0
    assert "Release of unknown lease" not in daemon.log.read_text()


def test_client_connect_and_reply_timeouts(tmp_path, monkeypatch):
    # A "daemon" that accepts and never answers, and one that never accepts at all.
    mute = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    mute.bind(str(tmp_path / "mute.sock"))
    mute.listen(16)
    full = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    full.bind(str(tmp_path / "full.sock"))
    full.listen(0)
    fillers = []
    for _ in range(4):  # fill the backlog
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.setblocking(False)
        try:
            s.connect(str(tmp_path / "full.sock"))
        except BlockingIOError:
            pass
        fillers.append(s)
    monkeypatch.setenv("ONECOPY_CLIENT_REPLY_TIMEOUT_MS", "300")
    monkeypatch.setenv("ONECOPY_CLIENT_CONNECT_TIMEOUT_MS", "300")
    onecopy.reload_settings()
    try:
        t0 = time.time()
        with pytest.raises(onecopy.OnecopyError, match="client_reply_timeout_ms") as e:
            onecopy.Client(str(tmp_path / "mute.sock")).status()
        assert e.value.code == "timeout" and time.time() - t0 < 5
        t0 = time.time()
        with pytest.raises(onecopy.OnecopyError, match="client_connect_timeout_ms") as e:
            onecopy.Client(str(tmp_path / "full.sock")).status()
        assert e.value.code == "timeout" and time.time() - t0 < 5
    finally:
        monkeypatch.delenv("ONECOPY_CLIENT_REPLY_TIMEOUT_MS")
        monkeypatch.delenv("ONECOPY_CLIENT_CONNECT_TIMEOUT_MS")
        onecopy.reload_settings()
        for s in fillers + [mute, full]:
            s.close()


def test_signals_do_not_fail_client_calls(daemon, data):
    path, table = data
    ticks = [0]
    old = signal.signal(signal.SIGALRM, lambda *a: ticks.__setitem__(0, ticks[0] + 1))
    signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)
    try:
        for _ in range(5):
            assert sum(b.num_rows for b in daemon.client.scan(str(path), columns=["id"], batch_rows=1000)) == \
                table.num_rows
            assert daemon.client.status()["clients"] >= 1
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0, 0)
        signal.signal(signal.SIGALRM, old)
    assert ticks[0] > 10


def test_a_daemon_lost_mid_scan_is_an_error_not_sigpipe(tmp_path, data):
    path, _ = data
    d = Daemon(tmp_path)
    # A C++ client with SIGPIPE at its default: a send to the dead daemon must not kill it.
    p = subprocess.Popen([str(TEST_CLIENT), d.sock, "scan", str(path), "--slow"], stdout=subprocess.PIPE,
                         text=True)
    assert p.stdout.readline().strip() == "batch"
    d.proc.send_signal(signal.SIGKILL)
    d.proc.wait(10)
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 1, (p.returncode, out)  # not -SIGPIPE
    assert "daemon connection lost" in out
    d.notify.close()
