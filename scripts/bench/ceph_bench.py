# SPDX-License-Identifier: Apache-2.0
"""The measurements of scripts/bench_ceph.sh (see there for what and why):

    ceph_bench.py run --state DIR --osds N --sf SF --files F --column C --repeat R
                      --onecopy CLI --out results.json
    ceph_bench.py report results.json ...

`run` prepares the split lineitem files (kept), stores them in the pool `onecopy` and in the
bucket `bench` of the cluster whose ceph.sh state is --state, then times the same scan three
ways at four selectivities and appends one JSON object per (way, selectivity) to --out.
`report` prints the Markdown tables, ratios against the client-side librados baseline.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
POOL = "onecopy"
BUCKET = "bench"
PROJECTION = "l_extendedprice,l_discount"
TARGETS = [1.0, 0.1, 0.01, 0.001]
# RADOS objects stay under `osd max object size` (128 MiB in tests/servers/ceph.sh) and radosgw
# single-PUT windows: every file must fit one object.
MAX_FILE_BYTES = 64 << 20
WAYS = {
    "a": "pushdown (rados, class onecopy)",
    "b": "client-side (rados, ONECOPY_RADOS_PUSHDOWN=off)",
    "c": "client-side (RGW, s3://)",
}


# ---------------------------------------------------------------------------------------------
# Data


def lineitem_parquet(sf: float) -> Path:
    """TPC-H lineitem from tpchgen-cli, where scripts/bench_format.py keeps it (shared)."""
    d = ROOT / "build" / "bench-data" / f"sf{sf:g}"
    path = d / "lineitem.parquet"
    if not path.exists():
        d.mkdir(parents=True, exist_ok=True)
        cli = shutil.which("tpchgen-cli", path=str(Path(sys.executable).parent)) or shutil.which("tpchgen-cli")
        if not cli:
            sys.exit("tpchgen-cli not found (pip install -r requirements.txt)")
        print(f"generating lineitem at SF {sf:g} into {d} ...", file=sys.stderr)
        subprocess.run([cli, "parquet", "-s", f"{sf:g}", "--tables=lineitem", f"--output-dir={d}"], check=True)
    return path


def split_files(sf: float, files: int):
    """lineitem cut into `files` Vortex files of consecutive rows (vortex-data's default
    writer), in scripts/.bench/ceph-data/sf<SF>-<files>; kept and reused."""
    import pyarrow.parquet as pq

    table = pq.read_table(lineitem_parquet(sf))
    d = ROOT / "scripts" / ".bench" / "ceph-data" / f"sf{sf:g}-{files}"
    d.mkdir(parents=True, exist_ok=True)
    per = math.ceil(table.num_rows / files)
    for i in range(files):
        path = d / f"part-{i:03d}.vortex"
        if not path.exists():
            import vortex as vx

            tmp = path.with_suffix(".tmp")
            vx.io.VortexWriteOptions.default().write(table.slice(i * per, per), str(tmp))
            tmp.rename(path)
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            sys.exit(f"{path} has {size} bytes, over {MAX_FILE_BYTES}: use more --files")
    return d, table


def predicates(table, column: str) -> list[dict]:
    """A filter per target selectivity, `column <= v` with v the value at that rank (ties make
    the count exact but the selectivity a little higher), `column >= min` for 100%; each with
    its exact row count."""
    import numpy as np

    values = table.column(column).to_numpy()
    ordered = np.sort(values)
    n = len(values)
    out = []
    for target in TARGETS:
        if target == 1.0:
            expr, count = f"{column} >= {ordered[0]}", n
        else:
            v = ordered[max(1, round(target * n)) - 1]
            expr, count = f"{column} <= {v}", int(np.count_nonzero(values <= v))
        out.append({"target": target, "filter": expr, "rows": count, "selectivity": count / n})
    return out


def store(parts: Path, prefix: str) -> list[str]:
    """The files as RADOS objects `prefix/NAME` in pool onecopy (rewritten unless the same size
    is there) and as S3 objects in bucket `bench`."""
    import rados  # Debian's python3-rados, with ceph-common

    names = []
    c = rados.Rados(conffile=os.environ["CEPH_CONF"])
    c.connect(timeout=10)
    try:
        with c.open_ioctx(POOL) as io:
            for p in sorted(parts.glob("*.vortex")):
                name = f"{prefix}/{p.name}"
                try:
                    have = io.stat(name)[0]
                except rados.ObjectNotFound:
                    have = None
                if have != p.stat().st_size:
                    io.write_full(name, p.read_bytes())
                names.append(name)
        # CRUSH places 8 PGs unevenly: say how many objects each OSD serves.
        spread: dict[int, int] = {}
        for name in names:
            ret, out, err = c.mon_command(json.dumps({"prefix": "osd map", "pool": POOL, "object": name,
                                                      "format": "json"}), b"", timeout=10)
            assert ret == 0, err
            primary = json.loads(out)["acting_primary"]
            spread[primary] = spread.get(primary, 0) + 1
        print("objects per OSD: " + ", ".join(f"osd.{k} {v}" for k, v in sorted(spread.items())),
              file=sys.stderr)
    finally:
        c.shutdown()
    s3 = benchlib.s3_client()
    benchlib.ensure_bucket(s3, BUCKET)
    benchlib.upload_dir(s3, parts, BUCKET, prefix)
    return names


# ---------------------------------------------------------------------------------------------
# Counters


def asok(path: Path, prefix: str = "perf dump") -> dict:
    """A command to a Ceph daemon's admin socket: the JSON command and a NUL out, a 4-byte
    big-endian length and that many bytes of JSON back."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(str(path))
        s.sendall(json.dumps({"prefix": prefix}).encode() + b"\0")
        head = s.recv(4, socket.MSG_WAITALL)
        (n,) = struct.unpack(">I", head)
        buf = bytearray()
        while len(buf) < n:
            chunk = s.recv(n - len(buf))
            if not chunk:
                raise OSError(f"{path}: short answer")
            buf += chunk
    return json.loads(buf)


