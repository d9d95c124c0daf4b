#!/usr/bin/env bash
# The main job: trains an example model on a Vortex dataset served by onecopyd.
#
#   scripts/run.sh [DATASET] [scripts/train_example.py options]
#
# DATASET is a directory, glob or file of Vortex files, or s3://bucket/prefix/ (with the usual
# AWS_* variables; AWS_ENDPOINT_URL for S3-compatible stores). Without one it uses a sample
# dataset (token sequences, a label and a quality score) written with vortex-data on first use.
# onecopyd runs in the foreground of this script on a private socket and stops at the end; it
# lists, opens and decodes the files, and the training process gets its batches from it.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ROOT/scripts/bootstrap.sh"

dataset=${1:-}
[ $# -gt 0 ] && shift
if [ -z "$dataset" ]; then
  dataset=$ROOT/scripts/.sample/tokens
  if ! compgen -G "$dataset/*.vortex" >/dev/null; then
    echo "writing the sample dataset to $dataset with vortex-data" >&2
    "$VENV/bin/python" "$ROOT/scripts/make_sample.py" "$dataset"
  fi
fi

# An S3 bucket or prefix means every .vortex object under it; the daemon lists and reads it.
[[ $dataset == s3://* && $dataset != */ && $dataset != *.vortex ]] && dataset=$dataset/

if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  echo "GPU: $(nvidia-smi -L | head -n1); this version decodes on the CPU and delivers host memory"
else
  echo "GPU: none; decoding on the CPU"
fi

run=$(mktemp -d)
sock=$run/onecopyd.sock
# onecopyd grants no S3 prefix to any client by default: this run grants its user the dataset.
if [[ $dataset == s3://* ]]; then
  printf 'daemon_s3_grants = "uid=%s: %s"\n' "$(id -u)" "$dataset" >"$run/onecopyd.toml"
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

"$VENV/bin/python" "$ROOT/scripts/train_example.py" "$dataset" --socket "$sock" "$@"
echo
echo "== onecopy status"
"$BUILD_DIR/client/onecopy" status --socket "$sock"
