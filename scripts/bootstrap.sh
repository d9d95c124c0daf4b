#!/usr/bin/env bash
# Installs everything onecopy needs on a fresh Debian 12 machine, then builds it.
# Idempotent and quick when everything is already there. Sourced by run.sh and test.sh.
#
#   BUILD_DIR   build directory (default: build)
#   MESON_ARGS  extra arguments for the first `meson setup`
#   BOOTSTRAP_TEST_SERVERS=1  also install the test servers and benchmark baselines
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
VENV=$ROOT/.venv
export PATH=/usr/local/cuda/bin:$PATH

APT_PACKAGES=(
  meson ninja-build pkg-config g++ clang clang-format libclang-rt-14-dev
  liburing-dev libssl-dev openssl libspdlog-dev libfmt-dev
  libflatbuffers-dev flatbuffers-compiler libprotobuf-dev protobuf-compiler
  catch2 node-llhttp libzstd-dev libtomlplusplus-dev libpugixml-dev nlohmann-json3-dev
  librados-dev
  python3 python3-venv python3-dev python3-torch python3-torchvision
  dpkg-dev systemd
)
# The test servers (tests/servers/) and the network benchmark's baselines (scripts/bench_net.sh):
# installed when the caller sets BOOTSTRAP_TEST_SERVERS=1, as scripts/test.sh does.
if [ "${BOOTSTRAP_TEST_SERVERS:-0}" = 1 ]; then
  APT_PACKAGES+=(
    curl uuid-runtime nginx-light memcached
    ceph-mon ceph-osd radosgw ceph-common python3-rados
    swift-proxy swift-object swift-container swift-account
    libcurl4-openssl-dev rclone awscli
  )
fi

log() { printf '\033[1m[bootstrap]\033[0m %s\n' "$*" >&2; }

install_apt() {
  local missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return
  log "installing apt packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  # Packaged services (nginx, memcached, ceph, swift) must not start system-wide: deny every
  # start with a policy-rc.d while installing, unless the machine already has one.
  local policy=/usr/sbin/policy-rc.d created=0 rc=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null && $sudo chmod 755 "$policy" && created=1
  fi
  $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq || rc=$?
  [ $rc -ne 0 ] || DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null || rc=$?
  [ $created -eq 0 ] || $sudo rm -f "$policy"
  return $rc
}

install_venv() {
  local stamp=$VENV/.requirements.sha256
  local want
  want=$(cat "$ROOT/requirements.txt" "$ROOT/requirements-nodeps.txt" | sha256sum | cut -d' ' -f1)
  if [ ! -x "$VENV/bin/python" ]; then
    log "creating $VENV"
    # System site packages make Debian's python3-torch visible (see docs/operations.md).
    /usr/bin/python3 -m venv --system-site-packages "$VENV"
  fi
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    log "installing Python requirements"
    "$VENV/bin/pip" install -q --disable-pip-version-check -r "$ROOT/requirements.txt"
    # Without their declared dependencies, which would pull a CUDA torch and numpy 2 (see the file).
    "$VENV/bin/pip" install -q --disable-pip-version-check --no-deps -r "$ROOT/requirements-nodeps.txt"
    echo "$want" >"$stamp"
  fi
  # The onecopy package is used from the source tree; libonecopy.so comes from the build.
  local site
  site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$ROOT/python" >"$site/onecopy-source.pth"
}

# build [TARGET ...]: configures $BUILD_DIR with $MESON_ARGS when it is new, then builds.
build() {
  if [ ! -f "$BUILD_DIR/build.ninja" ]; then
    log "configuring $BUILD_DIR"
    # The installed paths are the system's (/usr, /etc): the units name them, and
    # scripts/package.sh makes the .deb from this build. MESON_ARGS may say otherwise.
    # shellcheck disable=SC2086
    meson setup "$BUILD_DIR" "$ROOT" --prefix=/usr ${MESON_ARGS:-} >/dev/null
  fi
  log "building $BUILD_DIR $*"
  if ! ninja -C "$BUILD_DIR" "$@" >"$BUILD_DIR/ninja.log" 2>&1; then
    tail -n 60 "$BUILD_DIR/ninja.log" >&2
    return 1
  fi
}

# build_asan [TARGET ...]: the clang build under ASan + UBSan, which also holds the libFuzzer
# targets (scripts/test.sh, soak.sh and fuzz.sh use it). No -Werror: GCC's and clang's
# sanitizer builds raise false positives in system headers.
ASAN_DIR=$ROOT/build-asan
build_asan() {
  CC=clang CXX=clang++ BUILD_DIR=$ASAN_DIR \
    MESON_ARGS="-Db_sanitize=address,undefined -Db_lundef=false -Dcuda=disabled -Dfuzzing=enabled" \
    build "$@"
}

# fuzz_seed NAME DIR: fills DIR with the seeds of fuzz target NAME (tests/fuzz/seeds/NAME); the
# file targets also get the interop corpus' small files ($ONECOPY_CORPUS_DIR, else
# tests/data/corpus, where it has been written).
fuzz_seed() {
  cp -r "$ROOT/tests/fuzz/seeds/$1/." "$2/" 2>/dev/null || true
  case $1 in
    open_scan | take)
      # A take reads the files a scan reads: open_scan's seeds (take has no directory of its own).
      cp -r "$ROOT/tests/fuzz/seeds/open_scan/." "$2/"
      find "${ONECOPY_CORPUS_DIR:-$ROOT/tests/data/corpus}" -name '*.vortex' -size -64k \
        -exec cp {} "$2/" \; 2>/dev/null || true ;;
  esac
}

# fuzz_flags NAME: libFuzzer flags of target NAME beyond the common ones (its dictionary).
fuzz_flags() {
  case $1 in
    # Seeds above max_len would be cut, trailer and all: fuzz_seed takes none that large.
    open_scan | take) echo "-dict=$ROOT/tests/fuzz/vortex.dict -max_len=65536" ;;
  esac
}

install_apt
install_venv
build
export ONECOPY_LIBRARY=$BUILD_DIR/client/libonecopy.so
export ONECOPY_ROOT=$ROOT ONECOPY_BUILD_DIR=$BUILD_DIR ONECOPY_VENV=$VENV
