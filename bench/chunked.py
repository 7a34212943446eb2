#!/usr/bin/python3
"""bench/chunked.py: chunked responses, fixed vs separate vs node
vs Bun.

Bun's server is Bun.serve (uWebSockets inside; bench/chunked_bun.js) with a
streamed body, a direct ReadableStream that writes the payload and ends,
answered chunked like the others; it runs beside node in every part, its
syscalls counted by the preload gate as node's are (every writing call:
Bun sends with send/sendto where node uses write/writev), and fixed against
it is settled in paired runs (part 4) at every payload, since the two are
close. $WIRECHECK_BUN, else the pinned Bun in third_party/bun; without one
(or with --no-bun) its column is left out, as said.

1. Syscalls per response, for payloads of 8 KiB, 16 KiB, 64 KiB, 128 KiB and
   1 MiB sent as one try_write(data, final) by build/bin/chunked_server:
   the gate's send + sendmsg counts (read from its /stats) over R requests,
   divided by R. Target: a 128 KiB final chunk in 2 syscalls (fixed), where
   chunked=separate makes 3. node 20's (bench/chunked_node.js: res.write(body)
   + res.end()) come from the preload gate (`wirecheck exec`): write + writev
   on its accepted TCP sockets over R requests, divided by R. Counts, not
   times: they hold still on a shared machine.
2. Requests per second with wrk (-t1 -c16, keep-alive) against each server
   pinned to CPU 0, wrk pinned to CPU 0 too (--wrk-cpu 1: on a CPU of its
   own): fixed, separate, and node, the same bytes. Why one CPU for both:
   on a CPU of its own, wrk needs more CPU per response than any of the
   servers at every payload (part 3), so it saturates first and the
   requests per second are wrk's ceiling whatever the server saves; and
   when the two wait for each other, other work on a shared machine takes
   the gaps. On one CPU, each response costs that CPU the server's time
   plus wrk's, so every µs a server saves is throughput, the pair keeps
   the CPU busy (other work gets its share only), and the second CPU is
   left to the rest of the machine. wrk's part is the same program for
   the three sides, though not the same cost: it reads what each server's
   segments give it.
   Each round runs the three once, in an order rotated from round to round
   (so that none is always first after a quiet spell); the table gives the
   medians of ROUNDS rounds with their min and max, the ratios of the
   medians, each round's own ratio (fixed's run over the other's, seconds
   apart: the machine's drift over a run weighs on both) with how many
   rounds fixed won, and the load average (/proc/loadavg, 1 minute) before
   and after each payload's rounds. Targets: fixed ahead of separate on
   every payload of 16 KiB or more (judged on part 4 where it ran), and
   ahead of node on every row: the medians' ratio and the median of the
   rounds' ratios both above 1.
   Everything runs in a network namespace of the bench's own under cubic
   (isolated(): the host's bbr paces loopback sends at a cost that is not
   the write path's), or where none can be made, in the host's, as said.
3. Who limits those requests per second. In the same runs: the server's
   CPU µs per response (its threads' schedstat time over wrk's requests),
   wrk's (its user + kernel time, RUSAGE_CHILDREN, over the same), and the
   share of a CPU each used. On one CPU, the two shares add up to what the
   pair got of it, and the requests per second are bounded by the sum of
   the two costs. With --wrk-cpu 1, server and wrk each have a CPU, so the
   one that needs more CPU per response saturates first: where that is wrk
   (it reads 8 KiB at a time, with an ioctl(FIONREAD) after each read: 20
   syscalls for a 64 KiB response, against the server's 2 or 3), the
   requests per second measure wrk, not the server, and the server's CPU
   per response is the figure that compares the servers. Also fixed's and
   separate's send + sendmsg per response in those runs (from /stats):
   part 1's counts, under keep-alive load.
4. Fixed against separate in paired runs, for each payload of 16 KiB or
   more: 30 pairs (--quick 20) of wrk runs of 1 s (--pairs,
   --pair-seconds), the two servers up throughout, each pair's two runs
   back to back, fixed first in every other pair. From 128 KiB on fixed's lead is a few percent,
   less than the shared machine's speed moves between part 2's rounds, so
   5 rounds cannot settle it either way (docs/ARCHITECTURE.md); pairs a
   second apart can. The table gives the median of the pairs' ratios and
   the 95% interval the sign test gives it (sign_interval()); the target
   "fixed ahead of separate" is met when the interval's low end is above
   1. node's leads (1.2x and more) need no such settling.

    bench/chunked.py [--rounds N] [--seconds S] [--requests R] [--quick]
                     [--pairs N] [--pair-seconds S]
                     [--no-wrk] [--no-node] [--sizes B,B,...] [--bin-dir DIR]
                     [--wrk-cpu N] [--congestion NAME | --host-net]
                     [--json FILE|-]

Prints a progress line per measurement on stderr, and at the end the tables
on stdout, from the report's own section for this bench
(python/wirecheck/report/sections/bench_chunked.py, the one renderer of
its figures); with --json -, the JSON on stdout instead, as the report's
collector reads it; with --json FILE, the JSON to FILE and the tables. --quick: 1 round of 1 s, 10 requests, 20 pairs.
The servers it starts end with it: on SIGTERM through its finally
blocks, on SIGKILL by PR_SET_PDEATHSIG.
"""
import argparse
import json
import math
import os
import resource
import pathlib
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = pathlib.Path(__file__).resolve().parents[1]
BIN = REPO / "build" / "bin"
NODE_JS = REPO / "bench" / "chunked_node.js"
BUN_JS = REPO / "bench" / "chunked_bun.js"
SIZES = [8 * 1024, 16 * 1024, 64 * 1024, 128 * 1024, 1024 * 1024]
SIDES = ("fixed", "separate", "node", "bun")
FOREIGN = ("node", "bun")  # the servers counted by the preload gate
WRITES = ("send", "sendto", "sendmsg", "write", "writev")
SERVER_CPU, WRK_CPU = 0, 0  # --wrk-cpu changes WRK_CPU
WRK_THREADS, WRK_CONNECTIONS = 1, 16
WRK_TIMEOUT = 10  # s; wrk's default, 2 s, is met by a starved server at 1 MiB
PAIRS, PAIR_SECONDS, QUICK_PAIRS = 30, 1, 20  # part 4; --pairs, --pair-seconds
LEVEL = 0.95  # of the interval a separate target is judged on



