"""The sweep's runs: a Sweep is one scenario on one set of variants; it
makes the clean run once, places the byte cells on the clean streams, runs
each cell with its fault and hands the trace to the judge (invariants.py).
sweep_files runs many sweeps in one thread pool and gives the result that
`wirecheck sweep --output` writes (docs/sweeps.md)."""
from __future__ import annotations

import os
import shlex
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from .. import runner
from .catalog import Cell, byte_positions, cells, reading_calls, writing_calls
from .invariants import Declaration, declaration, exit_text, fired, judge, peers

# The timeout of a zero cell on a scenario that allows half-open (judge).
EOF_HALF_OPEN_TIMEOUT = 5.0


@dataclass
class Result:
    cell: Cell
    command: list[str]
    broken: list[str] = field(default_factory=list)
    exit: str = ""
    waived: list[str] = field(default_factory=list)

    @property
    def outcome(self) -> str:
        """ok, declared (passed by the scenario's declaration) or broken."""
        return "broken" if self.broken else ("declared" if self.waived else "ok")


class Sweep:
    """A sweep of one scenario on one set of variants."""

    def __init__(self, path: str, *, variants: Sequence[str] = (), binary=None,
                 valgrind: bool = False, timeout: Optional[float] = None,
                 k_max: Optional[int] = None, n_bytes: int = 0,
                 byte_source: Optional["Sweep"] = None, base_flags: Sequence[str] = ()):
        self.path = str(path)
        # A scenario with a matrix runs as its first profile (its flags on
        # every run, the clean one too): some need theirs to end at all
        # (chunked/try-rest-on-writable answers only a try-write that a
        # refused call made false).
        self.base_flags = list(base_flags)
        self.variants = list(variants)
        self.binary = runner.find_binary(binary)
        self.valgrind = valgrind
        self.timeout = timeout
        self.k_max = k_max
        self.n_bytes = n_bytes
        # The sweep whose clean streams place the byte cells: the scenario's
        # first strategy (fixed), so that a legacy sweep aims at the same
        # bytes as the fixed one.
        self.byte_source = byte_source
        self.clean: Optional[dict] = None
        self._meta: Optional[dict] = None

    @property
    def meta(self) -> dict:
        """What the harness's own parser says of the file (wirecheck check
        --json), read once, when a run first needs it."""
        if self._meta is None:
            self._meta = runner.check(self.path, self.binary)
        return self._meta

    @property
    def half_open(self) -> bool:
        """Whether the scenario sets allow-half-open yes."""
        return bool(self.meta.get("allow_half_open"))

    @property
    def declared(self) -> Optional[Declaration]:
        """Its sweep-declare line."""
        return declaration(self.meta)

    def _short_timeout(self, cell: Optional[Cell]) -> bool:
        """A zero cell on a half-open scenario, which may time out by
        design once its zero came (judge): it runs with a short timeout."""
        return cell is not None and cell.kind == "eof" and self.half_open

    def _flags(self, cell: Optional[Cell], *, full: bool = False) -> list[str]:
        flags = self.base_flags + (cell.flags() if cell else [])
        timeout = self.timeout
        # See judge: such a run times out by design; no need to wait long.
        if self._short_timeout(cell) and not full:
            timeout = min(timeout or EOF_HALF_OPEN_TIMEOUT, EOF_HALF_OPEN_TIMEOUT)
        if timeout:
            flags += ["--timeout", f"{timeout:g}"]
        return flags

    def command(self, cell: Optional[Cell], *, full: bool = False) -> list[str]:
        argv = [str(self.binary), "run", self.path, *self._flags(cell, full=full)]
        for v in self.variants:
            argv += ["--variant", v]
        if self.valgrind:
            argv.append("--valgrind")
        return argv

    def _run(self, cell: Optional[Cell], *, full: bool = False) -> dict:
        return runner.run(self.path, self._flags(cell, full=full),
                          variants=self.variants, valgrind=self.valgrind,
                          binary=self.binary)

    def run_clean(self) -> dict:
        if self.clean is None:
            self.clean = self._run(None)
        return self.clean

    def conn_bytes(self) -> list[int]:
        """The bytes of each connection's clean stream, from the byte
        source's clean run (this sweep's own when it has none)."""
        src = self.byte_source or self
        return [int(p.get("bytes") or 0) for p in peers(src.run_clean())]

    def cells(self) -> list[Cell]:
        """The sweep's cells; none when the clean run hung (a scenario that
        does not end by itself cannot be judged against its clean run:
        the result says so, `clean_exit`)."""
        clean = self.run_clean()
        if (clean.get("exit") or {}).get("timed_out"):
            return []
        return cells(writing_calls(clean), self.k_max, reads=reading_calls(clean),
                     conn_bytes=self.conn_bytes(), n_bytes=self.n_bytes)

    def place(self, cell: Cell, n_bytes: int) -> Optional[Cell]:
        """A byte cell made before any run (pos j of n_bytes positions),
        with its byte; None when the connection has no such position."""
        if cell.conn is None or cell.byte is not None:
            return cell
        conns = self.conn_bytes()
        if cell.conn >= len(conns):
            return None
        pos = byte_positions(conns[cell.conn], n_bytes)
        if cell.pos is None or cell.pos >= len(pos):
            return None
        return Cell(cell.fault, conn=cell.conn, byte=pos[cell.pos])

    def run_cell(self, cell: Cell) -> Result:
        clean = self.run_clean()
        res = Result(cell, self.command(cell))
        try:
            trace = self._run(cell)
            # The short timeout is for a hang after the zero. A run killed
            # before its zero came was slow, not hung by design (8 MiB under
            # a 16 KiB clamp at a load of 30: half-open/peer-closes-after-
            # reply): run again with the sweep's own timeout, and judge that.
            if self._short_timeout(cell) and (trace.get("exit") or {}).get("timed_out") \
                    and not fired(clean, trace, cell):
                res.command = self.command(cell, full=True)
                trace = self._run(cell, full=True)
        except runner.WirecheckError as e:
            res.broken = [f"wirecheck failed (status {e.returncode}): {e}"]
            return res
        res.exit = exit_text(trace.get("exit") or {})
        res.broken = judge(clean, trace, cell, valgrind=self.valgrind,
                           half_open=self.half_open, declared=self.declared,
                           waived=res.waived)
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


