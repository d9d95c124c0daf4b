#!/usr/bin/env bash
# fuzz.sh [--runs 1000000] [TARGET ...]: the fuzz campaign. Runs each libFuzzer target of the
# ASan + UBSan build (build-asan/, built here when missing) for RUNS executions over a copy of its
# seeds (tests/fuzz/seeds/NAME), and prints per target the executions, their rate, the corpus
# it ended with and the outcome; exits 1 if any target crashed, leaked or timed out. TARGET is a
# name such as daemon_session; all of them without one. scripts/test.sh runs each for 20 s.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUNS=1000000
targets=()
while [ $# -gt 0 ]; do
  case $1 in
    --runs) RUNS=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done

BUILD_DIR=$ROOT/build source "$ROOT/scripts/bootstrap.sh"
build_asan
if [ ${#targets[@]} -eq 0 ]; then
  for t in "$ASAN_DIR"/tests/fuzz/fuzz-*; do targets+=("$(basename "$t" | sed 's/^fuzz-//')"); done
fi

failed=0
echo "| target | executions | exec/s | seconds | corpus | outcome |"
echo "|---|---|---|---|---|---|"
for name in "${targets[@]}"; do
  work=$(mktemp -d)
  cp -r "$ROOT/tests/fuzz/seeds/$name/." "$work/" 2>/dev/null || true
  start=$(date +%s)
  if ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=halt_on_error=1 \
     "$ASAN_DIR/tests/fuzz/fuzz-$name" -runs="$RUNS" -rss_limit_mb=2048 -timeout=10 \
       -print_final_stats=1 "$work" >"$work.log" 2>&1; then
    outcome=ok
  else
    outcome="FAILED (log: $work.log)"
    failed=1
  fi
  secs=$(( $(date +%s) - start ))
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work.log" | grep -o '[0-9]*$' || echo 0)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$work.log" | grep -o '[0-9]*$' || echo 0)
  echo "| $name | $execs | $rate | $secs | $(ls "$work" | wc -l) inputs | $outcome |"
  [ "$outcome" = ok ] && rm -rf "$work" "$work.log"
done
echo
echo "reproduce: scripts/fuzz.sh --runs $RUNS ${targets[*]}"
exit $failed
