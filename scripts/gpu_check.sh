#!/usr/bin/env bash
# The one device check of the GPU decode (issue 8), sized for one call on a lent H200
# (kind nvidia-h200, /work/.library/device/): under 8 minutes of device time.
#
#   scripts/gpu_check.sh --prepare   HERE (no GPU needed): build for Hopper (-gencode
#                                    arch=compute_90,code=sm_90) and bundle what the device run
#                                    needs into .gpucheck/: native.tar.xz (the binaries and their
#                                    non-system shared libraries, compressed: the device tool
#                                    carries 64 MiB in all, working tree included) and the
#                                    tpchgen-cli, vortex-data and substrait wheels
#   scripts/gpu_check.sh --dry-run   HERE: --prepare, then every step that runs without a GPU
#                                    (the GPU tests must SKIP with 77, the kTLS tests pass or
#                                    SKIP; the end-to-end planning and the batch check run on a
#                                    local lineitem file), the summary of what that measured,
#                                    and the list of the device steps
#   scripts/gpu_check.sh --summary DIR   the summary table again, from a run's files in DIR
#   scripts/gpu_check.sh             THERE: the device run, with `carry: [".gpucheck"]`:
#     0. native.tar.xz unpacked into $UNPACK (the device image has nvcc but not onecopy's Debian
#        dependencies: fmt, spdlog, protobuf, liburing, OpenSSL, Catch2); ONECOPY_GPU_BUILD=1
#        builds there instead, where meson and those dependencies exist (not in the budget);
#     1. nvidia-smi: card, driver, clocks, temperature;
#     2. onecopy-tests-gpu: every kernel against the CPU decoders, bit-exact;
#     3. onecopy-tests-ktls: kernel TLS over loopback; exit 77 (SKIP: the kernel has no TLS
#        ULP) is not a failure of the check, any other non-zero exit is;
#     4. TPC-H lineitem SF1 generated there (wheels installed; tpchgen-cli -> Parquet ->
#        vortex-data's default writer; SF1 as Vortex is ~170 MiB, too big to carry);
#     5. onecopy-gpu-bench: the D2D and pinned H2D ceilings, each kernel's output GB/s next to
#        D2D, and the end-to-end decode of the file's fusable columns from pinned memory, per
#        plan and batched (DecodeSession::decode_batch), vs the H2D floor and vs onecopy's CPU
#        decoders on all cores; without the data, the kernel table alone;
#     6. pyarrow decoding the same columns from Parquet;
#     7. the hand-off: onecopyd started there, and onecopy-gpu-ipc scanning lineitem into GPU
#        memory in process and through the daemon (CUDA VMM descriptors over its socket), every
#        value checked against the CPU scan, with the added time per batch; then both shards of
#        a shuffled world of 2 through the daemon, each against the CPU scan of its units;
#     8. the logs, then the summary table last (tests, kernels vs D2D, lineitem vs H2D, IPC).
# Every device step has a timeout: unpack 10 + nvidia-smi 10 + GPU tests 110 + kTLS tests 30 +
# wheels 20 + tpchgen 60 + Vortex write 90 + bench 90 + pyarrow 30 + hand-off 60 = 510 s,
# plus 5 s each for the four binaries to die after SIGTERM: 530 s (8 min 50 s) with every step
# at its limit; about 4 min expected. Logs land in $OUT (the device tool's return
# folder) when it is set, else in .gpucheck/out/ (--dry-run: $BUILD_DIR/gpucheck-dry-run/):
# device.txt, tests-gpu.log, tests-ktls.log, bench.txt, parquet.txt, fused_columns.txt, ipc.txt,
# summary.txt (8 files; the tool returns 8 at most).
#
# Environment: BUILD_DIR (default build-h200), TPCH_SF (default 1), ONECOPY_GPU_BUILD=1,
# UNPACK (default /tmp/onecopy-gpucheck), BUILD_LOCK (a file ninja runs under `flock`),
# DRY_RUN_VORTEX (the lineitem file --dry-run plans; default build/bench-data/sf0.1/...).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
BUNDLE=$ROOT/.gpucheck
BUILD_DIR=${BUILD_DIR:-$ROOT/build-h200}
TPCH_SF=${TPCH_SF:-1}
UNPACK=${UNPACK:-/tmp/onecopy-gpucheck}
GENCODE='-gencode=arch=compute_90,code=sm_90'
WHEELS=("tpchgen-cli==4.0.0" "vortex-data==0.93.0" "substrait==0.28.0")
BINARIES=(tests/onecopy-tests-gpu tests/onecopy-tests-ktls scripts/onecopy-gpu-bench scripts/onecopy-gpu-ipc onecopyd)
CARRY_LIMIT=$((64 * 1024 * 1024))
LOG_LINES=500  # a test log keeps its last lines (the tool returns files of 16 MiB at most)
# Device-step timeouts in seconds; the header's budget adds them up.
T_UNPACK=10 T_SMI=10 T_TESTS_GPU=110 T_TESTS_KTLS=30 T_WHEELS=20 T_TPCHGEN=60 T_VORTEX=90
T_BENCH=90 T_PARQUET=30 T_IPC=60 T_BUILD=600
OUT_FILES=(device.txt tests-gpu.log tests-ktls.log bench.txt parquet.txt fused_columns.txt ipc.txt summary.txt)

