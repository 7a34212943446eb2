"""Fault sweeps (docs/sweeps.md): fail the k-th writing call of a scenario
with each fault in turn, k = 1..K, and judge every run by invariants
against a clean run, not by a golden (SQLite's do_one_faultsim_test).

    python3 -m wirecheck.sweep FILE... [-k K] [-j N] [--output FILE]
    wirecheck sweep FILE...              (the same, through the harness)

A cell is one run: a fault at call k, or a clamp over the whole run. The
clean run (the scenario as it is) counts the subject's calls; K is its
writing calls (send, sendto, sendmsg, writev, write(2) on sockets).
"""
from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional, Sequence

from . import runner

WRITING = ("send", "sendto", "sendmsg", "writev", "write")

# name -> (rules with {after} for call k, kind). "transient": the stack must
# retry, the peer gets the clean run's bytes. "fatal": the connection fails.
# The signal is SIGURG, whose default action is to be ignored: it is raised
# before the call, which then fails with EINTR, as a call a signal
# interrupted does; the subject lives on, and the stack's EINTR path runs.
FAULTS = {
    "EAGAIN": (("write:errno=EAGAIN,after={after}",), "transient"),
    "EINTR": (("write:errno=EINTR,after={after}",), "transient"),
    "ENOBUFS": (("write:errno=ENOBUFS,after={after}",), "transient"),
    "short1": (("write:short=1,after={after}",), "transient"),
    "signal": (("write:signal=SIGURG,after={after}",
                "write:errno=EINTR,after={after}"), "transient"),
    "EPIPE": (("write:errno=EPIPE,after={after}",), "fatal"),
    "ECONNRESET": (("write:errno=ECONNRESET,after={after}",), "fatal"),
}
CLAMPS = (1, 2, 3, 7, 64, 4096)

_COMPLETION = re.compile(
    r"^(write#\d+ (?:cb|released) \S+|end cb \S+|finish|error \S+|"
    r"close had_error=\d bytes_written=\d+)")
_EVENT = re.compile(r"^t\d+ c(\d+) (.*)$")


@dataclass(frozen=True)
class Cell:
    """One run of a sweep: `fault` at writing call `k`, or `clamp=N`
    (k 0) over the whole run."""
    fault: str
    k: int = 0

    @property
    def id(self) -> str:
        return f"{self.fault}@{self.k}" if self.k else self.fault

    @property
    def kind(self) -> str:
        return "transient" if self.fault.startswith("clamp=") else FAULTS[self.fault][1]

    def flags(self) -> list[str]:
        if self.fault.startswith("clamp="):
            return ["--clamp-send", self.fault.split("=", 1)[1]]
        out = []
        for rule in FAULTS[self.fault][0]:
            out += ["--fault", rule.format(after=self.k - 1)]
        return out


def writing_calls(trace: dict) -> int:
    """The writing calls of a run: every kind of WRITING in its syscalls."""
    sc = trace.get("syscalls") or {}
    return sum(int(sc.get(k, 0)) for k in WRITING)


def cells(calls: int, k_max: Optional[int] = None,
          faults: Iterable[str] = FAULTS, clamps: Iterable[int] = CLAMPS) -> list[Cell]:
    """Every cell of a sweep over `calls` writing calls (at most k_max)."""
    k_top = calls if k_max is None else min(calls, k_max)
    out = [Cell(f, k) for k in range(1, k_top + 1) for f in faults]
    out += [Cell(f"clamp={n}") for n in clamps]
    return out


def _peers(trace: dict) -> list[dict]:
    p = trace.get("peer")
    if p is None:
        return []
    return p if isinstance(p, list) else [p]


def _per_conn(trace: dict) -> dict[int, list[str]]:
    """Each connection's completion events, task numbers and syscall names
    left out (they move when a fault delays a write)."""
    out: dict[int, list[str]] = {}
    for ev in trace.get("events") or []:
        m = _EVENT.match(ev)
        if not m:
            continue
        text = m.group(2)
        c = _COMPLETION.match(text)
        if c:
            out.setdefault(int(m.group(1)), []).append(c.group(1))
    return out


def _closes(trace: dict) -> dict[int, int]:
    out = {}
    for conn, evs in _per_conn(trace).items():
        for e in evs:
            if e.startswith("close "):
                out[conn] = int(e.rsplit("=", 1)[1])
    return out