def pid_of(state: Path, name: str) -> int:
    return int((state / "run" / f"{name}.pid").read_text())


def counters(state: Path, osds: int) -> dict:
    """osd op_out_bytes (reply data of client ops, class call results included: exact, unlike
    the messengers' msgr_send_bytes, which are published late) summed over the OSDs, RGW's
    get_b (object bytes it served over HTTP), and the daemons' CPU seconds."""
    out = 0
    for n in range(osds):
        out += asok(state / "run" / f"osd.{n}.asok")["osd"]["op_out_bytes"]
    rgw = asok(state / "run" / "client.rgw.gw.asok")["rgw"]["get_b"]
    return {"osd_out": out, "rgw_get": rgw,
            "osd_cpu": benchlib.procs_cpu(pid_of(state, f"osd.{n}") for n in range(osds)),
            "rgw_cpu": benchlib.proc_cpu(pid_of(state, "rgw"))}


# ---------------------------------------------------------------------------------------------
# Runs


def output_mode(cli: str) -> list[str]:
    """`--format count` where the CLI has it, else `--explain` (no rows printed, the count in
    its "rows delivered:" line)."""
    usage = subprocess.run([cli, "scan"], capture_output=True, text=True).stderr
    return ["--format", "count"] if re.search(r"--format [^\n]*count", usage) else ["--explain"]


def rows_of(stdout: str, mode: list[str]) -> int | None:
    if mode == ["--explain"]:
        m = re.search(r"^rows delivered: (\d+)$", stdout, re.M)
        return int(m.group(1)) if m else None
    return int(stdout.split()[-1]) if stdout.strip().isdigit() else None


