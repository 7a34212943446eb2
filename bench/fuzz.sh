#!/usr/bin/env bash
# bench/fuzz.sh TARGET|all SECONDS [PARALLEL]: runs libFuzzer targets
# (tests/fuzz, docs/fuzzing.md) for SECONDS each, PARALLEL at once (default
# 2, the machine's cores). Builds the `fuzz` preset with clang first.
# Seeds come from tests/fuzz/corpus/TARGET (read only); what libFuzzer adds
# goes to build-fuzz/corpus/TARGET, crashes to build-fuzz/artifacts/TARGET/.
# Prints one line per target: runs, executions per second, coverage, and
# the crash files found. Exit 1 when any target found a crash.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
  echo "usage: bench/fuzz.sh TARGET|all SECONDS [PARALLEL]" >&2
  echo "targets: $(ls tests/fuzz/corpus | tr '\n' ' ')" >&2
  exit 2
fi
target=$1 seconds=$2 parallel=${3:-2}
case $seconds in (*[!0-9]*|'') echo "bench/fuzz.sh: SECONDS '$seconds': expected a whole number" >&2; exit 2;; esac
if [ "$target" = all ]; then
  targets=$(ls tests/fuzz/corpus)
elif [ -d "tests/fuzz/corpus/$target" ]; then
  targets=$target
else
  echo "bench/fuzz.sh: no target '$target' (targets: $(ls tests/fuzz/corpus | tr '\n' ' '))" >&2
  exit 2
fi
CC=clang cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j2 >/dev/null

run_one() {
  local t=$1 seconds=$2 log="build-fuzz/logs/$1.log"
  mkdir -p "build-fuzz/corpus/$t" "build-fuzz/artifacts/$t" build-fuzz/logs
  # -timeout: an input that takes 10 s is a hang, reported as a crash file.
  "build-fuzz/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="build-fuzz/artifacts/$t/" -print_final_stats=1 \
    "build-fuzz/corpus/$t" "tests/fuzz/corpus/$t" >"$log" 2>&1 || true
  local runs speed cov crashes
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
  crashes=$(ls "build-fuzz/artifacts/$t" | tr '\n' ' ')
  printf '%-22s %ss runs=%s exec/s=%s %s crashes=[%s] log=%s\n' "$t" "$seconds" \
    "${runs:-?}" "${speed:-?}" "${cov:-cov: ?}" "${crashes% }" "$log"
}
export -f run_one
printf '%s\n' $targets | xargs -P "$parallel" -I{} bash -c 'run_one "$@"' _ {} "$seconds"
for t in $targets; do
  if [ -n "$(ls "build-fuzz/artifacts/$t")" ]; then exit 1; fi
done
