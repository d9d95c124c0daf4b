# SPDX-License-Identifier: Apache-2.0
"""Conversion benchmark, the last part of scripts/bench_e2e.sh: `onecopy convert` against each
peer's own writer, from one Parquet source to each system's format, on local disk.

    convert_bench.py run --data DIR --gb 2 [--seed 0] [--systems onecopy,vortex,wds,mds,lance]
                         [--repeat 1] [--threads N] [--onecopy-cli build/client/onecopy]
                         [--tmp-root DIR] [--chart-dir DIR]
    convert_bench.py one --system vortex|wds|mds|lance --src DIR --out DIR --gb G    (JSON out)

Source: DIR/parquet, the Parquet files of scripts/bench/tokens_data.py (one per generator shard,
pyarrow's defaults: snappy), the same samples as the formats bench_e2e feeds from. Contenders:

  onecopy      `onecopy convert DIR/parquet --to OUT --no-progress` (the CLI runs python -m
               onecopy.convert: Parquet batches of 65,536 rows streamed into vortex-data's
               writer, a Vortex file per input here)
  vortex-data  vortex-data's own writer: per input, vx.io.write(pq.read_table(input), OUT/...)
  webdataset   webdataset's wds.TarWriter: per input, a tar of samples tokens.bin (raw int32)
               + meta.json (label, quality), the layout of bench_e2e's shards
  mds          MosaicML Streaming's MDSWriter (tokens ndarray:int32, label int64, quality
               float64), about one shard per input, as bench_e2e's MDS shards
  lance        pylance's writer with its defaults: per input, lance.write_dataset(pq.read_table(
               input), OUT, mode create then append), a fragment per input, as bench_e2e's dataset

The same work and state for each: a fresh process (interpreter start and imports included, as
when one runs the tool; the modules' files read once before, untimed), the source in the page
cache (read once before), an empty output directory under --tmp-root on local disk, written
without fsync; every contender pinned to the same --threads CPUs (sched_setaffinity, which its
children and threads inherit) with OMP_NUM_THREADS set to that number (the size of Arrow's CPU
pool). Reported, median of --repeat: wall seconds, CPU seconds (user + system of the process and
every child it waited for, getrusage RUSAGE_CHILDREN), MB/s of Parquet source bytes, output MB
and rows written; ratios against onecopy convert in the same run. --chart-dir: the table as a
chart, e2e-convert.png (scripts/bench/e2e_chart.py).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
import benchlib as bl  # noqa: E402
import e2e_chart  # noqa: E402

SYSTEMS = ["onecopy", "vortex", "wds", "mds", "lance"]
TOOLS = {"onecopy": "onecopy convert", "vortex": "vx.io.write", "wds": "wds.TarWriter", "mds": "MDSWriter",
         "lance": "lance.write_dataset"}
NAMES = {"onecopy": "onecopy", "vortex": "vortex-data", "wds": "WebDataset", "mds": "MosaicML Streaming (MDS)",
         "lance": "Lance"}
MODULES = {"onecopy": "onecopy.convert", "vortex": "vortex", "wds": "webdataset", "mds": "streaming",
           "lance": "lance"}


# --- the peers' writers, each in its own process ---------------------------------------------------

def sources(src: Path) -> list[Path]:
    return sorted(src.glob("*.parquet"))


def write_vortex(src: Path, out: Path, gb: float) -> int:
    import pyarrow.parquet as pq
    import vortex as vx

    rows = 0
    for p in sources(src):
        t = pq.read_table(p)
        vx.io.write(t, str(out / f"{p.stem}.vortex"))
        rows += t.num_rows
    return rows


def write_wds(src: Path, out: Path, gb: float) -> int:
    import pyarrow.parquet as pq
    import webdataset as wds

    from tokens_data import wds_samples

    rows = 0
    for p in sources(src):
        with wds.TarWriter(str(out / f"{p.stem}.tar")) as sink:
            for sample in wds_samples(pq.read_table(p)):
                sink.write({"__key__": f"{rows:012d}", **sample})
                rows += 1
    return rows


def write_mds(src: Path, out: Path, gb: float) -> int:
    import pyarrow.parquet as pq
    from streaming import MDSWriter

    from tokens_data import MDS_COLUMNS, mds_samples, mds_size_limit

    rows = 0
    with MDSWriter(out=str(out), columns=MDS_COLUMNS, size_limit=mds_size_limit(gb)) as sink:
        for p in sources(src):
            for sample in mds_samples(pq.read_table(p)):
                sink.write(sample)
                rows += 1
    return rows


def write_lance(src: Path, out: Path, gb: float) -> int:
    import pyarrow.parquet as pq

    from tokens_data import write_lance as write_fragment

    rows = 0
    for s, p in enumerate(sources(src)):
        t = pq.read_table(p)
        write_fragment(t, out / "tokens.lance", s)
        rows += t.num_rows
    return rows


WRITERS = {"vortex": write_vortex, "wds": write_wds, "mds": write_mds, "lance": write_lance}


# --- the driver ----------------------------------------------------------------------------------------

def log(msg: str) -> None:
    print(f"[bench_convert] {msg}", file=sys.stderr, flush=True)


def command(a, system: str, src: Path, out: Path) -> list[str]:
    if system == "onecopy":
        return [a.onecopy_cli, "convert", str(src), "--to", str(out), "--no-progress"]
    return [sys.executable, __file__, "one", "--system", system, "--src", str(src), "--out", str(out),
            "--gb", str(a.gb)]


def rows_written(system: str, out: Path, stdout: str) -> int:
    if system == "onecopy":  # its manifest counts every part's rows
        parts = json.loads((out / "_onecopy_convert.json").read_text())["parts"]
        return sum(p["rows"] for p in parts.values())
    return json.loads(stdout.strip().splitlines()[-1])["rows"]


def children_cpu() -> float:
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return c.ru_utime + c.ru_stime


def timed(a, system: str, src: Path) -> dict:
    """One conversion in a fresh process pinned to a.cpus; wall and CPU seconds, output bytes, rows."""
    out = Path(tempfile.mkdtemp(prefix=f"convert-{system}-", dir=a.tmp_root))
    env = {**os.environ, "OMP_NUM_THREADS": str(len(a.cpus)), "ONECOPY_PYTHON": sys.executable}
    cpu0, t0 = children_cpu(), time.perf_counter()
    p = subprocess.run(command(a, system, src, out), capture_output=True, text=True, env=env,
                       preexec_fn=lambda: os.sched_setaffinity(0, a.cpus))
    wall, cpu = time.perf_counter() - t0, children_cpu() - cpu0
    if p.returncode != 0:
        shutil.rmtree(out, ignore_errors=True)
        raise RuntimeError(f"{TOOLS[system]} failed ({p.returncode}): {p.stderr.strip()[-2000:]}")
    res = {"wall_s": wall, "cpu_s": cpu, "rows": rows_written(system, out, p.stdout),
           "out_bytes": sum(f.stat().st_size for f in out.rglob("*") if f.is_file())}
    shutil.rmtree(out, ignore_errors=True)
    return res


def warm(a, src: Path, systems: list[str]) -> None:
    """The source and every contender's modules into the page cache, so no one reads them cold."""
    for p in sources(src):
        with open(p, "rb") as f:
            while f.read(8 << 20):
                pass
    subprocess.run([sys.executable, "-c", "import " + ", ".join(["pyarrow.parquet", *(MODULES[s] for s in systems)])],
                   check=True)


