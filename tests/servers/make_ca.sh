#!/usr/bin/env bash
# make_ca.sh DIR: a throwaway test CA and a server certificate for 127.0.0.1 and localhost.
#
# Writes DIR/ca.crt, DIR/ca.key, DIR/server.crt, DIR/server.key (EC P-256) and
# DIR/server-chain.crt (server + CA). Idempotent: keeps existing files while the server
# certificate still verifies against the CA and is valid for another day.
# Prints CA_FILE=DIR/ca.crt.
set -euo pipefail

dir=${1:?usage: make_ca.sh DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
command -v openssl >/dev/null || { echo "make_ca.sh: openssl missing (apt-get install openssl)" >&2; exit 1; }

valid() {
  [ -s "$dir/ca.crt" ] && [ -s "$dir/server.crt" ] && [ -s "$dir/server.key" ] &&
    openssl verify -CAfile "$dir/ca.crt" "$dir/server.crt" >/dev/null 2>&1 &&
    openssl x509 -checkend 86400 -noout -in "$dir/server.crt" >/dev/null 2>&1
}

if ! valid; then
  umask 077
  tmp=$(mktemp -d "$dir/.make_ca.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -sha256 \
    -days 3650 -subj "/CN=onecopy test CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -keyout "$tmp/ca.key" -out "$tmp/ca.crt" 2>/dev/null
  openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -sha256 \
    -subj "/CN=localhost" -keyout "$tmp/server.key" -out "$tmp/server.csr" 2>/dev/null
  cat >"$tmp/ext.cnf" <<EXT
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost
EXT
  openssl x509 -req -in "$tmp/server.csr" -CA "$tmp/ca.crt" -CAkey "$tmp/ca.key" -CAcreateserial \
    -days 825 -sha256 -extfile "$tmp/ext.cnf" -out "$tmp/server.crt" 2>/dev/null
  cat "$tmp/server.crt" "$tmp/ca.crt" >"$tmp/server-chain.crt"
  chmod 644 "$tmp/ca.crt" "$tmp/server.crt" "$tmp/server-chain.crt"
  for f in ca.key ca.crt server.key server.crt server-chain.crt; do mv -f "$tmp/$f" "$dir/$f"; done
  valid || { echo "make_ca.sh: generated certificates do not verify" >&2; exit 1; }
fi
echo "CA_FILE=$dir/ca.crt"
