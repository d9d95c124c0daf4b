#!/usr/bin/env bash
# writer_matrix.sh [--cache DIR] [--failures FILE] [VERSION...]: the older-writer matrix.
#
# Every vortex-data release from 0.36.0 on (or the VERSIONs given) writes the small interop
# corpus (tests/interop/corpus.py's cases, 16 tables) with its default writer and, from 0.54 on,
# its compact one; onecopy then reads every column of every file and compares it with the
# pyarrow table (tests/interop/old_writers.py does both, one release at a time). Prints a table:
# release, files, columns checked, columns equal, lossy (onecopy reads what the release itself
# reads back, which is not what was written: the writer's loss), refused (onecopy's error is one
# the pinned vortex-data raises too: 0.36's nullable structs without validity, issue 19), errors
# and the first of them; every failure, loss, refusal and column the release could not write goes
# to FILE (default CACHE/failures.txt). Exits 0 when no column of any release fails.
#
# The releases are those the package index lists (yanked ones, such as 0.63.0, are not listed:
# name them). Each gets a venv under CACHE (default ~/.cache/onecopy-writer-matrix) with its wheel
# only; pyarrow and numpy come from .venv. A release whose wheel does not install here is a row
# saying why. About 10 s a release once its wheel is cached; 7.4 GB for all 66. Needs .venv and build/ from
# scripts/bootstrap.sh; tests/interop/test_old_writers.py runs four releases in CI.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${VENV:-$ROOT/.venv}
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/onecopy-writer-matrix
FAILURES=
versions=()
while [ $# -gt 0 ]; do
  case $1 in
    --cache) CACHE=$2; shift 2 ;;
    --failures) FAILURES=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "unknown argument $1 (--help)" >&2; exit 2 ;;
    *) versions+=("$1"); shift ;;
  esac
done
for need in "$VENV/bin/python" "$ROOT/build/client/libonecopy.so"; do
  [ -e "$need" ] || { echo "$need is missing: run scripts/bootstrap.sh first" >&2; exit 2; }
done

if [ ${#versions[@]} -eq 0 ]; then
  # "Available versions: 0.93.0, 0.92.0, ..." (pip index is pip's own client for the index)
  listed=$("$VENV/bin/python" -m pip index versions vortex-data 2>/dev/null | sed -n 's/^Available versions: //p')
  [ -n "$listed" ] || { echo "the package index lists no vortex-data release (offline?)" >&2; exit 2; }
  mapfile -t versions < <(tr -d ' ' <<<"$listed" | tr , '\n' | sort -V |
    awk -F. '$1 > 0 || $2 >= 36')
fi
mkdir -p "$CACHE"
echo "${#versions[@]} releases: ${versions[*]}"
exec "$VENV/bin/python" "$ROOT/tests/interop/old_writers.py" --cache "$CACHE" \
  --failures "${FAILURES:-$CACHE/failures.txt}" "${versions[@]}"
