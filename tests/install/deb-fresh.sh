#!/usr/bin/env bash
# tests/install/deb-fresh.sh [ROOT]: the Debian package on a fresh Debian.
#
# Builds wirecheck_*.deb (cpack -G DEB) from a build folder of its own,
# makes a minimal Debian root with debootstrap (bookworm, the release this
# project builds on) in ROOT (default $TMPDIR/wirecheck-deb-fresh/root,
# outside the checkout, whose tools would walk its 2 GB; kept between runs,
# a new one costs a few minutes), then, chrooted into it:
#   apt-get install ./wirecheck_*.deb     (its declared dependencies come
#                                           from Debian, nothing else)
#   the installed-tool test (tests/install/test_installed.py) with
#   WIRECHECK_INSTALLED=/usr: run, sweep, explore, pytest with goldens, a C
#   program built with pkg-config and run clamped, the bundled scenarios on
#   the node subject, with no checkout and no build in the root.
# The C program needs a compiler, which the package does not depend on: the
# script installs gcc in the root as a user building against the gate would.
# Root only (debootstrap, chroot, mount); needs the Debian mirror. Not part
# of scripts/test.sh (minutes of downloads); docs/install.md says when to
# run it.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=${1:-${TMPDIR:-/tmp}/wirecheck-deb-fresh/root}
build=$PWD/build-deb/build
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
[ "$(id -u)" -eq 0 ] || { echo "deb-fresh: run as root (debootstrap, chroot)" >&2; exit 2; }
command -v debootstrap >/dev/null ||
  { echo "deb-fresh: installing debootstrap"; apt-get install -y -qq debootstrap >/dev/null; }

echo "deb-fresh: building the package in $build"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
(cd "$build" && rm -f wirecheck_*.deb && cpack -G DEB >/dev/null)
deb=$(ls "$build"/wirecheck_*.deb)

if [ ! -x "$root/usr/bin/apt-get" ]; then
  echo "deb-fresh: debootstrap bookworm into $root"
  mkdir -p "$root"
  debootstrap --variant=minbase bookworm "$root" "$mirror" >"$build/debootstrap.log" 2>&1 ||
    { tail -20 "$build/debootstrap.log" >&2; exit 1; }
fi

mounted=()
cleanup() {
  local m
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
  rm -rf "$root/tmp/wirecheck-deb"
}
trap cleanup EXIT
for m in proc dev; do
  mountpoint -q "$root/$m" && continue
  if [ "$m" = proc ]; then mount -t proc proc "$root/proc"; else mount --rbind /dev "$root/dev"; fi
  mounted+=("$root/$m")
done
cp /etc/resolv.conf "$root/etc/resolv.conf"

# What the root gets: the package and the test, nothing of the checkout.
stage=$root/tmp/wirecheck-deb
rm -rf "$stage" && mkdir -p "$stage/test"
cp "$deb" "$stage/"
cp tests/install/test_installed.py tests/install/gate_send.c "$stage/test/"

echo "deb-fresh: apt-get install ./$(basename "$deb") in the fresh root"
chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
  bash -ec "apt-get update -qq
            apt-get install -y -qq --reinstall /tmp/wirecheck-deb/$(basename "$deb") >/dev/null
            apt-get install -y -qq gcc libc6-dev >/dev/null
            dpkg -s wirecheck | sed -n 's/^Version: /installed wirecheck /p'"

echo "deb-fresh: the installed-tool test, WIRECHECK_INSTALLED=/usr"
chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/tmp LANG=C.UTF-8 \
  WIRECHECK_INSTALLED=/usr \
  python3 -m pytest -q -rs -p no:cacheprovider /tmp/wirecheck-deb/test/test_installed.py
