#!/usr/bin/env bash
# Runs every test: the C unit tests (CTest) and the end-to-end pytest suite,
# writing JUnit XML to build/test-results/. Installs and builds first.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --no-run
mkdir -p build/test-results
status=0
ctest --preset default --output-junit "$PWD/build/test-results/ctest.xml" || status=1
# The harness's own end-to-end tests, the plugin's pytester tests and the
# report's tests.
/usr/bin/python3 -m pytest -n 2 -q tests/e2e tests/plugin tests/report tests/property tests/explore \
  --junitxml=build/test-results/python.xml || status=1
# The installed tool, outside the checkout (tests/install): cmake --install
# into a temporary prefix, the package pip-installed into a venv, then run,
# sweep, pytest, a C program built with pkg-config and the bundled
# scenarios on node, with nothing of the checkout on any path.
/usr/bin/python3 -m pytest -q tests/install --junitxml=build/test-results/install.xml || status=1
# The gate: every scenario against its goldens, then a determinism check
# (20 runs each, compared by the harness) on a subset.
/usr/bin/python3 -m pytest -n 2 -q scenarios --junitxml=build/test-results/scenarios.xml || status=1
/usr/bin/python3 -m pytest -n 2 -q scenarios -k "write-behind or epipe or several-writes" \
  --wirecheck-repeat 20 --junitxml=build/test-results/determinism.xml || status=1
# The same scenarios on node:net and libuv, against the reference goldens
# and each subject's reviewed differences (docs/subjects.md).
for subject in node libuv; do
  /usr/bin/python3 -m pytest -n 2 -q scenarios/queue scenarios/batching scenarios/half-open \
    scenarios/chunked scenarios/ws scenarios/rules --wirecheck-subject "$subject" \
    --junitxml="build/test-results/scenarios-$subject.xml" || status=1
done
# Bun (docs/subjects.md, "Bun"): the node subject's program on the Bun that
# setup installs, on the same folders; then node and Bun with every
# connection handed off by a node:http server ("Handed-off sockets").
/usr/bin/python3 -m pytest -n 2 -q scenarios/queue scenarios/batching scenarios/half-open \
  scenarios/chunked scenarios/ws scenarios/rules --wirecheck-subject bun \
  --junitxml=build/test-results/scenarios-bun.xml || status=1
for subject in node-upgrade bun-upgrade; do
  /usr/bin/python3 -m pytest -n 2 -q scenarios/queue scenarios/batching scenarios/half-open \
    --wirecheck-subject "$subject" --junitxml="build/test-results/scenarios-$subject.xml" || status=1
done
# The mutation pass's runner on a fixed sample (docs/mutants.md), and the
# bounds the goldens cannot hold (epoll_wait, EAGAIN).
/usr/bin/python3 -m pytest -q tests/mutants --junitxml=build/test-results/mutants.xml || status=1
# A scratch folder of its own, so that two checkouts testing at once (CI
# jobs on one machine) do not remove each other's.
mutants_scratch=$(mktemp -d "${TMPDIR:-/tmp}/wirecheck-mutants-sample.XXXXXX")
scripts/mutants.py --sample --scratch "$mutants_scratch" || status=1
rm -rf "$mutants_scratch"
# The same C tests and the scenario suite once more, built with ASan and
# UBSan: a memory error in the stack or the harness fails a test there.
cmake --preset asan >/dev/null
cmake --build --preset asan -j"$(nproc)" >/dev/null
ctest --preset asan --output-junit "$PWD/build/test-results/ctest-asan.xml" || status=1
/usr/bin/python3 -m pytest -n 2 -q scenarios --wirecheck-bin=build-asan/bin/wirecheck \
  --junitxml=build/test-results/scenarios-asan.xml || status=1
# Memcheck: the unit tests (valgrind preset) and every scenario's subject
# (--valgrind: any error or definite leak fails the item).
cmake --preset valgrind >/dev/null
cmake --build --preset valgrind -j"$(nproc)" >/dev/null
ctest --preset valgrind --output-junit "$PWD/build/test-results/ctest-valgrind.xml" || status=1
/usr/bin/python3 -m pytest -n 2 -q scenarios --valgrind \
  --junitxml=build/test-results/scenarios-valgrind.xml || status=1
# The fuzz targets (clang, docs/fuzzing.md): built, and their corpora
# replayed as regression tests (every file once, nothing new: seconds).
CC=clang cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j"$(nproc)" >/dev/null
ctest --preset fuzz --output-junit "$PWD/build/test-results/ctest-fuzz.xml" || status=1
# A bounded fault sweep (docs/sweeps.md): two scenarios, fixed and legacy
# strategies, each fault at calls 1..2 and at the first and last byte of
# connection 0's stream, zero at reading calls 1..2, each clamp.
/usr/bin/python3 -m pytest -n 2 -q scenarios/queue/epipe-prefix.wcs scenarios/batching/several-writes.wcs \
  --wirecheck-sweep --wirecheck-sweep-k 2 --wirecheck-sweep-bytes 2 \
  --junitxml=build/test-results/sweep.xml || status=1
# A bounded exploration (docs/explore.md): 500 generated cases of every
# behaviour under random faults, fixed and legacy, judged by the model and
# real peers. A fixed seed: a failure here is the same on any machine, and
# its shrunk reproducer is in build/explore-out.
build/bin/wirecheck explore all --examples 500 --per-batch 100 \
  --seed 1 -j 2 --report build/test-results/explore.json --out build/explore-out -q || status=1
exit $status
