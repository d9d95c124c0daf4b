#!/usr/bin/env bash
# bench_e2e.sh: feeds a PyTorch training loop from the local S3 server with the same data in
# each system's own format: onecopy (onecopyd, CPU path, onecopy.torch.Dataset), vortex-data
# scanned in the training process, WebDataset tar shards, MosaicML Streaming MDS shards and a
# Lance dataset read by lance.torch's LanceDataset; then times `onecopy convert` against each
# peer's own writer from one Parquet source.
#
#   scripts/bench_e2e.sh [--gb 2] [--workers 2] [--shuffle group] [--batch-size 256]
#                        [--repeat 1] [--server ceph|moto] [--systems onecopy,vortex,wds,mds,lance]
#                        [--seed 0] [--chart-dir scripts/.bench/charts]
#
# --workers and --shuffle take comma-separated lists (e.g. --workers 0,2 --shuffle group,none):
# every pair is a table of its own, every system in it with that DataLoader num_workers and that
# shuffle work, ratios against onecopy in the same run. --shuffle group: every system shuffles
# within the same number of rows, onecopy's shuffle group (8 units of 8192 rows, 65,536 rows):
# onecopy shuffles units across files and permutes rows within groups; the vortex-data leg does
# the same in the benchmark; WebDataset shuffles shard order and keeps a shuffle buffer of that
# many samples; MDS shuffles shard order and samples within blocks of about that many (py1br);
# Lance shuffles fragment order only (a fragment per shard; lance.torch has no row shuffle for a
# streamed dataset).
# --shuffle none: nobody shuffles. The exact shuffle of each is printed under its table.
#
# Data: token sequences (list<int32>) with a label (int64) and a quality (float64), --gb GB
# decoded (1e9 bytes), one seeded generator writing all formats and a Parquet source
# (scripts/bench/tokens_data.py) into scripts/.bench/e2e-data/gb<GB>-seed<SEED> (kept and
# reused), uploaded to the S3 server. The server is Ceph RGW by default (tests/servers/ceph.sh;
# memstore sized from --gb): moto keeps objects in Python and serves data slowly
# (shared/docs/test-servers.md); `--server moto` still works for small runs. The server and an
# onecopyd on a temporary socket are started here and stopped at the end.
#
# Every system feeds torch.utils.data.DataLoader with the same num_workers and batch size, and
# the loop sums every token. Reported: samples/s, GB/s, CPU s/GB of the training process, its
# workers and their children plus onecopyd, the S3 server's apart and in a total, and time to
# first batch; then, for the filter `quality > 0.8` (per --workers count, under the first
# --shuffle mode), the time to first batch again, where onecopy, vortex-data and Lance push the
# filter into their scans (and their filtered epoch is timed on) and WebDataset and MDS first
# rewrite their shards (rewrite time included). Last, the conversion from the Parquet source on local disk: onecopy convert,
# vx.io.write, wds.TarWriter, MDSWriter and lance.write_dataset, each a fresh process on the same
# CPUs: wall and CPU seconds, MB/s of source (scripts/bench/convert_bench.py). Markdown tables
# and the command to reproduce at the end (details in scripts/bench/e2e_bench.py); every table
# also as a chart (PNG) in --chart-dir ('' for none): e2e-epochs.png, e2e-filter.png,
# e2e-convert.png.
#
# Installs: apt python3-torch, python3-torchvision, curl; .venv as scripts/bootstrap.sh makes it
# (webdataset from requirements.txt; mosaicml-streaming and what it imports from
# requirements-nodeps.txt, with --no-deps: no CUDA torch); pylance and matplotlib from
# scripts/bench-format-requirements.txt, installed by e2e_bench.py when missing (pylance's torch
# extra is not installed: lance.torch.data runs with Debian's torch 1.13).
# Env: ONECOPY_BUILD_DIR (default build/, built by scripts/bootstrap.sh when missing),
#      ONECOPY_VENV, BENCH_KEEP_SERVER=1, TMPDIR (MDS caches and rewritten shards go there).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SERVER_NAME=bench_e2e
GB=2 WORKERS=2 SHUFFLE=group BATCH=256 REPEAT=1 SERVER=ceph SYSTEMS=onecopy,vortex,wds,mds,lance SEED=0
CHART_DIR=$ROOT/scripts/.bench/charts
while [ $# -gt 0 ]; do
  case $1 in
    --gb) GB=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    --shuffle) SHUFFLE=$2; shift 2 ;;
    --batch-size) BATCH=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --server) SERVER=$2; shift 2 ;;
    --systems) SYSTEMS=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --chart-dir) CHART_DIR=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
done
REPRODUCE="scripts/bench_e2e.sh --gb $GB --workers $WORKERS --shuffle $SHUFFLE --batch-size $BATCH"
REPRODUCE+=" --repeat $REPEAT"
REPRODUCE+=" --server $SERVER --systems $SYSTEMS --seed $SEED"

# shellcheck source=scripts/bench/bench_env.sh
source "$ROOT/scripts/bench/bench_env.sh"
trap bench_cleanup EXIT
bench_build
ensure_apt python3-torch python3-torchvision curl
"$PY" -c 'import numpy, torch, webdataset, streaming; assert numpy.__version__ < "2", numpy.__version__' ||
  { log "the baselines do not import with this torch/numpy"; exit 1; }

BENCH=$ROOT/scripts/.bench
DATA=$BENCH/e2e-data/gb$GB-seed$SEED  # one per size, so a small run keeps the big one
# Every format (the vortex files, tar and MDS shards, ~1.9x the decoded bytes for the tar
# shards) plus the filtered rewrites stays in OSD memory with memstore.
bench_server "$SERVER" "$BENCH/e2e-$SERVER" "$(awk -v g="$GB" 'BEGIN { printf "%d", (g * 5 + 2) * 2^30 }')"
bench_daemon_start s3://bench/  # the benchmark bucket (--bucket bench)

"$PY" "$ROOT/scripts/bench/e2e_bench.py" run --socket "$ONECOPY_SOCKET" --daemon-pid "$DAEMON_PID" \
  --server-pids "$SERVER_PIDS" --server "$SERVER" --data "$DATA" --gb "$GB" --seed "$SEED" \
  --workers "$WORKERS" --shuffle "$SHUFFLE" --batch-size "$BATCH" --repeat "$REPEAT" --systems "$SYSTEMS" \
  --tmp-root "$BENCH_TMP" --chart-dir "$CHART_DIR"
"$PY" "$ROOT/scripts/bench/convert_bench.py" run --data "$DATA" --gb "$GB" --seed "$SEED" \
  --systems "$SYSTEMS" --repeat "$REPEAT" --onecopy-cli "$ONECOPY_CLI" --tmp-root "$BENCH_TMP" \
  --chart-dir "$CHART_DIR"
printf '\nReproduce: %s\n' "$REPRODUCE"
