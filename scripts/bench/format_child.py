#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""One contender, one measurement, one thread count, in a process of its own: the child that
scripts/bench_format.py runs for every timing (see its docstring for the whole method).

    python scripts/bench/format_child.py --system onecopy --measure full --threads 1 --repeat 3 \
        --vortex F.vortex --parquet F.parquet --lance D.lance [--idx 5,17,...]
    python scripts/bench/format_child.py --system memcpy --repeat 5

It sets the thread count first (environment and pool sizes, before the system's first scan),
imports only the system it times (pyarrow, the common sink, for all), runs the measurement
once untimed (warm-up), then --repeat times timed, and prints one JSON object on stdout:
best_s (the fastest), times_s (all), rchar (bytes read(2)/pread(2) returned during the fastest
run, from /proc/self/io, less what reading that file adds), rows, out_bytes (the result pyarrow.Table's buffers,
`get_total_buffer_size`) and check (what the parent compares against pyarrow's answer: row and
column counts, sums, the taken keys). Nothing runs in this process but that system's work.

Systems: onecopy, vortex-data, parquet (pyarrow on the file written with pyarrow's defaults),
parquet-ra (pyarrow on the file written for random access), lance (pylance on the Lance dataset
written with its defaults); memcpy (a numpy copy).
Measurements: full, filtered, open-take, take.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

FILTER_SQL = "l_shipdate BETWEEN DATE '1995-01-01' AND DATE '1995-01-31'"
# The same filter in Lance's SQL (DataFusion's): the same bounds, both inclusive.
LANCE_FILTER = "l_shipdate >= date '1995-01-01' AND l_shipdate <= date '1995-01-31'"
LO, HI = dt.date(1995, 1, 1), dt.date(1995, 1, 31)
PROJ = ["l_extendedprice", "l_discount"]
SYSTEMS = ["onecopy", "vortex-data", "parquet", "parquet-ra", "lance"]
MEASURES = ["full", "filtered", "open-take", "take"]
MEMCPY_BYTES = 256 << 20


def rchar() -> int:
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    return 0


def memcpy(repeat: int) -> dict:
    """Single-thread memcpy rate: numpy copies a 256 MiB array into another one (both touched
    first, so no page faults are timed); best of max(repeat, 5); GB/s = 1e9 bytes copied per s."""
    import numpy as np

    src = np.ones(MEMCPY_BYTES, dtype=np.uint8)
    dst = np.zeros_like(src)
    np.copyto(dst, src)  # warm-up
    times = []
    for _ in range(max(repeat, 5)):
        t = time.perf_counter()
        np.copyto(dst, src)
        times.append(time.perf_counter() - t)
    best = min(times)
    return {"best_s": best, "times_s": times, "bytes": MEMCPY_BYTES, "gbps": MEMCPY_BYTES / best / 1e9}


def parquet_take_fn(path: str, idx, use_threads: bool, open_each_time: bool):
    """Take by row-group selection: read only the row groups that hold the rows
    (`ParquetFile.read_row_groups`), then `Table.take` the rows in the requested order."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    def opened():
        pf = pq.ParquetFile(path)
        md = pf.metadata
        starts = np.cumsum([0] + [md.row_group(i).num_rows for i in range(md.num_row_groups)])
        return pf, starts

    def take(pf, starts):
        groups = np.searchsorted(starts, idx, side="right") - 1
        wanted = np.unique(groups)
        t = pf.read_row_groups(wanted.tolist(), use_threads=use_threads)
        base = np.cumsum([0] + [int(starts[g + 1] - starts[g]) for g in wanted])
        local = base[np.searchsorted(wanted, groups)] + (idx - starts[groups])
        return t.take(pa.array(local))

    if open_each_time:
        return lambda: take(*opened())
    state = opened()
    return lambda: take(*state)


def build(system: str, measure: str, threads: int, a) -> callable:
    """The function that does one run of `measure` with `system`, returning a pyarrow.Table;
    thread counts set before anything is opened."""
    import numpy as np
    import pyarrow as pa

    pa.set_cpu_count(threads)
    pa.set_io_thread_count(threads)
    use_threads = threads > 1
    idx = np.array([int(x) for x in a.idx.split(",")], dtype=np.int64) if a.idx else None
    v = a.vortex

    if system == "onecopy":
        os.environ["ONECOPY_SCAN_DECODE_THREADS"] = str(threads)
        sys.path.insert(0, str(ROOT / "python"))
        import onecopy

        onecopy.reload_settings()
        if measure == "full":
            return lambda: pa.table(onecopy.open(v, daemon=False).scan())
        if measure == "filtered":
            return lambda: pa.table(onecopy.open(v, daemon=False).scan(filter=FILTER_SQL, columns=PROJ))
        if measure == "open-take":
            return lambda: pa.table(onecopy.open(v, daemon=False).take(idx))
        f = onecopy.open(v, daemon=False)
        return lambda: pa.table(f.take(idx))

    if system == "vortex-data":
        import vortex as vx
        import vortex.expr as ve

        # Its pool of background workers next to the calling thread (its default counts them
        # the same way: available_parallelism() - 1).
        vx.set_worker_threads(max(threads - 1, 0))
        if measure == "full":
            return lambda: vx.open(v).to_arrow().read_all()
        if measure == "filtered":
            date = vx.date("days")
            expr = ve.and_(ve.gt_eq(ve.column("l_shipdate"), ve.literal(date, LO)),
                           ve.lt_eq(ve.column("l_shipdate"), ve.literal(date, HI)))
            return lambda: vx.open(v).to_arrow(PROJ, expr=expr).read_all()
        # vortex-data has no take: a scan with `indices=` (strictly increasing, so the rows are
        # sorted and de-duplicated for it, then put back in the requested order with pyarrow;
        # pyarrow 21 cannot take from string views, so the 100-row result is cast to plain
        # strings first).
        uniq, inverse = np.unique(idx, return_inverse=True)
        plain = {pa.string_view(): pa.string(), pa.binary_view(): pa.binary()}

        def take(f):
            t = f.to_arrow(indices=vx.array(pa.array(uniq.astype(np.uint64)))).read_all()
            t = t.cast(pa.schema([fl.with_type(plain.get(fl.type, fl.type)) for fl in t.schema]))
            return t.take(pa.array(inverse))

        if measure == "open-take":
            return lambda: take(vx.open(v))
        f = vx.open(v)
        return lambda: take(f)

    if system == "lance":
        # Lance sizes its Rust pools from the environment, read when it starts them, so set
        # before the import: LANCE_CPU_THREADS (decoding) and LANCE_IO_THREADS (reads).
        os.environ["LANCE_CPU_THREADS"] = str(threads)
        os.environ["LANCE_IO_THREADS"] = str(threads)
        import lance

        d = a.lance
        if measure == "full":
            return lambda: lance.dataset(d).to_table()
        if measure == "filtered":
            return lambda: lance.dataset(d).to_table(columns=PROJ, filter=LANCE_FILTER)
        # `take` returns the rows in the requested order, duplicates included.
        if measure == "open-take":
            return lambda: lance.dataset(d).take(idx)
        ds = lance.dataset(d)
        return lambda: ds.take(idx)

    if system in ("parquet", "parquet-ra"):
        import pyarrow.parquet as pq

        p = a.parquet
        if measure == "full":
            return lambda: pq.read_table(p, use_threads=use_threads)
        if measure == "filtered":
            return lambda: pq.read_table(p, columns=PROJ, use_threads=use_threads,
                                         filters=[("l_shipdate", ">=", LO), ("l_shipdate", "<=", HI)])
        return parquet_take_fn(p, idx, use_threads, open_each_time=measure == "open-take")

    raise SystemExit(f"unknown system {system}")


def check_of(measure: str, t) -> dict:
    """What the parent compares with pyarrow's own answer (computed outside the timed runs)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out = {"rows": t.num_rows, "columns": t.num_columns}
    if measure == "filtered":
        for c in PROJ:
            out[f"sum_{c}"] = pc.sum(t.column(c).cast(pa.float64())).as_py() or 0.0
    elif measure in ("take", "open-take"):
        for c in ("l_orderkey", "l_linenumber"):
            out[c] = t.column(c).cast(pa.int64()).to_pylist()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--system", required=True, choices=[*SYSTEMS, "memcpy"])
    ap.add_argument("--measure", choices=MEASURES)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--vortex")
    ap.add_argument("--parquet")
    ap.add_argument("--lance", help="the Lance dataset (a directory)")
    ap.add_argument("--idx", default="", help="comma-separated rows to take")
    a = ap.parse_args()

    if a.system == "memcpy":
        print(json.dumps(memcpy(a.repeat)))
        return

    fn = build(a.system, a.measure, a.threads, a)
    result = fn()  # warm-up: page cache, lazy initialisation, thread pools
    base = rchar()
    self_read = rchar() - base  # what reading /proc/self/io itself adds to rchar
    times, reads = [], []
    for _ in range(a.repeat):
        r0 = rchar()
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
        reads.append(max(rchar() - r0 - self_read, 0))
    best = min(range(len(times)), key=times.__getitem__)
    print(json.dumps({
        "system": a.system, "measure": a.measure, "threads": a.threads, "pid": os.getpid(),
        "best_s": times[best], "times_s": times, "rchar": reads[best],
        "rows": result.num_rows, "out_bytes": result.get_total_buffer_size(),
        "check": check_of(a.measure, result),
    }))


if __name__ == "__main__":
    main()