step() { printf '\n== %s\n' "$*"; }
die() { echo "gpu_check: $*" >&2; exit 1; }

# Builds the binaries for sm_90 (nice: other builds share this machine; BUILD_LOCK, when set,
# is a file that ninja runs under `flock`, so builds sharing a few cores take turns). $1: a
# timeout in seconds for ninja (the device run's ONECOPY_GPU_BUILD=1).
build() {
  export PATH=/usr/local/cuda/bin:$PATH
  if [ ! -f "$BUILD_DIR/build.ninja" ]; then
    meson setup "$BUILD_DIR" -Dcuda=enabled "-Dcuda_args=$GENCODE" || die "meson setup failed"
  else
    meson configure "$BUILD_DIR" "-Dcuda_args=$GENCODE" || die "meson configure failed"
  fi
  ${1:+timeout "$1"} ${BUILD_LOCK:+flock "$BUILD_LOCK"} nice -n 10 ninja -C "$BUILD_DIR" "${BINARIES[@]}" ||
    die "build failed"
}

# Bytes the device tool sends: the working tree's tracked and untracked-not-ignored files, plus
# the bundle (ignored, carried), plus shared/ where the checkout has one.
travel_bytes() {
  local tree bundle shared=0
  tree=$(git ls-files -z -co --exclude-standard | du -cb --files0-from=- 2>/dev/null | tail -n 1 | cut -f1)
  bundle=$(du -sb "$BUNDLE" | cut -f1)
  [ -d "$ROOT/shared" ] && shared=$(du -sb "$ROOT/shared" | cut -f1)
  echo $((tree + bundle + shared))
}

prepare() {
  step "build for sm_90 in $BUILD_DIR"
  build
  step "bundle into $BUNDLE"
  local stage=$BUILD_DIR/gpucheck-native
  rm -rf "$stage" "${BUNDLE:?}/bin" "${BUNDLE:?}/lib" "${BUNDLE:?}/out"
  mkdir -p "$stage/bin" "$stage/lib" "$BUNDLE/wheels"
  for b in "${BINARIES[@]}"; do
    strip -o "$stage/bin/$(basename "$b")" "$BUILD_DIR/$b" || die "strip $b"
  done
  # Every shared library but the C runtime's own (the device image has a newer glibc and libstdc++).
  ldd "${BINARIES[@]/#/$BUILD_DIR/}" | awk '$3 ~ /^\// {print $3}' | sort -u |
    grep -Ev '/(libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+|ld-linux[^/]*)\.so' |
    while read -r lib; do cp -L "$lib" "$stage/lib/"; done
  # xz here (onecopyd and the hand-off check pull in librados: gzip no longer fits the 64 MiB);
  # the device image unpacks it with Python's tarfile (lzma), since its xz may be missing.
  rm -f "$BUNDLE"/native.tar.*  # an older bundle's, whatever its compression
  tar -C "$stage" -cf - bin lib | xz -9e -T2 >"$BUNDLE/native.tar.xz" || die "tar native.tar.xz"
  for w in "${WHEELS[@]}"; do
    name=${w%%==*}
    ls "$BUNDLE/wheels/${name//-/_}"-*.whl >/dev/null 2>&1 && continue
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
      --platform any -d "$BUNDLE/wheels" "$w" || die "pip download $w"
  done
  cp "$ROOT/scripts/gpu_check.sh" "$BUNDLE/"  # for reference only: the run uses scripts/
  tar -tJvf "$BUNDLE/native.tar.xz"
  ls -la "$BUNDLE" "$BUNDLE/wheels"
  local bundle total
  bundle=$(du -sb "$BUNDLE" | cut -f1)
  total=$(travel_bytes)
  echo "bundle: $((bundle / 1024 / 1024)) MiB ($(du -b "$BUNDLE/native.tar.xz" | cut -f1) bytes native.tar.xz);" \
    "with the working tree $((total / 1024 / 1024)) MiB of the device tool's 64 MiB"
  [ "$total" -lt "$CARRY_LIMIT" ] || die "working tree and bundle too large to carry ($total bytes)"
}

