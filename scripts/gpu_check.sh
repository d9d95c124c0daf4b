#!/usr/bin/env bash
# The one device check of the GPU decode (issue 8), sized for one call on a lent H200
# (kind nvidia-h200, /work/.library/device/): under 8 minutes of device time.
#
#   scripts/gpu_check.sh --prepare   HERE (no GPU needed): build for Hopper (-gencode
#                                    arch=compute_90,code=sm_90) and bundle what the device run
#                                    needs into .gpucheck/ (binaries, their non-system shared
#                                    libraries, the tpchgen-cli, vortex-data and substrait wheels)
#   scripts/gpu_check.sh --dry-run   HERE: --prepare, then every step that runs without a GPU
#                                    (the GPU tests must SKIP with 77; the end-to-end planning runs
#                                    on a local lineitem file), and list the device steps
#   scripts/gpu_check.sh             THERE: the device run, with `carry: [".gpucheck"]`:
#     1. the build: the bundle's binaries (the device image has nvcc but not onecopy's Debian
#        dependencies: fmt, spdlog, protobuf, liburing, Catch2); ONECOPY_GPU_BUILD=1 builds there
#        instead, where meson and those dependencies exist;
#     2. onecopy-tests-gpu: every kernel against the CPU decoders, bit-exact;
#     3. TPC-H lineitem SF1 generated there (tpchgen-cli -> Parquet -> vortex-data's default
#        writer; SF1 as Vortex is ~170 MiB, too big to carry), then onecopy-gpu-bench: the D2D
#        and pinned H2D ceilings, each kernel's output GB/s next to D2D, and the end-to-end
#        decode of the file's fusable columns from pinned memory vs the H2D floor and vs
#        onecopy's CPU decoders on 16 threads; pyarrow decoding the same columns from Parquet;
#        the table is printed last.
# Every device step has a timeout (180 + 60 + 90 + 90 + 30 s: 7.5 min in the worst case;
# about 3 expected). Logs land in $OUT (the device tool's return folder) when it is set, else in .gpucheck/out/.
#
# Environment: BUILD_DIR (default build-h200), TPCH_SF (default 1), ONECOPY_GPU_BUILD=1,
# DRY_RUN_VORTEX (the lineitem file --dry-run plans; default build/bench-data/sf0.1/...).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
BUNDLE=$ROOT/.gpucheck
BUILD_DIR=${BUILD_DIR:-$ROOT/build-h200}
TPCH_SF=${TPCH_SF:-1}
GENCODE='-gencode=arch=compute_90,code=sm_90'
WHEELS=("tpchgen-cli==4.0.0" "vortex-data==0.93.0" "substrait==0.28.0")
BINARIES=(tests/onecopy-tests-gpu scripts/onecopy-gpu-bench)
CARRY_LIMIT=$((64 * 1024 * 1024))

step() { printf '\n== %s\n' "$*"; }
die() { echo "gpu_check: $*" >&2; exit 1; }

# Builds the two binaries for sm_90 (nice: other builds share this machine).
build() {
  export PATH=/usr/local/cuda/bin:$PATH
  if [ ! -f "$BUILD_DIR/build.ninja" ]; then
    meson setup "$BUILD_DIR" -Dcuda=enabled "-Dcuda_args=$GENCODE" || die "meson setup failed"
  else
    meson configure "$BUILD_DIR" "-Dcuda_args=$GENCODE" || die "meson configure failed"
  fi
  nice -n 10 ninja -C "$BUILD_DIR" "${BINARIES[@]}" || die "build failed"
}

prepare() {
  step "build for sm_90 in $BUILD_DIR"
  build
  step "bundle into $BUNDLE"
  rm -rf "$BUNDLE/bin" "$BUNDLE/lib"
  mkdir -p "$BUNDLE/bin" "$BUNDLE/lib" "$BUNDLE/wheels"
  for b in "${BINARIES[@]}"; do
    strip -o "$BUNDLE/bin/$(basename "$b")" "$BUILD_DIR/$b" || die "strip $b"
  done
  # Every shared library but the C runtime's own (the device image has a newer glibc and libstdc++).
  ldd "$BUILD_DIR"/tests/onecopy-tests-gpu "$BUILD_DIR"/scripts/onecopy-gpu-bench | awk '$3 ~ /^\// {print $3}' |
    sort -u | grep -Ev '/(libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+|ld-linux[^/]*)\.so' |
    while read -r lib; do cp -L "$lib" "$BUNDLE/lib/"; done
  for w in "${WHEELS[@]}"; do
    name=${w%%==*}
    ls "$BUNDLE/wheels/${name//-/_}"-*.whl >/dev/null 2>&1 && continue
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
      --platform any -d "$BUNDLE/wheels" "$w" || die "pip download $w"
  done
  cp "$ROOT/scripts/gpu_check.sh" "$BUNDLE/"  # for reference only: the run uses scripts/
  local size
  size=$(du -sb "$BUNDLE" --exclude=out | cut -f1)
  echo "bundle: $((size / 1024 / 1024)) MiB of the device tool's 64 MiB working-tree limit (source tree not counted)"
  ls -la "$BUNDLE/bin" "$BUNDLE/lib" "$BUNDLE/wheels"
  [ "$size" -lt "$CARRY_LIMIT" ] || die "bundle too large to carry"
}

