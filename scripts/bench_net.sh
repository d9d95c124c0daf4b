#!/usr/bin/env bash
# bench_net.sh: client CPU and throughput baselines for downloading from S3-like storage, over
# loopback from nginx (tests/servers/nginx.sh, static files; signatures are ignored).
#
# For HTTP and HTTPS, 1 and 4 connections: (a) the whole object, (b) RANGES random ranges of
# RANGE_BYTES. Clients: the one-copy floor (recv()/SSL_read() straight into the destination,
# scripts/bench/floor_bench.c), libcurl multi + memcpy (KvikIO's design,
# scripts/bench/curlmulti_bench.c), curl (one process, --parallel for N > 1, output
# /dev/null), boto3, awscli and rclone (whole object only, to a temp file then deleted), and
# onecopy (run_onecopy below). Each cell: median of REPEAT runs of MB/s and client CPU s/GiB
# (user+sys of the client process alone). Prints a Markdown table with ratios vs the floor
# and vs libcurl+memcpy at the same connection count; raw rows in scripts/.bench/results.tsv.
#
# Env: REPEAT (5), SIZE (1073741824), RANGES (64), RANGE_BYTES (16 MiB), CONNS ("1 4"),
#      PROTOS ("http https"), CLIENTS (all: "floor curlmulti curl boto3 awscli rclone onecopy"),
#      QUICK=1 (REPEAT=1, SIZE=256 MiB, RANGES=16), ONECOPY_NETBENCH (the onecopy binary),
#      BENCH_KEEP_SERVER=1 (leave nginx running at the end),
#      AWS_CLI (/usr/bin/aws: Debian's v2; an `aws` earlier on PATH may be a v1 shim).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SERVER_NAME=bench_net
# shellcheck source=tests/servers/lib.sh
source "$ROOT/tests/servers/lib.sh"

if [ "${QUICK:-0}" = 1 ]; then
  REPEAT=${REPEAT:-1} SIZE=${SIZE:-268435456} RANGES=${RANGES:-16}
fi
REPEAT=${REPEAT:-5} SIZE=${SIZE:-1073741824} RANGES=${RANGES:-64} RANGE_BYTES=${RANGE_BYTES:-16777216}
CONNS=${CONNS:-1 4} PROTOS=${PROTOS:-http https}
CLIENTS=${CLIENTS:-floor curlmulti curl boto3 awscli rclone onecopy}
AWS_CLI=${AWS_CLI:-/usr/bin/aws}
BENCH=$ROOT/scripts/.bench
BIN=$BENCH/bin
STATE=$BENCH/nginx
RESULTS=$BENCH/results.tsv
CHUNK=16777216

ensure_apt nginx-light curl gcc libc6-dev libssl-dev libcurl4-openssl-dev rclone awscli python3
ensure_venv
PY=$VENV/bin/python
mkdir -p "$BIN" "$BENCH/tmp"

# ---- build the C baselines (cc, not meson) ----
build() {
  local name=$1
  shift
  local src=$ROOT/scripts/bench/$name.c
  if [ ! -x "$BIN/$name" ] || [ "$src" -nt "$BIN/$name" ] || [ "$ROOT/scripts/bench/common.h" -nt "$BIN/$name" ]; then
    log "building $name"
    cc -O2 -Wall -Wextra -pthread -o "$BIN/$name" "$src" "$@"
  fi
}
build floor_bench -lssl -lcrypto
build curlmulti_bench -lcurl

# ---- the server and the object ----
bash "$ROOT/tests/servers/nginx.sh" start "$STATE" >/dev/null
HTTP=$(env_get S3_ENDPOINT) HTTPS=$(env_get S3_ENDPOINT_TLS) CA=$(env_get CA_FILE) WWW=$(env_get WWW_DIR)
export AWS_ACCESS_KEY_ID=onecopytest AWS_SECRET_ACCESS_KEY=onecopytestsecret AWS_DEFAULT_REGION=us-east-1
unset AWS_CA_BUNDLE
OBJ=bench/obj-$SIZE
if [ "$(stat -c %s "$WWW/$OBJ" 2>/dev/null || echo 0)" != "$SIZE" ]; then
  log "generating $WWW/$OBJ ($SIZE bytes, random)"
  mkdir -p "$WWW/bench"
  head -c "$SIZE" /dev/urandom >"$WWW/$OBJ.tmp"
  mv "$WWW/$OBJ.tmp" "$WWW/$OBJ"
fi
cat "$WWW/$OBJ" >/dev/null  # into the page cache

