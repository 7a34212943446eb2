#!/usr/bin/env bash
# ws_instructions.sh WS_SEND [LIMIT [ECHO_LIMIT [RECV_LIMIT]]]: user-space
# instructions of one 16-byte text send on a server WebSocket socket, of
# one 16-byte text echo, and of the receive path of one 16-byte text
# message, counted by callgrind (bench/ws_send.c says what is counted).
# Deterministic: no timing.
#  send: callgrind counts measured_send() alone over N calls after 4,096
#        warm-up sends, divided by N.
#  echo: callgrind counts ws_on_data (the receive path from the bytes read
#        to the echo's send, the handshake included) in two runs, of N/2
#        and N messages; the difference over N/2 is the cost of one more
#        message, without the one-off costs (the handshake's SHA-1, the
#        warm-up's allocations).
#  recv: the same messages to a handler that only counts them; callgrind
#        counts rs__socket_read (the recv, the frame decode, the unmask,
#        the UTF-8 check and the call of the handler), the difference of
#        runs of N/2 and N messages over N/2 as for the echo.
# Exits 1 when the send costs more than LIMIT (default 150, the send's
# target; the seed's figures are 488 with the PR and 2,508 on its base, in
# Bun), the echo more than ECHO_LIMIT or the receive path more than
# RECV_LIMIT (defaults: no limit).
set -euo pipefail
bin=${1:?usage: ws_instructions.sh WS_SEND [LIMIT [ECHO_LIMIT [RECV_LIMIT]]]}
limit=${2:-150}
echo_limit=${3:-0}
recv_limit=${4:-0}
n=20000
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
count() {  # MODE FUNCTION N: the total of FUNCTION's instructions
  valgrind --tool=callgrind --toggle-collect="$2" \
    --callgrind-out-file="$tmp/$1.$3.out" "$bin" "$1" "$3" >"$tmp/$1.log" 2>&1 ||
    { echo "ws_instructions: callgrind of '$bin $1 $3' failed:" >&2; cat "$tmp/$1.log" >&2; exit 1; }
  awk '/^summary:/ { print $2; found = 1 } END { if (!found) exit 1 }' "$tmp/$1.$3.out"
}
send=$(count send measured_send "$n")
echo_half=$(count echo ws_on_data $((n / 2)))
echo_full=$(count echo ws_on_data "$n")
recv_half=$(count recv rs__socket_read $((n / 2)))
recv_full=$(count recv rs__socket_read "$n")
awk -v s="$send" -v n="$n" -v h="$echo_half" -v f="$echo_full" \
    -v rh="$recv_half" -v rf="$recv_full" \
    -v l="$limit" -v el="$echo_limit" -v rl="$recv_limit" 'BEGIN {
  send = s / n; echo = (f - h) / (n - n / 2); recv = (rf - rh) / (n - n / 2)
  printf "ws send, 16-byte text, server socket: %.1f instructions (limit %s; target 150)\n", send, l
  printf "ws echo, 16-byte text, server socket: %.1f instructions per message%s\n", echo, (el > 0 ? sprintf(" (ceiling %s)", el) : "")
  printf "ws receive, 16-byte text, server socket: %.1f instructions per message%s\n", recv, (rl > 0 ? sprintf(" (ceiling %s)", rl) : "")
  exit !(send <= l && (el <= 0 || echo <= el) && (rl <= 0 || recv <= rl))
}'
