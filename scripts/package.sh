#!/usr/bin/env bash
# Builds the Debian package onecopy_<version>_<arch>.deb from the Meson build (the one
# scripts/bootstrap.sh makes, and CI already has): onecopyd in /usr/sbin, onecopy in /usr/bin,
# libonecopy.so in /usr/lib/<triplet>, the units, sysusers.d and tmpfiles.d entries, and the
# conffiles /etc/onecopy/onecopyd.toml (every knob commented out with its default) and
# /etc/onecopy/credentials.env (mode 0600). The version is meson.build's.
#
#   scripts/package.sh [--out DIR]     (default DIR: $BUILD_DIR/pkg)
#
# The package enables nothing: the operator puts the credentials in place and runs
# `systemctl enable --now onecopyd.socket` (docs/operations.md). The Python package
# is the wheel of `pip install .` (pyproject.toml).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    -h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "package.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
source "$ROOT/scripts/bootstrap.sh"
out=${out:-$BUILD_DIR/pkg}

# The package's paths are the system's: a build configured for another prefix is reconfigured
# (Meson then rebuilds only what names the paths).
prefix=$(meson introspect --buildoptions "$BUILD_DIR" |
  "$VENV/bin/python" -c 'import json, sys; print({o["name"]: o["value"] for o in json.load(sys.stdin)}["prefix"])')
if [ "$prefix" != /usr ]; then
  log "reconfiguring $BUILD_DIR for --prefix=/usr (was $prefix)"
  meson configure "$BUILD_DIR" -Dprefix=/usr -Dsysconfdir=/etc -Dlocalstatedir=/var >/dev/null
  build
fi
version=$(meson introspect --projectinfo "$BUILD_DIR" |
  "$VENV/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["version"])')
arch=$(dpkg --print-architecture)

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/root
# runtime: the programs and the library; service: units, sysusers, tmpfiles, /etc/onecopy.
meson install -C "$BUILD_DIR" --no-rebuild --destdir "$root" --tags runtime,service >/dev/null
for f in "$root"/usr/sbin/onecopyd "$root"/usr/bin/onecopy "$root"/usr/lib/*/libonecopy.so; do
  [ -f "$f" ] || { echo "package.sh: $f was not installed" >&2; exit 1; }
  strip --strip-unneeded "$f"
done
install -d "$root/usr/share/doc/onecopy"
{
  echo "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
  echo "Upstream-Name: onecopy"
  echo
  echo "Files: *"
  echo "Copyright: the onecopy developers"
  echo "License: Apache-2.0"
  echo " On Debian systems the full text of the Apache License 2.0 is in"
  echo " /usr/share/common-licenses/Apache-2.0."
} >"$root/usr/share/doc/onecopy/copyright"

# Depends: the shared libraries the binaries link, as dpkg-shlibdeps finds their packages (it
# wants a debian/control beside it, which names the package and nothing else).
mkdir -p "$stage/src/debian"
printf 'Source: onecopy\n\nPackage: onecopy\nArchitecture: any\n' >"$stage/src/debian/control"
depends=$(cd "$stage/src" && dpkg-shlibdeps -O -e"$root/usr/sbin/onecopyd" -e"$root/usr/bin/onecopy" \
  -e"$(echo "$root"/usr/lib/*/libonecopy.so)" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "package.sh: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

install -d -m 0755 "$root/DEBIAN"
installed_kib=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<EOF
Package: onecopy
Version: $version
Architecture: $arch
Maintainer: onecopy developers <onecopy@localhost>
Depends: $depends, systemd
Section: net
Priority: optional
Installed-Size: $installed_kib
Description: node daemon that feeds GPUs from Vortex files in object storage
 onecopyd reads Vortex files from local disks, S3 and Ceph RADOS with its own
 io_uring HTTP/1.1 and TLS client, prunes and decodes them, and hands the
 batches to every training process of the node over a Unix socket, without
 copying. The package holds onecopyd with its systemd units, the onecopy
 command and libonecopy.so; the Python package is the onecopy wheel.
EOF
printf '/etc/onecopy/onecopyd.toml\n/etc/onecopy/credentials.env\n' >"$root/DEBIAN/conffiles"

cat >"$root/DEBIAN/postinst" <<'EOF'
#!/bin/sh
# Makes the onecopy user and its directories; starts and enables nothing (docs/operations.md).
set -e
if [ "$1" = configure ]; then
  systemd-sysusers /usr/lib/sysusers.d/onecopy.conf
  systemd-tmpfiles --create /usr/lib/tmpfiles.d/onecopy.conf
  # Secrets: whatever dpkg did to a kept conffile, the credentials stay root's alone.
  chown root:root /etc/onecopy/credentials.env
  chmod 0600 /etc/onecopy/credentials.env
  if [ -d /run/systemd/system ]; then
    systemctl daemon-reload || true
  fi
fi
EOF
cat >"$root/DEBIAN/prerm" <<'EOF'
#!/bin/sh
# A removed package leaves no daemon running from deleted files.
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
  systemctl stop onecopyd.socket onecopyd.service || true
fi
EOF
cat >"$root/DEBIAN/postrm" <<'EOF'
#!/bin/sh
# purge also removes onecopyd's state and runtime directories (the user stays, as Debian's
# policy keeps system users: files elsewhere may still belong to it).
set -e
if [ "$1" = purge ]; then
  rm -rf /var/lib/onecopy /run/onecopy
fi
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload || true
fi
EOF
chmod 0755 "$root/DEBIAN/postinst" "$root/DEBIAN/prerm" "$root/DEBIAN/postrm"

mkdir -p "$out"
deb=$out/onecopy_${version}_${arch}.deb
dpkg-deb --build --root-owner-group "$root" "$deb" >/dev/null
log "built $deb ($(du -h "$deb" | cut -f1))"
echo "$deb"