# Unpacks native.tar.xz into $UNPACK (bin/, lib/).
unpack() {
  rm -rf "$UNPACK" && mkdir -p "$UNPACK" || return 1
  timeout "$T_UNPACK" python3 -c 'import sys, tarfile
kw = {"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}
tarfile.open(sys.argv[1]).extractall(sys.argv[2], **kw)' "$BUNDLE/native.tar.xz" "$UNPACK"
}

# Runs bundled binary $1 with the bundle's libraries (for it alone: Python must keep its own).
run_bin() {
  local bin=$1
  shift
  env LD_LIBRARY_PATH="$UNPACK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$UNPACK/bin/$bin" "$@"
}

# Runs test executable $1 under a timeout of $2 s; its last LOG_LINES lines and a final
# "$1: exit N" line go to $3, their tail to stdout. Returns its exit status.
run_test() {
  local name=$1 limit=$2 log=$3 rc
  shift 3
  # ONECOPY_SOURCE_DIR: the tests' seed files in this checkout, not where the binary was built.
  timeout -k 5 "$limit" env LD_LIBRARY_PATH="$UNPACK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    ONECOPY_SOURCE_DIR="$ROOT" "$UNPACK/bin/$name" "$@" >"$log.full" 2>&1
  rc=$?
  tail -n "$LOG_LINES" "$log.full" >"$log"
  rm -f "$log.full"
  echo "$name: exit $rc" >>"$log"
  tail -n 12 "$log"
  return "$rc"
}

# The status of a test run from its log ($1) and name ($2): PASS, SKIP, FAIL or TIMEOUT, with
# Catch2's last summary line (or the SKIP line).
test_status() {
  local log=$1 name=$2 rc detail
  [ -f "$log" ] || { echo "not run"; return; }
  rc=$(sed -n "s/^$name: exit \([0-9]*\)$/\1/p" "$log" | tail -n 1)
  detail=$(grep -E '^(All tests passed|test cases:|SKIP:)' "$log" | tail -n 1 | tr -s ' ')
  case "$rc" in
    0) echo "PASS (${detail:-no Catch2 summary})" ;;
    77) echo "SKIP (exit 77: ${detail:-no reason given})" ;;
    124 | 137) echo "TIMEOUT (exit $rc)" ;;
    "") echo "unknown (no exit status in $log)" ;;
    *) echo "FAIL (exit $rc${detail:+: $detail})" ;;
  esac
}

