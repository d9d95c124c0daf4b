#!/usr/bin/env bash
# swift.sh: OpenStack Swift (Debian packages) with the s3api and tempauth middlewares:
# proxy, object, container and account servers plus memcached, one replica, on 127.0.0.1.
#
#   swift.sh start STATE_DIR
#   swift.sh stop STATE_DIR
#
# Env: SWIFT_PORT (proxy, default: a free port), SWIFT_WORKERS (proxy workers, default 1).
# Test user: tempauth "test:tester" / "testing" (.admin); for S3 the access key is
# "test:tester" and the secret "testing", region us-east-1, path-style URLs only. Swift checks
# SigV4 strictly (payload hash, region). Data lives in STATE_DIR/srv/d1 (a plain directory,
# mount_check = false). Reads the packaged /etc/swift/swift.conf (hash suffix, policy 0) and
# never writes outside STATE_DIR. No TLS: put nginx.sh start-proxy in front.
set -euo pipefail
SERVER_NAME=swift
# shellcheck source=tests/servers/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { echo "usage: swift.sh start|stop STATE_DIR" >&2; exit 2; }
cmd=${1:-}; [ $# -ge 2 ] || usage
STATE=$(state_dir "$2")
DAEMONS=(proxy object container account memcached)

healthcheck() { curl -sf -o /dev/null --max-time 2 "http://127.0.0.1:$1/healthcheck"; }
healthy() {
  local d
  for d in "${DAEMONS[@]}"; do daemon_alive "$d" || return 1; done
  local ep
  ep=$(env_get S3_ENDPOINT)
  [ -n "$ep" ] && healthcheck "${ep##*:}"
}

start() {
  if healthy; then
    log "already running"
    cat "$STATE/env"
    return 0
  fi
  stop
  ensure_apt swift-proxy swift-object swift-container swift-account memcached curl python3
  [ -f /etc/swift/swift.conf ] || die "/etc/swift/swift.conf missing (it comes with the swift package)"
  rm -rf "${STATE:?}"/{etc,srv,run,log,env}
  mkdir -p "$STATE"/{etc,srv/d1,run,log}
  local port=${SWIFT_PORT:-$(free_port)} obj cont acct mc
  obj=$(free_port); cont=$(free_port); acct=$(free_port); mc=$(free_port)
  local -A seen=()
  local p
  for p in "$port" "$obj" "$cont" "$acct" "$mc"; do
    [ -z "${seen[$p]:-}" ] || die "port $p chosen twice, try again"
    seen[$p]=1
    port_busy "$p" && die "port 127.0.0.1:$p is in use"
  done

  # rings: part power 8, 1 replica, 1 device; one Python process (~1 s, swift-ring-builder: ~9 s)
  /usr/bin/python3 - "$STATE/etc" "$obj" "$cont" "$acct" <<'PY' || die "ring building failed"
import sys
from swift.common.ring import RingBuilder
etc = sys.argv[1]
for name, port in zip(("object", "container", "account"), map(int, sys.argv[2:5])):
    b = RingBuilder(8, 1, 1)
    b.add_dev({"region": 1, "zone": 1, "ip": "127.0.0.1", "port": port, "device": "d1", "weight": 100})
    b.rebalance()
    b.save(f"{etc}/{name}.builder")
    b.get_ring().save(f"{etc}/{name}.ring.gz")
PY

  # Swift logs only to syslog: send it to the UDP discard port instead of /dev/log.
  local common user
  user=$(id -un)
  common="[DEFAULT]
bind_ip = 127.0.0.1
swift_dir = $STATE/etc
devices = $STATE/srv
mount_check = false
disable_fallocate = true
user = $user
log_level = WARNING
log_udp_host = 127.0.0.1
log_udp_port = 9
"
  local kind name kport
  for kind in "object:$obj" "container:$cont" "account:$acct"; do
    name=${kind%%:*} kport=${kind##*:}
    cat >"$STATE/etc/$name-server.conf" <<CONF
$common
bind_port = $kport
workers = 0
[pipeline:main]
pipeline = $name-server
[app:$name-server]
use = egg:swift#$name
CONF
  done
  cat >"$STATE/etc/proxy-server.conf" <<CONF
$common
bind_port = $port
workers = ${SWIFT_WORKERS:-1}
[pipeline:main]
pipeline = catch_errors gatekeeper healthcheck proxy-logging cache listing_formats bulk s3api tempauth copy slo dlo proxy-logging proxy-server
[app:proxy-server]
use = egg:swift#proxy
account_autocreate = true
allow_account_management = true
[filter:s3api]
use = egg:swift#s3api
location = us-east-1
dns_compliant_bucket_names = true
max_upload_part_num = 10000
[filter:tempauth]
use = egg:swift#tempauth
user_test_tester = testing .admin
[filter:cache]
use = egg:swift#memcache
memcache_servers = 127.0.0.1:$mc
[filter:catch_errors]
use = egg:swift#catch_errors
[filter:gatekeeper]
use = egg:swift#gatekeeper
[filter:healthcheck]
use = egg:swift#healthcheck
[filter:proxy-logging]
use = egg:swift#proxy_logging
[filter:listing_formats]
use = egg:swift#listing_formats
[filter:bulk]
use = egg:swift#bulk
[filter:copy]
use = egg:swift#copy
[filter:slo]
use = egg:swift#slo
[filter:dlo]
use = egg:swift#dlo
CONF

  daemon_start memcached memcached -u "$(id -un)" -l 127.0.0.1 -p "$mc" -U 0 -m 64
  daemon_start account swift-account-server "$STATE/etc/account-server.conf"
  daemon_start container swift-container-server "$STATE/etc/container-server.conf"
  daemon_start object swift-object-server "$STATE/etc/object-server.conf"
  daemon_start proxy swift-proxy-server "$STATE/etc/proxy-server.conf"
  wait_for 30 healthcheck "$port" || { stop; die "the swift proxy did not answer on 127.0.0.1:$port within 30 s"; }
  for kport in "$obj" "$cont" "$acct" "$mc"; do
    wait_for 10 port_busy "$kport" || { stop; die "nothing listens on 127.0.0.1:$kport"; }
  done
  log "ready in $(elapsed) s"
  emit_env "S3_ENDPOINT=http://127.0.0.1:$port" "AWS_ACCESS_KEY_ID=test:tester" \
    "AWS_SECRET_ACCESS_KEY=testing" "AWS_REGION=us-east-1" \
    "SWIFT_AUTH_URL=http://127.0.0.1:$port/auth/v1.0" "SWIFT_USER=test:tester" "SWIFT_KEY=testing"
}

stop() {
  stop_all_daemons "${DAEMONS[@]}"
  rm -f "$STATE/env"
}

case $cmd in
  start) start ;;
  stop) stop; log "stopped" ;;
  *) usage ;;
esac