def say(*args):
    """A progress line, on stderr: stdout has the tables, or the JSON."""
    print(*args, file=sys.stderr, flush=True)


CONGESTION = "cubic"  # the kernel's default; see isolated()
NETNS_ENV = "WIRECHECK_CHUNKED_NETNS"  # set in the bench re-executed in its namespace
PROBE_ENV = "WIRECHECK_CHUNKED_NETNS_PROBE"  # set in the probe of a way to make one
CC_FILE = pathlib.Path("/proc/sys/net/ipv4/tcp_congestion_control")
AVAIL_FILE = pathlib.Path("/proc/sys/net/ipv4/tcp_available_congestion_control")


def congestion():
    """The TCP congestion control of this network namespace, or None."""
    try:
        return CC_FILE.read_text().strip()
    except OSError:
        return None


def loopback_up():
    """Brings lo up (a new network namespace has it down): SIOCGIFFLAGS,
    then SIOCSIFFLAGS with IFF_UP, on a struct ifreq of 40 bytes."""
    import fcntl
    import socket
    import struct
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifr = fcntl.ioctl(s, 0x8913, struct.pack("16sH22x", b"lo", 0))
        flags = struct.unpack("16sH22x", ifr)[1]
        fcntl.ioctl(s, 0x8914, struct.pack("16sH22x", b"lo", flags | 0x1))


def setup_namespace(cc):
    """In a new network namespace: lo up, congestion control cc. Returns
    None, or why not."""
    try:
        loopback_up()
    except OSError as e:
        return f"lo: {e.strerror}"
    # A write refused at write(2), not open(2), has no filename: name it.
    try:
        CC_FILE.write_text(cc + "\n")
    except OSError as e:
        return f"{CC_FILE}: {e.strerror}"
    return None


def isolated(cc, explicit):
    """Runs the rest of the bench in a network namespace of its own, with
    TCP congestion control cc, and returns what the JSON records of it.

    Why: the machine's congestion control decides much of a large
    response's cost on 127.0.0.1. Under bbr TCP paces its sends (lo has
    no qdisc, so TCP paces with timers of its own), and above about 90 KiB
    a response that pacing costs every server tens of µs per response and
    moves from round to round: 128 KiB from fixed, server µs per response
    73.6 under bbr against 18.6 under cubic, the same build, runs of 2 s
    (docs/ARCHITECTURE.md). The bench measures the write path, so it runs
    under cubic, the kernel's default, in a namespace of its own (unshare
    --net; as root, else in a user namespace), which leaves the host's
    setting alone; --congestion bbr shows the other. Each way is tried
    first in a probe that does the whole setup; where none works, the
    bench runs in the host's namespace and says why, unless cc was asked
    for (explicit), which is then an error."""
    if os.environ.get(PROBE_ENV) is not None:
        why = setup_namespace(os.environ[PROBE_ENV])
        if why:
            print(why, file=sys.stderr)
        sys.exit(1 if why else 0)
    if os.environ.get(NETNS_ENV) is not None:
        host = os.environ.pop(NETNS_ENV) or None
        why = setup_namespace(cc)
        if why:  # the probe passed: only a changed machine gets here
            raise SystemExit(f"chunked.py: the bench's network namespace: {why}")
        return {"namespace": "private", "congestion_control": congestion(),
                "host_congestion_control": host}
    try:
        avail = AVAIL_FILE.read_text().split()
    except OSError:
        avail = [cc]  # no /proc/sys: the probe says why
    if cc not in avail:
        raise SystemExit(f"chunked.py: --congestion {cc}: not a congestion control this "
                         f"kernel has (it has: {' '.join(avail)})")
    unshare, why = shutil.which("unshare"), "unshare (util-linux) is not installed"
    me = str(pathlib.Path(__file__).resolve())
    for flags in (["--net"], ["--user", "--map-root-user", "--net"]):
        if not unshare:
            break
        probe = subprocess.run([unshare, *flags, "--", sys.executable, me],
                               env=dict(os.environ, **{PROBE_ENV: cc}),
                               capture_output=True, text=True)
        if probe.returncode == 0:
            env = dict(os.environ, **{NETNS_ENV: congestion() or ""})
            sys.stdout.flush()
            os.execve(unshare, [unshare, *flags, "--", sys.executable, me, *sys.argv[1:]], env)
        why = (f"unshare {' '.join(flags)}: "
               + (probe.stderr.strip().splitlines() or [f"exited {probe.returncode}"])[-1])
    if explicit:
        raise SystemExit(f"chunked.py: --congestion {cc}: {why}")
    print(f"chunked.py: no network namespace of its own ({why}): running in the host's, "
          f"congestion control {congestion()}", file=sys.stderr)
    return {"namespace": "host", "congestion_control": congestion(), "why": why}


