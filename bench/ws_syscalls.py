#!/usr/bin/python3
"""bench/ws_syscalls.py: syscalls per message of the WebSocket echo and
chat servers of bench/ws_echo (ws_echo_servers.c), the reference stack's, node 20 + npm ws
8.18.3's (bench/ws_server.js) and Bun's (bench/ws_server_bun.js, Bun.serve;
its chat by server.publish, and by a loop of ws.send; the reference's chat
by rs_ws_publish to a group, reference/ws_group.c, and by a loop of
rs_ws_send), all counted the same
way: by the preload gate (`wirecheck exec`), on the server's connected unix
sockets.

For each echo row of ws_echo (16 B text, 16 B binary, 1 KiB and 16 KiB of
non-ASCII text), a run starts the server under `wirecheck exec` and drives
it with `ws_echo --client PATH ROW COUNT` (one connection, at most 32
messages in flight, as ws_echo's echo rounds, or --window N, every echo
checked). A run
of 3 x COUNT messages less a run of none, over 3 x COUNT messages, leaves
out the handshake, the start and the end. Writing
calls are send, sendto, sendmsg, write and writev; reading calls recv and
read (Bun reads with recvfrom, which the gate counts as its own kind:
it is added to the reads). The chat row: `ws_echo --chat-client PATH N`
(32 connections, N rounds of 8 messages from each client, every message
written to all 32), a run of 3 x CHAT_ROUNDS rounds less a run of none,
over the messages in (256 a round); the per-delivery figure is that over 32.
How many messages one call carries depends on how the client's
frames arrive, so the figures move from run to run: each side runs ROUNDS
times, interleaved (the order rotated by one each round), and the table
gives medians with their min and max, and the load average beside them.

    bench/ws_syscalls.py [--rounds N] [--count N] [--chat-rounds N] [--quick]
                         [--no-bun] [--json] [--window N]

--window N: the echo client keeps at most N messages in flight (with 1,
each message is a read and a write of its own on every side).

--quick: 1 round, COUNT 200, CHAT_ROUNDS 4. Bun's column is left out (with
a note) when Bun is not installed. Exits 1 when a server or the client
fails, or node or npm ws is missing.
"""
import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[1]
BIN = REPO / "build" / "bin"
NODE_JS = REPO / "bench" / "ws_server.js"
BUN_JS = REPO / "bench" / "ws_server_bun.js"
ROWS = ["echo 16 B text", "echo 16 B binary", "echo 1 KiB non-ASCII text",
        "echo 16 KiB non-ASCII text", "chat, 32 clients (per message in)"]
CHAT = len(ROWS) - 1
CHAT_CLIENTS, CHAT_MSGS = 32, 8
WRITES = ("send", "sendto", "sendmsg", "write", "writev")
READS = ("recv", "recvfrom", "read")
SIDES = ("ref", "ref-send", "node", "bun", "bun-send")
TITLES = {"ref": "reference", "ref-send": "reference, loop of rs_ws_send",
          "node": "node + ws", "bun": "Bun", "bun-send": "Bun, loop of ws.send"}


def bun_binary():
    """$WIRECHECK_BUN, else the pinned Bun of third_party/bun; None when
    neither runs."""
    b = os.environ.get("WIRECHECK_BUN") or str(
        REPO / "third_party/bun/node_modules/@oven/bun-linux-x64/bin/bun")
    return b if os.access(b, os.X_OK) else None


def server_argv(side, chat, sock):
    if side == "ref":
        return [str(BIN / "ws_echo"), "--serve-ref-chat" if chat else "--serve-ref", str(sock)]
    if side == "ref-send":
        return [str(BIN / "ws_echo"), "--serve-ref-chat-send", str(sock)]
    if side == "node":
        return ["node", str(NODE_JS), "chat" if chat else "echo", str(sock)]
    mode = "echo" if not chat else "chat" if side == "bun" else "chat-send"
    return [bun_binary(), str(BUN_JS), mode, str(sock)]


