# shellcheck shell=bash
# Shared by scripts/bench_daemon.sh and scripts/bench_e2e.sh (sourced, not run): the onecopy
# build, the venv, an S3 test server and an onecopyd on a temporary socket, all stopped by
# bench_cleanup (the caller traps EXIT to it).
#
# Env: ONECOPY_BUILD_DIR (default build/; built with scripts/bootstrap.sh when onecopyd, the
#      CLI or libonecopy.so is missing there), ONECOPY_VENV (default .venv).
# Sets: BUILD_DIR, PY, ONECOPY_CLI, ONECOPY_LIBRARY, PYTHONPATH, S3_ENDPOINT, AWS_*,
#       SERVER_PIDS (comma-separated), DAEMON_PID, ONECOPY_SOCKET, BENCH_TMP.

# shellcheck source=tests/servers/lib.sh
source "$ROOT/tests/servers/lib.sh"

# Every contender reads data cold: onecopy's byte cache (format/byte_cache.hpp) would serve a
# repeated run from memory where the others fetch again. bench_cache.sh, which measures the
# cache, sets it.
export ONECOPY_CACHE_MEMORY_BYTES=${ONECOPY_CACHE_MEMORY_BYTES:-0}
export ONECOPY_CACHE_DIR=${ONECOPY_CACHE_DIR:-}
# The metadata cache (footers, zone maps, dictionary values; not data bytes) stays at the daemon's
# default unless the caller sets ONECOPY_METADATA_CACHE_BYTES: it is the product remembering what
# a file already told it, and the filter-change measurement (bench_e2e's "filter" table) is about
# planning a new filter from that memory, as a deployed daemon would.

BUILD_DIR=${ONECOPY_BUILD_DIR:-$ROOT/build}
BENCH_TMP=$(mktemp -d /tmp/onecopy-bench.XXXXXX)
BENCH_SERVER_STATE=""
BENCH_SERVER=""
DAEMON_PID=""

bench_build() {
  if [ ! -x "$BUILD_DIR/onecopyd" ] || [ ! -x "$BUILD_DIR/client/onecopy" ] ||
     [ ! -f "$BUILD_DIR/client/libonecopy.so" ]; then
    log "onecopy is not built in $BUILD_DIR: scripts/bootstrap.sh"
    # shellcheck source=scripts/bootstrap.sh
    BUILD_DIR=$BUILD_DIR source "$ROOT/scripts/bootstrap.sh"
  fi
  ensure_apt curl python3 python3-venv
  ensure_venv
  # shellcheck disable=SC2034 # used by the scripts that source this file
  PY=$VENV/bin/python
  ONECOPY_CLI=$BUILD_DIR/client/onecopy
  export ONECOPY_LIBRARY=$BUILD_DIR/client/libonecopy.so
  export PYTHONPATH=$ROOT/python${PYTHONPATH:+:$PYTHONPATH}
}

# bench_server moto|ceph STATE_DIR [OSD_MEM_BYTES]: start it, export its env.
bench_server() {
  BENCH_SERVER=$1 BENCH_SERVER_STATE=$2
  local env_out
  case $BENCH_SERVER in
    moto) env_out=$(bash "$ROOT/tests/servers/moto.sh" start "$BENCH_SERVER_STATE") ;;
    ceph) env_out=$(OSD_MEM_BYTES=${3:-4294967296} bash "$ROOT/tests/servers/ceph.sh" start "$BENCH_SERVER_STATE") ;;
    *) log "unknown server $BENCH_SERVER (moto or ceph)"; exit 2 ;;
  esac
  local line
  while IFS= read -r line; do
    case $line in S3_ENDPOINT=* | AWS_*=*) export "${line?}" ;; esac
  done <<<"$env_out"
  export AWS_ENDPOINT_URL=$S3_ENDPOINT AWS_DEFAULT_REGION=${AWS_REGION:-us-east-1}
  unset AWS_CA_BUNDLE AWS_PROFILE
  local pids=() f
  for f in "$BENCH_SERVER_STATE"/run/*.pid; do [ -f "$f" ] && pids+=("$(cat "$f")"); done
  SERVER_PIDS=$(IFS=,; echo "${pids[*]}")
  log "$BENCH_SERVER at $S3_ENDPOINT (pids $SERVER_PIDS)"
}

# bench_daemon_start [s3://bucket/prefix]: onecopyd on $BENCH_TMP/onecopyd.sock, its log in
# $BENCH_TMP, granting this user the given prefix (onecopyd grants no S3 by default).
bench_daemon_start() {
  export ONECOPY_SOCKET=$BENCH_TMP/onecopyd.sock
  ONECOPY_DAEMON_S3_GRANTS=${1:+uid=$(id -u): $1} \
  ONECOPY_LOG_LEVEL=${ONECOPY_LOG_LEVEL:-warn} setsid "$BUILD_DIR/onecopyd" --socket "$ONECOPY_SOCKET" \
    </dev/null >>"$BENCH_TMP/onecopyd.log" 2>&1 &
  DAEMON_PID=$!
  wait_for 20 "$ONECOPY_CLI" status --socket "$ONECOPY_SOCKET" ||
    { tail -n 20 "$BENCH_TMP/onecopyd.log" >&2; log "onecopyd did not answer"; exit 1; }
  log "onecopyd pid $DAEMON_PID on $ONECOPY_SOCKET"
}

bench_cleanup() {
  if [ -n "$DAEMON_PID" ] && alive "$DAEMON_PID"; then
    kill -TERM "$DAEMON_PID" 2>/dev/null || true
    for _ in $(seq 50); do alive "$DAEMON_PID" || break; sleep 0.1; done
    alive "$DAEMON_PID" && kill -KILL "$DAEMON_PID" 2>/dev/null
  fi
  if [ -n "$BENCH_SERVER_STATE" ] && [ "${BENCH_KEEP_SERVER:-0}" != 1 ]; then
    bash "$ROOT/tests/servers/$BENCH_SERVER.sh" stop "$BENCH_SERVER_STATE" >/dev/null 2>&1 || true
  fi
  rm -rf "$BENCH_TMP"
  return 0
}
