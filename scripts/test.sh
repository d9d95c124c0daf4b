#!/usr/bin/env bash
# Runs every onecopy test on a fresh Debian 12 machine: installs what is missing, builds, then
#   0. clang-format --dry-run over the C++ tree;
#   1. the Catch2 executables through `meson test` (gated ones print SKIP where the machine lacks
#      the capability: GPU, kTLS);
#   2. the same unit tests under AddressSanitizer + UndefinedBehaviorSanitizer (clang), and
#   3. from that build, each libFuzzer target for FUZZ_SECONDS (default 20) over its seeds;
#   4. pytest: the interop corpus written by vortex-data (and by four older releases, each
#      installed from PyPI into build/old-writers), the Python package, onecopyd (started
#      on a temporary socket by tests/daemon), the fault proxy of
#      tests/servers/, and the S3 client against Ceph RGW, Swift, moto and nginx, which
#      tests/net/test_s3_servers.py starts with tests/servers/*.sh;
#   5. tests/daemon again, against the ASan + UBSan build's onecopyd (ONECOPYD=...): a sanitizer
#      report in a daemon's log fails the test that started it;
#   6. two minutes of scripts/soak.sh against that onecopyd;
#   7. the packages: scripts/package.sh's .deb and the wheel of `pip install .`, installed (as
#      root: dpkg, system users) and used as an operator and a trainer would (tests/package).
# The last line sums up: "summary: N passed, N failed, N skipped".
#
#   FUZZ_SECONDS=0 skips fuzzing; ONECOPY_CORPUS_SMALL=1 skips the big corpus cases.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
BOOTSTRAP_TEST_SERVERS=1 MESON_ARGS="-Dwerror=true" BUILD_DIR=$ROOT/build source scripts/bootstrap.sh || exit 1
set +e  # bootstrap runs with -e; from here on every failure is counted, not fatal

passed=0 failed=0 skipped=0
count_meson() {  # adds a meson testlog.json to the totals
  local log=$1/meson-logs/testlog.json
  [ -f "$log" ] || return
  read -r p f s < <("$VENV/bin/python" - "$log" <<'PY'
import json, sys
p = f = s = 0
for line in open(sys.argv[1]):
    r = json.loads(line)["result"]
    if r == "OK": p += 1
    elif r == "SKIP": s += 1
    else: f += 1
print(p, f, s)
PY
)
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
}
count_junit() {  # adds a pytest junit XML file to the totals, then removes it
  read -r p f s < <("$VENV/bin/python" - "$1" <<'PY'
import sys, xml.etree.ElementTree as ET
r = ET.parse(sys.argv[1]).getroot()
suites = [r] if r.tag == "testsuite" else list(r)
t = sum(int(x.get("tests", 0)) for x in suites)
f = sum(int(x.get("failures", 0)) + int(x.get("errors", 0)) for x in suites)
s = sum(int(x.get("skipped", 0)) for x in suites)
print(t - f - s, f, s)
PY
)
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
  rm -f "$1"
}
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# The C++ tree as .clang-format has it (100 columns, includes grouped): a formatting slip fails here.
step "clang-format --dry-run -Werror over the C++ tree"
if git ls-files '*.cpp' '*.hpp' '*.h' '*.cu' '*.cuh' | xargs clang-format --dry-run -Werror; then
  passed=$((passed + 1))
else
  echo "FAILED: run clang-format -i on the files above"
  failed=$((failed + 1))
fi

step "unit tests (meson test)"
meson test -C build --print-errorlogs --num-processes 2
count_meson build

