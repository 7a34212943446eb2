#!/usr/bin/env bash
# ws_instructions.sh WS_SEND [LIMIT]: user-space instructions of one 16-byte
# text send on a server WebSocket socket, and of one 16-byte text echo,
# counted by callgrind over N calls after warm-up (bench/ws_send.c says
# what is counted). Deterministic: no timing. Exits 1 when the send costs
# more than LIMIT (issue 11's target: 150; the seed's figures are 488 with
# the PR and 2,508 on its base, in Bun).
set -euo pipefail
bin=${1:?usage: ws_instructions.sh WS_SEND [LIMIT]}
limit=${2:-150}
n=20000
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
count() {  # MODE FUNCTION
  valgrind --tool=callgrind --toggle-collect="$2" \
    --callgrind-out-file="$tmp/$1.out" "$bin" "$1" "$n" >"$tmp/$1.log" 2>&1 ||
    { echo "ws_instructions: callgrind of '$bin $1' failed:" >&2; cat "$tmp/$1.log" >&2; exit 1; }
  awk -v n="$3" '/^summary:/ { printf "%.1f", $2 / n; found = 1 }
                 END { if (!found) exit 1 }' "$tmp/$1.out"
}
send=$(count send measured_send "$n")
# The echo counts every message the server read (warm-up included): the
# receive path from the read to the echo's send, per message.
echo_=$(count echo ws_on_data $((n + 4096)))
awk -v s="$send" -v e="$echo_" -v l="$limit" 'BEGIN {
  printf "ws send, 16-byte text, server socket: %.1f instructions (target <= %s)\n", s, l
  printf "ws echo, 16-byte text, server socket: %.1f instructions per message\n", e
  exit !(s <= l)
}'
