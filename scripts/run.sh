#!/usr/bin/env bash
# The main job: scan a Vortex dataset with onecopy. With no argument it scans the embedded
# default, a sample token dataset that it writes with vortex-data on first use.
#
#   scripts/run.sh [FILE.vortex] [onecopy scan options...]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ROOT/scripts/bootstrap.sh"

file=${1:-}
if [ -z "$file" ]; then
  file=$ROOT/scripts/.sample/tokens.vortex
  if [ ! -f "$file" ]; then
    mkdir -p "$(dirname "$file")"
    echo "writing the sample dataset $file with vortex-data" >&2
    "$VENV/bin/python" "$ROOT/scripts/make_sample.py" "$file"
  fi
else
  shift
fi
onecopy=$BUILD_DIR/client/onecopy

echo "== onecopy inspect (summary)"
"$onecopy" inspect "$file" | sed -n '1,/^layout:/p' | sed '$d'
echo
echo "== first rows: onecopy scan --limit 3 --format jsonl ${*:-}"
"$onecopy" scan "$file" --limit 3 --format jsonl "$@" | cut -c1-240
echo
echo "== full scan into pyarrow through the Arrow C stream (zero-copy), vs vortex-data itself"
"$VENV/bin/python" - "$file" <<'PY'
import sys, time
import pyarrow as pa, pyarrow.compute as pc
import onecopy, vortex as vx

path = sys.argv[1]
t0 = time.perf_counter(); ours = pa.table(onecopy.open(path).scan()); t1 = time.perf_counter()
theirs = vx.open(path).to_arrow().read_all(); t2 = time.perf_counter()
same = all(ours.column(n).combine_chunks().equals(theirs.column(n).combine_chunks().cast(ours.schema.field(n).type))
           for n in ours.column_names)
print(f"rows {ours.num_rows:,}  columns {ours.num_columns}  decoded {ours.nbytes / 2**20:.1f} MiB")
print(f"onecopy     {t1 - t0:6.3f} s  ({ours.nbytes / 2**30 / (t1 - t0):.2f} GiB/s decoded)")
print(f"vortex-data {t2 - t1:6.3f} s  ({ours.nbytes / 2**30 / (t2 - t1):.2f} GiB/s decoded)")
print(f"ratio onecopy/vortex-data time: {(t1 - t0) / (t2 - t1):.2f}  identical results: {same}")
for name in [n for n in ours.column_names if pa.types.is_integer(ours.schema.field(n).type)][:3]:
    print(f"sum({name}) = {pc.sum(ours.column(name)).as_py()}")
PY