# The commands the device run executes; $1 = "echo" lists them instead.
device_steps() {
  local run=${1:-}
  local out=${OUT:-$BUNDLE/out}
  local data=/tmp/tpch/sf$TPCH_SF
  $run mkdir -p "$out" "$data"
  $run nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
  $run env LD_LIBRARY_PATH="$BUNDLE/lib" "$BUNDLE/bin/onecopy-tests-gpu" --durations yes
  $run python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    "$BUNDLE"/wheels/*.whl
  $run env PATH="/tmp/site/bin:$PATH" PYTHONPATH=/tmp/site tpchgen-cli parquet -s "$TPCH_SF" --tables=lineitem \
    --output-dir="$data"
  $run env PYTHONPATH=/tmp/site python3 "$ROOT/scripts/gpu_check_data.py" write "$data/lineitem.parquet" \
    "$data/lineitem.vortex"
  $run env LD_LIBRARY_PATH="$BUNDLE/lib" "$BUNDLE/bin/onecopy-gpu-bench" --file "$data/lineitem.vortex" \
    --cpu-threads "$(nproc)"
  $run env PYTHONPATH=/tmp/site python3 "$ROOT/scripts/gpu_check_data.py" parquet "$data/lineitem.parquet" \
    "$out/fused_columns.txt"
}

device_run() {
  local out=${OUT:-$BUNDLE/out}
  local data=/tmp/tpch/sf$TPCH_SF
  mkdir -p "$out" "$data"
  if [ "${ONECOPY_GPU_BUILD:-0}" = 1 ]; then
    step "build there"
    build
    mkdir -p "$BUNDLE/bin"
    for b in "${BINARIES[@]}"; do cp "$BUILD_DIR/$b" "$BUNDLE/bin/"; done
  fi
  [ -x "$BUNDLE/bin/onecopy-tests-gpu" ] || die "no bundle: run scripts/gpu_check.sh --prepare here first, carry .gpucheck"
  export LD_LIBRARY_PATH=$BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  step "device"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$out/device.txt"
  step "GPU tests (onecopy-tests-gpu)"
  timeout 180 "$BUNDLE/bin/onecopy-tests-gpu" --durations yes >"$out/tests-gpu.log" 2>&1
  local tests_rc=$?
  tail -n 25 "$out/tests-gpu.log"
  step "TPC-H lineitem SF$TPCH_SF"
  local t0=$SECONDS
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    "$BUNDLE"/wheels/*.whl || die "wheel install"
  if [ ! -f "$data/lineitem.parquet" ]; then
    PATH="/tmp/site/bin:$PATH" PYTHONPATH=/tmp/site timeout 60 tpchgen-cli parquet -s "$TPCH_SF" --tables=lineitem \
      --output-dir="$data" || die "tpchgen-cli"
  fi
  [ -f "$data/lineitem.vortex" ] || PYTHONPATH=/tmp/site timeout 90 python3 "$ROOT/scripts/gpu_check_data.py" write \
    "$data/lineitem.parquet" "$data/lineitem.vortex" || die "vortex write"
  echo "data ready in $((SECONDS - t0)) s: $(du -h "$data"/lineitem.* | tr '\n' ' ')"
  step "bench"
  timeout 90 "$BUNDLE/bin/onecopy-gpu-bench" --file "$data/lineitem.vortex" --cpu-threads "$(nproc)" >"$out/bench.txt" 2>&1
  local bench_rc=$?
  grep '^  fused: ' "$out/bench.txt" | sed 's/^  fused: \([^ ]*\).*/\1/' | sort -u >"$out/fused_columns.txt"
  PYTHONPATH=/tmp/site timeout 30 python3 "$ROOT/scripts/gpu_check_data.py" parquet "$data/lineitem.parquet" \
    "$out/fused_columns.txt" >"$out/parquet.txt" 2>&1
  step "table"
  cat "$out/bench.txt" "$out/parquet.txt"
  echo "onecopy-tests-gpu: exit $tests_rc; onecopy-gpu-bench: exit $bench_rc"
  [ "$tests_rc" = 0 ] && [ "$bench_rc" = 0 ]
}

dry_run() {
  prepare
  step "GPU tests here (expect SKIP, exit 77)"
  LD_LIBRARY_PATH="$BUNDLE/lib" "$BUNDLE/bin/onecopy-tests-gpu"
  local rc=$?
  [ "$rc" = 77 ] || [ "$rc" = 0 ] || die "onecopy-tests-gpu exited $rc"
  echo "onecopy-tests-gpu exit $rc"
  LD_LIBRARY_PATH="$BUNDLE/lib" "$BUNDLE/bin/onecopy-gpu-bench" --quick
  echo "onecopy-gpu-bench exit $? (77 = SKIP without a device)"
  local vtx=${DRY_RUN_VORTEX:-$ROOT/build/bench-data/sf0.1/lineitem.vortex}
  if [ -f "$vtx" ]; then
    step "end-to-end planning on $vtx (host half, no GPU)"
    LD_LIBRARY_PATH="$BUNDLE/lib" "$BUNDLE/bin/onecopy-gpu-bench" --file "$vtx" --plan-only --cpu-threads "$(nproc)" ||
      die "plan-only failed"
  else
    echo "(no $vtx: set DRY_RUN_VORTEX to plan a local lineitem file)"
  fi
  step "the device run would execute (carry: [\".gpucheck\"]; command: scripts/gpu_check.sh)"
  device_steps echo
}

case "${1:-}" in
  --prepare) prepare ;;
  --dry-run) dry_run ;;
  "") device_run ;;
  *) die "usage: $0 [--prepare | --dry-run]" ;;
esac
