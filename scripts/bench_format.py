#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Format benchmark: onecopy vs vortex-data vs pyarrow Parquet vs Lance on TPC-H lineitem, every
contender timed in a process of its own.

    .venv/bin/python scripts/bench_format.py [--sf 1] [--repeat 3] [--rounds 3] [--threads 1,N]
        [--data-dir DIR] [--parquet-rg-rows 8192] [--chart-dir build/bench-format]
        [--json build/bench-format.json]

Data: tpchgen-cli (from requirements.txt, in the venv next to this Python) writes lineitem at
scale factor --sf as Parquet into --data-dir (default build/bench-data/sf<SF>); that table is
written again by vortex-data twice, with its default options (`lineitem.vortex`) and with its
compact writer (`lineitem.compact.vortex`, `VortexWriteOptions.compact()`: numbers become
`vortex.pco`, strings `vortex.zstd`), and twice by pyarrow with zstd, its string views as plain
strings (pyarrow 21 cannot `take` views):
  - "Parquet (pyarrow defaults)", `lineitem.zstd.parquet`: otherwise pyarrow's default options
    (row groups of up to 1 Mi rows, no page index);
  - "Parquet (random access)", `lineitem.rg<N>.zstd.parquet`: written for random access, row
    groups of --parquet-rg-rows rows (default 8192) and the page index (`write_page_index=True`);
and once by pylance with its defaults, `lance.write_dataset(table, path)`: the Lance dataset
`lineitem.lance` (a directory; pylance 14 writes tpchgen-cli's string views as strings).
Everything is reused when present.

How the numbers are taken (every table repeats it in one line):
  - a process per contender: every timing runs in a fresh `python scripts/bench/format_child.py`
    that times one system, one measurement, at one thread count, and has done nothing else: it
    imports pyarrow (the common sink) and only the system it times, sets the threads before the
    first scan, runs the measurement once untimed (warm-up), then --repeat times, and prints the
    best time, the bytes read and its answer as JSON. This parent prepares the data, computes the
    expected answers with pyarrow, reads every file once so the page cache is warm for all, and
    checks each child's answer (rows, columns, sums, the taken keys) before its time counts;
  - interleaved: for each thread count and measurement, --rounds rounds, each running one child
    per system (the starting system rotating each round), so slow drifts of the machine hit
    every system alike; a table cell is the system's best over its children (each a best of
    --repeat). "spread" is, for the system whose children disagreed most, its slowest child's
    best over its fastest's: a noise gauge for that row;
  - same work for every contender: the same rows, columns, filter, rows to take, threads, warm
    page cache, and the same sink, a pyarrow.Table.

Measured, at each thread count of --threads (default 1, then all cores):
  1. full scan of every column;
  2. the filtered scan  l_shipdate BETWEEN DATE '1995-01-01' AND DATE '1995-01-31'  projecting
     l_extendedprice, l_discount: time, and bytes read;
  3. take of 100 random rows (the same rows for all): "open+take" opens the file anew each time
     (a cold open on a warm page cache), "take" reuses a file opened before the warm-up.
     onecopy: `VortexFile.take`; Lance: `LanceDataset.take` (rows in the requested order); vortex-data has no take, so the closest equivalent is a scan
     with `indices=` (strictly increasing: the rows are sorted and de-duplicated for it, then put
     back in the requested order with pyarrow); Parquet, both files: read the row groups that
     hold the rows (`ParquetFile.read_row_groups`), then `Table.take`. pyarrow 21's reader has no
     row selection by the page index (no API reads a subset of a row group's pages), so on the
     random-access file the small row groups do the work and the page index is there for readers
     that use it; take is reported against both files;
  4. the compact-written file: measurements 1 and 3 (full scan, open+take, take) again, with
     onecopy and vortex-data only, on `lineitem.compact.vortex`: the same children, the same
     code and answers, the same rounds, repeat, threads and rows; only the file differs (its
     rows are labelled "(compact file)");
  5. decoded GB/s per core of each system's full scan, of both Vortex files (the bytes of the buffers of the
     pyarrow.Table it returned, `get_total_buffer_size`, over its time, over the threads), next
     to this machine's single-thread memcpy rate: a numpy copy of a 256 MiB array into another
     (both touched first), best of max(--repeat, 5) in each of --rounds child processes, 1e9
     bytes per second; the physical limit of a scan that writes its output once;
  6. file sizes: the compact-written Vortex file against the default one, both Parquet files and
     the Lance dataset (all its files), with the array encodings each Vortex file holds (from
     `inspect`).

