#!/usr/bin/env bash
# The benchmarks: bytes moved by the queue (cursor vs memmove, with the closed
# form), and the cost of the fault gate per send (timed medians of interleaved
# rounds, and callgrind instruction counts, which do not depend on load).
#   bench/run.sh            everything (a few minutes)
#   bench/run.sh --quick    payloads up to 8 MiB, fewer callgrind calls
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --no-run
quick=${1:-}
max=32; calls=100000
[ "$quick" = "--quick" ] && { max=8; calls=20000; }

echo "== Bytes moved by end(P) at clamp C (reference-prs/002's model)"
echo "   command: build/bin/bytes_moved --max-mib $max"
build/bin/bytes_moved --max-mib "$max"

echo
echo "== Fault gate: ns per 1-byte send, medians of interleaved rounds"
echo "   command: build/bin/gate_cost"
build/bin/gate_cost

echo
echo "== Fault gate: instructions per send (callgrind, $calls calls each)"
for v in direct disarmed armed; do
  out=$(mktemp)
  valgrind --tool=callgrind --toggle-collect=run_calls --callgrind-out-file="$out" \
    build/bin/gate_cost "$v" "$calls" >/dev/null 2>&1
  ir=$(awk '/^summary:/ {print $2}' "$out")
  rm -f "$out"
  awk -v v="$v" -v ir="$ir" -v n="$calls" 'BEGIN { printf "   %-9s %8.1f instructions per call\n", v, ir / n }'
done
