#!/usr/bin/env bash
# bench_ceph.sh: a filtered scan pushed into the Ceph OSDs (RADOS object class `onecopy`)
# against the same scan done by the client, over librados and over radosgw's S3.
#
#   scripts/bench_ceph.sh [--sf 0.1] [--osds 1,3] [--files 16] [--column l_partkey] [--repeat 3]
#
# Data: TPC-H lineitem at scale factor --sf from tpchgen-cli (build/bench-data/sf<SF>, shared
# with scripts/bench_format.py), cut into --files Vortex files of consecutive rows by
# vortex-data's default writer (scripts/.bench/ceph-data/sf<SF>-<FILES>, kept and reused), each
# at most 64 MiB so that it is one RADOS object (`osd max object size` is 128 MiB; SF 1 in 8
# files is 8 x 21 MiB, in 16 about 11 MiB each). They are
# stored as objects lineitem-sf<SF>-<FILES>/part-NNN.vortex in the pool `onecopy` and in the
# bucket `bench` of a cluster from tests/servers/ceph.sh (memstore OSDs, radosgw, the build's
# libcls_onecopy.so in the class dir), started here for each OSD count of --osds and stopped.
# The pool has 8 PGs, which CRUSH spreads unevenly: how many objects each OSD holds is printed.
#
# The query: `onecopy scan URL --columns l_extendedprice,l_discount --filter '<col> <= v'` at
# 100%, 10%, 1% and 0.1% of the rows (v read from the data, the exact counts printed and every
# answer's count checked), three ways:
#   (a) rados://onecopy/<prefix>/*: the scan pushed into the OSDs through the class;
#   (b) the same with ONECOPY_RADOS_PUSHDOWN=off: onecopy reads the objects through librados;
#   (c) s3://bench/<prefix>/*: onecopy reads them through radosgw.
# l_partkey by default: its values are spread over every file and zone, so zone maps prune
# nothing and the filter does the work; `--column l_orderkey` (sorted) shows the case where
# client-side zone-map pruning already skips most bytes. The CLI prints little: `--format
# count` where it has one, else `--explain` (its "rows delivered:" line); a glob URL where the
# CLI takes one, else one process per file for every way alike (printed).
#
# Reported, medians of --repeat runs after one untimed run per way: wall seconds and client CPU
# seconds of the CLI process(es), CPU seconds of the OSDs and of radosgw, bytes the OSDs sent in
# replies to client ops (`op_out_bytes` from each OSD's admin socket: read data and class results)
# and bytes radosgw served over HTTP (`get_b`); a Markdown table with ratios against (b). Exit 1
# when an answer has the wrong row count. Details in scripts/bench/ceph_bench.py.
#
# The run in docs/benchmarks.md: scripts/bench_ceph.sh --sf 1
# Env: ONECOPY_BUILD_DIR (default build/, built by scripts/bootstrap.sh when missing),
#      ONECOPY_CLS_LIB (default BUILD/format/cls/libcls_onecopy.so; without it (a) measures
#      whatever the client does when the OSDs have no class onecopy), ONECOPY_VENV,
#      BENCH_KEEP_SERVER=1 (leave the last cluster running).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SERVER_NAME=bench_ceph
SF=0.1 OSD_COUNTS=1,3 FILES=16 COLUMN=l_partkey REPEAT=3
while [ $# -gt 0 ]; do
  case $1 in
    --sf) SF=$2; shift 2 ;;
    --osds) OSD_COUNTS=$2; shift 2 ;;
    --files) FILES=$2; shift 2 ;;
    --column) COLUMN=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
done
REPRODUCE="scripts/bench_ceph.sh --sf $SF --osds $OSD_COUNTS --files $FILES --column $COLUMN --repeat $REPEAT"

# shellcheck source=scripts/bench/bench_env.sh
source "$ROOT/scripts/bench/bench_env.sh"
trap bench_cleanup EXIT
bench_build
CLS_LIB=${ONECOPY_CLS_LIB:-$BUILD_DIR/format/cls/libcls_onecopy.so}
if [ -f "$CLS_LIB" ]; then
  export CEPH_CLASS_LIBS=$CLS_LIB
else
  log "WARNING: $CLS_LIB is not built: the OSDs have no class onecopy, (a) is not a pushdown"
fi

BENCH=$ROOT/scripts/.bench
RESULTS=$BENCH_TMP/results.jsonl
# memstore keeps every object in OSD memory, the files twice (RADOS and S3): room for that on
# any one OSD (SF 1 is ~180 MB of Vortex files).
MEM=$(awk -v s="$SF" 'BEGIN { printf "%d", (s * 0.5 + 1) * 2^30 }')
IFS=, read -ra counts <<<"$OSD_COUNTS"
for n in "${counts[@]}"; do
  [ -z "$BENCH_SERVER_STATE" ] || bash "$ROOT/tests/servers/ceph.sh" stop "$BENCH_SERVER_STATE" >/dev/null
  CEPH_OSDS=$n bench_server ceph "$BENCH/ceph-$n" "$MEM"
  export CEPH_CONF=$BENCH_SERVER_STATE/ceph.conf
  "$PY" "$ROOT/scripts/bench/ceph_bench.py" run --state "$BENCH_SERVER_STATE" --osds "$n" --sf "$SF" \
    --files "$FILES" --column "$COLUMN" --repeat "$REPEAT" --onecopy "$ONECOPY_CLI" --out "$RESULTS"
done
rc=0
"$PY" "$ROOT/scripts/bench/ceph_bench.py" report "$RESULTS" || rc=$?
printf '\nReproduce: %s\n' "$REPRODUCE"
exit $rc
