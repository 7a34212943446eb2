#!/usr/bin/python3
"""bench/chunked.py: chunked responses (issue 10), fixed vs separate vs node.

1. Syscalls per response, for payloads of 8 KiB, 16 KiB, 64 KiB, 128 KiB and
   1 MiB sent as one try_write(data, final) by build/bin/chunked_server:
   the gate's send + sendmsg counts (read from its /stats) over R requests,
   divided by R. Target: a 128 KiB final chunk in 2 syscalls (fixed), where
   chunked=separate makes 3. Counts, not times: they hold still on a shared
   machine.
2. Requests per second with wrk (-t1 -c16, keep-alive) against the server
   pinned to CPU 0 (wrk on CPU 1): fixed, separate, and node's http server
   doing res.write(buf) + res.end() of the same bytes (chunked), medians of
   ROUNDS interleaved runs with their min and max. node's syscalls per
   response come from the preload gate (`wirecheck exec`): write + writev.

    bench/chunked.py [--rounds N] [--seconds S] [--quick]

Prints Markdown tables; --json FILE also writes the figures.
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
import time
import urllib.request

REPO = pathlib.Path(__file__).resolve().parents[1]
BIN = REPO / "build" / "bin"
SIZES = [8 * 1024, 16 * 1024, 64 * 1024, 128 * 1024, 1024 * 1024]
NODE_SERVER = r"""
const http = require('http');
const size = +process.argv[2];
const buf = Buffer.alloc(size, 0x61);
const server = http.createServer((req, res) => { res.write(buf); res.end(); });
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => console.log('listening ' + server.address().port));
process.on('SIGINT', () => process.exit(0));
"""


def label(n):
    return f"{n // 1024} KiB" if n < 1024 * 1024 else f"{n // (1024 * 1024)} MiB"


def start(cmd, cpu=None):
    if cpu is not None and shutil.which("taskset"):
        cmd = ["taskset", "-c", str(cpu)] + cmd
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    line = p.stdout.readline().decode()
    if not line.startswith("listening "):
        p.kill()
        raise SystemExit(f"chunked.py: {cmd[0]} did not start: {line!r}")
    return p, int(line.split()[1])


def stop(p):
    p.kill()
    p.wait(timeout=10)


def stats(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=30) as r:
        return dict(kv.split("=") for kv in r.read().decode().split())


def get(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=60) as r:
        return len(r.read())


def syscalls_per_response(variant, size, requests):
    p, port = start([str(BIN / "chunked_server"), "--variant", f"chunked={variant}"])
    try:
        get(port, f"/tryfinal/{size}")  # warm: the body buffer is made once
        s0 = stats(port)
        s1 = stats(port)   # s1 - s0: what one /stats answer costs
        for _ in range(requests):
            assert get(port, f"/tryfinal/{size}") == size
        s2 = stats(port)
    finally:
        stop(p)
    cost = {k: 2 * int(s1[k]) - int(s0[k]) for k in ("send", "sendmsg")}
    sends = int(s2["send"]) - cost["send"]
    msgs = int(s2["sendmsg"]) - cost["sendmsg"]
    return (sends + msgs) / requests, sends / requests, msgs / requests


def node_syscalls(size, requests):
    """write + writev per response of node 20, counted by the preload gate."""
    wc = BIN / "wirecheck"
    with tempfile.TemporaryDirectory() as d:
        js = pathlib.Path(d) / "server.js"
        js.write_text(NODE_SERVER)
        out = pathlib.Path(d) / "report.json"
        until = (f"sh -c 'sleep 1; for i in $(seq {requests}); do curl -s -o /dev/null "
                 f"http://127.0.0.1:$(cat {d}/port)/; done'")
        # The port is learnt from node's first line: a wrapper writes it.
        wrapper = pathlib.Path(d) / "run.sh"
        wrapper.write_text(f"#!/bin/sh\nexec node {js} {size} | (read a p; echo $p > {d}/port; cat)\n")
        wrapper.chmod(0o755)
        subprocess.run([str(wc), "exec", "--output", str(out), "--until", until,
                        "--stop-signal", "SIGINT", "--", "sh", str(wrapper)],
                       capture_output=True, timeout=300)
        rep = json.loads(out.read_text())
    writes = 0
    for c in [rep.get("counts")] + rep.get("children", []):
        for f in (c or {}).get("fds", []):
            what = f.get("what") or []
            what = what if isinstance(what, list) else [what]
            if any(w.startswith("tcp ") and "listening" not in w for w in what):
                writes += f["calls"].get("write", 0) + f["calls"].get("writev", 0)
    return writes / requests


def wrk(port, path, seconds):
    cmd = ["wrk", "-t1", "-c16", f"-d{seconds}s", f"http://127.0.0.1:{port}{path}"]
    if shutil.which("taskset"):
        cmd = ["taskset", "-c", "1"] + cmd
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60).stdout
    for line in out.splitlines():
        if line.startswith("Requests/sec:"):
            return float(line.split()[1])
    raise SystemExit(f"chunked.py: wrk said:\n{out}")


def throughput(size, rounds, seconds):
    runs = {"fixed": [], "separate": [], "node": []}
    for _ in range(rounds):
        for who in ("fixed", "separate", "node"):
            if who == "node":
                with tempfile.NamedTemporaryFile("w", suffix=".js", delete=False) as f:
                    f.write(NODE_SERVER)
                p, port = start(["node", f.name, str(size)], cpu=0)
                path = "/"
            else:
                p, port = start([str(BIN / "chunked_server"), "--variant", f"chunked={who}"], cpu=0)
                path = f"/tryfinal/{size}"
                get(port, path)
            try:
                runs[who].append(wrk(port, path, seconds))
            finally:
                stop(p)
                if who == "node":
                    os.unlink(f.name)
    return runs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=50)
    ap.add_argument("--quick", action="store_true", help="1 round of 1 s, syscalls only for node")
    ap.add_argument("--no-wrk", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.quick:
        a.rounds, a.seconds, a.requests = 1, 1, 10
    result = {"syscalls": {}, "rps": {}}
    print("## Syscalls per response (send + sendmsg; try_write(body, final))\n")
    print("| payload | fixed | separate | node (write + writev) |")
    print("|---|---:|---:|---:|")
    for size in SIZES:
        f = syscalls_per_response("fixed", size, a.requests)
        s = syscalls_per_response("separate", size, a.requests)
        n = node_syscalls(size, a.requests) if shutil.which("node") else None
        result["syscalls"][size] = {"fixed": f, "separate": s, "node": n}
        print(f"| {label(size)} | {f[0]:.2f} ({f[1]:.2f} + {f[2]:.2f}) | {s[0]:.2f} ({s[1]:.2f} + {s[2]:.2f}) | "
              f"{'-' if n is None else f'{n:.2f}'} |")
    sys.stdout.flush()
    if a.no_wrk or not shutil.which("wrk"):
        print("\n(wrk: skipped)")
    else:
        print(f"\n## Requests per second (wrk -t1 -c16 -d{a.seconds}s; medians of {a.rounds} "
              "interleaved runs, [min, max])\n")
        print("| payload | fixed | separate | node 20 | fixed/separate | fixed/node |")
        print("|---|---:|---:|---:|---:|---:|")
        for size in SIZES:
            r = throughput(size, a.rounds, a.seconds)
            med = {k: statistics.median(v) for k, v in r.items()}
            result["rps"][size] = r
            cell = lambda k: f"{med[k]:,.0f} [{min(r[k]):,.0f}, {max(r[k]):,.0f}]"
            print(f"| {label(size)} | {cell('fixed')} | {cell('separate')} | {cell('node')} | "
                  f"{med['fixed'] / med['separate']:.2f} | {med['fixed'] / med['node']:.2f} |")
            sys.stdout.flush()
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(result, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
