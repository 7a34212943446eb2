#!/usr/bin/env bash
# Runs every test: the C unit tests (CTest) and the end-to-end pytest suite,
# writing JUnit XML to build/test-results/. Installs and builds first.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
# step NAME COMMAND...: runs COMMAND, says how long it took (wall and CPU)
# and whether it passed, and notes a failure in $status; the times are
# summed up at the end (what a slow CI job shows first). The CPU seconds
# are user + system of the processes the step ran and waited for: on a
# machine of N cores no schedule of the steps takes less than their sum
# over N.
steps=()
tick=$(getconf CLK_TCK)
cpu_ticks() {  # this shell's waited-for children, user + system, in ticks
  local stat
  stat=$(</proc/$$/stat)
  echo "${stat##*) }" | awk '{print $14 + $15}'
}
cpu_total=0  # in ticks
step() {
  local name=$1 start=$SECONDS rc=0 cpu0
  cpu0=$(cpu_ticks)
  shift
  echo "== test.sh: $name"
  "$@" || rc=$?
  local took=$((SECONDS - start)) ticks=$(($(cpu_ticks) - cpu0))
  local cpu=$((ticks / tick))
  cpu_total=$((cpu_total + ticks))
  [ $rc -eq 0 ] || status=1
  steps+=("$(printf '%4d s %5d s CPU  %-6s %s' "$took" "$cpu" "$([ $rc -eq 0 ] && echo ok || echo FAILED)" "$name")")
  echo "== test.sh: $name: $([ $rc -eq 0 ] && echo ok || echo "FAILED (exit $rc)") in ${took} s (${cpu} s CPU)"
}
step "install and build (setup.sh --no-run)" scripts/setup.sh --no-run
[ $status -eq 0 ] || exit 1
mkdir -p build/test-results
step "C unit tests and perf ceilings (ctest)" \
  ctest --preset default --output-junit "$PWD/build/test-results/ctest.xml"
# The harness's own end-to-end tests, the plugin's pytester tests and the
# report's tests.
step "harness, plugin, report, property and explorer tests" \
  /usr/bin/python3 -m pytest -n 2 -q tests/e2e tests/plugin tests/report tests/property tests/explore \
  --junitxml=build/test-results/python.xml
# The installed tool, outside the checkout (tests/install): cmake --install
# into a temporary prefix, the package pip-installed into a venv, then run,
# sweep, pytest, a C program built with pkg-config and the bundled
# scenarios on node, with nothing of the checkout on any path.
step "the installed tool, outside the checkout" \
  /usr/bin/python3 -m pytest -q tests/install --junitxml=build/test-results/install.xml
# The gate: every scenario against its goldens, then a determinism check
# (20 runs each, compared by the harness) on a subset.
step "every scenario against its goldens" \
  /usr/bin/python3 -m pytest -n 2 -q scenarios --junitxml=build/test-results/scenarios.xml
step "determinism: 20 runs of a subset" \
  /usr/bin/python3 -m pytest -n 2 -q scenarios -k "write-behind or epipe or several-writes" \
  --wirecheck-repeat 20 --junitxml=build/test-results/determinism.xml
# The same scenarios on node:net and libuv, against the reference goldens
# and each subject's reviewed differences (docs/subjects.md); then Bun
# (docs/subjects.md, "Bun"): the node subject's program on the Bun that
# setup installs, on the same folders.
for subject in node libuv bun; do
  step "the scenarios on $subject" \
    /usr/bin/python3 -m pytest -n 2 -q scenarios/queue scenarios/batching scenarios/half-open \
    scenarios/chunked scenarios/ws scenarios/rules --wirecheck-subject "$subject" \
    --junitxml="build/test-results/scenarios-$subject.xml"
done
# node and Bun with every connection handed off by a node:http server
# (docs/subjects.md, "Handed-off sockets").
for subject in node-upgrade bun-upgrade; do
  step "the scenarios on $subject" \
    /usr/bin/python3 -m pytest -n 2 -q scenarios/queue scenarios/batching scenarios/half-open \
    --wirecheck-subject "$subject" --junitxml="build/test-results/scenarios-$subject.xml"
done
# The mutation pass's runner on a fixed sample (docs/mutants.md), and the
# bounds the goldens cannot hold (epoll_wait, EAGAIN).
step "the mutation runner's tests" \
  /usr/bin/python3 -m pytest -q tests/mutants --junitxml=build/test-results/mutants.xml
# A scratch folder of its own, so that two checkouts testing at once (CI
# jobs on one machine) do not remove each other's.
mutants_scratch=$(mktemp -d "${TMPDIR:-/tmp}/wirecheck-mutants-sample.XXXXXX")
step "the mutation pass on its sample" scripts/mutants.py --sample --scratch "$mutants_scratch"
rm -rf "$mutants_scratch"
# The same C tests and the scenario suite once more, built with ASan and
# UBSan: a memory error in the stack or the harness fails a test there.
build_preset() {
  cmake --preset "$1" >/dev/null && cmake --build --preset "$1" -j"$(nproc)" >/dev/null
}
step "ASan + UBSan build" build_preset asan
step "C unit tests under ASan + UBSan" \
  ctest --preset asan --output-junit "$PWD/build/test-results/ctest-asan.xml"
step "every scenario under ASan + UBSan" \
  /usr/bin/python3 -m pytest -n 2 -q scenarios --wirecheck-bin=build-asan/bin/wirecheck \
  --junitxml=build/test-results/scenarios-asan.xml
# Memcheck: the unit tests (valgrind preset) and every scenario's subject
# (--valgrind: any error or definite leak fails the item).
step "valgrind build" build_preset valgrind
step "C unit tests under memcheck" \
  ctest --preset valgrind --output-junit "$PWD/build/test-results/ctest-valgrind.xml"
step "every scenario's subject under memcheck" \
  /usr/bin/python3 -m pytest -n 2 -q scenarios --valgrind \
  --junitxml=build/test-results/scenarios-valgrind.xml
# The fuzz targets (clang, docs/fuzzing.md): built, and their corpora
# replayed as regression tests (every file once, nothing new: seconds).
fuzz_build() { CC=clang build_preset fuzz; }
step "fuzz targets build (clang)" fuzz_build
step "fuzz corpora replayed" \
  ctest --preset fuzz --output-junit "$PWD/build/test-results/ctest-fuzz.xml"
# A bounded fault sweep (docs/sweeps.md): two scenarios, fixed and legacy
# strategies, each fault at calls 1..2 and at the first and last byte of
# connection 0's stream, zero at reading calls 1..2, each clamp.
step "a bounded fault sweep" \
  /usr/bin/python3 -m pytest -n 2 -q scenarios/queue/epipe-prefix.wcs scenarios/batching/several-writes.wcs \
  --wirecheck-sweep --wirecheck-sweep-k 2 --wirecheck-sweep-bytes 2 \
  --junitxml=build/test-results/sweep.xml
# A bounded exploration (docs/explore.md): 500 generated cases of every
# behaviour under random faults, fixed and legacy, judged by the model and
# real peers. A fixed seed: a failure here is the same on any machine, and
# its shrunk reproducer is in build/explore-out.
step "a bounded exploration, seed 1" \
  build/bin/wirecheck explore all --examples 500 --per-batch 100 \
  --seed 1 -j 2 --report build/test-results/explore.json --out build/explore-out -q
echo "== test.sh: the steps, in order"
printf '%s\n' "${steps[@]}"
echo "== test.sh: $SECONDS s in all, $((cpu_total / tick)) s of CPU on $(nproc) cores, $([ $status -eq 0 ] && echo "every step passed" || echo "a step FAILED")"
exit $status
