#!/usr/bin/env bash
# The benchmarks: bytes moved by the queue (cursor vs memmove, with the closed
# form), the cost of the fault gate per send (timed medians of interleaved
# rounds, and callgrind instruction counts, which do not depend on load), the
# sender's instructions (callgrind) and CPU of end(P), write batching (the
# seed's table and a chat server), the half-open syscalls per connection, the
# WebSocket and chunked servers against node and Bun, and the subjects; then
# the report of the bundled suite with these figures (each benchmark runs
# once).
#   bench/run.sh            everything (a few minutes)
#   bench/run.sh --quick    smaller payloads and fewer rounds
# Each C benchmark writes JSON only; its tables here come from the report's
# section for it (python3 -m wirecheck.report.render), the same code that
# writes reports/out/report.md.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --no-run
quick=${1:-}
json_dir=$(mktemp -d)
trap 'rm -rf "$json_dir"' EXIT

# show KIND COMMAND...: runs a benchmark into $json_dir/KIND.json and prints its
# tables. A benchmark that fails still has its output rendered when it is
# JSON, so that the figures print before the failure is reported.
show() {
  local kind=$1 rc=0
  shift
  echo "   command: $*"
  "$@" > "$json_dir/$kind.json" || rc=$?
  PYTHONPATH=python /usr/bin/python3 -m wirecheck.report.render "$kind" "$json_dir/$kind.json" |
    sed 's/^/   /'
  return "$rc"
}
max=32; calls=100000
[ "$quick" = "--quick" ] && { max=8; calls=20000; }

echo "== Bytes moved by end(P) at clamp C (oven-sh/bun \"socket: drain node:net's pending-write queue with a cursor\"'s model)"
show bytes_moved build/bin/bytes_moved --max-mib "$max"

echo
echo "== Fault gate: ns per 1-byte send, medians of interleaved rounds"
show gate_cost build/bin/gate_cost

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

q=""; [ "$quick" = "--quick" ] && q="--quick"
# The benchmarks that take only --quick: KIND|heading, each run as
# build/bin/KIND. The list is read on fd 3, so that no benchmark reads it.
while IFS='|' read -r kind heading <&3; do
  echo
  echo "== $heading"
  show "$kind" "build/bin/$kind" $q
done 3<<'LIST'
sender_instr|Sender instructions of end(P) (callgrind, with their targets): floor, copy, copying, owned, memmove
sender_cpu|Sender CPU of end(P) (secondary): refstack cursor and memmove, node, against a plain send loop
batching|Write batching: the seed's table (oven-sh/bun#45246)
chat|Write batching: a broadcast chat server, 8 clients
LIST

echo
echo "== Half-open: syscalls per connection, (N=300 - N=100) / 200"
for v in end-first poll-first; do
  echo "   command: build/bin/wirecheck per-connection scenarios/half-open/per-connection.wcs --from 100 --to 300 --variant halfopen=$v"
  build/bin/wirecheck per-connection scenarios/half-open/per-connection.wcs \
    --from 100 --to 300 --variant "halfopen=$v" 2>/dev/null |
    /usr/bin/python3 -c 'import json, sys
pc = json.load(sys.stdin)["per_connection"]
print("   " + ", ".join(f"{k} {pc[k]:.2f}" for k in ("epoll_ctl.mod", "epoll_ctl.add", "epoll_ctl.del", "send", "recv", "shutdown")))'
done

echo
echo "== WebSocket: instructions of a 16-byte text send and echo, server socket (callgrind)"
echo "   command: bench/ws_instructions.sh build/bin/ws_send"
# The exit status is reported, not fatal, so that the other figures still
# print.
bench/ws_instructions.sh build/bin/ws_send || echo "   (above the target)"

echo
echo "== WebSocket: echo and chat servers, reference against node + npm ws and Bun (medians of interleaved rounds)"
show ws build/bin/ws_echo $q --instructions build/bin/ws_send

echo
echo "== WebSocket: server syscalls per message, reference against node + npm ws and Bun (preload gate)"
show ws_syscalls /usr/bin/python3 bench/ws_syscalls.py --json $q

echo
echo "== Chunked responses: syscalls and requests per second, fixed, separate, node and Bun"
show chunked /usr/bin/python3 bench/chunked.py --json - $q

echo
echo "== Sender CPU of end(64 MiB): refstack, node, libuv and the floor"
show sender_subjects build/bin/sender_cpu --subjects --json

echo
echo "== node and libuv against the reference goldens"
show subjects env PYTHONPATH=python /usr/bin/python3 -m wirecheck.subjects_tool --json -q --wirecheck-bin build/bin/wirecheck

# The report takes the figures above (--bench-json) instead of running every
# benchmark a second time.
/usr/bin/python3 - "$json_dir" > "$json_dir/bench.json" <<'PY'
import json, pathlib, sys
bench = {}
for f in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    try:
        bench[f.stem] = json.loads(f.read_text())
    except ValueError:
        pass  # a benchmark that failed before its JSON: "not in" the report
json.dump(bench, sys.stdout, indent=1, sort_keys=True)
PY
mkdir -p reports/out
cp "$json_dir/bench.json" reports/out/bench.json
echo
echo "== The report with these figures (reports/out/), which scripts/setup.sh's"
echo "   report takes from reports/out/bench.json from now on"
echo "   command: PYTHONPATH=python python3 -m wirecheck.report -q --bench-json reports/out/bench.json"
PYTHONPATH=python /usr/bin/python3 -m wirecheck.report -q --bench-json reports/out/bench.json ||
  echo "   (the report found errors: reports/out/report.md)"
