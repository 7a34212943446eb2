#!/usr/bin/env bash
# gate_instructions.sh GATE_COST [LIMIT]: fails when a send through the
# disarmed fault gate costs more than LIMIT (default 5) instructions over a
# direct send(), counted by callgrind (deterministic: no timing involved).
# Registered by tests/CMakeLists.txt for optimised builds without
# sanitizers, where the figure means what docs/ARCHITECTURE.md says.
set -euo pipefail
bin=${1:?usage: gate_instructions.sh GATE_COST [LIMIT]}
limit=${2:-5}
calls=20000
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
per_call() {
  valgrind --tool=callgrind --toggle-collect=run_calls \
    --callgrind-out-file="$tmp/$1.out" "$bin" "$1" "$calls" >"$tmp/$1.log" 2>&1 ||
    { echo "gate_instructions: callgrind of '$bin $1' failed:" >&2; cat "$tmp/$1.log" >&2; exit 1; }
  awk -v n="$calls" '/^summary:/ { printf "%.2f", $2 / n; found = 1 }
                     END { if (!found) exit 1 }' "$tmp/$1.out"
}
direct=$(per_call direct)
disarmed=$(per_call disarmed)
awk -v d="$direct" -v g="$disarmed" -v l="$limit" 'BEGIN {
  diff = g - d
  printf "direct %.2f, disarmed %.2f instructions per send: +%.2f (limit +%s)\n", d, g, diff, l
  exit !(diff <= l)
}'
