# SPDX-License-Identifier: Apache-2.0
"""The soak of onecopyd (scripts/soak.sh): well-behaved clients doing random scans, cancels,
early closes, kill -9 and reconnects, plus one hostile client, against one daemon, with RSS,
descriptors, slabs and errors printed per interval; at the end everything must be back to idle,
every well-behaved scan must have had exactly the right rows, and the daemon (an ASan + LSan
build) must stop cleanly with no report.

    soak.py run --daemon BIN --minutes N --clients K [--interval S]
    soak.py worker SOCKET DATA_DIR SECONDS SEED      (one well-behaved client; started by run)
    soak.py hostile SOCKET DATA_DIR SECONDS SEED     (the hostile client; started by run)
"""

import argparse
import json
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "daemon"))

FILTERS = ["", "score > 0.5", "id BETWEEN 1000 AND 9000", "tag IN ('a', 'c') AND score < 0.25", "id < 0"]


def write_data(where: Path) -> list[Path]:
    import numpy as np
    import pyarrow as pa
    import vortex as vx
    rng = np.random.default_rng(11)
    paths = []
    for i, n in enumerate((150_000, 60_000)):
        t = pa.table({"id": pa.array(np.arange(n, dtype=np.int64)), "score": pa.array(rng.random(n)),
                      "tag": pa.array(rng.choice(["a", "b", "c", "d"], n))})
        p = where / f"part-{i}.vortex"
        vx.io.write(t, str(p))
        paths.append(p)
    return paths


# ---- a well-behaved client -------------------------------------------------------------------

def expected(path: Path, filt: str, shard=None) -> list[int]:
    """The ids a scan must deliver, read in this process (the oracle for the daemon's rows)."""
    import onecopy
    import pyarrow as pa
    f = onecopy.open(path, daemon=False)
    if shard is None:
        return pa.table(f.scan(columns=["id"], filter=filt or None)).column("id").to_pylist()
    rank, world, unit_rows = shard
    units = [(0, b, e) for b, e in f.units(unit_rows)]
    out = []
    for _, b, e in onecopy.shard_units(units, rank=rank, world_size=world):
        out += pa.table(f.scan(columns=["id"], filter=filt or None, row_range=(b, e))).column("id").to_pylist()
    return out


def worker(sock: str, data: Path, seconds: float, seed: int) -> None:
    import onecopy
    rng = random.Random(seed)
    paths = sorted(data.glob("*.vortex"))
    oracle: dict = {}
    counts = {"scans": 0, "cancels": 0, "early_closes": 0, "kills": 0, "reconnects": 0, "wrong": 0, "errors": 0}
    client = onecopy.Client(sock)
    deadline = time.time() + seconds
    while time.time() < deadline:
        path, filt = rng.choice(paths), rng.choice(FILTERS)
        action = rng.random()
        try:
            if action < 0.55:  # a whole scan, checked row by row
                shard = (rng.randrange(3), 3, rng.choice([4096, 20_000])) if rng.random() < 0.4 else None
                key = (path, filt, shard)
                if key not in oracle:
                    oracle[key] = expected(path, filt, shard)
                kw = dict(rank=shard[0], world_size=shard[1], unit_rows=shard[2]) if shard else {}
                got = []
                for b in client.scan(str(path), columns=["id"], filter=filt or None,
                                     batch_rows=rng.choice([0, 1000, 5000]), **kw):
                    got += b.column("id").to_pylist()
                counts["scans"] += 1
                counts["wrong"] += got != oracle[key]
            elif action < 0.7:  # cancel after a few batches
                it = client.scan(str(path), columns=["id", "score"], batch_rows=2000)
                for _ in range(rng.randrange(1, 4)):
                    next(it, None)
                it.close()
                counts["cancels"] += 1
            elif action < 0.8:  # close the stream without reading it
                it = client.scan(str(path), filter=filt or None)
                del it
                counts["early_closes"] += 1
            elif action < 0.9:  # a client killed with SIGKILL in the middle of a scan
                code = (f"import onecopy, time\nit = onecopy.Client({sock!r}).scan({str(path)!r}, batch_rows=1000)\n"
                        "held = [next(it), next(it)]\nprint('ready', flush=True)\ntime.sleep(60)\n")
                p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
                p.stdout.readline()
                time.sleep(rng.random() * 0.2)
                p.send_signal(signal.SIGKILL)
                p.wait()
                counts["kills"] += 1
            else:  # a fresh client (new connections) and its status
                client = onecopy.Client(sock)
                assert client.status()["version"]
                counts["reconnects"] += 1
        except onecopy.OnecopyError as e:
            counts["errors"] += 1
            print(f"worker {seed}: {e}", file=sys.stderr)
    print(json.dumps(counts), flush=True)