def run(a) -> None:
    from tokens_data import ensure

    summary = ensure("parquet", a.data, a.gb, a.seed)
    src = a.data / "parquet"
    source_bytes = summary["stored_bytes"]
    a.cpus = sorted(os.sched_getaffinity(0))[:a.threads] if a.threads else sorted(os.sched_getaffinity(0))
    systems = [s for s in a.systems.split(",") if s]
    warm(a, src, systems)
    results: dict[str, list[dict]] = {s: [] for s in systems}
    notes = []
    for r in range(a.repeat):
        for s in systems:
            try:
                res = timed(a, s, src)
            except RuntimeError as e:
                log(str(e))
                notes.append(f"{NAMES[s]}, run {r + 1}: {str(e).splitlines()[-1]}")
                continue
            results[s].append(res)
            log(f"run {r + 1}/{a.repeat} {s}: {res['wall_s']:.2f} s wall, {res['cpu_s']:.2f} s CPU, "
                f"{res['rows']} rows")
    cells = report(a, systems, results, summary, source_bytes)
    if a.chart_dir and cells:
        print(e2e_chart.draw_convert(Path(a.chart_dir), cells, NAMES, TOOLS,
                                     f"bench_e2e conversion: {summary['rows']:,} samples, {source_bytes / 1e6:,.1f} MB "
                                     f"of Parquet, {len(a.cpus)} CPUs; median of {a.repeat}"))
    for n in notes:
        print(f"- {n}")


