# shellcheck shell=bash
# Helpers shared by the server scripts in tests/servers/ (sourced, not run).
#
# Conventions: every file a server writes lives under its STATE_DIR; each daemon runs under
# setsid (its own session and process group, pgid == pid) with STATE_DIR/run/NAME.pid, so
# `stop` can signal the whole group (workers included) and check that nothing is left.

SERVERS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$SERVERS_DIR/../.." && pwd)
VENV=${ONECOPY_VENV:-$ROOT/.venv}

_t0=$(date +%s.%N)
elapsed() { awk -v a="$_t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }
log() { printf '[%s %6ss] %s\n' "${SERVER_NAME:-server}" "$(elapsed)" "$*" >&2; }

# die MSG: print MSG and the tail of every log in $STATE/log, then exit 1.
die() {
  log "ERROR: $*"
  local f
  for f in "${STATE:-/nonexistent}"/log/*; do
    [ -f "$f" ] || continue
    printf '==> %s (last 20 lines) <==\n' "$f" >&2
    tail -n 20 "$f" >&2
  done
  exit 1
}

# ensure_apt PKG...: install missing Debian packages (no recommends, services not started).
ensure_apt() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing apt packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  # Packaged services (nginx, memcached, ceph, swift) must not start on the system: a
  # policy-rc.d that denies every start, only while we install, unless one is already there.
  local policy=/usr/sbin/policy-rc.d created=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
    $sudo chmod 755 "$policy"
    created=1
  fi
  local rc=0
  $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq || rc=$?
  if [ $rc -eq 0 ]; then
    DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
      --no-install-recommends "${missing[@]}" >/dev/null || rc=$?
  fi
  [ $created -eq 1 ] && $sudo rm -f "$policy"
  [ $rc -eq 0 ] || { log "ERROR: apt-get install ${missing[*]} failed"; exit 1; }
}

# ensure_venv: the project's .venv with requirements.txt and requirements-nodeps.txt installed
# (same steps and stamp as scripts/bootstrap.sh, without building the project).
ensure_venv() {
  local stamp=$VENV/.requirements.sha256 want
  want=$(cat "$ROOT/requirements.txt" "$ROOT/requirements-nodeps.txt" | sha256sum | cut -d' ' -f1)
  if [ ! -x "$VENV/bin/python" ]; then
    ensure_apt python3 python3-venv
    log "creating $VENV"
    /usr/bin/python3 -m venv --system-site-packages "$VENV"
  fi
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    log "installing Python requirements into $VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check -r "$ROOT/requirements.txt"
    "$VENV/bin/pip" install -q --disable-pip-version-check --no-deps -r "$ROOT/requirements-nodeps.txt"
    echo "$want" >"$stamp"
  fi
}

# free_port: a TCP port on 127.0.0.1 that nothing listens on right now.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# port_busy PORT: something listens on 127.0.0.1:PORT.
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# wait_for SECONDS CMD...: poll CMD every 0.1 s until it succeeds; 1 on timeout.
wait_for() {
  local end
  end=$(awk -v s="$1" -v n="$(date +%s.%N)" 'BEGIN { printf "%.3f", n + s }')
  shift
  while :; do
    "$@" >/dev/null 2>&1 && return 0
    awk -v e="$end" -v n="$(date +%s.%N)" 'BEGIN { exit !(n > e) }' && return 1
    sleep 0.1
  done
}

# alive PID: running and not a zombie.
alive() {
  local st
  st=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [[ $st != Z* ]]
}

# group_alive PGID: any live process in that process group.
group_alive() {
  local p
  for p in $(pgrep -g "$1" 2>/dev/null); do alive "$p" && return 0; done
  return 1
}

# daemon_start NAME CMD...: run CMD in its own session, logs to $STATE/log/NAME.log.
daemon_start() {
  local name=$1
  shift
  mkdir -p "$STATE/run" "$STATE/log"
  setsid "$@" </dev/null >>"$STATE/log/$name.log" 2>&1 &
  echo $! >"$STATE/run/$name.pid"
}

# daemon_alive NAME
daemon_alive() {
  local pf=$STATE/run/$1.pid
  [ -f "$pf" ] && alive "$(cat "$pf")"
}

# daemon_stop NAME [SECONDS]: SIGTERM to the daemon's process group, wait (default 20 s),
# then SIGKILL. Only touches a group whose leader was started from this STATE dir.
daemon_stop() {
  local name=$1 secs=${2:-20} pf=$STATE/run/$1.pid pid i
  [ -f "$pf" ] || return 0
  pid=$(cat "$pf")
  if group_alive "$pid"; then
    if [ "$(ps -o sid= -p "$pid" 2>/dev/null | tr -d ' ')" = "$pid" ] || ! alive "$pid"; then
      kill -TERM -- "-$pid" 2>/dev/null || true
      for ((i = 0; i < secs * 10; i++)); do group_alive "$pid" || break; sleep 0.1; done
      if group_alive "$pid"; then
        log "$name (pgid $pid) ignored SIGTERM for ${secs}s: SIGKILL"
        kill -KILL -- "-$pid" 2>/dev/null || true
        for ((i = 0; i < 50; i++)); do group_alive "$pid" || break; sleep 0.1; done
      fi
    fi
  fi
  group_alive "$pid" && log "WARNING: processes of $name (pgid $pid) are still alive"
  rm -f "$pf"
}

# stop_all_daemons NAME...: in the order given, then any other pid file left in $STATE/run.
stop_all_daemons() {
  local n pf
  for n in "$@"; do daemon_stop "$n"; done
  for pf in "$STATE"/run/*.pid; do
    [ -f "$pf" ] || continue
    n=$(basename "$pf" .pid)
    daemon_stop "$n"
  done
}

# emit_env KEY=VALUE...: write $STATE/env and print the same lines to stdout.
emit_env() {
  printf '%s\n' "$@" >"$STATE/env.tmp"
  mv "$STATE/env.tmp" "$STATE/env"
  cat "$STATE/env"
}

# env_get KEY: a value from $STATE/env.
env_get() { sed -n "s/^$1=//p" "$STATE/env" 2>/dev/null | tail -n 1; }

# state_dir DIR: absolute path, created.
state_dir() {
  [ -n "${1:-}" ] || { echo "STATE_DIR required" >&2; exit 2; }
  mkdir -p "$1"
  (cd "$1" && pwd)
}
