#!/usr/bin/env bash
# Installs what is missing (Debian packages, as root), builds everything, and
# runs the bundled queue scenarios on the reference stack.
#   scripts/setup.sh            install + build + run the bundled scenarios
#   scripts/setup.sh --no-run   install + build only (used by scripts/test.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

# Why each package is here: docs/ARCHITECTURE.md, "Dependencies".
packages=(build-essential cmake pkg-config libfiu-dev fiu-utils libjansson-dev
          libcmocka-dev libssl-dev valgrind strace python3 python3-pytest
          python3-pytest-xdist python3-matplotlib python3-hypothesis)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing packages and not root; run as root or install: ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cmake --preset default >/dev/null
cmake --build --preset default -j"$(nproc)"

[ "${1:-}" = "--no-run" ] && exit 0

echo "setup: running the bundled scenarios (traces in build/traces/)"
mkdir -p build/traces
status=0
for f in scenarios/queue/*.wcs; do
  name=$(basename "$f" .wcs)
  for variant in cursor memmove; do
    out="build/traces/$name.$variant.json"
    if build/bin/wirecheck run "$f" --clamp-send 4096 --variant "queue=$variant" --trace "$out"; then
      /usr/bin/python3 - "$out" "$name" "$variant" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
ex = t["exit"]
end = f"exit {ex['code']}" if "code" in ex else f"signal {ex.get('signal')}"
sc = t["syscalls"]
print(f"  {sys.argv[2]:26} {sys.argv[3]:8} peer {t['peer']['bytes']:>8} B  "
      f"send {sc['send']:>4}  sendmsg {sc['sendmsg']:>3}  "
      f"moved {t['queue']['bytes_moved'] if t['queue'] else '?':>10}  {end}")
PY
    else
      echo "  $name ($variant): wirecheck failed" >&2
      status=1
    fi
  done
done
exit $status
