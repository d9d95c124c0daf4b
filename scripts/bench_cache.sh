#!/usr/bin/env bash
# bench_cache.sh: what a second epoch and a second job cost in S3 requests, bytes and time
# (issue 39, "A node that remembers"): onecopy through onecopyd, MosaicML Streaming and
# vortex-data in-process, each reading the same small files through a counting proxy.
#
#   scripts/bench_cache.sh [--files 40,320,2560] [--rate 1e9] [--legs onecopy,streaming,vortex]
#                          [--seed 0]
#
# Data: for each N in --files, N Vortex files of 256 rows (about 32 KB: an int64 id, list<int32>
# tokens of 24 to 72, a float64 quality), written by vortex-data, and the same rows as N MDS
# shards (one per file) written by Streaming's MDSWriter; kept in scripts/.bench/cache-data/N
# and uploaded to moto (tests/servers/moto.sh) as s3://bench/cache-N/ and s3://bench/cache-N-mds/.
#
# Every S3 request of the legs goes through scripts/bench/count_proxy.py, in front of moto,
# which counts requests and bytes (per method and per LIST / ranged GET / GET / HEAD / PUT) and
# throttles the link to --rate bits/s (0: unthrottled). onecopyd is started here with
# AWS_ENDPOINT_URL = the proxy; Streaming gets it as S3_ENDPOINT_URL, vortex-data as its
# S3Store's endpoint. Legs (scripts/bench/cache_bench.py has the details): job A reads epoch 0
# and epoch 1 in one process, then job B (a new process) reads epoch 0; batches of 64 rows,
# DataLoader(num_workers=0), every sample touched. Before onecopy's leg, `onecopy index` writes
# the dataset's manifest where this build has that command (the leg is then "onecopy
# (manifest)"); otherwise the skip is said.
#
# Per leg and phase: requests and seconds before the first batch, S3 requests and MB of the whole
# phase, samples/s; a Markdown table, epoch-1 / epoch-0 and job-B / epoch-0 bytes per leg, and
# onecopy / Streaming samples/s. Results in scripts/.bench/cache-results.json, the chart in
# scripts/bench/figures/bench-cache.png (matplotlib, installed into the venv when missing). moto,
# the proxy and onecopyd are stopped at the end, on failure too.
#
# Env: ONECOPY_BUILD_DIR (default build/, built by scripts/bootstrap.sh when missing),
#      ONECOPY_VENV, BENCH_KEEP_SERVER=1 (leave moto running).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SERVER_NAME=bench_cache
FILES=40,320,2560 RATE=1e9 LEGS=onecopy,streaming,vortex SEED=0
while [ $# -gt 0 ]; do
  case $1 in
    --files) FILES=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --legs) LEGS=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
done
REPRODUCE="scripts/bench_cache.sh --files $FILES --rate $RATE --legs $LEGS --seed $SEED"

# The cache is what is measured: on, in memory (bench_env.sh turns it off for other benches).
export ONECOPY_CACHE_MEMORY_BYTES=1GiB ONECOPY_METADATA_CACHE_BYTES=256MiB
# shellcheck source=scripts/bench/bench_env.sh
source "$ROOT/scripts/bench/bench_env.sh"
PROXY_PID=""
cleanup() {
  if [ -n "$PROXY_PID" ] && alive "$PROXY_PID"; then
    kill -TERM "$PROXY_PID" 2>/dev/null || true
    for _ in $(seq 50); do alive "$PROXY_PID" || break; sleep 0.1; done
    alive "$PROXY_PID" && kill -KILL "$PROXY_PID" 2>/dev/null
  fi
  bench_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT TERM
bench_build

BENCH=$ROOT/scripts/.bench
bench_server moto "$BENCH/cache-moto"

setsid "$PY" "$ROOT/scripts/bench/count_proxy.py" --upstream "$S3_ENDPOINT" --rate "$RATE" \
  --port-file "$BENCH_TMP/proxy.port" </dev/null >>"$BENCH_TMP/proxy.log" 2>&1 &
PROXY_PID=$!
wait_for 20 test -s "$BENCH_TMP/proxy.port" || { cat "$BENCH_TMP/proxy.log" >&2; log "the proxy did not start"; exit 1; }
PROXY_URL=http://127.0.0.1:$(cat "$BENCH_TMP/proxy.port")
log "counting proxy pid $PROXY_PID at $PROXY_URL in front of $S3_ENDPOINT (link: $RATE bits/s, 0 = unthrottled)"

# onecopyd reaches S3 through the proxy; the uploads go straight to moto ($S3_ENDPOINT).
export AWS_ENDPOINT_URL=$PROXY_URL
bench_daemon_start s3://bench/

"$PY" "$ROOT/scripts/bench/cache_bench.py" run --files "$FILES" --legs "$LEGS" --rate "$RATE" --seed "$SEED" \
  --proxy "$PROXY_URL" --socket "$ONECOPY_SOCKET" --onecopy "$ONECOPY_CLI" --data "$BENCH/cache-data" \
  --tmp "$BENCH_TMP" --results "$BENCH/cache-results.json" --chart "$ROOT/scripts/bench/figures/bench-cache.png" \
  --reproduce "$REPRODUCE"
log "done in $(elapsed) s"
