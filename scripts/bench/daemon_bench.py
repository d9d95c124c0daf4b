# SPDX-License-Identifier: Apache-2.0
"""Daemon vs in-process scan benchmark; the Python half of scripts/bench_daemon.sh, which starts
the S3 server and onecopyd and passes their pids and the socket here.

    daemon_bench.py run --socket S --daemon-pid P --server-pids Q,R --onecopy CLI --data DIR
                        [--gb 1] [--repeat 3] [--bucket bench]
    daemon_bench.py leg --mode daemon|inproc [--socket S] URI...   (one measurement, JSON out)

The same scan (every column, no filter, the files' own chunks as batches, the shards one after
the other) runs through onecopyd (`onecopy.Client(socket).scan`, batches are zero-copy views of
the daemon's memfd slabs) and in the benchmark's own process (`onecopy.open(uri).scan()`), from
a local directory and from s3:// URLs on the S3 server. The consumer views every Arrow buffer of
every batch as uint64 words (bytes past the last whole word as uint8) and sums them with numpy,
so every decoded byte is read once.

Per cell, the median of --repeat runs (daemon and in-process alternate; before them, one untimed
scan of the first file per cell warms the server, onecopyd and the page cache), each leg in a fresh
Python process: GB/s of decoded bytes (the buffers summed, 1 GB = 1e9 bytes; wall time from the
first open to the last batch), CPU seconds per GB of all onecopy processes (the leg's own
process after its imports, plus onecopyd's /proc/PID/stat delta for the daemon path), the S3
server's CPU per GB on its own, time to first batch (open included), and for the daemon the
copies per byte over the leg (delta bytes_copied / delta bytes_delivered of `onecopy status
--json`; the in-process path has no such counter), and of those the bytes copied after decode
(delta bytes_copied_after_decode: decoder output that found no room in the client's slabs).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import benchlib as bl  # noqa: E402


# --- one leg, in its own process ----------------------------------------------------------------

def touch(batch) -> tuple[int, int]:
    """(bytes, checksum): every buffer of every column summed as words."""
    import numpy as np

    nbytes, total = 0, 0
    for col in batch.columns:
        for buf in col.buffers():
            if buf is None or buf.size == 0:
                continue
            n = buf.size
            words = n // 8
            if words:
                total += int(np.frombuffer(buf, dtype=np.uint64, count=words).sum(dtype=np.uint64))
            if n % 8:
                total += int(np.frombuffer(buf, dtype=np.uint8, offset=words * 8).sum())
            nbytes += n
    return nbytes, total & (2**64 - 1)


def leg(mode: str, uris: list[str], socket: str | None) -> dict:
    import numpy  # noqa: F401 - imported before the clock starts
    import pyarrow  # noqa: F401

    import onecopy

    cpu0, t0 = bl.self_cpu(), time.perf_counter()
    ttfb = None
    nbytes = checksum = batches = 0
    client = onecopy.Client(socket) if mode == "daemon" else None
    for uri in uris:
        if mode == "daemon":
            it = client.scan(uri)
        else:
            f = onecopy.open(uri, daemon=False)  # the in-process leg, though ONECOPY_SOCKET is set
            it = __import__("pyarrow").RecordBatchReader.from_stream(f.scan())
        for batch in it:
            if ttfb is None:
                ttfb = time.perf_counter() - t0
            b, c = touch(batch)
            nbytes += b
            checksum = (checksum + c) & (2**64 - 1)
            batches += 1
            del batch
    wall = time.perf_counter() - t0
    return {"mode": mode, "bytes": nbytes, "wall_s": wall, "ttfb_s": ttfb, "cpu_s": bl.self_cpu() - cpu0,
            "batches": batches, "checksum": checksum}


# --- the driver -------------------------------------------------------------------------------------

def status(cli: str, socket: str) -> dict:
    out = subprocess.run([cli, "status", "--json", "--socket", socket], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def run_leg(a, mode: str, uris: list[str]) -> dict:
    before = status(a.onecopy, a.socket) if mode == "daemon" else None
    d0, s0 = bl.proc_cpu(a.daemon_pid), bl.procs_cpu(a.server_pids)
    cmd = [sys.executable, __file__, "leg", "--mode", mode, "--socket", a.socket, *uris]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stderr[-3000:])
        raise SystemExit(f"leg {mode} failed ({p.returncode})")
    r = json.loads(p.stdout.strip().splitlines()[-1])
    r["daemon_cpu_s"] = bl.proc_cpu(a.daemon_pid) - d0 if mode == "daemon" else 0.0
    r["server_cpu_s"] = bl.procs_cpu(a.server_pids) - s0 if uris[0].startswith("s3://") else 0.0
    if before is not None:
        after = status(a.onecopy, a.socket)
        delivered = after["bytes_delivered"] - before["bytes_delivered"]
        r["copies_per_byte"] = (after["bytes_copied"] - before["bytes_copied"]) / delivered if delivered else None
        after_decode = after["bytes_copied_after_decode"] - before["bytes_copied_after_decode"]
        r["after_decode_per_byte"] = after_decode / delivered if delivered else None
        r["status_copies_per_byte"] = after.get("copies_per_byte")
    return r


def data_files(a) -> list[Path]:
    """The vortex shards in a.data, written once per (gb, seed)."""
    stamp = a.data / "summary.json"
    if stamp.exists():
        s = json.loads(stamp.read_text())
        if s.get("gb") == a.gb and s.get("seed") == a.seed:
            return [Path(f) for f in s["files"]]
    a.data.mkdir(parents=True, exist_ok=True)
    for old in a.data.glob("*.vortex"):
        old.unlink()
    print(f"[bench_daemon] writing {a.gb} GB of token data with vortex-data into {a.data}", file=sys.stderr)
    out = subprocess.run([sys.executable, str(HERE / "tokens_data.py"), "vortex", str(a.data), "--gb", str(a.gb),
                          "--seed", str(a.seed)], check=True, stdout=subprocess.PIPE, text=True).stdout
    s = json.loads(out)
    s.update(gb=a.gb, seed=a.seed)
    stamp.write_text(json.dumps(s))
    return [Path(f) for f in s["files"]]


def run(a) -> None:
    files = data_files(a)
    s3 = bl.s3_client()
    bl.ensure_bucket(s3, a.bucket)
    prefix = f"daemon-bench/gb{a.gb:g}-seed{a.seed}"
    t = time.perf_counter()
    staging = a.data / "s3-staging"  # only the .vortex files go up
    staging.mkdir(exist_ok=True)
    for f in files:
        link = staging / f.name
        if not link.exists():
            os.symlink(f, link)
    urls = bl.upload_dir(s3, staging, a.bucket, prefix)
    print(f"[bench_daemon] {len(urls)} objects in s3://{a.bucket}/{prefix}/ ({time.perf_counter() - t:.1f} s)",
          file=sys.stderr)
    sources = {"local": [str(f) for f in files], "s3": urls}
    # Untimed: the first file once per source and path, so neither path pays for warming the S3
    # server, onecopyd, the page cache or the first connection.
    for uris in sources.values():
        for mode in ("daemon", "inproc"):
            run_leg(a, mode, uris[:1])
    results: dict[tuple[str, str], list[dict]] = {}
    for r in range(a.repeat):
        for src, uris in sources.items():
            modes = ("daemon", "inproc") if r % 2 == 0 else ("inproc", "daemon")
            for mode in modes:
                res = run_leg(a, mode, uris)
                results.setdefault((src, mode), []).append(res)
                print(f"[bench_daemon] run {r + 1}/{a.repeat} {src:5s} {mode:6s} {res['bytes'] / 1e9 / res['wall_s']:.2f}"
                      f" GB/s, first batch {res['ttfb_s'] * 1e3:.0f} ms", file=sys.stderr)
    report(a, results)


def cell(rs: list[dict]) -> dict:
    gb = [r["bytes"] / 1e9 for r in rs]
    return {
        "gbps": bl.median(g / r["wall_s"] for g, r in zip(gb, rs)),
        "cpu": bl.median((r["cpu_s"] + r["daemon_cpu_s"]) / g for g, r in zip(gb, rs)),
        "client_cpu": bl.median(r["cpu_s"] / g for g, r in zip(gb, rs)),
        "daemon_cpu": bl.median(r["daemon_cpu_s"] / g for g, r in zip(gb, rs)),
        "server_cpu": bl.median(r["server_cpu_s"] / g for g, r in zip(gb, rs)),
        "ttfb_ms": bl.median(r["ttfb_s"] * 1e3 for r in rs),
        "copies": bl.median(r.get("copies_per_byte") for r in rs),
        "after_decode": bl.median(r.get("after_decode_per_byte") for r in rs),
        "bytes": rs[0]["bytes"],
        "checksum": rs[0]["checksum"],
    }


def report(a, results) -> None:
    cells = {k: cell(v) for k, v in results.items()}
    rows = []
    for src in ("local", "s3"):
        d, i = cells[(src, "daemon")], cells[(src, "inproc")]
        same = "yes" if (d["bytes"], d["checksum"]) == (i["bytes"], i["checksum"]) else "**NO**"
        for name, c in (("onecopyd", d), ("in-process", i)):
            rows.append([src, name, bl.fmt(c["gbps"], ".2f"), bl.fmt(c["cpu"]), bl.fmt(c["client_cpu"]),
                         bl.fmt(c["daemon_cpu"] if name == "onecopyd" else None),
                         bl.fmt(c["server_cpu"] if src == "s3" else None), bl.fmt(c["ttfb_ms"], ".1f"),
                         bl.fmt(c["copies"], ".3f") if name == "onecopyd" else "n/a",
                         bl.fmt(c["after_decode"], ".3f") if name == "onecopyd" else "n/a", same])
        rows.append([src, "**daemon / in-process**", bl.ratio(d["gbps"], i["gbps"]), bl.ratio(d["cpu"], i["cpu"]),
                     bl.ratio(d["client_cpu"], i["client_cpu"]), "", "", bl.ratio(d["ttfb_ms"], i["ttfb_ms"]), "", "",
                     ""])
    print()
    print(f"Scan of every column, {cells[('local', 'daemon')]['bytes'] / 1e9:.3f} GB decoded in "
          f"{a.shards} vortex files; median of {a.repeat}; S3 = {a.server} "
          "on loopback. CPU s/GB: onecopy's processes (benchmark process + onecopyd); the S3 server apart.")
    print()
    print(bl.table(["source", "path", "GB/s", "CPU s/GB (all onecopy)", "client CPU s/GB", "onecopyd CPU s/GB",
                    "S3 server CPU s/GB", "first batch ms", "copies/byte", "of them after decode",
                    "same bytes"], rows))
    print()
    print("Reproduce: " + a.reproduce)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    lp = sub.add_parser("leg")
    lp.add_argument("--mode", choices=["daemon", "inproc"], required=True)
    lp.add_argument("--socket")
    lp.add_argument("uris", nargs="+")
    rp = sub.add_parser("run")
    rp.add_argument("--socket", required=True)
    rp.add_argument("--daemon-pid", type=int, required=True)
    rp.add_argument("--server-pids", default="", help="comma-separated pids of the S3 server's processes")
    rp.add_argument("--server", default="moto")
    rp.add_argument("--onecopy", required=True, help="the onecopy CLI")
    rp.add_argument("--data", type=Path, required=True)
    rp.add_argument("--gb", type=float, default=1.0)
    rp.add_argument("--seed", type=int, default=0)
    rp.add_argument("--repeat", type=int, default=3)
    rp.add_argument("--bucket", default="bench")
    rp.add_argument("--reproduce", default="scripts/bench_daemon.sh")
    a = ap.parse_args()
    if a.cmd == "leg":
        print(json.dumps(leg(a.mode, a.uris, a.socket)))
    else:
        sys.path.insert(0, str(HERE))
        from tokens_data import plan

        a.shards = plan(a.gb)[1]
        a.server_pids = [int(p) for p in a.server_pids.split(",") if p]
        run(a)


if __name__ == "__main__":
    main()