def _exit_text(ex: dict) -> str:
    if ex.get("timed_out"):
        return "timed out"
    if ex.get("signal"):
        return f"signal {ex['signal']}"
    return f"exit {ex.get('code')}" + (f" ({ex['error']})" if ex.get("error") else "")


def _fired(clean: dict, trace: dict, cell: Cell) -> bool:
    """Whether the cell's fault changed a call (a fault past the run's last
    call never fires: that run must be the clean run). The cell's rules are
    the run's rules (canonical) that the clean run does not have."""
    if cell.fault.startswith("clamp="):
        return True
    ours = list(trace.get("faults") or [])
    for r in clean.get("faults") or []:
        if r in ours:
            ours.remove(r)
    calls = (trace.get("fired") or {}).get("calls") or []
    return any(c.get("rule") in ours for c in calls)


def judge(clean: dict, run: dict, cell: Cell, *, valgrind: bool = False) -> list[str]:
    """The invariants `run` breaks, as sentences (empty: it passed). Each
    invariant that compares with the clean run is checked only where it
    holds on the clean run itself."""
    broken = []
    ex, cex = run.get("exit") or {}, clean.get("exit") or {}
    if ex.get("timed_out"):
        broken.append("the subject hung: killed at the timeout")
    elif ex.get("signal") and ex.get("signal") != cex.get("signal"):
        broken.append(f"the subject crashed: {_exit_text(ex)} (clean run: {_exit_text(cex)})")
    elif (ex.get("code"), ex.get("signal"), ex.get("error")) != \
            (cex.get("code"), cex.get("signal"), cex.get("error")):
        broken.append(f"the subject did not end as the clean run did: {_exit_text(ex)} "
                      f"(clean run: {_exit_text(cex)})")
    if valgrind and ex.get("valgrind") not in (None, "clean"):
        broken.append("valgrind reported errors or leaks")
    peers, cpeers = _peers(run), _peers(clean)
    evs, cevs = _per_conn(run), _per_conn(clean)
    # A scenario whose connection fails by itself (its own refuse-write,
    # counted by call index) may fail elsewhere once a transient fault adds
    # a call: such runs are judged as after a fatal fault.
    fatal = (cell.kind == "fatal" and _fired(clean, run, cell)) or any(
        e.startswith("error ") for es in cevs.values() for e in es)
    # A scenario that ends the subject itself (exit, abort, execve, a fatal
    # signal: its clean run has no queue figures) or destroys a connection
    # drops what is still queued at that point, and a fault changes how
    # much that is: the peer's stream and the clean run's then agree on
    # their common part, nothing more.
    abrupt = clean.get("queue") is None or any(
        _EVENT.match(e) and _EVENT.match(e).group(2).startswith("destroy")
        for e in clean.get("events") or [])
    if len(peers) != len(cpeers):
        broken.append(f"{len(peers)} peer streams, the clean run has {len(cpeers)}")
        return broken
    for i, (p, cp) in enumerate(zip(peers, cpeers)):
        if abrupt:
            h, ch = p.get("hex"), cp.get("hex")
            if h is not None and ch is not None and not (h.startswith(ch) or ch.startswith(h)):
                broken.append(f"connection {i}: the peer's {p.get('bytes')} bytes and the "
                              f"clean run's {cp.get('bytes')} differ where both have bytes")
        elif not fatal:
            if p.get("sha256") != cp.get("sha256"):
                broken.append(f"connection {i}: the peer got {p.get('bytes')} bytes "
                              f"(sha256 {str(p.get('sha256'))[:12]}), the clean run's peer "
                              f"{cp.get('bytes')} (sha256 {str(cp.get('sha256'))[:12]})")
        else:
            if p.get("bytes", 0) > cp.get("bytes", 0):
                broken.append(f"connection {i}: the peer got {p.get('bytes')} bytes, more "
                              f"than the clean run's {cp.get('bytes')}")
            elif "hex" in p and "hex" in cp and not cp["hex"].startswith(p["hex"]):
                broken.append(f"connection {i}: the peer's {p.get('bytes')} bytes are not "
                              "a prefix of the clean run's stream")
    conns = sorted(set(evs) | set(cevs))
    for c in conns:
        got, want = evs.get(c, []), cevs.get(c, [])
        if not fatal and not abrupt and got != want:
            broken.append(f"connection {c}: completion events {got}, the clean run's {want}")
        errors = [e for e in got if e.startswith("error ")]
        if len(errors) > max(1, len([e for e in want if e.startswith("error ")])):
            broken.append(f"connection {c}: {len(errors)} errors reported ({errors})")
        if fatal and errors:
            after = got[got.index(errors[0]) + 1:]
            bad = [e for e in after if e.endswith(" ok") or e == "finish"]
            if bad:
                broken.append(f"connection {c}: {bad} after '{errors[0]}': a completion "
                              "claims bytes the kernel did not take")
    if fatal and not abrupt and \
            not any(e.startswith("error ") for c in conns for e in evs.get(c, [])):
        broken.append("the fault fired but no connection reported an error")
    # bytes_written is what the kernel took: the peer's bytes, when the clean
    # run says so too.
    closes, ccloses = _closes(run), _closes(clean)
    for c, n in closes.items():
        if not abrupt and c < len(peers) and c < len(cpeers) \
                and ccloses.get(c) == cpeers[c].get("bytes") \
                and n != peers[c].get("bytes"):
            broken.append(f"connection {c}: close says bytes_written={n}, the peer got "
                          f"{peers[c].get('bytes')}")
    return broken


