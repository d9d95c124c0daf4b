#!/usr/bin/env bash
# bench_daemon.sh: the same scan through onecopyd and in-process, from a local directory and
# from the local S3 server, with a consumer that reads every decoded byte.
#
#   scripts/bench_daemon.sh [--gb 1] [--repeat 3] [--server moto|ceph] [--seed 0]
#
# Data: token sequences (list<int32>), a label (int64) and a quality (float64), --gb GB decoded
# (1 GB = 1e9 bytes), written by vortex-data as 8+ shards of at most 256 MB decoded
# (scripts/bench/tokens_data.py) into scripts/.bench/daemon-data (kept and reused) and uploaded
# to the S3 server (moto by default: tests/servers/moto.sh; `--server ceph` for Ceph RGW,
# tests/servers/ceph.sh, faster for data). Both are started here and stopped at the end, as is
# the onecopyd this script starts on a temporary socket; the daemon and the in-process library
# read s3:// with the same AWS_* environment (AWS_ENDPOINT_URL = the server).
#
# For each source, onecopyd (onecopy.Client.scan) and in-process (onecopy.open(uri).scan()):
# GB/s of decoded bytes, CPU s/GB of every onecopy process (the benchmark process and
# onecopyd), the S3 server's CPU s/GB apart, time to first batch, and copies per byte from
# `onecopy status --json`; a Markdown table with daemon/in-process ratios (details in
# scripts/bench/daemon_bench.py).
#
# Env: ONECOPY_BUILD_DIR (default build/, built by scripts/bootstrap.sh when missing),
#      ONECOPY_VENV, BENCH_KEEP_SERVER=1 (leave the S3 server running).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SERVER_NAME=bench_daemon
GB=1 REPEAT=3 SERVER=moto SEED=0
while [ $# -gt 0 ]; do
  case $1 in
    --gb) GB=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --server) SERVER=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
done
REPRODUCE="scripts/bench_daemon.sh --gb $GB --repeat $REPEAT --server $SERVER --seed $SEED"

# shellcheck source=scripts/bench/bench_env.sh
source "$ROOT/scripts/bench/bench_env.sh"
trap bench_cleanup EXIT
bench_build

BENCH=$ROOT/scripts/.bench
# memstore keeps every object in OSD memory: room for the data twice over.
bench_server "$SERVER" "$BENCH/daemon-$SERVER" "$(awk -v g="$GB" 'BEGIN { printf "%d", (g * 2 + 2) * 2^30 }')"
bench_daemon_start s3://bench/  # the benchmark bucket (--bucket bench)

"$PY" "$ROOT/scripts/bench/daemon_bench.py" run --socket "$ONECOPY_SOCKET" --daemon-pid "$DAEMON_PID" \
  --server-pids "$SERVER_PIDS" --server "$SERVER" --onecopy "$ONECOPY_CLI" --data "$BENCH/daemon-data" \
  --gb "$GB" --seed "$SEED" --repeat "$REPEAT" --reproduce "$REPRODUCE"
