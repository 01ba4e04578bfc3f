#!/usr/bin/env bash
# Does the package run with nothing but its Depends? Installs it into a minimal Debian chroot
# (debootstrap --variant=minbase: no compiler, no clang, no libelf-dev, no Rust) with apt, which
# pulls in exactly the declared Depends, then runs the installed binary there: --version, a man
# page lookup and a 2-s measurement (/proc and /sys bound in; the measurement needs nothing else).
#   scripts/package-chroot-check.sh [DEB]      (default: the newest target/debian/rtscope_*.deb)
# Needs root, debootstrap and a Debian mirror. The chroot is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
DEB=${1:-$(ls -t "${CARGO_TARGET_DIR:-target}"/debian/rtscope_*.deb 2>/dev/null | head -1)}
[ -n "$DEB" ] && [ -f "$DEB" ] || { echo "package-chroot-check: no .deb (run scripts/package.sh first)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "package-chroot-check: needs root (debootstrap, chroot)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "package-chroot-check: debootstrap not found (apt-get install debootstrap)" >&2; exit 1; }
SUITE=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
ROOT=$(mktemp -d /var/tmp/rtscope-chroot.XXXXXX)
cleanup() {
  for m in sys proc dev; do umount -l "$ROOT/$m" 2>/dev/null || true; done
  rm -rf "$ROOT"
}
trap cleanup EXIT
t0=$(date +%s)
debootstrap --variant=minbase "$SUITE" "$ROOT" http://deb.debian.org/debian >/dev/null
echo "# minimal $SUITE chroot in $(( $(date +%s) - t0 )) s; packages: $(chroot "$ROOT" dpkg-query -W | wc -l)"
mount --bind /proc "$ROOT/proc"
mount --bind /sys "$ROOT/sys"
mount --bind /dev "$ROOT/dev"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
cp "$DEB" "$ROOT/tmp/"
chroot "$ROOT" sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends man-db /tmp/$(basename "$DEB")" >/dev/null
echo "# installed with its Depends only: $(chroot "$ROOT" dpkg-query -W -f='${Depends}' rtscope)"
for tool in cc clang cargo rustc; do
  if chroot "$ROOT" sh -c "command -v $tool" >/dev/null; then
    echo "package-chroot-check: $tool present in the chroot: the check is not minimal" >&2
    exit 1
  fi
done
chroot "$ROOT" rtscope --version
chroot "$ROOT" man -w rtscope-measure
chroot "$ROOT" env XDG_DATA_HOME=/tmp rtscope measure -D 2s --no-store
echo "# package-chroot-check: ok"