# Temp files of awscli/rclone: tmpfs when it has room (never /dev/null: they rename onto it).
TMP=$BENCH/tmp
if [ "$(df -B1 --output=avail /dev/shm 2>/dev/null | tail -n 1)" -gt $((SIZE * 2)) ] 2>/dev/null; then
  TMP=$(mktemp -d /dev/shm/onecopy-bench.XXXXXX)
fi
cleanup() {
  [[ $TMP == /dev/shm/* ]] && rm -rf "$TMP"
  [ "${BENCH_KEEP_SERVER:-0}" = 1 ] || bash "$ROOT/tests/servers/nginx.sh" stop "$STATE" 2>/dev/null
  return 0
}
trap cleanup EXIT

# ---- clients: each prints "bytes=.. wall_s=.. user_s=.. sys_s=.." or "skip: why" ----
# args: URL CONNS MODE(full|ranges)
common_args() {
  local url=$1 conns=$2 mode=$3
  ARGS=(--url "$url" --size "$SIZE" --connections "$conns" --chunk "$CHUNK")
  [ "$mode" = ranges ] && ARGS+=(--ranges "$RANGES" --range-bytes "$RANGE_BYTES")
  [[ $url == https://* ]] && ARGS+=(--ca-file "$CA")
  return 0
}
run_floor() { common_args "$@"; "$BIN/floor_bench" "${ARGS[@]}"; }
run_curlmulti() { common_args "$@"; "$BIN/curlmulti_bench" "${ARGS[@]}"; }
run_boto3() { common_args "$@"; "$PY" "$ROOT/scripts/bench/boto3_bench.py" "${ARGS[@]}"; }

run_curl() {
  local url=$1 conns=$2 mode=$3 args=(-sS --fail) tls=() bytes offs o i
  [[ $url == https://* ]] && tls=(--cacert "$CA")
  if [ "$mode" = full ] && [ "$conns" = 1 ]; then
    "$PY" "$ROOT/scripts/bench/timeit.py" "$SIZE" curl "${args[@]}" "${tls[@]}" -o /dev/null "$url"
    return
  fi
  [ "$conns" -gt 1 ] && args+=(--parallel --parallel-max "$conns")
  local first=1
  if [ "$mode" = ranges ]; then
    mapfile -t offs < <(cd "$ROOT" && "$PY" -c "
import sys; sys.path.insert(0, 'scripts/bench'); import boto3_bench as b
print('\n'.join(map(str, b.ranges($SIZE, $RANGES, $RANGE_BYTES, 42))))")
    bytes=$((RANGES * RANGE_BYTES))
    for o in "${offs[@]}"; do
      [ $first = 1 ] || args+=(--next)
      first=0
      args+=("${tls[@]}" -r "$o-$((o + RANGE_BYTES - 1))" -o /dev/null "$url")
    done
  else
    bytes=$SIZE
    for ((i = 0; i < SIZE; i += CHUNK)); do
      [ $first = 1 ] || args+=(--next)
      first=0
      o=$((i + CHUNK - 1)); [ $o -lt "$SIZE" ] || o=$((SIZE - 1))
      args+=("${tls[@]}" -r "$i-$o" -o /dev/null "$url")
    done
  fi
  "$PY" "$ROOT/scripts/bench/timeit.py" "$bytes" curl "${args[@]}"
}

run_awscli() {
  local url=$1 conns=$2 mode=$3
  [ "$mode" = full ] || { echo "skip: whole objects only"; return; }
  [ -x "$AWS_CLI" ] || { echo "skip: $AWS_CLI missing"; return; }
  local cfg=$BENCH/aws-config-$conns tls=()
  printf '[default]\ns3 =\n  max_concurrent_requests = %s\n  multipart_threshold = 16MB\n  multipart_chunksize = 16MB\n' \
    "$conns" >"$cfg"
  [[ $url == https://* ]] && tls=(--ca-bundle "$CA")
  AWS_CONFIG_FILE=$cfg "$PY" "$ROOT/scripts/bench/timeit.py" "$SIZE" "$AWS_CLI" s3 cp --only-show-errors \
    --endpoint-url "${url%/"$OBJ"}" "${tls[@]}" "s3://$OBJ" "$TMP/awscli.out"
  rm -f "$TMP/awscli.out"
}

run_rclone() {
  local url=$1 conns=$2 mode=$3 tls=()
  [ "$mode" = full ] || { echo "skip: whole objects only"; return; }
  [[ $url == https://* ]] && tls=(--ca-cert "$CA")
  : >"$BENCH/rclone.conf"
  "$PY" "$ROOT/scripts/bench/timeit.py" "$SIZE" rclone copyto -q "${tls[@]}" \
    --s3-provider Other --s3-endpoint "${url%/"$OBJ"}" --s3-access-key-id onecopytest \
    --s3-secret-access-key onecopytestsecret --s3-region us-east-1 --s3-force-path-style \
    --multi-thread-streams "$conns" --multi-thread-cutoff 16M --config "$BENCH/rclone.conf" \
    --no-check-dest --ignore-times ":s3:$OBJ" "$TMP/rclone.out"
  rm -f "$TMP/rclone.out"
}

# >>> onecopy hook: the project's own client. It must accept the arguments below and print
# one line "bytes=<n> wall_s=<x> user_s=<u> sys_s=<s>" (CPU of its own process, timed region).
run_onecopy() {
  local url=$1 conns=$2 mode=$3
  local bin=${ONECOPY_NETBENCH:-$ROOT/build/scripts/onecopy-netbench}
  [ -x "$bin" ] || { echo "skip: $bin not built (set ONECOPY_NETBENCH)"; return; }
  local args=(--url "$url" --connections "$conns")
  [ "$mode" = ranges ] && args+=(--ranges "$RANGES" --range-bytes "$((RANGE_BYTES >> 20))MiB")
  [[ $url == https://* ]] && args+=(--ca-file "$CA")
  "$bin" "${args[@]}"
}
# <<< onecopy hook

log "REPEAT=$REPEAT SIZE=$SIZE RANGES=$RANGES x $RANGE_BYTES, conns: $CONNS, protocols: $PROTOS"
: >"$RESULTS"
declare -A NOTES=()
for proto in $PROTOS; do
  url=$HTTP/$OBJ
  [ "$proto" = https ] && url=$HTTPS/$OBJ
  for conns in $CONNS; do
    for mode in full ranges; do
      for client in $CLIENTS; do
        for ((r = 0; r < REPEAT; r++)); do
          out=$("run_$client" "$url" "$conns" "$mode" 2>"$BENCH/last-stderr.log") || {
            log "FAILED: $client $proto $conns $mode"; tail -n 5 "$BENCH/last-stderr.log" >&2; out="skip: failed"; }
          line=$(grep -E '^bytes=' <<<"$out" | tail -n 1 || true)
          if [ -z "$line" ]; then
            NOTES[$client]=$(grep -E '^skip' <<<"$out" | head -n 1 || echo "skip: no result")
            break
          fi
          printf '%s\t%s\t%s\t%s\t%s\n' "$client" "$proto" "$conns" "$mode" "$line" >>"$RESULTS"
        done
      done
      log "done: $proto, $conns connection(s), $mode"
    done
  done
done

notes=""
for c in "${!NOTES[@]}"; do notes+="$c: ${NOTES[$c]}"$'\n'; done
"$PY" - "$RESULTS" "$SIZE" "$RANGES" "$RANGE_BYTES" "$REPEAT" "$notes" <<'PY'
import statistics, sys
from collections import defaultdict
path, size, nr, rb, rep, notes = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6]
rows = defaultdict(list)
for line in open(path):
    c, p, n, m, kv = line.rstrip("\n").split("\t")
    d = dict(x.split("=") for x in kv.split())
    b, w, u, s = int(d["bytes"]), float(d["wall_s"]), float(d["user_s"]), float(d["sys_s"])
    rows[(c, p, int(n), m)].append((b / w / 1e6, (u + s) / (b / 2**30)))
med = {k: (statistics.median(x for x, _ in v), statistics.median(y for _, y in v)) for k, v in rows.items()}
print()
print("Object %d MiB; ranges: %s x %d MiB; median of %s; CPU = client user+sys s per GiB." % (size >> 20, nr, rb >> 20, rep))
print()
print("| client | proto | conns | mode | MB/s | CPU s/GiB | CPU vs floor | CPU vs curl-multi |")
print("|---|---|---|---|---|---|---|---|")
order = ["floor", "curlmulti", "onecopy", "curl", "boto3", "awscli", "rclone"]
for p in ("http", "https"):
    for n in sorted({k[2] for k in med}):
        for m in ("full", "ranges"):
            for c in order:
                k = (c, p, n, m)
                if k not in med:
                    continue
                mbps, cpu = med[k]
                f = med.get(("floor", p, n, m)); cm = med.get(("curlmulti", p, n, m))
                rf = "%.2fx" % (cpu / f[1]) if f and f[1] > 0 else "-"
                rc = "%.2fx" % (cpu / cm[1]) if cm and cm[1] > 0 else "-"
                print("| %s | %s | %d | %s | %.0f | %.3f | %s | %s |" % (c, p, n, m, mbps, cpu, rf, rc))
if notes.strip():
    print()
    for l in notes.strip().splitlines():
        print("- " + l)
PY
