#!/usr/bin/env bash
# bench/fuzz.sh TARGET[,TARGET...]|all SECONDS [PARALLEL]: runs libFuzzer targets
# (tests/fuzz, docs/fuzzing.md) for SECONDS each, PARALLEL at once (default
# 2, the machine's cores). Builds the `fuzz` preset with clang first.
# Seeds come from tests/fuzz/corpus/TARGET (read only); what libFuzzer adds
# goes to build-fuzz/corpus/TARGET, crashes to build-fuzz/artifacts/TARGET/.
# Prints one line per target: runs, executions per second, coverage, the
# crash files found and the 1-minute load average during the run (sampled
# every 5 s: mean and maximum), and writes the same figures to
# build-fuzz/results/TARGET.json (the report's fuzz section reads them;
# WIRECHECK_FUZZ_RESULTS=DIR writes them to DIR instead).
# Exit 1 when any target found a crash.
set -euo pipefail
# The whole script is functions, parsed before they run, and the line that
# calls main exits too: editing this file while a long run goes on cannot
# change what the run does (bash reads a script as it goes, and would
# otherwise go on reading at main's return, from an offset in the new text).
main() {
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
  echo "usage: bench/fuzz.sh TARGET[,TARGET...]|all SECONDS [PARALLEL]" >&2
  echo "targets: $(ls tests/fuzz/corpus | tr '\n' ' ')" >&2
  exit 2
fi
local target=$1 seconds=$2 parallel=${3:-2} targets
case $seconds in (*[!0-9]*|'') echo "bench/fuzz.sh: SECONDS '$seconds': expected a whole number" >&2; exit 2;; esac
case $parallel in (*[!0-9]*|''|0) echo "bench/fuzz.sh: PARALLEL '$parallel': expected a whole number above 0" >&2; exit 2;; esac
if [ "$target" = all ]; then
  targets=$(ls tests/fuzz/corpus)
else
  targets=${target//,/ }
  local t
  for t in $targets; do
    if [ ! -d "tests/fuzz/corpus/$t" ]; then
      echo "bench/fuzz.sh: no target '$t' (targets: $(ls tests/fuzz/corpus | tr '\n' ' '))" >&2
      exit 2
    fi
  done
fi
CC=clang cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j2 >/dev/null

export FUZZ_COMMAND="bench/fuzz.sh $*" FUZZ_PARALLEL=$parallel
export -f run_one
printf '%s\n' $targets | xargs -P "$parallel" -I{} bash -c 'run_one "$@"' _ {} "$seconds"
for t in $targets; do
  if grep -q '"crashes": \["' "${WIRECHECK_FUZZ_RESULTS:-build-fuzz/results}/$t.json"; then exit 1; fi
done
}

run_one() {
  local t=$1 seconds=$2 log="build-fuzz/logs/$1.log" loads="build-fuzz/logs/$1.load"
  local results=${WIRECHECK_FUZZ_RESULTS:-build-fuzz/results}
  mkdir -p "build-fuzz/corpus/$t" "build-fuzz/artifacts/$t" build-fuzz/logs "$results"
  local started
  started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  # Crashes of this run only: the files newer than this stamp.
  local stamp="build-fuzz/logs/$1.start"
  : >"$stamp"
  : >"$loads"
  # -timeout: an input that takes 10 s is a hang, reported as a crash file.
  "build-fuzz/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="build-fuzz/artifacts/$t/" -print_final_stats=1 \
    "build-fuzz/corpus/$t" "tests/fuzz/corpus/$t" >"$log" 2>&1 &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    cut -d' ' -f1 /proc/loadavg >>"$loads"
    sleep 5
  done
  wait "$pid" || true
  local runs speed cov ft crashes load_mean load_max
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
  ft=$(grep -oE 'ft: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
  crashes=$(find "build-fuzz/artifacts/$t" -type f -newer "$stamp" -printf '%f\n' | sort)
  load_mean=$(awk '{s+=$1; n++} END {if (n) printf "%.2f", s/n; else print "null"}' "$loads")
  load_max=$(awk 'BEGIN {m=""} {if (m=="" || $1>m) m=$1} END {print (m=="" ? "null" : m)}' "$loads")
  printf '%-22s %ss runs=%s exec/s=%s cov: %s ft: %s crashes=[%s] load=%s (max %s) log=%s\n' \
    "$t" "$seconds" "${runs:-?}" "${speed:-?}" "${cov:-?}" "${ft:-?}" \
    "$(echo $crashes)" "$load_mean" "$load_max" "$log"
  local crash_json="" c
  for c in $crashes; do crash_json="$crash_json${crash_json:+, }\"$c\""; done
  printf '{"target": "%s", "seconds": %s, "parallel": %s, "started": "%s", "runs": %s, "exec_per_s": %s, "cov": %s, "ft": %s, "crashes": [%s], "load1_mean": %s, "load1_max": %s, "command": "%s"}\n' \
    "$t" "$seconds" "$FUZZ_PARALLEL" "$started" "${runs:-null}" "${speed:-null}" \
    "${cov:-null}" "${ft:-null}" "$crash_json" "$load_mean" "$load_max" \
    "$FUZZ_COMMAND" >"$results/$t.json"
}

main "$@"; exit