# The summary table from a run's files in $1. Every number is copied from the bench's own
# output (bench.txt, parquet.txt), none made up: what is missing reads "not measured".
summary() {
  local dir=$1 bench=$1/bench.txt
  step "summary"
  echo "GPU tests, bit-exact vs the CPU decoders (onecopy-tests-gpu): $(test_status "$dir/tests-gpu.log" onecopy-tests-gpu)"
  echo "kernel TLS tests (onecopy-tests-ktls): $(test_status "$dir/tests-ktls.log" onecopy-tests-ktls)"
  [ -s "$dir/device.txt" ] && echo "device: $(tail -n 1 "$dir/device.txt")"
  echo
  if [ -f "$bench" ] && grep -q '^kernel (fused launch)' "$bench"; then
    # Kernel rows: "%-40s %12.1f %9.0f%% %10.1f" (name, output GB/s, % of D2D, in+out GB/s), up to
    # the first line without a percentage; the D2D row carries the copy rate as its output.
    awk '
      /^kernel \(fused launch\)/ { on = 1; next }
      on && $(NF - 1) !~ /%$/ { on = 0 }
      !on { next }
      /^D2D copy \(cudaMemcpyAsync\)/ { d2d = $(NF - 2); next }
      { name = substr($0, 1, 40); sub(/ +$/, "", name); n++; rows[n] = name; out[n] = $(NF - 2); pct[n] = $(NF - 1) }
      END {
        printf "%-40s %12s %14s %9s\n", "kernel (one fused launch)", "output GB/s", "D2D copy GB/s", "of D2D"
        for (i = 1; i <= n; i++) printf "%-40s %12s %14s %9s\n", rows[i], out[i], d2d, pct[i]
      }' "$bench"
  else
    echo "kernels: not measured (no kernel table in ${bench})"
  fi
  echo
  if [ -f "$bench" ] && grep -q '^end to end, ' "$bench"; then
    grep -m 1 '^D2D copy: ' "$bench" | sed 's/.*; pinned H2D: /pinned H2D copy (the floor'"'"'s rate): /'
    # Rows: a 48-character label, then time ms, decoded GB/s, x floor, uploaded MB.
    awk '
      /^end to end, / { on = 1; sub(/^end to end, /, "lineitem end to end, "); print; next }
      on && /^path / {
        printf "%-48s %10s %12s %12s\n", "path", "time ms", "decoded GB/s", "x H2D floor"; next
      }
      on && /^e2e vs H2D floor/ { on = 0; print; next }
      on { label = substr($0, 1, 48); sub(/ +$/, "", label); split(substr($0, 49), f, " ")
           printf "%-48s %10s %12s %12s\n", label, f[1], f[2], f[3] }
      /^GPU: FSST/ { print }' "$bench"
    [ -f "$dir/parquet.txt" ] && grep -v '^$' "$dir/parquet.txt" | tail -n 1
  else
    echo "lineitem end to end (per plan and batched) vs H2D: not measured (no end-to-end table in ${bench})"
  fi
  echo
  if [ -f "$dir/ipc.txt" ] && grep -q '^IPC hand-off: ' "$dir/ipc.txt"; then
    grep -E '^(in process|through onecopyd|shard [0-9] of 2 through onecopyd|IPC hand-off): ' "$dir/ipc.txt"
  else
    echo "IPC hand-off: not measured ($(head -n 1 "$dir/ipc.txt" 2>/dev/null || echo "no ${dir}/ipc.txt"))"
  fi
}