@dataclass
class Result:
    cell: Cell
    command: list[str]
    broken: list[str] = field(default_factory=list)
    exit: str = ""


class Sweep:
    """A sweep of one scenario on one set of variants."""

    def __init__(self, path: str, *, variants: Sequence[str] = (), binary=None,
                 valgrind: bool = False, timeout: Optional[float] = None,
                 k_max: Optional[int] = None):
        self.path = str(path)
        self.variants = list(variants)
        self.binary = runner.find_binary(binary)
        self.valgrind = valgrind
        self.timeout = timeout
        self.k_max = k_max
        self.clean: Optional[dict] = None

    def _flags(self, extra: Sequence[str]) -> list[str]:
        flags = list(extra)
        if self.timeout:
            flags += ["--timeout", str(self.timeout)]
        return flags

    def command(self, cell: Optional[Cell]) -> list[str]:
        argv = [str(self.binary), "run", self.path, *self._flags(cell.flags() if cell else [])]
        for v in self.variants:
            argv += ["--variant", v]
        if self.valgrind:
            argv.append("--valgrind")
        return argv

    def _run(self, cell: Optional[Cell]) -> dict:
        return runner.run(self.path, self._flags(cell.flags() if cell else []),
                          variants=self.variants, valgrind=self.valgrind,
                          binary=self.binary)

    def run_clean(self) -> dict:
        if self.clean is None:
            self.clean = self._run(None)
        return self.clean

    def cells(self) -> list[Cell]:
        return cells(writing_calls(self.run_clean()), self.k_max)

    def run_cell(self, cell: Cell) -> Result:
        clean = self.run_clean()
        res = Result(cell, self.command(cell))
        try:
            trace = self._run(cell)
        except runner.WirecheckError as e:
            res.broken = [f"wirecheck failed (status {e.returncode}): {e}"]
            return res
        res.exit = _exit_text(trace.get("exit") or {})
        res.broken = judge(clean, trace, cell, valgrind=self.valgrind)
        return res


def _progress(done: int, total: int, failures: int, start: float, out) -> None:
    elapsed = time.monotonic() - start
    left = elapsed / done * (total - done) if done else 0.0
    line = f"sweep: {done}/{total} runs, {failures} failing, {left:.0f}s left"
    if out.isatty():
        out.write("\r" + line + ("\n" if done == total else ""))
    elif done == total or done % 25 == 0:
        out.write(line + "\n")
    out.flush()