def label(n):
    return f"{n // 1024} KiB" if n < 1024 * 1024 else f"{n // (1024 * 1024)} MiB"


def loadavg():
    try:
        return float(pathlib.Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def pinned(cmd, cpu):
    if cpu is not None and shutil.which("taskset") and (os.cpu_count() or 1) > cpu:
        return ["taskset", "-c", str(cpu)] + cmd
    return cmd


def die_with_parent(parent):
    """A preexec_fn: the child gets SIGKILL when the bench ends, however
    it ends (PR_SET_PDEATHSIG, which an exec keeps: taskset execs the
    server), and ends at once if the bench already has."""
    def arm():
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:
            os._exit(1)
    return arm


def start(cmd, cpu=None):
    p = subprocess.Popen(pinned(cmd, cpu), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         preexec_fn=die_with_parent(os.getpid()))
    line = p.stdout.readline().decode()
    if not line.startswith("listening "):
        p.kill()
        p.wait()
        raise SystemExit(f"chunked.py: {cmd[0]} did not start: {line!r}")
    return p, int(line.split()[1])


def stop(p):
    p.kill()
    p.wait(timeout=10)
    p.stdout.close()


def stats(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=30) as r:
        return dict(kv.split("=") for kv in r.read().decode().split())


def get(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=60) as r:
        return len(r.read())


def bun_binary():
    """$WIRECHECK_BUN, else the pinned Bun of third_party/bun; None when
    neither runs."""
    b = os.environ.get("WIRECHECK_BUN") or str(
        REPO / "third_party/bun/node_modules/@oven/bun-linux-x64/bin/bun")
    return b if os.access(b, os.X_OK) else None


def bun_version():
    b = bun_binary()
    return b and subprocess.run([b, "--version"], capture_output=True, text=True).stdout.strip()


def server_cmd(side, size, port_file="-"):
    """(argv, the path wrk asks for) of one side's server."""
    if side == "node":
        return ["node", str(NODE_JS), str(size)] + ([port_file] if port_file != "-" else []), "/"
    if side == "bun":
        return [bun_binary(), str(BUN_JS), str(size), port_file], "/"
    return [str(BIN / "chunked_server"), "--variant", f"chunked={side}"], f"/tryfinal/{size}"


def syscalls_per_response(variant, size, requests):
    """send and sendmsg per response of chunked_server (its own gate's
    counters, read through /stats), one connection per request."""
    p, port = start(server_cmd(variant, size)[0])
    try:
        get(port, f"/tryfinal/{size}")  # warm: the body buffer is made once
        s0 = stats(port)
        s1 = stats(port)   # s1 - s0: what one /stats answer costs
        for _ in range(requests):
            if get(port, f"/tryfinal/{size}") != size:
                raise SystemExit(f"chunked.py: {variant} {size}: a short body")
        s2 = stats(port)
    finally:
        stop(p)
    cost = {k: 2 * int(s1[k]) - int(s0[k]) for k in ("send", "sendmsg")}
    sends = int(s2["send"]) - cost["send"]
    msgs = int(s2["sendmsg"]) - cost["sendmsg"]
    return {"per_response": (sends + msgs) / requests, "send": sends / requests,
            "sendmsg": msgs / requests}


def foreign_syscalls(side, size, requests):
    """Writing calls per response of node 20 or Bun on its accepted TCP
    sockets, counted by the preload gate (`wirecheck exec`); curl makes the
    requests, one connection each, and the server gets SIGINT when they
    are done. Every writing kind is counted (node writes with write and
    writev, Bun with send and sendto); the result has each kind per
    response."""
    wc = BIN / "wirecheck"
    with tempfile.TemporaryDirectory() as d:
        port_file = pathlib.Path(d) / "port"
        report = pathlib.Path(d) / "report.json"
        # The loop polls for the port file the server writes once it listens.
        until = (f"while [ ! -s {port_file} ]; do sleep 0.05; done; "
                 f"port=$(cat {port_file}); "
                 f"for i in $(seq {requests}); do curl -sf -o /dev/null "
                 f"http://127.0.0.1:$port/ || exit 1; done")
        proc = subprocess.run([str(wc), "exec", "--output", str(report), "--until", until,
                               "--stop-signal", "SIGINT", "--timeout", "120", "--",
                               *server_cmd(side, size, str(port_file))[0]],
                              capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise SystemExit(f"chunked.py: wirecheck exec {side} ({size} B) exited "
                             f"{proc.returncode}: {proc.stderr.strip()[-400:]}")
        rep = json.loads(report.read_text())
    kinds = {k: 0 for k in WRITES}
    for c in [rep.get("counts")] + rep.get("children", []):
        for f in (c or {}).get("fds", []):
            what = f.get("what") or []
            what = what if isinstance(what, list) else [what]
            if any(w.startswith("tcp ") and "listening" not in w for w in what):
                for k in kinds:
                    kinds[k] += f["calls"].get(k, 0)
    return {"per_response": sum(kinds.values()) / requests,
            **{k: v / requests for k, v in kinds.items()}}


def cpu_ns(pid):
    """CPU time of every thread of pid so far, ns (the first field of each
    /proc/PID/task/TID/schedstat: time on a CPU, user and kernel)."""
    total = 0
    for t in pathlib.Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((t / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # a thread that ended between the listing and the read
    return total


def children_cpu():
    """CPU seconds (user + system) of this process's children that have
    been waited for."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def wrk(port, path, seconds):
    """(requests per second, requests, timeouts, wrk's CPU seconds, wall
    seconds) of one wrk run. Non-2xx answers and connect, read or write
    errors end the bench, since a fast failure is no throughput; timeouts
    (no answer within WRK_TIMEOUT: a server starved of CPU on a loaded
    machine) are counted and reported. wrk's CPU time (user + kernel) is
    the RUSAGE_CHILDREN growth over its run: wrk (taskset execs it) is the
    only child waited for in between, the server being waited for later."""
    cmd = pinned(["wrk", f"-t{WRK_THREADS}", f"-c{WRK_CONNECTIONS}", f"-d{seconds}s",
                  f"--timeout={WRK_TIMEOUT}s", f"http://127.0.0.1:{port}{path}"], WRK_CPU)
    cpu0, t0 = children_cpu(), time.monotonic()
    res = subprocess.run(cmd, capture_output=True, text=True,
                         timeout=seconds + WRK_TIMEOUT + 60).stdout
    wall, client_cpu = time.monotonic() - t0, children_cpu() - cpu0
    timeouts = 0
    for ln in res.splitlines():
        ln = ln.strip()
        if ln.startswith("Non-2xx"):
            raise SystemExit(f"chunked.py: wrk {path}: {ln}")
        if ln.startswith("Socket errors:"):
            errs = dict((k.strip(), int(v)) for k, v in
                        (part.strip().rsplit(" ", 1) for part in ln.split(":", 1)[1].split(",")))
            if errs.get("connect") or errs.get("read") or errs.get("write"):
                raise SystemExit(f"chunked.py: wrk {path}: {ln}")
            timeouts = errs.get("timeout", 0)
    rate = count = None
    for line in res.splitlines():
        if line.startswith("Requests/sec:"):
            rate = float(line.split()[1])
        elif " requests in " in line:
            count = int(line.split()[0])
    if rate is None or not count:
        raise SystemExit(f"chunked.py: wrk said:\n{res}")
    return rate, count, timeouts, client_cpu, wall


def throughput(size, rounds, seconds, sides):
    """wrk's requests per second of each side, rounds interleaved, the
    order rotated by one each round; and, in each run, what each side of
    the connection cost: the server's CPU µs per response (its threads'
    time on a CPU while wrk ran, over wrk's request count: a figure the
    load moves less, since the time the server waits for a CPU is not in
    it), wrk's CPU µs per response (its user + kernel time over the same
    count), and the share of its own CPU each used (CPU time over the wall
    time of wrk's run). Whichever costs more per response, on a CPU of its
    own, is the one that limits the requests per second. For the reference
    server, also its send + sendmsg per response under wrk (keep-alive, 16
    connections), from its /stats: the counts of part 1, under load."""
    runs = {s: [] for s in sides}
    calls = {s: [] for s in sides if s not in FOREIGN}
    cpu = {s: [] for s in sides}
    client = {s: [] for s in sides}
    busy = {"server": {s: [] for s in sides}, "wrk": {s: [] for s in sides}}
    timeouts = {s: 0 for s in sides}
    for r in range(rounds):
        order = sides[r % len(sides):] + sides[:r % len(sides)]
        for side in order:
            cmd, path = server_cmd(side, size)
            p, port = start(cmd, cpu=SERVER_CPU)
            try:
                if side not in FOREIGN:
                    get(port, path)  # the body buffer is made once
                    s0 = stats(port)
                    s1 = stats(port)  # s1 - s0: what one /stats answer costs
                before = cpu_ns(p.pid)
                rate, count, late, client_cpu, wall = wrk(port, path, seconds)
                server_ns = cpu_ns(p.pid) - before
                if side not in FOREIGN:
                    s2 = stats(port)
                    calls[side].append(sum((int(s2[k]) - int(s1[k])) - (int(s1[k]) - int(s0[k]))
                                           for k in ("send", "sendmsg")) / count)
                timeouts[side] += late
                cpu[side].append(server_ns / 1e3 / count)
                client[side].append(client_cpu * 1e6 / count)
                busy["server"][side].append(server_ns / 1e9 / wall)
                busy["wrk"][side].append(client_cpu / wall)
                runs[side].append(rate)
            finally:
                stop(p)
    return runs, cpu, timeouts, client, busy, calls


def sign_interval(ratios, level=LEVEL):
    """A distribution-free interval for the median of ratios, from the sign
    test: (the k-th smallest, the k-th largest), k the largest with
    P(Binomial(n, 1/2) < k) <= (1 - level) / 2; None when n is too small
    for one (under 6 pairs at 95%). It assumes nothing of the noise's
    shape but that the pairs are independent: the chance that the true
    median is below the low end is at most (1 - level) / 2. The low end
    is above 1 exactly when fewer than k pairs had a ratio of 1 or less
    (a tie is not a win): 30 pairs at 95%, at most 9; 20 pairs, 5."""
    n, s = len(ratios), sorted(ratios)
    k, below = 0, 0.0
    for j in range(n + 1):
        below += math.comb(n, j) / 2 ** n
        if below > (1 - level) / 2:
            break
        k = j + 1
    return (s[k - 1], s[n - k]) if k else None


def paired_runs(size, pairs, seconds, other="separate"):
    """fixed against other in `pairs` pairs of wrk runs of `seconds` each:
    both servers start once (pinned to the servers' CPU) and stay up, and
    each pair is two runs back to back, fixed first in even pairs and
    second in odd ones (A B, B A: a drift of the machine's speed over two
    pairs weighs on both sides alike, and so does going first). A pair's
    ratio is fixed's requests per second over the other's, from runs a
    second apart: on this shared machine the speed drifts within a minute
    (1 MiB, 15 rounds of part 2 at 1 s: wrk's CPU per response went from
    524 to 765 µs over the run), more than the few percent of fixed's
    lead from 128 KiB on, so part 2's rounds, each restarting three
    servers, cannot settle that lead in 5 rounds.
    Returns the runs, which side went first in each pair, the ratios,
    their median, its sign_interval(), how many pairs fixed won, wrk's
    timeouts, and the load average before and after."""
    servers, runs, late, first = {}, {"fixed": [], other: []}, 0, []
    cpu = {"fixed": [], other: []}
    try:
        for side in ("fixed", other):
            cmd, path = server_cmd(side, size)
            p, port = start(cmd, cpu=SERVER_CPU)
            servers[side] = (p, port, path)
            if side not in FOREIGN:
                get(port, path)  # the body buffer is made once
        before = loadavg()
        for i in range(pairs):
            order = ("fixed", other) if i % 2 == 0 else (other, "fixed")
            first.append(order[0])
            for side in order:
                p, port, path = servers[side]
                before_ns = cpu_ns(p.pid)
                rate, count, timeouts, _, _ = wrk(port, path, seconds)
                cpu[side].append((cpu_ns(p.pid) - before_ns) / 1e3 / count)
                runs[side].append(rate)
                late += timeouts
    finally:
        for p, _, _ in servers.values():
            stop(p)
    ratios = [f / o for f, o in zip(runs["fixed"], runs[other])]
    cpu_ratios = [o / f for f, o in zip(cpu["fixed"], cpu[other])]
    return {"other": other, "pairs": pairs, "seconds": seconds, "level": LEVEL,
            "runs": runs, "first": first, "ratios": ratios, "cpu_us": cpu,
            "cpu_ratios": cpu_ratios, "cpu_ratio_median": statistics.median(cpu_ratios),
            "cpu_ratio_interval": sign_interval(cpu_ratios),
            "median": statistics.median(ratios),
            "interval": sign_interval(ratios), "won": sum(r > 1 for r in ratios),
            "timeouts": late, "load_average": [before, loadavg()]}


def settled_text(s):
    """A paired_runs() result in a line: the median of the pairs' ratios,
    its interval, and the pairs fixed won."""
    iv = s.get("interval")
    return (f"x{s['median']:.3f} in {s['pairs']} pairs of {s['seconds']} s runs"
            + (f", {s['level']:.0%} interval [{iv[0]:.3f}, {iv[1]:.3f}]" if iv else
               " (too few pairs for an interval)")
            + f", ahead in {s['won']} of {s['pairs']}"
            + (f"; server CPU per response {s['other']} / fixed x{s['cpu_ratio_median']:.3f}"
               if s.get("cpu_ratio_median") else ""))


def spread(v):
    """(max - min) / median, a run's noise as a fraction."""
    m = statistics.median(v)
    return (max(v) - min(v)) / m if m else None


def summarised(per_side):
    """runs, median, min and max of each side's figures."""
    return {"runs": per_side,
            "median": {k: statistics.median(v) for k, v in per_side.items()},
            "min": {k: min(v) for k, v in per_side.items()},
            "max": {k: max(v) for k, v in per_side.items()}}


def rps_row(runs, cpu=None, timeouts=None, client=None, busy=None, calls=None):
    med = {k: statistics.median(v) for k, v in runs.items()}
    row = {"runs": runs, "median": med, "timeouts": timeouts or {},
           "min": {k: min(v) for k, v in runs.items()},
           "max": {k: max(v) for k, v in runs.items()},
           "spread": {k: spread(v) for k, v in runs.items()}}
    for other in ("separate", *FOREIGN):
        if other in med and med[other]:
            row[f"fixed_over_{other}"] = med["fixed"] / med[other]
            # The runs do not overlap: every fixed run above every other one.
            row[f"clear_over_{other}"] = min(runs["fixed"]) > max(runs[other])
            # Paired: run r of fixed over run r of the other, the two from
            # the same round, minutes apart at most, so that what the rest
            # of the machine did in that round weighs on both.
            paired = [f / o for f, o in zip(runs["fixed"], runs[other]) if o]
            row[f"paired_{other}"] = {"ratios": paired,
                                      "median": statistics.median(paired),
                                      "min": min(paired), "max": max(paired),
                                      "won": sum(r > 1 for r in paired)}
    if cpu:
        row["cpu_us"] = summarised(cpu)
    if client:
        row["wrk_cpu_us"] = summarised(client)
    if busy:
        row["busy"] = {who: summarised(b) for who, b in busy.items()}
    if calls:
        row["syscalls_under_wrk"] = summarised(calls)
    if cpu and client and WRK_CPU == SERVER_CPU:
        # One CPU for both: each response costs it the sum.
        row["limit"] = {k: "shared" for k in cpu}
    elif cpu and client:
        # Each has a CPU of its own: the one that needs more CPU per
        # response saturates first and bounds the requests per second,
        # whatever the other saves. (With both shares of CPU well below
        # 1, neither is saturated: the wait for a CPU, other work on the
        # machine, is what bounds them.)
        row["limit"] = {k: "wrk" if row["wrk_cpu_us"]["median"][k] > row["cpu_us"]["median"][k]
                        else "server" for k in cpu}
    return row


def paired_text(row, other):
    """fixed's lead over other in the rounds: the median of the rounds'
    ratios [min, max], and how many rounds fixed won."""
    p = row.get(f"paired_{other}")
    if not p:
        return ""
    return (f"rounds x{p['median']:.2f} [{p['min']:.2f}, {p['max']:.2f}], "
            f"ahead in {p['won']} of {len(p['ratios'])}")


def ahead(row, other):
    """The target's judgement. Where part 4's paired runs were made (the
    row's settled_OTHER), the low end of the interval of their median
    ratio above 1 (were fixed not ahead, that would happen in at most
    (1 - LEVEL) / 2 of runs). With too few pairs for an interval, or none
    (--pairs 0, --no-wrk), as for node: fixed's median above the
    other's, and the fixed's median above the other's, and the
    median of the rounds' own ratios above 1 too (each round pairs two
    runs made seconds apart, so a drift of the machine's speed over the
    run weighs on both sides of a round's ratio, not on one side of the
    medians' ratio). How many rounds fixed won is in the measured text: a
    lead of a few percent loses a round now and then to a round's noise,
    which the judgement of two or more runs, pooled, settles."""
    settled = row.get(f"settled_{other}")
    if settled and settled.get("interval"):
        return settled["interval"][0] > 1.0
    p = row.get(f"paired_{other}")
    return row[f"fixed_over_{other}"] > 1.0 and (not p or p["median"] > 1.0)


def targets(result):
    t = []
    s128 = result["syscalls"].get(str(128 * 1024))
    if s128:
        m = s128["fixed"]["per_response"]
        t.append({"target": "128 KiB final chunk in 2 syscalls (fixed)",
                  "measured": f"{m:.2f} (separate {s128['separate']['per_response']:.2f})",
                  "pass": m <= 2.0})
    for size_s, row in result["rps"].items():
        size = int(size_s)
        for other in ("separate", *FOREIGN):
            if f"fixed_over_{other}" not in row or (other == "separate" and size < 16 * 1024):
                continue
            rounds = paired_text(row, other)
            settled = row.get(f"settled_{other}")
            n_rounds = len(row["runs"]["fixed"])
            t.append({"target": f"{label(size)}: fixed ahead of {other} (req/s)",
                      "measured": (f"paired runs {settled_text(settled)}; "
                                   f"{n_rounds} round{'s' * (n_rounds != 1)}: " if settled else "")
                                  + f"x{row['fixed_over_' + other]:.2f}"
                                  + (f"; {rounds}" if rounds else "")
                                  + bound_note(row, other),
                      "pass": ahead(row, other)})
    return t


def bound_note(row, other):
    """What the server costs per response against what wrk costs, when
    wrk is the bound of both sides: then the requests per second measure
    wrk, and the server's CPU per response is the figure that compares
    the servers."""
    lim, c, w = row.get("limit") or {}, row.get("cpu_us"), row.get("wrk_cpu_us")
    if c and w and lim.get("fixed") == "shared" and other in c["median"]:
        cm, wm = c["median"], w["median"]
        return (f"; one CPU for both, µs per response fixed / {other}: server "
                f"{cm['fixed']:.1f} / {cm[other]:.1f}, wrk {wm['fixed']:.1f} / {wm[other]:.1f}")
    if not (c and w) or lim.get("fixed") != "wrk" or lim.get(other) != "wrk":
        return ""
    cm, wm = c["median"], w["median"]
    return (f"; wrk costs more than the server: wrk {wm['fixed']:.1f} / {wm[other]:.1f} µs per response, "
            f"server {cm['fixed']:.1f} / {cm[other]:.1f} µs (fixed / {other}: "
            f"x{cm[other] / cm['fixed']:.2f} the server CPU)")


def options():
    """The command line, checked, with --quick's or the full run's values
    for what it does not give; and the payloads."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, help="part 2's rounds (default 5, --quick 1)")
    ap.add_argument("--seconds", type=int, help="each wrk run of part 2 (default 3, --quick 1)")
    ap.add_argument("--requests", type=int,
                    help="part 1's requests per count (default 50, --quick 10)")
    ap.add_argument("--sizes", help="payloads in bytes, comma-separated (default: "
                    + ",".join(map(str, SIZES)) + ")")
    ap.add_argument("--pairs", type=int, default=None, metavar="N",
                    help=f"part 4: pairs of wrk runs, fixed against separate, for each payload "
                    f"of 16 KiB or more (default {PAIRS}, --quick {QUICK_PAIRS}; 0: none, the "
                    "targets are then judged on the rounds)")
    ap.add_argument("--pair-seconds", type=int, default=PAIR_SECONDS, metavar="S",
                    help=f"the length of each paired run (default {PAIR_SECONDS})")
    ap.add_argument("--quick", action="store_true",
                    help=f"1 round of 1 s, 10 requests, {QUICK_PAIRS} pairs (each unless given)")
    ap.add_argument("--no-wrk", action="store_true")
    ap.add_argument("--no-node", action="store_true")
    ap.add_argument("--no-bun", action="store_true")
    ap.add_argument("--bin-dir", metavar="DIR", help="where chunked_server and wirecheck are "
                    "(default: build/bin)")
    ap.add_argument("--wrk-cpu", type=int, default=WRK_CPU, metavar="N",
                    help=f"the CPU wrk is pinned to (default {WRK_CPU}: the servers' CPU, "
                    f"{SERVER_CPU})")
    ap.add_argument("--json", metavar="FILE", help="also write the figures; - for stdout "
                    "(the tables then go to stderr)")
    ap.add_argument("--congestion", metavar="NAME",
                    help=f"TCP congestion control in the bench's own network namespace "
                    f"(default {CONGESTION}; the host's is left alone)")
    ap.add_argument("--host-net", action="store_true",
                    help="run in the host's network namespace, with its settings as they are")
    a = ap.parse_args()
    if a.host_net and a.congestion:
        ap.error("--congestion sets the bench's own network namespace; --host-net has none")
    # What is not given: --quick's, else the full run's.
    for k, quick, full in (("rounds", 1, 5), ("seconds", 1, 3), ("requests", 10, 50),
                           ("pairs", QUICK_PAIRS, PAIRS)):
        if getattr(a, k) is None:
            setattr(a, k, quick if a.quick else full)
    for flag, v, least in (("--rounds", a.rounds, 1), ("--seconds", a.seconds, 1),
                           ("--requests", a.requests, 1), ("--pairs", a.pairs, 0),
                           ("--pair-seconds", a.pair_seconds, 1)):
        if v < least:
            ap.error(f"{flag} {v}: must be {least} or more")
    if 0 < a.pairs and sign_interval([1.0] * a.pairs) is None:
        ap.error(f"--pairs {a.pairs}: too few for a {LEVEL:.0%} interval; 0 (judge on the "
                 f"rounds) or {min(n for n in range(1, 100) if sign_interval([1.0] * n))} "
                 "or more")
    try:
        sizes = [int(v) for v in a.sizes.split(",")] if a.sizes else SIZES
    except ValueError:
        ap.error(f"--sizes {a.sizes}: not a comma-separated list of byte counts")
    if any(v < 1 for v in sizes):
        ap.error(f"--sizes {a.sizes}: a payload must be 1 byte or more")
    return a, sizes


def part1(result, sizes, requests, foreign):
    """Syscalls per response, put in result["syscalls"]; a progress line
    each payload."""
    for size in sizes:
        row = {s: syscalls_per_response(s, size, requests) for s in ("fixed", "separate")}
        for f in FOREIGN:
            row[f] = foreign_syscalls(f, size, requests) if f in foreign else None
        result["syscalls"][str(size)] = row
        say(f"chunked.py: syscalls per response, {label(size)}: "
            + ", ".join(f"{s} {row[s]['per_response']:.2f}" for s in ("fixed", "separate"))
            + "".join(f", {f} {row[f]['per_response']:.2f}" for f in foreign))


def part2(result, sizes, a, sides, foreign):
    """wrk's requests per second in rounds, and what the same runs cost
    (parts 2 and 3), put in result["rps"] and result["wrk"]; a progress
    line each payload."""
    result["wrk"] = {"threads": WRK_THREADS, "connections": WRK_CONNECTIONS,
                     "timeout": WRK_TIMEOUT,
                     "seconds": a.seconds, "rounds": a.rounds,
                     "server_cpu": SERVER_CPU, "wrk_cpu": WRK_CPU}
    say(f"chunked.py: requests per second, wrk -t{WRK_THREADS} -c{WRK_CONNECTIONS} "
        f"-d{a.seconds}s, {a.rounds} rounds of {', '.join(sides)}")
    for size in sizes:
        before = loadavg()
        row = rps_row(*throughput(size, a.rounds, a.seconds, sides))
        row["load_average"] = [before, loadavg()]
        result["rps"][str(size)] = row
        say(f"chunked.py: requests per second, {label(size)}: "
            + ", ".join(f"{s} {row['median'][s]:,.0f}" for s in sides)
            + f" (medians; load {before:.2f} -> {row['load_average'][1]:.2f})")


def part4(result, sizes, pairs, seconds, others=("separate",)):
    """Fixed against each of others in paired runs: against separate for
    each payload of 16 KiB or more, against Bun for every payload (the two
    are close at every size); put in result["rps"][payload]["settled_OTHER"],
    a progress line each."""
    result["wrk"]["pairs"], result["wrk"]["pair_seconds"] = pairs, seconds
    for other in others:
        for size in [size for size in sizes if size >= 16 * 1024 or other != "separate"]:
            st = paired_runs(size, pairs, seconds, other)
            result["rps"][str(size)][f"settled_{other}"] = st
            iv = st["interval"]
            say(f"chunked.py: fixed against {other}, {label(size)}: {pairs} pairs, median "
                f"ratio {st['median']:.3f}, interval "
                + (f"[{iv[0]:.3f}, {iv[1]:.3f}]" if iv else "-")
                + f", fixed won {st['won']} of {st['pairs']}")


def render(result):
    """The tables of a run: the report's own section for this bench
    (python/wirecheck/report/sections/bench_chunked.py), so that its
    figures have one renderer."""
    try:
        from wirecheck.report.render import render as render_bench
    except ImportError:
        sys.path.insert(0, str(REPO / "python"))
        from wirecheck.report.render import render as render_bench
    return render_bench("chunked", result)


def main():
    global BIN, WRK_CPU
    a, sizes = options()
    # Killed by SIGTERM (timeout(1), a CI's end), the bench still runs its
    # finally blocks, which stop the servers it started.
    signal.signal(signal.SIGTERM, lambda signum, _: sys.exit(128 + signum))
    network = isolated(a.congestion or CONGESTION, bool(a.congestion)) if not a.host_net else {
        "namespace": "host", "congestion_control": congestion(),
        "why": "--host-net"}
    if a.bin_dir:
        BIN = pathlib.Path(a.bin_dir).resolve()
    WRK_CPU = a.wrk_cpu
    node = shutil.which("node") is not None and not a.no_node
    bun = bun_binary() is not None and not a.no_bun
    if not bun and not a.no_bun:
        say("chunked.py: Bun is not installed (scripts/setup.sh, or WIRECHECK_BUN): its "
            "column is left out")
    foreign = [f for f, on in (("node", node), ("bun", bun)) if on]
    sides = [*SIDES[:2], *foreign]
    result = {"command": ["bench/chunked.py", *sys.argv[1:]], "sizes": sizes,
              "cpus": os.cpu_count(), "sides": list(sides),
              "bun_version": bun_version() if bun else None,
              "syscalls": {}, "rps": {}, "wrk": None,
              "load_average_start": loadavg(), "network": network}

    if network["namespace"] == "private":  # isolated() said why it is not
        say("chunked.py: in a network namespace of its own, TCP congestion control "
            f"{network.get('congestion_control') or 'unknown'}")
    part1(result, sizes, a.requests, foreign)
    if a.no_wrk or not shutil.which("wrk"):
        say("chunked.py: wrk: skipped")
    else:
        part2(result, sizes, a, sides, foreign)
        if a.pairs:
            part4(result, sizes, a.pairs, a.pair_seconds,
                  ("separate", *(["bun"] if bun else [])))
    result["load_average_end"] = loadavg()
    result["targets"] = targets(result)
    result["targets_met"] = sum(t["pass"] for t in result["targets"])
    result["targets_total"] = len(result["targets"])
    say(f"chunked.py: targets: {result['targets_met']} of {result['targets_total']} met")
    if a.json == "-":
        print(json.dumps(result, indent=1, sort_keys=True))
        return
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    sys.stdout.write(render(result))

if __name__ == "__main__":
    main()
