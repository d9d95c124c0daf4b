#!/usr/bin/env bash
# fuzz.sh [--runs 1000000 | --minutes N] [--jobs J] [TARGET ...]: the fuzz campaign. Runs each
# libFuzzer target of the ASan + UBSan build (build-asan/, built here when missing) for RUNS
# executions (or N minutes) over a copy of its seeds (scripts/bootstrap.sh fuzz_seed: its
# tests/fuzz/seeds/NAME, and for the file targets the interop corpus' small files), with its
# dictionary, J targets at a time (default 1), and prints per target the executions, their rate,
# the coverage (libFuzzer's cov: edges), the corpus it ended with and the outcome; exits 1 if any
# target crashed, leaked or timed out (the input that did it is kept and named). TARGET is a name
# such as daemon_session; all of them without one. scripts/test.sh runs each for 20 s.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUNS=1000000
MINUTES=
JOBS=1
targets=()
while [ $# -gt 0 ]; do
  case $1 in
    --runs) RUNS=$2; shift 2 ;;
    --minutes) MINUTES=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done

BUILD_DIR=$ROOT/build source "$ROOT/scripts/bootstrap.sh"
build_asan
if [ ${#targets[@]} -eq 0 ]; then
  for t in "$ASAN_DIR"/tests/fuzz/fuzz-*; do targets+=("$(basename "$t" | sed 's/^fuzz-//')"); done
fi

limit="-runs=$RUNS"
[ -n "$MINUTES" ] && limit="-max_total_time=$((MINUTES * 60))"

# run_target NAME: one target's campaign; prints its table row, returns 1 on a finding.
run_target() {
  local name=$1 work start secs execs rate cov outcome
  work=$(mktemp -d)
  fuzz_seed "$name" "$work"
  start=$(date +%s)
  # shellcheck disable=SC2046 # fuzz_flags prints separate words
  if ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=halt_on_error=1 \
     "$ASAN_DIR/tests/fuzz/fuzz-$name" "$limit" -rss_limit_mb=2048 -timeout=10 \
       -print_final_stats=1 -artifact_prefix="$work.crash-" $(fuzz_flags "$name") "$work" \
       >"$work.log" 2>&1; then
    outcome=ok
  else
    outcome="FAILED (log: $work.log, input: $(ls "$work".crash-* 2>/dev/null | head -1))"
  fi
  secs=$(( $(date +%s) - start ))
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work.log" | grep -o '[0-9]*$' || echo 0)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$work.log" | grep -o '[0-9]*$' || echo 0)
  cov=$(grep -o 'cov: [0-9]*' "$work.log" | tail -1 | grep -o '[0-9]*' || echo 0)
  echo "| $name | $execs | $rate | $cov | $secs | $(ls "$work" | wc -l) inputs | $outcome |"
  if [ "$outcome" = ok ]; then rm -rf "$work" "$work.log"; else return 1; fi
}

echo "| target | executions | exec/s | coverage (edges) | seconds | corpus | outcome |"
echo "|---|---|---|---|---|---|---|"
export -f run_target fuzz_seed fuzz_flags
export ROOT ASAN_DIR limit
failed=0
printf '%s\n' "${targets[@]}" | xargs -P "$JOBS" -I{} bash -c 'run_target {}' || failed=1
echo
if [ -n "$MINUTES" ]; then
  echo "reproduce: scripts/fuzz.sh --minutes $MINUTES ${targets[*]}"
else
  echo "reproduce: scripts/fuzz.sh --runs $RUNS ${targets[*]}"
fi
exit $failed