Lance: a full scan is `lance.dataset(path).to_table()`, the filtered scan
`to_table(columns=[...], filter="l_shipdate >= date '1995-01-01' AND l_shipdate <= date
'1995-01-31'")` (its answer checked against pyarrow's as every other), take as above; each
measurement opens the dataset as the other systems open their files.

Threads, set in each child before its first scan: pyarrow follows `pa.set_cpu_count` /
`set_io_thread_count` (and `use_threads`, on above 1 thread); vortex-data follows
`vortex.set_worker_threads(n - 1)` (its pool of background workers next to the calling thread,
which is how its default of `available_parallelism() - 1` counts them); onecopy decodes a batch's
columns side by side on `ONECOPY_SCAN_DECODE_THREADS` threads (set, then
`onecopy.reload_settings()`); fetching and filtering stay on the calling thread; Lance sizes its
decode and I/O pools from LANCE_CPU_THREADS and LANCE_IO_THREADS (both n, set before
`import lance`), next to pyarrow's settings above. Numbers at all cores mean something only on an
otherwise idle machine.

Bytes read: `rchar` from /proc/self/io in the child, the delta over its fastest run, for every
system alike. rchar counts bytes returned by read(2)/pread(2)-family calls, page-cache hits
included, so it measures what a system asks for, not what the disk delivers; reads through mmap
or io_uring are not in it, and onecopy reads through io_uring (pread only where io_uring is
refused), so its rchar is near zero and the target uses its own counter. For onecopy the scan's
own counter is reported too: `onecopy scan --explain` prints "bytes read" (segment bytes
fetched, merged gaps included).

"Bytes of the segments that hold matching rows" (the bytes target's denominator): from
`onecopy inspect --json` (the Python `VortexFile.inspect()`): for l_shipdate and both projected
columns, the sum of the segment lengths of every data chunk of the column's layout whose row
range holds at least one matching row (the matching rows computed with pyarrow). Zone-map
segments are not counted, so a reader that consults zone maps reads a little over 1.0x.

Targets (issues 17 and 41, printed as measured, met or not): the full scan at most 0.8x the time
of vortex-data and at most 0.5x Lance's, at 1 thread and at all cores; the filtered scan at most
1.0x vortex-data and Lance; take of 100 random rows on an open file at most 1.0x vortex-data and
Lance and at least 100x faster than Parquet with pyarrow's defaults (reported against the
random-access Parquet too); and the filtered scan reads at most 1.2x the bytes of the segments
holding matching rows. The compact file has no target: its ratios are reported.

Charts: every table drawn as bar charts with matplotlib into --chart-dir (default
build/bench-format; --chart-dir '' skips them), a PNG per table (scripts/bench/format_chart.py:
format-time.png, format-throughput.png, format-bytes.png, format-sizes.png). When matplotlib or
pylance is missing, scripts/bench-format-requirements.txt is installed into this venv with pip
(numpy held at its installed version); when that fails the charts are skipped with a message,
and without pylance the benchmark stops. Every child's JSON goes to --json (default
build/bench-format.json).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts" / "bench"))
import charts  # noqa: E402
import format_chart  # noqa: E402
from format_child import FILTER_SQL, HI, LO, PROJ  # noqa: E402

CHILD = ROOT / "scripts" / "bench" / "format_child.py"
TAKE_ROWS = 100
SYSTEMS = ["onecopy", "vortex-data", "parquet", "parquet-ra", "lance"]
MEASURES = [("full", "full scan, all columns"), ("filtered", "filtered scan"),
            ("open-take", f"open+take {TAKE_ROWS} rows"), ("take", f"take {TAKE_ROWS} rows (open file)")]
# The compact-written file: the same child measurements on lineitem.compact.vortex, for the two
# systems that read Vortex. A key is the child's measurement with this prefix.
COMPACT = "compact-"
VORTEX_SYSTEMS = ["onecopy", "vortex-data"]
COMPACT_MEASURES = [(COMPACT + "full", "full scan, all columns (compact file)"),
                    (COMPACT + "open-take", f"open+take {TAKE_ROWS} rows (compact file)"),
                    (COMPACT + "take", f"take {TAKE_ROWS} rows (open file, compact file)")]