def report(a, systems, results, summary, source_bytes) -> dict:
    """Prints the conversion table; returns its cells, {system: {"wall", "cpu", "out", "rows"}}."""
    cells = {s: {"wall": bl.median(r["wall_s"] for r in rs), "cpu": bl.median(r["cpu_s"] for r in rs),
                 "out": bl.median(r["out_bytes"] for r in rs), "rows": rs[0]["rows"]}
             for s, rs in results.items() if rs}
    ref = cells.get("onecopy")
    print()
    print(f"### Conversion from Parquet, {len(a.cpus)} CPUs")
    print()
    print(f"{summary['rows']:,} samples, {summary['decoded_bytes'] / 1e9:.3f} GB decoded, in "
          f"{len(sources(a.data / 'parquet'))} Parquet files of {source_bytes / 1e6:,.1f} MB, converted on local disk "
          f"by each system's own tool; each a fresh process pinned to CPUs {','.join(map(str, a.cpus))} with "
          f"OMP_NUM_THREADS={len(a.cpus)}; source in the page cache, output not fsynced; median of {a.repeat}. "
          "CPU s: the process and its children." + (" Ratios: system / onecopy convert." if ref else ""))
    print()
    rows = []
    for s in systems:
        c = cells.get(s)
        if not c:
            rows.append([NAMES[s], TOOLS[s], "—", "—", "—", "—", "—", "—"])
            continue
        rows.append([NAMES[s], TOOLS[s], bl.fmt(c["wall"], ".2f"), bl.fmt(c["cpu"], ".2f"),
                     bl.fmt(source_bytes / 1e6 / c["wall"], ",.1f"), bl.fmt(c["out"] / 1e6, ",.1f"),
                     "yes" if c["rows"] == summary["rows"] else f"**{c['rows']}**",
                     f"{bl.ratio(c['wall'], ref['wall'])} / {bl.ratio(c['cpu'], ref['cpu'])}" if ref else "—"])
    print(bl.table(["system", "tool", "wall s", "CPU s", "source MB/s", "output MB", "all rows",
                    "wall, CPU vs onecopy"], rows))
    return cells


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("run")
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--gb", type=float, default=2.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--systems", default=",".join(SYSTEMS))
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--threads", type=int, default=0, help="CPUs every contender is pinned to (0: all of ours)")
    p.add_argument("--onecopy-cli", default=str(ROOT / "build" / "client" / "onecopy"))
    p.add_argument("--tmp-root", default=None)
    p.add_argument("--chart-dir", default="", help="directory of the chart's PNG ('' for none)")
    p = sub.add_parser("one")
    p.add_argument("--system", choices=sorted(WRITERS), required=True)
    p.add_argument("--src", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--gb", type=float, required=True)
    a = ap.parse_args()
    if a.cmd == "one":
        print(json.dumps({"rows": WRITERS[a.system](a.src, a.out, a.gb)}))
    else:
        run(a)


if __name__ == "__main__":
    main()
