#!/usr/bin/env bash
# moto.sh: moto's S3 server (PyPI moto[server], pinned in requirements.txt) on loopback.
#
#   moto.sh start STATE_DIR     [MOTO_TLS=1: also an HTTPS front, nginx.sh start-proxy]
#   moto.sh stop STATE_DIR
#
# Env: MOTO_PORT (default: a free port), MOTO_TLS=1, NGINX_HTTPS_PORT (the TLS front).
# Any access key is accepted (signatures are not verified by default); the fixed test keys
# are printed. Region us-east-1, path-style URLs. State is in memory: a restart loses it.
set -euo pipefail
SERVER_NAME=moto
# shellcheck source=tests/servers/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { echo "usage: moto.sh start|stop STATE_DIR" >&2; exit 2; }
cmd=${1:-}; [ $# -ge 2 ] || usage
STATE=$(state_dir "$2")
KEY=onecopytest SECRET=onecopytestsecret

answers() { curl -sf -o /dev/null --max-time 2 "$1/moto-api/data.json"; }

start() {
  local tls=${MOTO_TLS:-0}
  if daemon_alive moto && [ -n "$(env_get S3_ENDPOINT)" ] && answers "$(env_get S3_ENDPOINT)" &&
     { [ "$tls" != 1 ] || [ -n "$(env_get S3_ENDPOINT_TLS)" ]; }; then
    log "already running"
    cat "$STATE/env"
    return 0
  fi
  stop
  ensure_apt curl python3 python3-venv
  [ -x "$VENV/bin/moto_server" ] || ensure_venv
  [ -x "$VENV/bin/moto_server" ] || ensure_venv
  mkdir -p "$STATE"/{run,log}
  local port=${MOTO_PORT:-$(free_port)}
  port_busy "$port" && die "port 127.0.0.1:$port is in use"
  # TEST_SERVER_MODE-like settings: fixed region, no outbound calls.
  AWS_DEFAULT_REGION=us-east-1 AWS_ACCESS_KEY_ID=$KEY AWS_SECRET_ACCESS_KEY=$SECRET \
    daemon_start moto "$VENV/bin/moto_server" -H 127.0.0.1 -p "$port"
  wait_for 30 answers "http://127.0.0.1:$port" ||
    { stop_all_daemons moto; die "moto did not answer on 127.0.0.1:$port within 30 s"; }
  log "moto ready in $(elapsed) s"
  local lines=("S3_ENDPOINT=http://127.0.0.1:$port")
  if [ "$tls" = 1 ]; then
    local out
    out=$(bash "$SERVERS_DIR/nginx.sh" start-proxy "$STATE/tls-front" "http://127.0.0.1:$port") ||
      { stop; die "the nginx TLS front did not start"; }
    lines+=("$(grep '^S3_ENDPOINT_TLS=' <<<"$out")" "$(grep '^CA_FILE=' <<<"$out")")
  fi
  lines+=("AWS_ACCESS_KEY_ID=$KEY" "AWS_SECRET_ACCESS_KEY=$SECRET" "AWS_REGION=us-east-1"
          "MOTO_PID=$(cat "$STATE/run/moto.pid")")
  emit_env "${lines[@]}"
}

stop() {
  [ -d "$STATE/tls-front" ] && bash "$SERVERS_DIR/nginx.sh" stop "$STATE/tls-front" 2>/dev/null
  stop_all_daemons moto
  rm -f "$STATE/env"
}

case $cmd in
  start) start ;;
  stop) stop; log "stopped" ;;
  *) usage ;;
esac
