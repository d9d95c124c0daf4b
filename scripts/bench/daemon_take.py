#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A take of random rows through onecopyd, against the same take in this process and against the
way RemoteFile.take read them before the daemon protocol had a take (a scan of the row ranges
around the rows, then a gather here).

    .venv/bin/python scripts/bench/daemon_take.py --vortex build/bench-data/sf1/lineitem.vortex \
        [--rows 100] [--seed 1] [--repeat 15] [--onecopyd build/onecopyd]

It starts its own onecopyd on a temporary socket (an empty config: every knob at its default)
and stops it at the end. The rows are --rows indices drawn uniformly with numpy's
default_rng(--seed), as scripts/bench_format.py draws them; every contender takes the same rows
of every column of the same open file, warm (one untimed take each first), into a pyarrow.Table,
and is checked against the in-process result. The rounds alternate the contenders. It prints a
Markdown table: best and median ms over --repeat rounds, and each median against the baseline's.

Contenders:
- in-process: onecopy.open(path, daemon=False).take(rows), the file opened once (later takes
  start from what earlier ones read: format/take_cache.hpp).
- in-process, open + take: the file opened for every take, as onecopyd opens it for every
  request.
- onecopyd take: RemoteFile.take(rows), one take request (format/scan_request.hpp TakeRows),
  each on a connection and an Open of its own; onecopyd keeps the file open between them
  (daemon/kept_files.hpp), so a take starts from what earlier ones read, as in process.
- onecopyd row ranges + gather (baseline): the row ranges around the rows (runs of rows closer
  than 64 merged) scanned in one request, and the rows gathered from those batches here with
  onecopy.Batches, as RemoteFile.take did before the take request.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
GAP_ROWS = 64  # what RemoteFile.take merged before the take request


def start_daemon(binary: str, work: Path) -> tuple[subprocess.Popen, str]:
    sock, cfg = str(work / "onecopyd.sock"), work / "onecopyd.toml"
    cfg.write_text("")
    proc = subprocess.Popen([binary, "--config", str(cfg), "--socket", sock],
                            stderr=open(work / "onecopyd.log", "w"))
    deadline = time.time() + 20
    while not os.path.exists(sock):
        if proc.poll() is not None or time.time() > deadline:
            sys.exit(f"onecopyd did not start: {(work / 'onecopyd.log').read_text()}")
        time.sleep(0.05)
    return proc, sock


def ranges_and_gather(remote, idx):
    """The rows as RemoteFile.take read them before the daemon took rows itself."""
    import numpy as np
    import pyarrow as pa

    from onecopy._native import Batches

    wanted = np.unique(idx)
    cut = np.flatnonzero(np.diff(wanted) > GAP_ROWS) + 1
    starts = wanted[np.r_[0, cut]]
    ends = wanted[np.r_[cut - 1, wanted.size - 1]] + 1
    reader = pa.RecordBatchReader.from_stream(
        remote._client.scan_ranges(remote.path, list(zip(starts.tolist(), ends.tolist()))))
    batches = list(reader)
    run_offsets = np.r_[0, np.cumsum(ends - starts)[:-1]]
    run = np.searchsorted(starts, idx, side="right") - 1
    taken = Batches(batches, reader.schema).take(run_offsets[run] + (idx - starts[run]))
    return pa.Table.from_batches([taken])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vortex", required=True, help="the Vortex file (bench_format's lineitem)")
    ap.add_argument("--rows", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--onecopyd", default=str(ROOT / "build" / "onecopyd"))
    a = ap.parse_args()

    import numpy as np
    import pyarrow as pa

    import onecopy

    path = os.path.abspath(a.vortex)
    local = onecopy.open(path, daemon=False)
    idx = np.random.default_rng(a.seed).integers(0, local.row_count, a.rows)
    with tempfile.TemporaryDirectory(prefix="daemon-take-") as tmp:
        proc, sock = start_daemon(a.onecopyd, Path(tmp))
        try:
            remote = onecopy.RemoteFile(path, sock)
            legs = {
                "in-process": lambda: pa.table(local.take(idx)),
                "in-process, open + take": lambda: pa.table(onecopy.open(path, daemon=False).take(idx)),
                "onecopyd take": lambda: pa.table(remote.take(idx)),
                "onecopyd row ranges + gather (baseline)": lambda: ranges_and_gather(remote, idx),
            }
            want = legs["in-process"]()
            times: dict[str, list[float]] = {name: [] for name in legs}
            for name, fn in legs.items():  # warm, and the same rows from every contender
                if not fn().equals(want):
                    sys.exit(f"{name}: not the in-process take's rows")
            for _ in range(a.repeat):
                for name, fn in legs.items():
                    t = time.perf_counter()
                    fn()
                    times[name].append(time.perf_counter() - t)
        finally:
            proc.terminate()
            proc.wait(30)
    base = statistics.median(times["onecopyd row ranges + gather (baseline)"])
    print(f"Take of {a.rows} random rows (seed {a.seed}) of every column of {a.vortex} "
          f"({local.row_count} rows), warm, {a.repeat} rounds:\n")
    print("| contender | best ms | median ms | median / baseline |")
    print("|---|---|---|---|")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"| {name} | {min(ts) * 1e3:.1f} | {med * 1e3:.1f} | {med / base:.3f}x |")


if __name__ == "__main__":
    main()
