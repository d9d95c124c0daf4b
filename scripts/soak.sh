#!/usr/bin/env bash
# soak.sh [--minutes 30] [--clients 8] [--interval 60]: the soak of onecopyd.
#
# Starts the ASan + LSan build of onecopyd (build-asan/, built here when missing) on a private
# socket and runs, for the given minutes, CLIENTS well-behaved clients doing random scans
# (checked row by row against the same scan in process), cancels, early closes, clients killed
# with SIGKILL mid-scan and reconnects, plus one hostile client (names it may not read, floods it
# never reads, FIFOs, batches never released, Parts that never end). Prints the daemon's RSS,
# descriptors, slabs, pool and errors every interval, then checks that everything came back to
# idle, that no well-behaved scan saw a wrong row or an error, and that the daemon stops cleanly
# with no sanitizer report. Exits 0 when all of that holds. scripts/test.sh runs two minutes.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MINUTES=30 CLIENTS=8 INTERVAL=60
while [ $# -gt 0 ]; do
  case $1 in
    --minutes) MINUTES=$2; shift 2 ;;
    --clients) CLIENTS=$2; shift 2 ;;
    --interval) INTERVAL=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
done

# The plain build serves the Python client library; the daemon under test is the ASan build.
BUILD_DIR=$ROOT/build source "$ROOT/scripts/bootstrap.sh"
build_asan onecopyd
exec "$VENV/bin/python" "$ROOT/scripts/soak/soak.py" run --daemon "$ASAN_DIR/onecopyd" \
  --minutes "$MINUTES" --clients "$CLIENTS" --interval "$INTERVAL"
