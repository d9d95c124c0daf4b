#!/usr/bin/env bash
# The main job: trains an example model on a Vortex dataset served by onecopyd.
#
#   scripts/run.sh [-h] [DATASET ...] [OPTIONS]    (scripts/run.sh --help lists the options)
#
# DATASET, anywhere among the options, is a directory, glob or file of Vortex files, or
# s3://bucket/prefix/ (with the usual AWS_* variables; AWS_ENDPOINT_URL for S3-compatible
# stores). Without one it uses a sample dataset (token sequences, a label and a quality score)
# written with vortex-data on first use. onecopyd runs in the foreground of this script on a
# private socket and stops at the end; it lists, opens and decodes the files, and the training
# process gets its batches from it. The last line says samples/s and whether the loader or the
# model bound the run.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# The command line is train_example.py's, parsed by its own argparse before anything is installed
# or built: the system python3 runs it, as the module imports nothing else before main() runs.
# Prints the datasets, one a line; usage and exit 2 on a bad command line.
parse() {
  python3 -B -c 'import sys; sys.path.insert(0, sys.argv[1]); from train_example import parse_args
print("\n".join(parse_args(sys.argv[2:], run_sh=True).urls))' "$ROOT/scripts" "$@"
}
for arg; do
  if [[ $arg == -h || $arg == --help ]]; then
    parse --help
    exit 0
  fi
done
parsed=$(parse "$@")
datasets=()
[ -z "$parsed" ] || mapfile -t datasets <<<"$parsed"

source "$ROOT/scripts/bootstrap.sh"

if [ ${#datasets[@]} -eq 0 ]; then
  sample=$ROOT/scripts/.sample/tokens
  if ! compgen -G "$sample/*.vortex" >/dev/null; then
    echo "writing the sample dataset to $sample with vortex-data" >&2
    "$VENV/bin/python" "$ROOT/scripts/make_sample.py" "$sample"
  fi
  datasets=("$sample")
  set -- "$@" "$sample"
fi

if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  echo "GPU: $(nvidia-smi -L | head -n1); the example model trains on the CPU"
else
  echo "GPU: none; the example model trains on the CPU"
fi

run=$(mktemp -d)
sock=$run/onecopyd.sock
# onecopyd grants no S3 prefix to any client by default: this run grants its user the dataset
# (its s3:// URLs as train_example.py spells them: a bucket or prefix ends in '/').
prefixes=()
for url in "${datasets[@]}"; do
  if [[ $url == s3://* ]]; then prefixes+=("$url"); fi
done
if [ ${#prefixes[@]} -gt 0 ]; then
  printf 'daemon_s3_grants = "uid=%s: %s"\n' "$(id -u)" "${prefixes[*]}" >"$run/onecopyd.toml"
else
  : >"$run/onecopyd.toml"
fi
"$BUILD_DIR/onecopyd" --config "$run/onecopyd.toml" --socket "$sock" 2>"$run/onecopyd.log" &
daemon=$!
stop_daemon() {
  if kill -0 "$daemon" 2>/dev/null; then
    kill -TERM "$daemon" && wait "$daemon" || true
  fi
  rm -rf "$run"
}
trap stop_daemon EXIT
for _ in $(seq 100); do
  [ -S "$sock" ] && "$BUILD_DIR/client/onecopy" status --socket "$sock" >/dev/null 2>&1 && break
  kill -0 "$daemon" 2>/dev/null || { cat "$run/onecopyd.log" >&2; exit 1; }
  sleep 0.1
done
echo "onecopyd: pid $daemon, socket $sock"

"$VENV/bin/python" "$ROOT/scripts/train_example.py" "$@" --socket "$sock"