# ---- the hostile client ------------------------------------------------------------------------

def hostile(sock: str, data: Path, seconds: float, seed: int) -> None:
    from test_daemon import PROTOCOL, _decode, _encode
    rng = random.Random(seed)
    tmp = Path(tempfile.mkdtemp())
    frames = {name: _encode(tmp, *spec) for name, spec in {
        "hello": ("Hello", {"version": PROTOCOL}),
        "status": ("StatusRequest", {}),
        "shadow": ("Open", {"request": 1, "uri": "/etc/shadow"}),
        "s3": ("Open", {"request": 2, "uri": "s3://not-granted/x.vortex"}),
        "imds": ("Open", {"request": 3, "uri": "http://169.254.169.254/latest/meta-data/"}),
        "etc": ("List", {"request": 4, "pattern": "/etc/*"}),
        "release": ("Release", {"lease": 987654321}),
        "scan_huge": ("Scan", {"request": 5, "file": 1, "batch_rows": 1 << 40}),
        "open_fd": ("Open", {"request": 6, "uri": "fd", "unit_rows": 1}),
    }.items()}
    fifo = tmp / "fifo"
    os.mkfifo(fifo)
    paths = sorted(data.glob("*.vortex"))
    attacks = 0
    deadline = time.time() + seconds
    while time.time() < deadline:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            s.connect(sock)
            s.settimeout(2)
            s.send(frames["hello"])
            kind = rng.randrange(6)
            if kind == 0:  # names it may not use, and garbage
                for name in ("shadow", "s3", "imds", "etc", "scan_huge"):
                    s.send(frames[name])
                s.send(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64))))
            elif kind == 1:  # a flood it never reads
                s.setblocking(False)
                for _ in range(5000):
                    try:
                        s.send(frames["status"])
                    except BlockingIOError:
                        break
            elif kind == 2:  # a FIFO passed as its file
                fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
                s.sendmsg([frames["open_fd"]], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", fd))])
                os.close(fd)
            elif kind == 3:  # a scan whose batches it never releases nor reads, then vanishes
                fd = os.open(rng.choice(paths), os.O_RDONLY)
                s.sendmsg([frames["open_fd"]], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", fd))])
                os.close(fd)
                s.recv(1 << 16)  # HelloReply
                opened = _decode(tmp, s.recv(1 << 20))
                if opened["body_type"] == "Opened":
                    s.send(_encode(tmp, "Scan", {"request": 7, "file": opened["body"]["file"], "batch_rows": 100}))
                time.sleep(rng.random() * 0.3)
            elif kind == 4:  # a Release of a lease it never had
                s.send(frames["release"])
            else:  # a Part that never ends
                s.send(_encode(tmp, "Part", {"data": [7] * 1000, "more": True}))
            attacks += 1
        except OSError:
            pass
        finally:
            s.close()
        time.sleep(0.02)
    print(json.dumps({"attacks": attacks}), flush=True)


# ---- the run -------------------------------------------------------------------------------------

def proc_sample(pid: int) -> tuple[float, int]:
    rss = next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
               if line.startswith("VmRSS:"))
    return rss / 1024, len(os.listdir(f"/proc/{pid}/fd"))


def run(a) -> int:
    import onecopy
    work = Path(tempfile.mkdtemp(prefix="onecopy-soak-"))
    data = work / "data"
    data.mkdir()
    write_data(data)
    sock = str(work / "onecopyd.sock")
    config = work / "onecopyd.toml"
    # A small pool and few batches in flight, so that limits and waits are reached often.
    config.write_text('daemon_pool_bytes = "256MiB"\ndaemon_uid_max_pool_bytes = "256MiB"\n'
                      'daemon_slab_bytes = "8MiB"\ndaemon_client_max_batches_in_flight = 6\n'
                      'daemon_pool_wait_ms = 5000\nlog_level = "warn"\n')
    log = work / "onecopyd.log"
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=1",
               UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")
    daemon = subprocess.Popen([a.daemon, "--config", str(config), "--socket", sock], env=env,
                              stderr=open(log, "w"))
    for _ in range(200):
        if os.path.exists(sock):
            try:
                onecopy.Client(sock).status()
                break
            except onecopy.OnecopyError:
                pass
        time.sleep(0.05)
    base_rss, base_fds = proc_sample(daemon.pid)
    seconds = a.minutes * 60
    me = str(Path(__file__).resolve())
    workers = [subprocess.Popen([sys.executable, me, "worker", sock, str(data), str(seconds), str(i)],
                                stdout=subprocess.PIPE, text=True) for i in range(a.clients)]
    bad = subprocess.Popen([sys.executable, me, "hostile", sock, str(data), str(seconds), "999"],
                           stdout=subprocess.PIPE, text=True)
    print(f"soak: {a.clients} clients + 1 hostile for {a.minutes:g} min against pid {daemon.pid} "
          f"(baseline RSS {base_rss:.0f} MiB, {base_fds} fds)", flush=True)
    print("| minute | RSS MiB | fds | slabs | pool MiB | clients | daemon errors | batches delivered |")
    print("|---|---|---|---|---|---|---|---|")
    t0 = time.time()
    peak_rss, peak_fds = base_rss, base_fds
    next_print = t0 + a.interval
    while any(p.poll() is None for p in workers + [bad]):
        time.sleep(1)
        if daemon.poll() is not None:
            print(f"soak: FAILED: the daemon exited ({daemon.returncode})")
            break
        rss, fds = proc_sample(daemon.pid)
        peak_rss, peak_fds = max(peak_rss, rss), max(peak_fds, fds)
        if time.time() >= next_print:
            s = onecopy.Client(sock).status()
            print(f"| {(time.time() - t0) / 60:.1f} | {rss:.0f} | {fds} | {s['slabs']} | {s['pool_bytes'] / 2**20:.0f} | "
                  f"{s['clients']} | {s['errors']} | {s['batches_delivered']} |", flush=True)
            next_print += a.interval
    totals: dict = {}
    for p in workers + [bad]:
        out, _ = p.communicate(timeout=120)
        for k, v in json.loads(out.strip().splitlines()[-1]).items():
            totals[k] = totals.get(k, 0) + v
    failures = []
    # Back to idle: nothing held, every client's slabs and descriptors gone.
    idle = None
    for _ in range(100):
        idle = onecopy.Client(sock).status()
        if idle["clients"] <= 3 and idle["batches_in_flight"] == 0 and idle["active_scans"] == 0 \
                and idle["requests_in_flight"] == 0:
            break
        time.sleep(0.1)
    rss, fds = proc_sample(daemon.pid)
    if idle["batches_in_flight"] or idle["active_scans"] or idle["requests_in_flight"]:
        failures.append(f"not idle at the end: {idle}")
    if idle["slabs"] or idle["pool_bytes"]:
        failures.append(f"{idle['slabs']} slabs ({idle['pool_bytes']} bytes) left at the end")
    # Files onecopyd keeps open for the next Open of them (daemon_kept_files, 64 by default) hold
    # a descriptor each by design: the rest must be back.
    kept = idle.get("kept_files", 0)
    if kept > 64:
        failures.append(f"{kept} kept files, past daemon_kept_files (64)")
    if fds > base_fds + 8 + kept:
        failures.append(f"descriptors: {fds} at the end ({kept} of them kept files), {base_fds} at the start")
    if totals.get("wrong", 0):
        failures.append(f"{totals['wrong']} well-behaved scans had wrong rows")
    if totals.get("errors", 0):
        failures.append(f"{totals['errors']} errors for well-behaved clients")
    if daemon.poll() is None:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(120)
    if daemon.returncode != 0:
        failures.append(f"the daemon exited {daemon.returncode}")
    text = log.read_text()
    for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
        if marker in text:
            failures.append(f"{marker} in the daemon's log: {text[text.index(marker):][:2000]}")
    print(f"\nsoak: {a.minutes:g} min, {totals}; daemon RSS {base_rss:.0f} -> peak {peak_rss:.0f} -> end {rss:.0f} MiB, "
          f"fds {base_fds} -> peak {peak_fds} -> end {fds}; at the end: {idle['clients']} clients, "
          f"{idle['slabs']} slabs, {idle['pool_bytes']} pool bytes, {idle.get('kept_files', 0)} kept files, "
          f"{idle['errors']} daemon errors")
    for f in failures:
        print(f"soak: FAILED: {f}")
    print("soak: " + ("ok" if not failures else "FAILED"))
    return 0 if not failures else 1


def main() -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--daemon", required=True)
    r.add_argument("--minutes", type=float, default=30)
    r.add_argument("--clients", type=int, default=8)
    r.add_argument("--interval", type=float, default=60)
    for name in ("worker", "hostile"):
        w = sub.add_parser(name)
        w.add_argument("sock")
        w.add_argument("data", type=Path)
        w.add_argument("seconds", type=float)
        w.add_argument("seed", type=int)
    a = ap.parse_args()
    if a.cmd == "run":
        return run(a)
    (worker if a.cmd == "worker" else hostile)(a.sock, a.data, a.seconds, a.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