# The commands the device run executes, for --dry-run to list.
device_steps() {
  local out=${OUT:-$BUNDLE/out}
  local data=/tmp/tpch/sf$TPCH_SF
  local lib="LD_LIBRARY_PATH=$UNPACK/lib"
  cat <<EOF
mkdir -p $out $data
timeout $T_UNPACK python3 -c 'tarfile.open($BUNDLE/native.tar.xz).extractall($UNPACK)'   (Python's lzma: xz may be missing there)
timeout $T_SMI nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
timeout $T_TESTS_GPU env $lib ONECOPY_SOURCE_DIR=$ROOT $UNPACK/bin/onecopy-tests-gpu --durations yes   (> tests-gpu.log)
timeout $T_TESTS_KTLS env $lib $UNPACK/bin/onecopy-tests-ktls   (> tests-ktls.log; exit 77 = SKIP)
timeout $T_WHEELS python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $BUNDLE/wheels/*.whl
timeout $T_TPCHGEN tpchgen-cli parquet -s $TPCH_SF --tables=lineitem --output-dir=$data   (PATH, PYTHONPATH: /tmp/site)
timeout $T_VORTEX python3 $ROOT/scripts/gpu_check_data.py write $data/lineitem.parquet $data/lineitem.vortex
timeout $T_BENCH env $lib $UNPACK/bin/onecopy-gpu-bench --file $data/lineitem.vortex --cpu-threads \$(nproc)   (> bench.txt)
timeout $T_PARQUET python3 $ROOT/scripts/gpu_check_data.py parquet $data/lineitem.parquet $out/fused_columns.txt   (> parquet.txt)
env $lib $UNPACK/bin/onecopyd --socket /tmp/onecopy-gpucheck.sock &   (stopped after the next step)
timeout $T_IPC env $lib $UNPACK/bin/onecopy-gpu-ipc --socket /tmp/onecopy-gpucheck.sock --file $data/lineitem.vortex   (> ipc.txt)
summary table from $out (> summary.txt)
EOF
}

# Clears the files of an earlier run from output folder $1.
clear_out() {
  mkdir -p "$1"
  for f in "${OUT_FILES[@]}"; do rm -f "${1:?}/$f"; done
}

device_run() {
  local out=${OUT:-$BUNDLE/out}
  local data=/tmp/tpch/sf$TPCH_SF
  mkdir -p "$data"
  clear_out "$out"
  if [ "${ONECOPY_GPU_BUILD:-0}" = 1 ]; then
    step "build there"
    build "$T_BUILD"
    rm -rf "$UNPACK" && mkdir -p "$UNPACK/bin"
    for b in "${BINARIES[@]}"; do cp "$BUILD_DIR/$b" "$UNPACK/bin/"; done
  else
    step "unpack the bundle into $UNPACK"
    [ -f "$BUNDLE/native.tar.xz" ] || die "no bundle: run scripts/gpu_check.sh --prepare here first, carry .gpucheck"
    unpack || die "unpack of $BUNDLE/native.tar.xz failed"
  fi
  step "device"
  timeout "$T_SMI" nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv |
    tee "$out/device.txt"
  step "GPU tests (onecopy-tests-gpu)"
  run_test onecopy-tests-gpu "$T_TESTS_GPU" "$out/tests-gpu.log" --durations yes
  local tests_rc=$?
  step "kernel TLS tests (onecopy-tests-ktls; exit 77 = SKIP)"
  run_test onecopy-tests-ktls "$T_TESTS_KTLS" "$out/tests-ktls.log"
  local ktls_rc=$?
  step "TPC-H lineitem SF$TPCH_SF"
  local t0=$SECONDS data_ok=1
  timeout "$T_WHEELS" python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site "$BUNDLE"/wheels/*.whl || { echo "gpu_check: wheel install failed"; data_ok=0; }
  if [ "$data_ok" = 1 ] && [ ! -f "$data/lineitem.parquet" ]; then
    PATH="/tmp/site/bin:$PATH" PYTHONPATH=/tmp/site timeout "$T_TPCHGEN" tpchgen-cli parquet -s "$TPCH_SF" \
      --tables=lineitem --output-dir="$data" || { echo "gpu_check: tpchgen-cli failed"; data_ok=0; }
  fi
  if [ "$data_ok" = 1 ] && [ ! -f "$data/lineitem.vortex" ]; then
    PYTHONPATH=/tmp/site timeout "$T_VORTEX" python3 "$ROOT/scripts/gpu_check_data.py" write \
      "$data/lineitem.parquet" "$data/lineitem.vortex" || { echo "gpu_check: Vortex write failed"; data_ok=0; }
  fi
  [ "$data_ok" = 1 ] && echo "data ready in $((SECONDS - t0)) s: $(du -h "$data"/lineitem.* | tr '\n' ' ')"
  step "bench"
  local file_args=()
  [ "$data_ok" = 1 ] && file_args=(--file "$data/lineitem.vortex")
  timeout -k 5 "$T_BENCH" env LD_LIBRARY_PATH="$UNPACK/lib" "$UNPACK/bin/onecopy-gpu-bench" "${file_args[@]}" \
    --cpu-threads "$(nproc)" >"$out/bench.txt" 2>&1
  local bench_rc=$?
  echo "onecopy-gpu-bench: exit $bench_rc" >>"$out/bench.txt"
  if [ "$data_ok" = 1 ]; then
    grep '^  fused: ' "$out/bench.txt" | sed 's/^  fused: \([^ ]*\).*/\1/' | sort -u >"$out/fused_columns.txt"
    PYTHONPATH=/tmp/site timeout "$T_PARQUET" python3 "$ROOT/scripts/gpu_check_data.py" parquet \
      "$data/lineitem.parquet" "$out/fused_columns.txt" >"$out/parquet.txt" 2>&1
  fi
  step "hand-off: a device scan in process and through onecopyd"
  local ipc_rc=1
  if [ "$data_ok" = 1 ]; then
    ipc_handoff "$data/lineitem.vortex" "$out/ipc.txt"
    ipc_rc=$?
  else
    echo "no data: not run" >"$out/ipc.txt"
  fi
  tail -n 5 "$out/ipc.txt"
  step "logs"
  cat "$out/bench.txt"
  [ -f "$out/parquet.txt" ] && cat "$out/parquet.txt"
  summary "$out" | tee "$out/summary.txt"
  echo "onecopy-tests-gpu: exit $tests_rc; onecopy-tests-ktls: exit $ktls_rc (77 = SKIP);" \
    "data: $([ "$data_ok" = 1 ] && echo ok || echo failed); onecopy-gpu-bench: exit $bench_rc;" \
    "onecopy-gpu-ipc: exit $ipc_rc"
  [ "$tests_rc" = 0 ] && { [ "$ktls_rc" = 0 ] || [ "$ktls_rc" = 77 ]; } && [ "$data_ok" = 1 ] && [ "$bench_rc" = 0 ] &&
    [ "$ipc_rc" = 0 ]
}

# Runs onecopyd on a socket of its own and onecopy-gpu-ipc against it on file $1, output in $2;
# the daemon is stopped (SIGTERM) afterwards, its log appended.
ipc_handoff() {
  local file=$1 log=$2 sock=/tmp/onecopy-gpucheck.sock dlog=/tmp/onecopy-gpucheck-daemon.log rc
  rm -f "$sock"
  env LD_LIBRARY_PATH="$UNPACK/lib" "$UNPACK/bin/onecopyd" --socket "$sock" 2>"$dlog" &
  local pid=$!
  for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
  timeout -k 5 "$T_IPC" env LD_LIBRARY_PATH="$UNPACK/lib" "$UNPACK/bin/onecopy-gpu-ipc" --socket "$sock" \
    --file "$file" >"$log" 2>&1
  rc=$?
  kill -TERM "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  { echo "onecopy-gpu-ipc: exit $rc"; echo "-- onecopyd's log (last 20 lines)"; tail -n 20 "$dlog"; } >>"$log"
  return "$rc"
}

dry_run() {
  prepare
  local out=${OUT:-$BUILD_DIR/gpucheck-dry-run}
  clear_out "$out"
  step "unpack the bundle into $UNPACK"
  unpack || die "unpack of $BUNDLE/native.tar.xz failed"
  step "GPU tests here (expect SKIP, exit 77)"
  run_test onecopy-tests-gpu "$T_TESTS_GPU" "$out/tests-gpu.log"
  local rc=$?
  [ "$rc" = 77 ] || [ "$rc" = 0 ] || die "onecopy-tests-gpu exited $rc"
  step "kernel TLS tests here (pass, or SKIP with 77 without kernel TLS)"
  run_test onecopy-tests-ktls "$T_TESTS_KTLS" "$out/tests-ktls.log"
  rc=$?
  [ "$rc" = 77 ] || [ "$rc" = 0 ] || die "onecopy-tests-ktls exited $rc"
  step "bench here (expect SKIP, exit 77)"
  run_bin onecopy-gpu-bench --quick
  echo "onecopy-gpu-bench exit $? (77 = SKIP without a device)"
  step "hand-off here (expect SKIP, exit 77)"
  ipc_handoff "$ROOT/tests/fuzz/seeds/open_scan/mixed.vortex" "$out/ipc.txt"
  rc=$?
  [ "$rc" = 77 ] || [ "$rc" = 0 ] || die "onecopy-gpu-ipc exited $rc"
  head -n 1 "$out/ipc.txt"
  local vtx=${DRY_RUN_VORTEX:-$ROOT/build/bench-data/sf0.1/lineitem.vortex}
  if [ -f "$vtx" ]; then
    step "end-to-end planning and batch check on $vtx (host half, no GPU)"
    run_bin onecopy-gpu-bench --file "$vtx" --plan-only --cpu-threads "$(nproc)" || die "plan-only failed"
  else
    echo "(no $vtx: set DRY_RUN_VORTEX to plan a local lineitem file)"
  fi
  summary "$out" | tee "$out/summary.txt"
  step "the device run would execute (carry: [\".gpucheck\"]; command: scripts/gpu_check.sh)"
  device_steps
}

case "${1:-}" in
  --prepare) prepare ;;
  --dry-run) dry_run ;;
  --summary) [ $# = 2 ] || die "usage: $0 --summary DIR"; summary "$2" ;;
  "") device_run ;;
  *) die "usage: $0 [--prepare | --dry-run | --summary DIR]" ;;
esac
