#!/usr/bin/env bash
# Installs what is missing (Debian packages, as root), builds everything, runs
# the bundled scenarios on the reference stack and writes their report.
#   scripts/setup.sh            install + build + the bundled scenarios + report
#   scripts/setup.sh --no-run   install + build only (used by scripts/test.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

# Why each package is here: docs/ARCHITECTURE.md, "Dependencies".
packages=(build-essential cmake pkg-config libfiu-dev fiu-utils libjansson-dev
          libcmocka-dev libssl-dev valgrind strace python3 python3-pytest
          python3-pytest-xdist python3-matplotlib python3-hypothesis
          nodejs libuv1-dev
          curl python3-h11 wrk util-linux
          python3-websockets python3-wsproto
          zlib1g-dev
          python3-pip python3-setuptools dpkg-dev man-db)
# npm installs npm ws, the WebSocket judge (tests/e2e/test_ws_wire.py):
# Debian's npm, unless the installed nodejs brought its own.
command -v npm >/dev/null 2>&1 || packages+=(npm)
# The libFuzzer targets (tests/fuzz, the fuzz preset): clang and its runtime.
packages+=(clang libclang-rt-14-dev)
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

# npm ws, pinned to the version oven-sh/bun "ws: take the frame type of send() from options.binary" measured against, into a
# folder of the project (ignored by git), from the npm registry.
ws_version=8.18.3
if ! grep -qs "\"version\": \"$ws_version\"" third_party/node/node_modules/ws/package.json; then
  echo "setup: npm install ws@$ws_version (third_party/node)"
  npm install --prefix third_party/node --no-audit --no-fund --silent "ws@$ws_version"
fi

# Bun, pinned (the newest 1.x on npm when the Bun subject was written), from
# the npm registry into a folder of the project (ignored by git): bun-subject
# runs the node subject with it (docs/subjects.md, "Bun"). The package is a
# plain linux-x64 binary (it links glibc dynamically).
bun_version=1.4.5
if [ "$(uname -m)" = x86_64 ] &&
   ! grep -qs "\"version\": \"$bun_version\"" third_party/bun/node_modules/@oven/bun-linux-x64/package.json; then
  echo "setup: npm install @oven/bun-linux-x64@$bun_version (third_party/bun)"
  npm install --prefix third_party/bun --no-audit --no-fund --silent "@oven/bun-linux-x64@$bun_version"
fi

cmake --preset default >/dev/null
cmake --build --preset default -j"$(nproc)"

[ "${1:-}" = "--no-run" ] && exit 0

# The main job: every bundled scenario (queue, batching, half-open, chunked,
# ws, rules), each under every profile of its matrix and both strategies,
# against its golden; then the report (Markdown, JSON, SVG) of the suite.
# The benchmarks are bench/run.sh's (minutes): it leaves their figures in
# reports/out/bench.json, which the report takes when it is there.
echo "setup: the scenario suite against its goldens, and its report (reports/out/report.md)"
bench_json=reports/out/bench.json
if [ -f "$bench_json" ]; then
  echo "setup: the report takes the benchmarks of $bench_json (bench/run.sh)"
  bench=(--bench-json "$bench_json")
else
  echo "setup: the report without benchmarks (bench/run.sh runs them)"
  bench=(--no-bench)
fi
status=0
# Each run's trace is recorded (build/suite-record), so that the report takes
# the suite's runs from there instead of running them again. The report
# starts beside the suite: it draws the sweep's plots (from the committed
# reports/sweep/sweep.json alone) on the CPU that the suite leaves idle while
# it waits on its subjects, and reads the record once the suite is over. The
# suite holds an exclusive flock on the record's lock file until it ends (it
# inherits fd 9; the shell closes its own copy), and the report waits for it
# (--record-lock); python's subprocesses do not inherit the fd.
record=build/suite-record
exec 9>"$record.lock"
flock 9
/usr/bin/python3 -m pytest -n 2 -q scenarios --wirecheck-record="$record" &
suite=$!
exec 9>&-
# A background job of a script ignores SIGINT: if set-up is stopped, the
# suite goes with it.
trap 'kill "$suite" 2>/dev/null || true' EXIT
PYTHONPATH=python /usr/bin/python3 -m wirecheck.report -q "${bench[@]}" \
  --from-record "$record" --record-lock "$record.lock" || status=1
wait "$suite" || status=1
trap - EXIT
[ -f reports/out/report.md ] && sed -n '1,25p' reports/out/report.md
exit $status