ALL_MEASURES = MEASURES + COMPACT_MEASURES


def child_measure(key: str) -> str:
    """The measurement the child runs for a table key ("compact-full" -> "full")."""
    return key.removeprefix(COMPACT)


def systems_of(key: str) -> list[str]:
    return VORTEX_SYSTEMS if key.startswith(COMPACT) else SYSTEMS


# ---------------------------------------------------------------------------------------------
# Data


def prepare(data_dir: Path, sf: float, rg_rows: int) -> dict[str, Path]:
    d = data_dir / f"sf{sf:g}"
    d.mkdir(parents=True, exist_ok=True)
    raw = d / "lineitem.parquet"
    vtx = d / "lineitem.vortex"
    compact = d / "lineitem.compact.vortex"
    zstd = d / "lineitem.zstd.parquet"
    tuned = d / f"lineitem.rg{rg_rows}.zstd.parquet"
    lance_dir = d / "lineitem.lance"
    if not raw.exists():
        cli = shutil.which("tpchgen-cli", path=str(Path(sys.executable).parent)) or shutil.which("tpchgen-cli")
        if not cli:
            sys.exit("tpchgen-cli not found (pip install -r requirements.txt)")
        print(f"generating lineitem at SF {sf:g} into {d} ...", file=sys.stderr)
        subprocess.run([cli, "parquet", "-s", f"{sf:g}", "--tables=lineitem", f"--output-dir={d}"], check=True)
    table = None
    for path, options in [(vtx, "default"), (compact, "compact")]:
        if path.exists():
            continue
        import vortex as vx

        table = table if table is not None else pq.read_table(raw)
        print(f"writing {path.name} with vortex-data's {options} options ...", file=sys.stderr)
        tmp = path.with_suffix(".tmp")
        getattr(vx.io.VortexWriteOptions, options)().write(table, str(tmp))
        tmp.rename(path)
    plain = None
    for path, opts in [(zstd, {}), (tuned, {"row_group_size": rg_rows, "write_page_index": True})]:
        if path.exists():
            continue
        if plain is None:
            table = table if table is not None else pq.read_table(raw)
            # tpchgen-cli's string views as plain strings: pyarrow 21 cannot `take` views.
            plain = table.cast(pa.schema([f.with_type(pa.string() if f.type == pa.string_view() else f.type)
                                          for f in table.schema]))
        print(f"writing {path.name} with pyarrow (zstd{', ' if opts else ''}"
              f"{', '.join(f'{k}={v}' for k, v in opts.items())}) ...", file=sys.stderr)
        tmp = path.with_suffix(".tmp")
        pq.write_table(plain, str(tmp), compression="zstd", **opts)
        tmp.rename(path)
    if not lance_dir.exists():
        import lance

        table = table if table is not None else pq.read_table(raw)
        print(f"writing {lance_dir.name} with pylance's defaults ...", file=sys.stderr)
        tmp = lance_dir.with_suffix(".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        lance.write_dataset(table, str(tmp))
        tmp.rename(lance_dir)
    return {"raw": raw, "vortex": vtx, "vortex-compact": compact, "parquet": zstd, "parquet-ra": tuned,
            "lance": lance_dir}


def disk_bytes(path: Path) -> int:
    """Bytes on disk of a file, or of every file under a directory (a Lance dataset)."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.is_dir() else path.stat().st_size


def warm(paths) -> None:
    """Reads every file once (each file of a dataset directory), so that all contenders start on
    the same warm page cache."""
    for p in paths.values():
        for file in (sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]):
            with open(file, "rb", buffering=0) as f:
                while f.read(16 << 20):
                    pass


def onecopy_cli() -> Path | None:
    for build in sorted(ROOT.glob("build*")):
        p = build / "client" / "onecopy"
        if p.exists():
            return p
    return None


def onecopy_explain_bytes(path: Path) -> int | None:
    """"bytes read" from `onecopy scan --explain` (None when the CLI lacks --explain)."""
    cli = onecopy_cli()
    if cli is None:
        return None
    r = subprocess.run([str(cli), "scan", str(path), "--filter", FILTER_SQL, "--columns", ",".join(PROJ),
                        "--explain"], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    for line in r.stdout.splitlines():
        if line.startswith("bytes read:"):
            return int(line.split(":")[1])
    return None


def matching_rows(table: pa.Table) -> np.ndarray:
    ship = table.column("l_shipdate")
    mask = pc.and_kleene(pc.greater_equal(ship, pa.scalar(LO)), pc.less_equal(ship, pa.scalar(HI)))
    return np.flatnonzero(np.asarray(mask.combine_chunks().fill_null(False)))


def matching_segment_bytes(path: Path, table: pa.Table, names: list[str]) -> tuple[int, int]:
    """(bytes of the data chunks holding matching rows, bytes of all data chunks) over
    l_shipdate and the projected columns, from the file's layout (`inspect`)."""
    sys.path.insert(0, str(ROOT / "python"))
    import onecopy

    rows = matching_rows(table)
    root = onecopy.open(path, daemon=False).inspect()["layout"]

    def seg_bytes(node) -> int:
        return sum(s["length"] for s in node["segments"]) + sum(seg_bytes(c) for c in node["children"])

    def data_chunks(node, start):
        """(row_begin, row_end, bytes) of each data chunk below node; zone tables skipped."""
        enc = node["encoding"]
        if enc == "vortex.zoned":
            yield from data_chunks(node["children"][0], start)
        elif enc == "vortex.chunked":
            at = start
            for c in node["children"]:
                yield from data_chunks(c, at)
                at += c["rows"]
        else:
            yield start, start + node["rows"], seg_bytes(node)

    hit = total = 0
    for col in ["l_shipdate", *PROJ]:
        for begin, end, nbytes in data_chunks(root["children"][names.index(col)], 0):
            total += nbytes
            i = np.searchsorted(rows, begin)
            if i < len(rows) and rows[i] < end:
                hit += nbytes
    return hit, total


def array_encodings(path: Path) -> dict[str, int]:
    """Array nodes by encoding over every data chunk of the file (zone tables skipped), most
    frequent first, from the file's layout (`inspect`)."""
    sys.path.insert(0, str(ROOT / "python"))
    import onecopy

    counts: dict[str, int] = {}

    def arrays(a):
        counts[a["encoding"]] = counts.get(a["encoding"], 0) + 1
        for c in a["children"]:
            arrays(c)

    def layouts(node):
        if "array" in node:
            arrays(node["array"])
        kids = node["children"][:1] if node["encoding"] == "vortex.zoned" else node["children"]
        for c in kids:
            layouts(c)

    layouts(onecopy.open(path, daemon=False).inspect()["layout"])
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


# ---------------------------------------------------------------------------------------------
# Children


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("ONECOPY_SCAN_DECODE_THREADS", None)  # the child sets its own
    lib = ROOT / "build" / "client" / "libonecopy.so"
    if "ONECOPY_LIBRARY" not in env and lib.exists():
        env["ONECOPY_LIBRARY"] = str(lib)
    return env


def run_child(args: list[str]) -> dict:
    r = subprocess.run([sys.executable, str(CHILD), *args], capture_output=True, text=True, env=child_env())
    if r.returncode != 0:
        sys.exit(f"child {' '.join(args[:6])} failed ({r.returncode}):\n{r.stderr[-4000:]}")
    lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
    return json.loads(lines[-1])


def check(system: str, measure: str, got: dict, expected: dict) -> None:
    """Every system must give pyarrow's answer before its time counts."""
    exp = expected[child_measure(measure)]
    for k, v in exp.items():
        g = got["check"].get(k)
        ok = math.isclose(g, v, rel_tol=1e-9, abs_tol=1e-6) if isinstance(v, float) else g == v
        if not ok:
            sys.exit(f"{system}, {measure}: {k} is {g if not isinstance(g, list) else g[:8]}, "
                     f"expected {v if not isinstance(v, list) else v[:8]}")


# ---------------------------------------------------------------------------------------------
# Output


def fmt_time(s: float | None) -> str:
    if s is None:
        return "n/a"
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    return f"{s * 1e3:.2f} ms" if s < 10 else f"{s:.1f} s"


def fmt_bytes(b) -> str:
    if b is None:
        return "n/a"
    if b >= 2**20:
        return f"{b / 2**20:.2f} MiB"
    return f"{b / 1024:.1f} KiB" if b >= 1024 else f"{b} B"


def ratio(x, y) -> str:
    return f"{x / y:.2f}x" if x is not None and y else "n/a"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sf", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3, help="timed runs in each child, after one warm-up (best of N)")
    ap.add_argument("--rounds", type=int, default=3, help="children per system, interleaved, per measurement")
    ap.add_argument("--threads", default=f"1,{os.cpu_count()}", help="comma-separated thread counts")
    ap.add_argument("--data-dir", type=Path, default=ROOT / "build" / "bench-data")
    ap.add_argument("--parquet-rg-rows", type=int, default=8192,
                    help="rows per row group of the Parquet written for random access")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--chart-dir", default=str(ROOT / "build" / "bench-format"),
                    help="directory of the PNGs, one per table ('' for none)")
    ap.add_argument("--json", default=str(ROOT / "build" / "bench-format.json"), help="raw results ('' for none)")
    a = ap.parse_args()
    threads = sorted({int(t) for t in a.threads.split(",")})
    rounds, repeat = max(a.rounds, 1), max(a.repeat, 1)

    # Before any timing, so that pip never runs beside a measurement.
    why = charts.ensure_lance()
    if why:
        sys.exit(f"Lance is a contender and {why}")
    if a.chart_dir:
        why = charts.ensure_matplotlib()
        if why:
            print(f"charts will be skipped: {why}", file=sys.stderr)

    paths = prepare(a.data_dir, a.sf, a.parquet_rg_rows)
    labels = {"onecopy": "onecopy", "vortex-data": "vortex-data", "parquet": "Parquet (pyarrow defaults)",
              "parquet-ra": f"Parquet (random access: {a.parquet_rg_rows}-row groups, page index)",
              "lance": "Lance (pylance defaults)"}
    short = {"onecopy": "onecopy", "vortex-data": "vortex-data", "parquet": "Parquet defaults",
             "parquet-ra": "Parquet RA", "lance": "Lance"}

    # Expected answers, from the tpchgen-cli file with pyarrow.
    names = pq.read_schema(paths["raw"]).names
    n = pq.ParquetFile(paths["raw"]).metadata.num_rows
    idx = np.random.default_rng(a.seed).integers(0, n, TAKE_ROWS)
    reference = pq.read_table(paths["raw"], columns=["l_shipdate", *PROJ])
    filtered = reference.take(pa.array(matching_rows(reference))).select(PROJ)
    taken = pq.read_table(paths["raw"], columns=["l_orderkey", "l_linenumber"]).take(pa.array(idx))
    exp_take = {"rows": TAKE_ROWS, "columns": len(names),
                **{c: taken.column(c).cast(pa.int64()).to_pylist() for c in ("l_orderkey", "l_linenumber")}}
    expected = {
        "full": {"rows": n, "columns": len(names)},
        "filtered": {"rows": filtered.num_rows, "columns": len(PROJ),
                     **{f"sum_{c}": pc.sum(filtered.column(c).cast(pa.float64())).as_py() or 0.0 for c in PROJ}},
        "open-take": exp_take, "take": exp_take,
    }
    hit, total = matching_segment_bytes(paths["vortex"], reference, names)
    del reference, filtered, taken
    explain = onecopy_explain_bytes(paths["vortex"])
    encodings = {f: array_encodings(paths[f]) for f in ("vortex", "vortex-compact")}
    warm(paths)

    # This machine's single-thread memcpy rate, in children of their own too.
    memcpy = [run_child(["--system", "memcpy", "--repeat", str(repeat)]) for _ in range(rounds)]
    memcpy_gbps = max(m["gbps"] for m in memcpy)

    results: list[dict] = []
    idx_arg = ",".join(map(str, idx.tolist()))
    for t in threads:
        for key, label in ALL_MEASURES:
            systems, measure = systems_of(key), child_measure(key)
            vortex = paths["vortex-compact" if key.startswith(COMPACT) else "vortex"]
            for r in range(rounds):
                order = systems[r % len(systems):] + systems[:r % len(systems)]
                for s in order:
                    print(f"[{t} thread{'s' if t > 1 else ''}] {label}: round {r + 1}/{rounds}, {s} ...",
                          file=sys.stderr)
                    parquet = paths["parquet-ra"] if s == "parquet-ra" else paths["parquet"]
                    got = run_child(["--system", s, "--measure", measure, "--threads", str(t), "--repeat", str(repeat),
                                     "--vortex", str(vortex), "--parquet", str(parquet), "--lance", str(paths["lance"]),
                                     "--idx", idx_arg])
                    check(s, key, got, expected)
                    got["key"], got["round"] = key, r
                    results.append(got)

    def children(key, t, s):
        return [c for c in results if c["key"] == key and c["threads"] == t and c["system"] == s]

    def best_child(key, t, s):
        return min(children(key, t, s), key=lambda c: c["best_s"])

    best = {(key, t, s): best_child(key, t, s)["best_s"]
            for key, _ in ALL_MEASURES for t in threads for s in systems_of(key)}

    method = (f"a process per contender (a fresh Python per system, measurement and thread count), interleaved "
              f"over {rounds} round{'s' if rounds > 1 else ''}; each child: 1 warm-up, then best of {repeat}; "
              f"a cell: the best of its {rounds} children; page cache warm; sink: a pyarrow.Table")
    title = f"TPC-H lineitem SF {a.sf:g}: {n} rows, {len(names)} columns"
    print(f"\n{title}; this machine: {os.cpu_count()} cores; threads {','.join(map(str, threads))} "
          f"(pyarrow set_cpu_count/set_io_thread_count + use_threads, vortex.set_worker_threads(n - 1), "
          f"ONECOPY_SCAN_DECODE_THREADS=n, LANCE_CPU_THREADS=LANCE_IO_THREADS=n)\n")

    print(f"Time. How measured: {method}.\n")
    print("| measurement | threads | onecopy | vortex-data | Parquet (pyarrow defaults) | "
          "Parquet (random access) | Lance | onecopy / vortex-data | onecopy / Parquet defaults | "
          "onecopy / Parquet RA | onecopy / Lance | spread |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for key, label in ALL_MEASURES:
        for t in threads:
            o, v, p, q, ln = (best.get((key, t, s)) for s in SYSTEMS)
            spreads = {s: max(c["best_s"] for c in children(key, t, s)) / best[(key, t, s)] for s in systems_of(key)}
            worst = max(spreads, key=spreads.get)
            print(f"| {label} | {t} | {fmt_time(o)} | {fmt_time(v)} | {fmt_time(p)} | {fmt_time(q)} | {fmt_time(ln)} | "
                  f"{ratio(o, v)} | {ratio(o, p)} | {ratio(o, q)} | {ratio(o, ln)} | "
                  f"{spreads[worst]:.2f}x ({short[worst]}) |")
    print(f"\nRandom-access Parquet: {labels['parquet-ra']}; take there and in the defaults file reads the row "
          f"groups holding the rows (pyarrow 21 selects no pages by the page index). \"(compact file)\": the same "
          f"measurement by the same children on {paths['vortex-compact'].name}, written by vortex-data's compact "
          f"writer; only onecopy and vortex-data read it (n/a: not run).")

    print(f"\nFull scan throughput. Decoded bytes: the buffers of the pyarrow.Table each system returned "
          f"(get_total_buffer_size); GB = 1e9 B; per core: over the threads. How measured: {method}.")
    print(f"This machine's single-thread memcpy (numpy copy of 256 MiB into a touched array, best of "
          f"{max(repeat, 5)} in each of {rounds} processes): {memcpy_gbps:.2f} GB/s.\n")
    print("| threads | file | system | time | decoded bytes | GB/s | GB/s per core | per core / memcpy |")
    print("|---|---|---|---|---|---|---|---|")
    throughput = []  # (threads, file, system, GB/s per core), for the chart
    for t in threads:
        for key in ("full", COMPACT + "full"):
            for s in systems_of(key):
                c = best_child(key, t, s)
                gbps = c["out_bytes"] / c["best_s"] / 1e9
                throughput.append((t, "compact" if key.startswith(COMPACT) else "default", s, gbps / t))
                print(f"| {t} | {'compact' if key.startswith(COMPACT) else 'default'} | {short[s]} | "
                      f"{fmt_time(c['best_s'])} | {fmt_bytes(c['out_bytes'])} | {gbps:.2f} | {gbps / t:.2f} | "
                      f"{gbps / t / memcpy_gbps:.2f}x |")

    print(f"\nBytes. rchar (read(2)/pread(2) bytes, page-cache hits included; not io_uring or mmap) during the "
          f"fastest run of the fastest child. How measured: {method}.\n")
    print("| measurement | threads | onecopy | vortex-data | Parquet (pyarrow defaults) | Parquet (random access) "
          "| Lance |")
    print("|---|---|---|---|---|---|---|")
    for key, label in ALL_MEASURES:
        for t in threads:
            cells = " | ".join(fmt_bytes(best_child(key, t, s)["rchar"]) if s in systems_of(key) else "n/a"
                               for s in SYSTEMS)
            print(f"| {label} (rchar) | {t} | {cells} |")
    print(f"| filtered scan (onecopy scan --explain, bytes read) | - | {fmt_bytes(explain)} | | | | |")
    print(f"| segments holding matching rows ({', '.join(['l_shipdate', *PROJ])}) | - | {fmt_bytes(hit)} "
          f"of {fmt_bytes(total)} | | | | |")
    size = {s: disk_bytes(paths[{"onecopy": "vortex", "vortex-data": "vortex"}.get(s, s)]) for s in SYSTEMS}
    print(f"| file size | - | {fmt_bytes(size['onecopy'])} | {fmt_bytes(size['vortex-data'])} (same file) | "
          f"{fmt_bytes(size['parquet'])} | {fmt_bytes(size['parquet-ra'])} | {fmt_bytes(size['lance'])} |")

    files = [("vortex-compact", "Vortex, vortex-data compact writer"), ("vortex", "Vortex, vortex-data defaults"),
             ("parquet", "Parquet (pyarrow defaults, zstd)"), ("parquet-ra", "Parquet (random access, zstd)"),
             ("lance", "Lance (pylance defaults, all files of the dataset)")]
    nbytes = {f: disk_bytes(paths[f]) for f, _ in files}
    print("\nFile sizes (bytes on disk, MiB = 2^20 B).\n")
    print("| file | size | / Vortex defaults | / Parquet defaults | / Parquet RA | array encodings (nodes, top 6) |")
    print("|---|---|---|---|---|---|")
    for f, label in files:
        enc = ", ".join(f"{e} {k}" for e, k in list(encodings[f].items())[:6]) if f in encodings else ""
        print(f"| {label} ({paths[f].name}) | {fmt_bytes(nbytes[f])} | {ratio(nbytes[f], nbytes['vortex'])} | "
              f"{ratio(nbytes[f], nbytes['parquet'])} | {ratio(nbytes[f], nbytes['parquet-ra'])} | {enc} |")

    print("\nTargets (issues 17 and 41), as measured in the tables above:")

    def thr(t):
        return f"{t} thread{'s' if t > 1 else ''}"

    for t in threads:
        o, v = best[("full", t, "onecopy")], best[("full", t, "vortex-data")]
        print(f"- full scan <= 0.8x vortex-data ({thr(t)}): {fmt_time(o)} vs {fmt_time(v)} = {o / v:.2f}x: "
              f"{'met' if o <= 0.8 * v else 'NOT met'}")
        ln = best[("full", t, "lance")]
        print(f"- full scan <= 0.5x Lance ({thr(t)}): {fmt_time(o)} vs {fmt_time(ln)} = {o / ln:.2f}x: "
              f"{'met' if o <= 0.5 * ln else 'NOT met'}")
    for t in threads:
        o, v, ln = (best[("filtered", t, s)] for s in ("onecopy", "vortex-data", "lance"))
        print(f"- filtered scan <= 1.0x vortex-data ({thr(t)}): {fmt_time(o)} vs {fmt_time(v)} = {o / v:.2f}x: "
              f"{'met' if o <= v else 'NOT met'}")
        print(f"- filtered scan <= 1.0x Lance ({thr(t)}): {fmt_time(o)} vs {fmt_time(ln)} = {o / ln:.2f}x: "
              f"{'met' if o <= ln else 'NOT met'}")
    for t in threads:
        o, v, ln = (best[("take", t, s)] for s in ("onecopy", "vortex-data", "lance"))
        p, q = best[("take", t, "parquet")], best[("take", t, "parquet-ra")]
        print(f"- take {TAKE_ROWS} rows, open file, <= 1.0x vortex-data ({thr(t)}): {fmt_time(o)} vs {fmt_time(v)} = "
              f"{o / v:.2f}x: {'met' if o <= v else 'NOT met'}")
        print(f"- take {TAKE_ROWS} rows, open file, <= 1.0x Lance ({thr(t)}): {fmt_time(o)} vs {fmt_time(ln)} = "
              f"{o / ln:.2f}x: {'met' if o <= ln else 'NOT met'}")
        print(f"- take {TAKE_ROWS} rows, open file, >= 100x faster than Parquet with pyarrow's defaults ({thr(t)}): "
              f"{p / o:.0f}x: {'met' if p >= 100 * o else 'NOT met'}; against the random-access Parquet: "
              f"{q / o:.1f}x (reported)")
        oo, po, qo = (best[("open-take", t, s)] for s in ("onecopy", "parquet", "parquet-ra"))
        print(f"  (open+take, reported: {po / oo:.0f}x faster than Parquet defaults, {qo / oo:.1f}x than the "
              f"random-access Parquet, {oo / best[('open-take', t, 'vortex-data')]:.2f}x vortex-data's time, "
              f"{oo / best[('open-take', t, 'lance')]:.2f}x Lance's)")
    # rchar cannot serve here: onecopy reads through io_uring, which rchar does not count.
    if explain is None:
        print("- filtered scan reads <= 1.2x the segments holding matching rows: not measured "
              "(this onecopy CLI has no `scan --explain`)")
    elif hit:
        print(f"- filtered scan reads <= 1.2x the segments holding matching rows: {fmt_bytes(explain)} / "
              f"{fmt_bytes(hit)} = {explain / hit:.2f}x: {'met' if explain <= 1.2 * hit else 'NOT met'}")
    else:
        print("- filtered scan: no rows match (n/a)")
    for t in threads:
        for s in ("onecopy", "vortex-data", "lance"):
            c = best_child("full", t, s)
            per_core = c["out_bytes"] / c["best_s"] / 1e9 / t
            print(f"- decoded GB/s per core, {short[s]} full scan ({thr(t)}): {per_core:.2f}, {per_core / memcpy_gbps:.2f}x "
                  f"this machine's single-thread memcpy ({memcpy_gbps:.2f} GB/s) (reported)")

    print("\nCompact-written file (no target; reported), onecopy / vortex-data on the same file:")
    for key, label in COMPACT_MEASURES:
        for t in threads:
            o, v = best[(key, t, "onecopy")], best[(key, t, "vortex-data")]
            d = best[(child_measure(key), t, "onecopy")]
            print(f"- {label} ({thr(t)}): {fmt_time(o)} vs {fmt_time(v)} = {o / v:.2f}x; onecopy on the compact "
                  f"file / on the default file: {o / d:.2f}x")

    if a.json:
        out = Path(a.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"sf": a.sf, "rows": n, "threads": threads, "rounds": rounds, "repeat": repeat,
                                   "parquet_rg_rows": a.parquet_rg_rows, "cores": os.cpu_count(),
                                   "memcpy": memcpy, "memcpy_gbps": memcpy_gbps, "method": method,
                                   "files": {k: str(p) for k, p in paths.items()}, "file_bytes": nbytes,
                                   "encodings": encodings, "children": results}, indent=1))
        print(f"\nraw results: {out}")
    if a.chart_dir:
        rchar = {(c["key"], c["threads"], c["system"]): best_child(c["key"], c["threads"], c["system"])["rchar"]
                 for c in results}
        names_colors = {"vortex-compact": ("Vortex, compact writer", "vortex-data"),
                        "vortex": ("Vortex, defaults", "vortex-data"), "parquet": ("Parquet defaults", "parquet"),
                        "parquet-ra": ("Parquet RA", "parquet-ra"), "lance": ("Lance defaults", "lance")}
        sizes = [(*names_colors[f], nbytes[f]) for f, _ in files]
        for line in format_chart.draw(Path(a.chart_dir), best, systems_of,
                                      {**labels, "parquet-ra": "Parquet (random access)"}, ALL_MEASURES, threads,
                                      throughput, memcpy_gbps, rchar, sizes, f"{title}; {labels['parquet-ra']}", method):
            print(line)
    else:
        print("charts: not drawn (--chart-dir '')")


if __name__ == "__main__":
    main()