def counts(side, row, count, window=None):
    """{writes, reads} of the server's connected unix sockets over one run
    of `count` messages of echo `row` (at most `window` in flight, default
    ws_echo's), or `count` chat rounds."""
    with tempfile.TemporaryDirectory() as d:
        sock = pathlib.Path(d) / "s"
        report = pathlib.Path(d) / "report.json"
        server = server_argv(side, row == CHAT, sock)
        # ws_echo's client retries its connect while the server starts.
        until = (f"{BIN / 'ws_echo'} --chat-client {sock} {count}" if row == CHAT else
                 f"{BIN / 'ws_echo'} --client {sock} {row} {count}"
                 + (f" {window}" if window else ""))
        p = subprocess.run([str(BIN / "wirecheck"), "exec", "--output", str(report),
                            "--until", until, "--stop-signal", "SIGINT",
                            "--timeout", "120", "--", *server],
                           capture_output=True, text=True, timeout=300)
        if not report.exists():
            raise SystemExit(f"ws_syscalls.py: {side} {ROWS[row]}: no report "
                             f"(exit {p.returncode}): {p.stderr.strip()[-400:]}")
        rep = json.loads(report.read_text())
        if rep.get("until", {}).get("code", 0) not in (0, None):
            raise SystemExit(f"ws_syscalls.py: the client failed against {side}: {rep['until']}")
    res = {"writes": 0, "reads": 0}
    for c in [rep.get("counts")] + rep.get("children", []):
        for f in (c or {}).get("fds", []):
            what = f.get("what") or []
            what = what if isinstance(what, list) else [what]
            if any(w.startswith("unix stream") and "listening" not in w for w in what):
                res["writes"] += sum(f["calls"].get(k, 0) for k in WRITES)
                res["reads"] += sum(f["calls"].get(k, 0) for k in READS)
    return res


def per_message(side, row, count, window=None):
    """Calls per message of a run of 3 x count messages (chat: rounds),
    less those of a run of none (the handshake, the start, the client's
    !quit and the end, which do not depend on how messages arrive). The
    difference of two runs with messages, as before, could come out below
    zero: how many messages a call carries moves from run to run."""
    a, b = counts(side, row, 0, window), counts(side, row, 3 * count, window)
    n = 3 * count * (CHAT_CLIENTS * CHAT_MSGS if row == CHAT else 1)
    return {k: (b[k] - a[k]) / n for k in a}


def loadavg():
    return float(pathlib.Path("/proc/loadavg").read_text().split()[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--chat-rounds", type=int, default=20)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-bun", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--window", type=int, metavar="N",
                    help="echo messages in flight (default: ws_echo's, at most 32)")
    ap.add_argument("--bin-dir", metavar="DIR",
                    help="where ws_echo and wirecheck are (default: build/bin)")
    a = ap.parse_args()
    if a.bin_dir:
        global BIN
        BIN = pathlib.Path(a.bin_dir).resolve()
    if a.quick:
        a.rounds, a.count, a.chat_rounds = 1, 200, 4
    if a.rounds < 1 or a.count < 1 or a.chat_rounds < 1:
        ap.error("--rounds, --count and --chat-rounds take a positive number")
    if a.window is not None and not 1 <= a.window <= 1024:
        ap.error("--window takes 1 to 1024")
    if shutil.which("node") is None or not (REPO / "third_party" / "node" / "node_modules" /
                                            "ws" / "package.json").exists():
        raise SystemExit("ws_syscalls.py: node and npm ws are needed (scripts/setup.sh)")
    bun = not a.no_bun and bun_binary() is not None
    if not a.no_bun and not bun:
        print("ws_syscalls.py: Bun is not installed (scripts/setup.sh, or WIRECHECK_BUN): "
              "its column is left out", file=sys.stderr)
    bun_version = (subprocess.run([bun_binary(), "--version"], capture_output=True,
                                  text=True).stdout.strip() if bun else None)
    load0 = loadavg()
    rows = []
    for row in range(len(ROWS)):
        # The reference's chat is rs_ws_publish, Bun's server.publish;
        # both by a loop of sends too.
        sides = [s for s in SIDES if (bun or not s.startswith("bun"))
                 and (row == CHAT or not s.endswith("-send"))]
        got = {s: [] for s in sides}
        for r in range(a.rounds):
            for side in sides[r % len(sides):] + sides[:r % len(sides)]:
                got[side].append(per_message(side, row, a.chat_rounds if row == CHAT
                                             else a.count, a.window))
        out = {"row": ROWS[row]}
        for side, runs in got.items():
            for k in ("writes", "reads"):
                v = sorted(x[k] for x in runs)
                out[f"{side.replace('-', '_')}_{k}"] = {"median": statistics.median(v),
                                                        "min": v[0], "max": v[-1]}
        rows.append(out)
    load1 = loadavg()
    result = {"command": ["bench/ws_syscalls.py", *sys.argv[1:]],
              "rounds": a.rounds, "count": a.count, "chat_rounds": a.chat_rounds,
              "chat_clients": CHAT_CLIENTS, "bun_version": bun_version,
              "window": a.window,
              "load_start": load0, "load_end": load1, "rows": rows}
    if a.json:
        print(json.dumps(result, indent=1))
        return
    # The table is the report's own section's (bench_ws.syscalls_markdown),
    # so that these figures have one renderer.
    try:
        from wirecheck.report.render import render
    except ImportError:
        sys.path.insert(0, str(REPO / "python"))
        from wirecheck.report.render import render
    sys.stdout.write(render("ws_syscalls", result))

if __name__ == "__main__":
    sys.exit(main())