def sweep_files(paths: Sequence[str], *, variants_sets: Sequence[Sequence[str]] = ((),),
                jobs: int = 2, out=sys.stderr, **kw) -> dict:
    """Sweeps every file on every set of variants; returns the result (the
    JSON of --output)."""
    start = time.monotonic()
    sweeps = [Sweep(p, variants=vs, **kw) for p in paths for vs in variants_sets]
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(Sweep.run_clean, sweeps))
        work = [(s, c) for s in sweeps for c in s.cells()]
        total, done, failing = len(work), 0, 0
        results: dict = {id(s): [] for s in sweeps}
        for (s, c), r in zip(work, pool.map(lambda sc: sc[0].run_cell(sc[1]), work)):
            results[id(s)].append(r)
            done += 1
            failing += bool(r.broken)
            _progress(done, total, failing, start, out)
    report = {"seconds": round(time.monotonic() - start, 1), "jobs": jobs,
              "cells": total, "failing": failing, "scenarios": []}
    for s in sweeps:
        rs = results[id(s)]
        report["scenarios"].append({
            "path": s.path, "variants": s.variants,
            "writing_calls": writing_calls(s.clean or {}),
            "syscalls": (s.clean or {}).get("syscalls"),
            "cells": len(rs),
            "outcomes": {r.cell.id: ("ok" if not r.broken else "broken") for r in rs},
            "failures": [{"cell": r.cell.id, "fault": r.cell.fault, "k": r.cell.k,
                          "kind": r.cell.kind, "exit": r.exit, "broken": r.broken,
                          "command": shlex.join(r.command)} for r in rs if r.broken],
        })
    return report


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(
        prog="wirecheck sweep",
        description="Fail each writing call of a scenario with each fault in turn and "
                    "judge every run by invariants against the clean run (docs/sweeps.md).")
    ap.add_argument("files", nargs="+", metavar="FILE")
    ap.add_argument("-k", "--max-k", type=int, default=None, metavar="K",
                    help="sweep calls 1..K only (default: every writing call of the clean run)")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="runs at once (default 2)")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=VALUE",
                    help="sweep with this variant (repeatable)")
    ap.add_argument("--legacy", action="store_true",
                    help="also sweep each scenario's legacy variant (its `legacy` line)")
    ap.add_argument("--valgrind", action="store_true", help="every run under valgrind memcheck")
    ap.add_argument("--wirecheck-bin", default=None, metavar="PATH",
                    help="the wirecheck binary (build-asan/bin/wirecheck: sanitizer findings fail a cell)")
    ap.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                    help="each run's timeout (wirecheck run --timeout)")
    ap.add_argument("--output", default=None, metavar="FILE", help="write the result (JSON) there")
    a = ap.parse_args(argv)
    if a.max_k is not None and a.max_k < 1:
        ap.error(f"--max-k {a.max_k}: expected a count from 1")
    try:
        binary = runner.find_binary(a.wirecheck_bin)
    except FileNotFoundError as e:
        print(f"wirecheck sweep: {e}", file=sys.stderr)
        return 2
    per_file = []
    for f in a.files:
        try:
            meta = runner.check(f, binary)
        except runner.WirecheckError as e:
            print(f"wirecheck sweep: {e}", file=sys.stderr)
            return 2
        sets = [list(a.variant)]
        if a.legacy and meta.get("legacy"):
            sets.append(list(a.variant) + [meta["legacy"]["variant"]])
        per_file.append((f, sets))
    report = {"seconds": 0.0, "cells": 0, "failing": 0, "scenarios": [], "jobs": a.jobs}
    for f, sets in per_file:
        r = sweep_files([f], variants_sets=sets, jobs=a.jobs, binary=binary,
                        valgrind=a.valgrind, timeout=a.timeout, k_max=a.max_k)
        for key in ("seconds", "cells", "failing"):
            report[key] = round(report[key] + r[key], 1)
        report["scenarios"] += r["scenarios"]
    text = json.dumps(report, indent=2, sort_keys=True) + "\n"
    if a.output:
        Path(a.output).write_text(text)
    for s in report["scenarios"]:
        for fl in s["failures"]:
            print(f"FAIL {s['path']} {fl['cell']}: " + "; ".join(fl["broken"]), file=sys.stderr)
            print(f"  reproduce: {fl['command']}", file=sys.stderr)
    print(f"wirecheck sweep: {report['cells']} runs over {len(report['scenarios'])} "
          f"sweep(s), {report['failing']} broke an invariant, {report['seconds']}s",
          file=sys.stderr)
    return 1 if report["failing"] else 0


if __name__ == "__main__":
    sys.exit(main())
