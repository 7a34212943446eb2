#!/usr/bin/python3
"""bench/ws_syscalls.py: syscalls per echoed message of the WebSocket echo
servers of bench/ws_echo.c, the reference stack's and node 20 + npm ws
8.18.3's (bench/ws_server.js), both counted the same way: by the preload
gate (`wirecheck exec`), on the server's connected unix socket.

For each echo row of ws_echo (16 B text, 16 B binary, 1 KiB and 16 KiB of
non-ASCII text), a run starts the server under `wirecheck exec` and drives
it with `ws_echo --client PATH ROW COUNT` (one connection, at most 32
messages in flight, as ws_echo's echo rounds, every echo checked). A run
of 3 x COUNT messages less a run of none, over 3 x COUNT messages, leaves
out the handshake, the start and the end. Writing
calls are send, sendto, sendmsg, write and writev; reading calls recv and
read. How many messages one call carries depends on how the client's
frames arrive, so the figures move from run to run: each side runs ROUNDS
times, interleaved (ref, node, then node, ref, ...), and the table gives
medians with their min and max, and the load average beside them.

    bench/ws_syscalls.py [--rounds N] [--count N] [--quick] [--json]

--quick: 1 round, COUNT 200. Exits 1 when a server or the client fails,
or node or npm ws is missing.
"""
import argparse
import json
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[1]
BIN = REPO / "build" / "bin"
NODE_JS = REPO / "bench" / "ws_server.js"
ROWS = ["echo 16 B text", "echo 16 B binary", "echo 1 KiB non-ASCII text",
        "echo 16 KiB non-ASCII text"]
WRITES = ("send", "sendto", "sendmsg", "write", "writev")
READS = ("recv", "read")


def counts(side, row, count):
    """{writes, reads} of the server's connected unix sockets over one run
    of `count` messages of `row`."""
    with tempfile.TemporaryDirectory() as d:
        sock = pathlib.Path(d) / "s"
        report = pathlib.Path(d) / "report.json"
        server = ([str(BIN / "ws_echo"), "--serve-ref", str(sock)] if side == "ref"
                  else ["node", str(NODE_JS), "echo", str(sock)])
        # ws_echo's client retries its connect while the server starts.
        until = f"{BIN / 'ws_echo'} --client {sock} {row} {count}"
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


def per_message(side, row, count):
    """Calls per message of a run of 3 x count messages, less those of a
    run of none (the handshake, the start, the client's !quit and the
    end, which do not depend on how messages arrive). The difference of
    two runs with messages, as before, could come out below zero: how
    many messages a call carries moves from run to run."""
    a, b = counts(side, row, 0), counts(side, row, 3 * count)
    return {k: (b[k] - a[k]) / (3 * count) for k in a}


def loadavg():
    return float(pathlib.Path("/proc/loadavg").read_text().split()[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.quick:
        a.rounds, a.count = 1, 200
    if a.rounds < 1 or a.count < 1:
        ap.error("--rounds and --count take a positive number")
    if shutil.which("node") is None or not (REPO / "third_party" / "node" / "node_modules" /
                                            "ws" / "package.json").exists():
        raise SystemExit("ws_syscalls.py: node and npm ws are needed (scripts/setup.sh)")
    load0 = loadavg()
    rows = []
    for row in range(len(ROWS)):
        got = {"ref": [], "node": []}
        for r in range(a.rounds):
            for side in (("ref", "node") if r % 2 == 0 else ("node", "ref")):
                got[side].append(per_message(side, row, a.count))
        out = {"row": ROWS[row]}
        for side, runs in got.items():
            for k in ("writes", "reads"):
                v = sorted(x[k] for x in runs)
                out[f"{side}_{k}"] = {"median": statistics.median(v), "min": v[0], "max": v[-1]}
        rows.append(out)
    load1 = loadavg()
    if a.json:
        print(json.dumps({"rounds": a.rounds, "count": a.count, "load_start": load0,
                          "load_end": load1, "rows": rows}, indent=1))
        return
    print(f"ws_syscalls: server syscalls per echoed message on its connected socket, "
          f"preload gate; runs of {3 * a.count} messages less runs of none, {a.rounds} "
          f"interleaved rounds; load average {load0:.2f} before, {load1:.2f} after")
    print("| row | reference: writes | node + ws: writes | reference: reads | node + ws: reads |")
    print("|---|---|---|---|---|")

    def cell(s):
        return f"{s['median']:.3f} ({s['min']:.3f}-{s['max']:.3f})"
    for r in rows:
        print(f"| {r['row']} | {cell(r['ref_writes'])} | {cell(r['node_writes'])} | "
              f"{cell(r['ref_reads'])} | {cell(r['node_reads'])} |")


if __name__ == "__main__":
    sys.exit(main())
