#!/usr/bin/env bash
# ceph.sh: a one-host Ceph cluster (1 mon, CEPH_OSDS memstore OSDs, no mgr) with a radosgw S3
# endpoint over HTTP and HTTPS (beast's native ssl_endpoint, test CA), all on 127.0.0.1, and
# a pool `onecopy` (8 PGs, size 1, application rados, its PGs spread evenly over the OSDs) for
# librados and object-class tests.
#
#   ceph.sh start STATE_DIR
#   ceph.sh stop STATE_DIR
#   ceph.sh restart-osd STATE_DIR N   clean stop of osd.N, start again, PGs active+clean
#   ceph.sh kill-osd STATE_DIR N      SIGKILL osd.N (what it held since its last clean stop is lost)
#   ceph.sh start-osd STATE_DIR N     start osd.N again, PGs active+clean
#
# Env: CEPH_MON_PORT (msgr v2; v1 is a second port), RGW_PORT, RGW_SSL_PORT (default: free
# ports), OSD_MEM_BYTES (memstore capacity of each OSD, default 4 GiB; every byte stays in OSD
# memory), S3_ACCESS_KEY / S3_SECRET_KEY (fixed defaults below), CEPH_OSDS (default 1),
# CEPH_RGW=0 (no radosgw, no S3 env), CEPH_CLASS_DIR (the OSDs' `osd class dir`, default
# STATE_DIR/cls; the system's classes are linked into it, as radosgw needs them, and
# CEPH_CLASS_LIBS, space-separated libcls_<name>.so files, are copied into it by copy and
# rename, never rewritten in place under a running OSD). A start on a running, healthy cluster
# of the same layout only prints its env (after copying in changed class libraries and
# restarting the OSDs, which load a class once); otherwise the cluster is created from scratch
# (memstore: no data survives a stop). Daemons: STATE_DIR/run/{mon.a,osd.N,rgw}.pid, logs in
# STATE_DIR/log.
#
# Start from scratch on the 2-core machine: ~3 s for 3 OSDs with CEPH_RGW=0, 4.5-6 s with
# radosgw (~4.4 s for 1 OSD). restart-osd takes ~1 s, plus memstore's write-out (~1 s per 100 MB).
#
# Without a mgr, `ceph pg stat`, `ceph -s`'s PG line and `ceph pg ls` report nothing (PG stats
# go to the mgr): PG states are asked of each PG's primary OSD (`ceph pg PGID query`).
set -euo pipefail
SERVER_NAME=ceph
# shellcheck source=tests/servers/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
  echo "usage: ceph.sh start|stop STATE_DIR | restart-osd|kill-osd|start-osd STATE_DIR N" >&2
  exit 2
}
cmd=${1:-}; [ $# -ge 2 ] || usage
STATE=$(state_dir "$2")
CONF=$STATE/ceph.conf
KEY=${S3_ACCESS_KEY:-ONECOPYTESTKEY000001}
SECRET=${S3_SECRET_KEY:-onecopytestsecret00000000000000000000001}
OSDS=${CEPH_OSDS:-1}
RGW=${CEPH_RGW:-1}
CLS_DIR=${CEPH_CLASS_DIR:-$STATE/cls}
POOL=onecopy
export CEPH_CONF=$CONF
[[ $OSDS =~ ^[1-9][0-9]?$ ]] || { echo "CEPH_OSDS must be 1-99" >&2; exit 2; }
[[ $RGW == [01] ]] || { echo "CEPH_RGW is 0 or 1" >&2; exit 2; }
# What a running cluster must match for a start to reuse it.
LAYOUT="osds=$OSDS rgw=$RGW cls=$CLS_DIR"

ceph_() { timeout 20 ceph -c "$CONF" --connect-timeout 10 "$@"; }
mon_ok() { ceph_ -s; }
# osds_up N...: every osd.N is up in the OSD map.
osds_up() {
  local dump n
  dump=$(ceph_ osd dump 2>/dev/null) || return 1
  for n in "$@"; do grep -q "^osd\.$n up" <<<"$dump" || return 1; done
}
all_osds() { seq 0 $((OSDS - 1)); }
rgw_ok() { curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$1/"; }
# pgs_clean: every PG of every pool is active+clean, as its primary OSD reports it (one
# librados client for all the queries: a `ceph` command per PG costs ~0.4 s each).
pgs_clean() {
  timeout 30 /usr/bin/python3 - "$CONF" <<'PY'
import json, sys, rados
c = rados.Rados(conffile=sys.argv[1])
c.connect(timeout=10)
ret, out, err = c.mon_command(json.dumps({"prefix": "osd pool ls", "detail": "detail",
                                          "format": "json"}), b"", timeout=10)
assert ret == 0, err
for pool in json.loads(out):
    for pg in range(pool["pg_num"]):
        pgid = f"{pool['pool_id']}.{pg:x}"
        ret, out, err = c.pg_command(pgid, json.dumps({"prefix": "query", "pgid": pgid,
                                                       "format": "json"}), b"", timeout=10)
        state = json.loads(out)["state"] if ret == 0 else f"error {ret} {err}"
        if state != "active+clean":
            sys.exit(f"pg {pgid}: {state}")
PY
}
# balance_pool: CRUSH puts the pool's 8 PGs unevenly on a few OSDs (5/2/1 is common on 3): move
# PGs from the fullest OSD to the emptiest with pg-upmap-items (a mon command: no mgr and no
# balancer needed) until the counts differ by at most one. Run while the pool is empty.
balance_pool() {
  timeout 60 /usr/bin/python3 - "$CONF" "$POOL" <<'PY'
import json, sys, rados
c = rados.Rados(conffile=sys.argv[1])
c.connect(timeout=10)
def mon(**cmd):
    ret, out, err = c.mon_command(json.dumps(dict(cmd, format="json")), b"", timeout=10)
    if ret != 0:
        sys.exit(f"{cmd['prefix']}: {err}")
    return json.loads(out) if out else None
osds = [o["osd"] for o in mon(prefix="osd dump")["osds"]]
pool = next(p for p in mon(prefix="osd pool ls", detail="detail") if p["pool_name"] == sys.argv[2])
pgs = {f"{pool['pool_id']}.{i:x}": None for i in range(pool["pg_num"])}
for pg in pgs:
    pgs[pg] = mon(prefix="pg map", pgid=pg)["up"][0]
while True:
    load = {o: [pg for pg, at in pgs.items() if at == o] for o in osds}
    full = max(osds, key=lambda o: len(load[o]))
    empty = min(osds, key=lambda o: len(load[o]))
    if len(load[full]) - len(load[empty]) <= 1:
        break
    pg = load[full][-1]
    mon(prefix="osd pg-upmap-items", pgid=pg, id=[full, empty])
    pgs[pg] = empty
PY
}

healthy() {
  [ "$(cat "$STATE/layout" 2>/dev/null)" = "$LAYOUT" ] || return 1
  daemon_alive mon.a || return 1
  local n
  for n in $(all_osds); do daemon_alive "osd.$n" || return 1; done
  [ "$RGW" = 1 ] || return 0
  daemon_alive rgw || return 1
  local ep
  ep=$(env_get S3_ENDPOINT)
  [ -n "$ep" ] && curl -sf -o /dev/null --max-time 2 "$ep/" &&
    curl -sf -o /dev/null --max-time 2 --cacert "$STATE/tls/ca.crt" "$(env_get S3_ENDPOINT_TLS)/"
}

# osd_arg N: N is the id of one of this cluster's OSDs.
osd_arg() {
  [[ ${1:-} =~ ^[0-9]+$ ]] || usage
  [ -d "$STATE/osd/ceph-$1" ] || die "no osd.$1 in $STATE"
}

write_conf() {
  cat >"$CONF" <<CONF
# generated by tests/servers/ceph.sh
[global]
fsid = $FSID
mon host = [v2:127.0.0.1:$MON_PORT,v1:127.0.0.1:$MON_V1_PORT]
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind ipv4 = true
ms bind ipv6 = false
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
keyring = $STATE/keyring
run dir = $STATE/run
admin socket = $STATE/run/\$name.asok
log file = $STATE/log/\$name.log
log to stderr = false
err to stderr = true
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon warn on pool no redundancy = false
mon allow pool delete = true
mon max pg per osd = 1000
auth allow insecure global id reclaim = false

[mon]
mon data = $STATE/mon/ceph-\$id
# The mon refuses to start, and stops, when its filesystem's free space in whole percent is at
# most `crit`: a shared CI disk with 1% (4.6 GiB) free killed every Ceph test. A test mon's store
# is ~40 MiB, so -1 turns both checks off; a truly full disk still fails its writes.
mon data avail warn = -1
mon data avail crit = -1
# without it radosgw's first start waits ~9 s more on map proposals
paxos propose interval = 0.05
# there is no mgr on purpose; do not raise MGR_DOWN
mon mgr mkfs grace = 86400

[osd]
osd data = $STATE/osd/ceph-\$id
keyring = $STATE/osd/ceph-\$id/keyring
osd objectstore = memstore
memstore device bytes = ${OSD_MEM_BYTES:-4294967296}
# every class in it is loaded when an OSD starts (osd open classes on start): a class whose
# __cls_init crashes takes the OSD down there, not at its first call
osd class dir = $CLS_DIR
osd class load list = *
osd class default list = *
# 128 MiB (the default): scripts/bench_ceph.sh cuts lineitem into files of at most 64 MiB
osd max object size = 134217728
# memstore writes its contents out only on a clean stop
osd fast shutdown = false

[client.rgw.gw]
keyring = $STATE/rgw.keyring
rgw thread pool size = 64
rgw frontends = beast endpoint=127.0.0.1:$RGW_PORT ssl_endpoint=127.0.0.1:$RGW_SSL_PORT ssl_certificate=$STATE/tls/server-chain.crt ssl_private_key=$STATE/tls/server.key
rgw dns name = localhost
rgw enable usage log = false
CONF
}

# setup_classes: the class dir holds links to the system's classes (radosgw's cls_rgw and
# others) and copies of CEPH_CLASS_LIBS. Prints the names of libraries that replaced an older
# copy: an OSD dlopen()s a class once, so those need an OSD restart.
setup_classes() {
  local f dst
  mkdir -p "$CLS_DIR"
  for f in /usr/lib/*/rados-classes/libcls_*.so; do
    dst=$CLS_DIR/$(basename "$f")
    [ -e "$dst" ] || ln -sfn "$f" "$dst"
  done
  for f in ${CEPH_CLASS_LIBS:-}; do
    [ -f "$f" ] || die "CEPH_CLASS_LIBS: no file $f"
    dst=$CLS_DIR/$(basename "$f")
    [[ $(basename "$f") == libcls_*.so ]] || die "CEPH_CLASS_LIBS: $f is not named libcls_<name>.so"
    if [ -e "$dst" ] && cmp -s "$f" "$dst"; then continue; fi
    [ -e "$dst" ] && basename "$f"
    # Copy and rename: a running OSD has the old file mapped, and rewriting it in place would
    # change the code under it.
    cp -f "$f" "$dst.tmp.$$" && mv -f "$dst.tmp.$$" "$dst"
  done
}

# osd_kill N: SIGKILL to osd.N's process group (only one started from this STATE dir), as a
# crash would: memstore keeps what it wrote out at its last clean stop.
osd_kill() {
  local pf=$STATE/run/osd.$1.pid pid i
  [ -f "$pf" ] || return 0
  pid=$(cat "$pf")
  if group_alive "$pid" && [ "$(ps -o sid= -p "$pid" 2>/dev/null | tr -d ' ')" = "$pid" ]; then
    kill -KILL -- "-$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do group_alive "$pid" || break; sleep 0.1; done
  fi
  rm -f "$pf"
}

# osd_start N: start osd.N from its data dir.
osd_start() { daemon_start "osd.$1" ceph-osd -c "$CONF" -f -i "$1"; }

# osd_stop_clean N: SIGTERM, and time for memstore to write its contents out (they are read
# back by the next start only after a clean stop).
osd_stop_clean() { daemon_stop "osd.$1" 300; }

# wait_osd_back N: osd.N up again and every PG active+clean.
wait_osd_back() {
  wait_for 60 osds_up "$1" || die "osd.$1 did not come up"
  wait_for 60 pgs_clean || die "PGs not active+clean 60 s after osd.$1 came up"
}

add_osd() {
  local n=$1 uuid secret id
  mkdir -p "$STATE/osd/ceph-$n"
  uuid=$(uuidgen)
  secret=$(ceph-authtool --gen-print-key)
  id=$(echo "{\"cephx_secret\": \"$secret\"}" | ceph_ osd new "$uuid" -i -) || { stop; die "osd new failed"; }
  [ "$id" = "$n" ] || { stop; die "unexpected OSD id '$id' (wanted $n)"; }
  ceph-osd -c "$CONF" -i "$n" --mkfs --osd-uuid "$uuid" --key "$secret" \
    >"$STATE/log/osd.$n.mkfs.log" 2>&1 || { stop; die "ceph-osd --mkfs failed for osd.$n"; }
  # --mkfs does not write the OSD's keyring: write it ourselves
  ceph-authtool --create-keyring "$STATE/osd/ceph-$n/keyring" -n "osd.$n" --add-key "$secret" >/dev/null
  osd_start "$n"
}

start() {
  if [ -f "$CONF" ] && healthy; then
    local changed n
    changed=$(setup_classes)
    if [ -n "$changed" ]; then
      log "class libraries changed ($changed): restarting the OSDs"
      for n in $(all_osds); do osd_stop_clean "$n"; osd_start "$n"; wait_osd_back "$n"; done
    fi
    log "already running"
    cat "$STATE/env"
    return 0
  fi
  stop
  local pkgs=(ceph-mon ceph-osd ceph-common uuid-runtime curl openssl)
  [ "$RGW" = 0 ] || pkgs+=(radosgw)
  ensure_apt "${pkgs[@]}"
  rm -rf "${STATE:?}"/{mon,osd,run,log,keyring,rgw.keyring,monmap,env,ceph.conf,layout}
  [ "$CLS_DIR" != "$STATE/cls" ] || rm -rf "${STATE:?}/cls"
  mkdir -p "$STATE"/{run,log,mon,osd}
  setup_classes >/dev/null
  [ "$RGW" = 0 ] || bash "$SERVERS_DIR/make_ca.sh" "$STATE/tls" >/dev/null
  MON_PORT=${CEPH_MON_PORT:-$(free_port)}
  MON_V1_PORT=$(free_port)
  RGW_PORT=${RGW_PORT:-$(free_port)}
  RGW_SSL_PORT=${RGW_SSL_PORT:-$(free_port)}
  local -A seen=()
  local p
  for p in "$MON_PORT" "$MON_V1_PORT" "$RGW_PORT" "$RGW_SSL_PORT"; do
    [ -z "${seen[$p]:-}" ] || die "port $p chosen twice; set CEPH_MON_PORT/RGW_PORT/RGW_SSL_PORT"
    seen[$p]=1
    port_busy "$p" && die "port 127.0.0.1:$p is in use"
  done
  FSID=$(uuidgen)
  write_conf

  ceph-authtool --create-keyring "$STATE/keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
  ceph-authtool "$STATE/keyring" --gen-key -n client.admin \
    --cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *' --cap mds 'allow *' >/dev/null
  monmaptool --create --fsid "$FSID" --addv a "[v2:127.0.0.1:$MON_PORT,v1:127.0.0.1:$MON_V1_PORT]" \
    "$STATE/monmap" >/dev/null
  ceph-mon -c "$CONF" --mkfs -i a --monmap "$STATE/monmap" --keyring "$STATE/keyring" \
    >"$STATE/log/mon.mkfs.log" 2>&1 || die "ceph-mon --mkfs failed"
  daemon_start mon.a ceph-mon -c "$CONF" -f -i a
  wait_for 30 mon_ok || { stop; die "the monitor did not come up"; }
  log "mon up"

  local n
  for n in $(all_osds); do add_osd "$n"; done
  # shellcheck disable=SC2046
  wait_for 60 osds_up $(all_osds) || { stop; die "the OSDs did not come up"; }
  log "$OSDS osd(s) up"

  if ! { ceph_ osd pool create "$POOL" 8 8 replicated &&
    ceph_ osd pool set "$POOL" size 1 --yes-i-really-mean-it &&
    ceph_ osd pool application enable "$POOL" rados; } >>"$STATE/log/pool.log" 2>&1; then
    stop
    die "creating pool $POOL failed"
  fi
  if [ "$OSDS" -gt 1 ]; then
    balance_pool 2>>"$STATE/log/pool.log" || { stop; die "balancing pool $POOL failed"; }
  fi
  wait_for 60 pgs_clean || { stop; die "the PGs of pool $POOL are not active+clean"; }
  log "pool $POOL active+clean"

  local env=("CEPH_CONF=$CONF" "CEPH_KEYRING=$STATE/keyring" "ONECOPY_TEST_RADOS_POOL=$POOL"
    "CEPH_CLASS_DIR=$CLS_DIR" "CEPH_OSDS=$OSDS")
  if [ "$RGW" = 1 ]; then
    start_rgw
    env=("S3_ENDPOINT=http://127.0.0.1:$RGW_PORT" "S3_ENDPOINT_TLS=https://127.0.0.1:$RGW_SSL_PORT"
      "CA_FILE=$STATE/tls/ca.crt" "AWS_ACCESS_KEY_ID=$KEY" "AWS_SECRET_ACCESS_KEY=$SECRET"
      "AWS_REGION=us-east-1" "${env[@]}")
  fi
  echo "$LAYOUT" >"$STATE/layout"
  log "ready in $(elapsed) s"
  emit_env "${env[@]}"
}

start_rgw() {
  ceph_ auth get-or-create client.rgw.gw mon 'allow rw' osd 'allow rwx' mgr 'allow rw' \
    -o "$STATE/rgw.keyring" >/dev/null || { stop; die "auth get-or-create client.rgw.gw failed"; }
  daemon_start rgw radosgw -c "$CONF" -f -n client.rgw.gw
  wait_for 90 rgw_ok "$RGW_PORT" || { stop; die "radosgw did not answer on 127.0.0.1:$RGW_PORT"; }
  log "radosgw up"
  # radosgw-admin hangs forever when PGs are unavailable: always under timeout
  timeout 60 radosgw-admin -c "$CONF" -n client.admin user create --uid=onecopy \
    --display-name="onecopy tests" --access-key="$KEY" --secret-key="$SECRET" \
    >"$STATE/log/user-create.log" 2>&1 || { stop; die "radosgw-admin user create failed"; }
  curl -sf -o /dev/null --max-time 5 --cacert "$STATE/tls/ca.crt" "https://127.0.0.1:$RGW_SSL_PORT/" ||
    { stop; die "radosgw HTTPS endpoint does not answer"; }
}

stop() {
  # radosgw first: it hangs on SIGTERM once the OSDs are gone. The OSDs get no time to write
  # memstore out: a start makes a new cluster, so nothing would read it.
  daemon_stop rgw
  local pf
  for pf in "$STATE"/run/osd.*.pid; do
    [ -f "$pf" ] || continue
    pf=$(basename "$pf" .pid)
    osd_kill "${pf#osd.}"
  done
  stop_all_daemons mon.a
  rm -f "$STATE/env" "$STATE/layout"
}

case $cmd in
  start) start ;;
  stop) stop; log "stopped" ;;
  restart-osd)
    osd_arg "${3:-}"
    osd_stop_clean "$3"
    osd_start "$3"
    wait_osd_back "$3"
    log "osd.$3 restarted in $(elapsed) s"
    ;;
  kill-osd)
    osd_arg "${3:-}"
    osd_kill "$3"
    # Without peers to report it, the mon would take 15 min to notice: the map says so now.
    ceph_ osd down "osd.$3" >/dev/null || die "ceph osd down osd.$3 failed"
    log "osd.$3 killed and marked down"
    ;;
  start-osd)
    osd_arg "${3:-}"
    daemon_alive "osd.$3" && die "osd.$3 is running"
    osd_start "$3"
    wait_osd_back "$3"
    log "osd.$3 up in $(elapsed) s"
    ;;
  *) usage ;;
esac