# One clang build serves both: unit tests under ASan + UBSan, and the libFuzzer targets (the
# whole project is coverage-instrumented there).
step "unit tests under ASan + UBSan (clang)"
asan_built=0
if build_asan; then
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    meson test -C build-asan --print-errorlogs --num-processes 2 --suite onecopy
  count_meson build-asan
  ninja -C build-asan onecopyd >/dev/null && asan_built=1  # step 5 runs it

  if [ "${FUZZ_SECONDS:-20}" != 0 ]; then
    step "fuzz targets (${FUZZ_SECONDS:-20}s each)"
    for target in build-asan/tests/fuzz/fuzz-*; do
      [ -f "$target" ] && [ -x "$target" ] || continue
      name=$(basename "$target")
      work=$(mktemp -d)
      fuzz_seed "${name#fuzz-}" "$work"
      # shellcheck disable=SC2046 # fuzz_flags prints separate words
      if "$target" -max_total_time="${FUZZ_SECONDS:-20}" -rss_limit_mb=2048 -timeout=10 \
           -print_final_stats=1 $(fuzz_flags "${name#fuzz-}") "$work" >"$work.log" 2>&1; then
        echo "$name: ok ($(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work.log" | grep -o '[0-9]*$') runs)"
        passed=$((passed + 1))
      else
        echo "$name: FAILED"; grep -v '^#' "$work.log" | tail -n 40
        failed=$((failed + 1))
      fi
      rm -rf "$work" "$work.log"
    done
  fi
else
  failed=$((failed + 1))
fi

step "pytest (interop corpus, Python package, S3 servers, fault proxy)"
junit=$(mktemp)
"$VENV/bin/python" -m pytest -q -p no:cacheprovider --junitxml="$junit" tests/python tests/interop tests/daemon \
  tests/servers/test_fault_proxy.py tests/net/test_s3_servers.py
count_junit "$junit"

# The take tests over the interop corpus, which the pytest step above has just written
# (tests/data/corpus); hidden from step 1, which runs before it exists. A small corpus has no
# multi_million file: the case that needs it ([full-corpus]) is left out and counted skipped.
step "interop corpus takes (onecopy-tests [corpus])"
corpus_spec="[corpus]"
if [ "${ONECOPY_CORPUS_SMALL:-0}" = 1 ]; then
  corpus_spec="[corpus]~[full-corpus]"
  echo "SKIP: onecopy-tests [full-corpus]: ONECOPY_CORPUS_SMALL=1, and the small corpus has no multi_million file"
  skipped=$((skipped + 1))
fi
if build/tests/onecopy-tests "$corpus_spec"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi

# Only the daemon is instrumented: the Python package keeps loading the plain build's
# libonecopy. abort_on_error turns a report into a crash as well as a log line.
step "onecopyd under ASan + UBSan (tests/daemon with ONECOPYD=build-asan/onecopyd)"
if [ "$asan_built" = 1 ]; then
  junit=$(mktemp)
  ONECOPYD=$ROOT/build-asan/onecopyd ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "$VENV/bin/python" -m pytest -q -p no:cacheprovider --junitxml="$junit" tests/daemon
  count_junit "$junit"
else
  echo "skipped: no ASan build of onecopyd (its failure is counted above)"
fi

# Two minutes of scripts/soak.sh (the 30-minute run's figures are in docs/testing.md):
# well-behaved and hostile clients against the ASan + LSan onecopyd, which must end idle and clean.
step "soak of onecopyd, 2 minutes (scripts/soak.sh --minutes 2)"
if [ "$asan_built" = 1 ] && bash scripts/soak.sh --minutes 2 --clients 8 --interval 30; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
fi

# The packages an operator installs (tests/package): the .deb made from this build, the wheel
# of `pip install .` (which compiles only what it ships), dpkg -i, onecopyd started as the
# installed unit says, a fresh venv holding only the wheel, dpkg -r and --purge.
step "packages: the .deb and the wheel, installed and used (tests/package)"
pkg_out=$(mktemp -d)
if deb=$(bash scripts/package.sh --out "$pkg_out" | tail -n 1) &&
   "$VENV/bin/pip" wheel -q --disable-pip-version-check --no-deps -w "$pkg_out" "$ROOT"; then
  junit=$(mktemp)
  ONECOPY_PACKAGE_TESTS=1 ONECOPY_DEB=$deb ONECOPY_WHEEL=$(ls "$pkg_out"/onecopy-*.whl) \
    "$VENV/bin/python" -m pytest -q -p no:cacheprovider --junitxml="$junit" tests/package
  count_junit "$junit"
else
  echo "FAILED: building the .deb or the wheel"
  failed=$((failed + 1))
fi
rm -rf "$pkg_out"

echo
echo "summary: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