def children_cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_once(cmd: list[str], env: dict, mode: list[str]) -> dict:
    """One CLI process: wall seconds, its CPU seconds (this process waits for no other child
    meanwhile), the rows it reports."""
    c0, t0 = children_cpu(), time.perf_counter()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    return {"rc": p.returncode, "wall": time.perf_counter() - t0, "cpu": children_cpu() - c0,
            "rows": rows_of(p.stdout, mode), "err": p.stderr[-2000:]}


def run_query(urls: list[str], pred: dict, env: dict, cli: str, mode: list[str]) -> dict:
    """The query over every URL (one glob URL, or each file in turn): summed wall, client CPU and
    rows."""
    total = {"rc": 0, "wall": 0.0, "cpu": 0.0, "rows": 0, "err": ""}
    for url in urls:
        r = run_once([cli, "scan", url, "--columns", PROJECTION, "--filter", pred["filter"], *mode], env, mode)
        total["wall"] += r["wall"]
        total["cpu"] += r["cpu"]
        total["rc"] = total["rc"] or r["rc"]
        total["err"] = total["err"] or r["err"]
        total["rows"] = None if r["rows"] is None or total["rows"] is None else total["rows"] + r["rows"]
    return total


def measure(a) -> None:
    state = Path(a.state)
    parts, table = split_files(a.sf, a.files)
    preds = predicates(table, a.column)
    prefix = f"lineitem-sf{a.sf:g}-{a.files}"
    names = store(parts, prefix)
    mode = output_mode(a.onecopy)
    base = {k: v for k, v in os.environ.items() if not k.startswith("ONECOPY_RADOS_")}
    base["AWS_ENDPOINT_URL"] = os.environ["S3_ENDPOINT"]
    envs = {"a": base, "b": dict(base, ONECOPY_RADOS_PUSHDOWN="off"), "c": base}
    globs = {"a": [f"rados://{POOL}/{prefix}/*"], "b": [f"rados://{POOL}/{prefix}/*"],
             "c": [f"s3://{BUCKET}/{prefix}/*"]}
    per_file = {"a": [f"rados://{POOL}/{n}" for n in names], "b": [f"rados://{POOL}/{n}" for n in names],
                "c": [f"s3://{BUCKET}/{n}" for n in names]}
    # A glob where the CLI takes one (checked on the most selective filter: it must count right),
    # else one process per file, the same for every way.
    probe = run_query(globs["c"], preds[-1], envs["c"], a.onecopy, mode)
    urls = globs if probe["rc"] == 0 and probe["rows"] == preds[-1]["rows"] else per_file
    how = "one glob URL" if urls is globs else f"{len(names)} processes, one per file"
    print(f"[{a.osds} OSD(s)] {len(names)} files of {table.num_rows} rows, output {' '.join(mode)}, "
          f"{how}", file=sys.stderr)
    for p in preds:
        print(f"  {p['filter']}: {p['rows']} rows, selectivity {100 * p['selectivity']:.4f}%", file=sys.stderr)
    results = []
    for way in WAYS:
        run_query(urls[way], preds[-1], envs[way], a.onecopy, mode)  # warm-up, untimed
        for p in preds:
            runs = []
            for _ in range(a.repeat):
                before = counters(state, a.osds)
                r = run_query(urls[way], p, envs[way], a.onecopy, mode)
                after = counters(state, a.osds)
                r.update({k: after[k] - before[k] for k in after})
                runs.append(r)
            ok = all(r["rc"] == 0 and r["rows"] == p["rows"] for r in runs)
            bad = next((r for r in runs if not (r["rc"] == 0 and r["rows"] == p["rows"])), None)
            row = {"osds": a.osds, "way": way, "sf": a.sf, "files": len(names), "how": how,
                   "output": " ".join(mode), **p, "ok": ok,
                   "got_rows": bad["rows"] if bad else p["rows"], "error": bad["err"].strip() if bad else "",
                   **{k: benchlib.median([r[k] for r in runs])
                      for k in ("wall", "cpu", "osd_out", "rgw_get", "osd_cpu", "rgw_cpu")}}
            results.append(row)
            print(f"  ({way}) {p['target'] * 100:g}%: {row['wall']:.3f} s, client CPU {row['cpu']:.3f} s, "
                  f"OSD out {row['osd_out'] / 1e6:.2f} MB, RGW get {row['rgw_get'] / 1e6:.2f} MB"
                  + ("" if ok else f"  WRONG: rows {row['got_rows']}, {row['error'][-300:]}"), file=sys.stderr)
    with open(a.out, "a") as f:
        for r in results:
            f.write(json.dumps(r) + "\n")