def _loadavg() -> Optional[str]:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return None


def sweep_files(paths: Sequence[str], *, variants_sets: Sequence[Sequence[str]] = ((),),
                jobs: int = 2, out=sys.stderr, plan=None, **kw) -> dict:
    """Sweeps every file on every set of variants (or, with plan, each
    (file, sets of variants) of it), in one pool, so that the progress
    counts every run; returns the result (the JSON of --output). The byte
    cells of each file come from its first set of variants' clean run."""
    start = time.monotonic()
    load_start = _loadavg()
    sweeps = []
    for p, sets, *prof in (plan if plan is not None
                           else [(p, variants_sets) for p in paths]):
        first = None
        profile = prof[0] if prof else None
        for vs in sets:
            sweeps.append(Sweep(p, variants=vs, byte_source=first,
                                base_flags=profile.flags if profile else (), **kw))
            sweeps[-1].profile = profile.id if profile else ""
            first = first or sweeps[-1]
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
              "cells": total, "failing": failing, "scenarios": [],
              "k_max": kw.get("k_max"), "n_bytes": kw.get("n_bytes", 0),
              "cores": os.cpu_count(), "loadavg": [load_start, _loadavg()]}
    for s in sweeps:
        rs = results[id(s)]
        report["scenarios"].append({
            "path": s.path, "variants": s.variants, "profile": getattr(s, "profile", ""),
            "writing_calls": writing_calls(s.clean or {}),
            "reading_calls": reading_calls(s.clean or {}),
            "conn_bytes": s.conn_bytes() if s.clean else [],
            "syscalls": (s.clean or {}).get("syscalls"),
            "cells": len(rs),
            "clean_exit": exit_text((s.clean or {}).get("exit") or {}),
            "outcomes": {r.cell.id: r.outcome for r in rs},
            "declared": ({"reason": s.declared.text(),
                          "cells": {r.cell.id: r.waived for r in rs
                                    if r.outcome == "declared"}}
                         if s.declared else None),
            "exits": {r.cell.id: r.exit for r in rs},
            "failures": [{"cell": r.cell.id, "fault": r.cell.fault, "k": r.cell.k,
                          "conn": r.cell.conn, "byte": r.cell.byte,
                          "kind": r.cell.kind, "exit": r.exit, "broken": r.broken,
                          "command": shlex.join(r.command)} for r in rs if r.broken],
        })
    report["declared"] = sum(len((s["declared"] or {}).get("cells") or {})
                             for s in report["scenarios"])
    return report