# ---------------------------------------------------------------------------------------------
# Report


def report(a) -> int:
    rows = [json.loads(line) for path in a.results for line in Path(path).read_text().splitlines() if line]
    if not rows:
        print("no results", file=sys.stderr)
        return 1
    base = {(r["osds"], r["target"]): r for r in rows if r["way"] == "b"}
    mb = lambda x: benchlib.fmt(x / 1e6, ".2f")  # noqa: E731
    def to_client(r):
        return r["rgw_get"] if r["way"] == "c" else r["osd_out"]
    out = []
    for r in rows:
        b = base.get((r["osds"], r["target"]))
        b = b if b and b["ok"] and r["ok"] else None  # no ratio to or from a wrong answer
        out.append([str(r["osds"]), f"{100 * r['selectivity']:.3g}%", f"({r['way']}) {WAYS[r['way']]}",
                    str(r["rows"]) if r["ok"] else f"WRONG {r['got_rows']}",
                    benchlib.fmt(r["wall"]), benchlib.fmt(r["cpu"]), benchlib.fmt(r["osd_cpu"], ".2f"),
                    benchlib.fmt(r["rgw_cpu"], ".2f"), mb(r["osd_out"]), mb(r["rgw_get"]),
                    benchlib.ratio(r["wall"], b and b["wall"]), benchlib.ratio(r["cpu"], b and b["cpu"]),
                    benchlib.ratio(to_client(r), b and to_client(b))])
    first = rows[0]
    print(f"\nTPC-H lineitem SF {first['sf']:g}, {first['files']} Vortex files (one RADOS object each), "
          f"scan --columns {PROJECTION} with the filters below, output `{first['output']}`, "
          f"{first['how']}; medians of the repeats.\n")
    for p in {r["filter"]: r for r in rows}.values():
        print(f"- `{p['filter']}`: {p['rows']} rows ({100 * p['selectivity']:.4f}%)")
    print()
    print(benchlib.table(
        ["OSDs", "selectivity", "way", "rows", "wall s", "client CPU s", "OSD CPU s", "RGW CPU s",
         "OSD→client MB", "RGW→client MB", "wall vs (b)", "client CPU vs (b)", "bytes to client vs (b)"],
        out))
    print("\nOSD→client MB: the OSDs' `op_out_bytes` (reply data of client ops, class results "
          "included; for (c) the client is radosgw). RGW→client MB: radosgw's `get_b`. Bytes to the "
          "client: OSD→client for (a) and (b), RGW→client for (c).")
    return 0 if all(r["ok"] for r in rows) else 1


def main() -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--state", required=True)
    r.add_argument("--osds", type=int, required=True)
    r.add_argument("--sf", type=float, default=0.1)
    r.add_argument("--files", type=int, default=16)
    r.add_argument("--column", default="l_partkey")
    r.add_argument("--repeat", type=int, default=3)
    r.add_argument("--onecopy", required=True)
    r.add_argument("--out", required=True)
    p = sub.add_parser("report")
    p.add_argument("results", nargs="+")
    a = ap.parse_args()
    if a.cmd == "run":
        measure(a)
        return 0
    return report(a)


if __name__ == "__main__":
    sys.exit(main())
