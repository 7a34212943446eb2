"""Fault sweeps (docs/sweeps.md): fail the k-th writing call of a scenario
with each fault in turn, k = 1..K, and the call that carries byte N of
connection C for a few N spread over each stream, and judge every run by
invariants against a clean run, not by a golden (SQLite's
do_one_faultsim_test).

    python3 -m wirecheck.sweep FILE... [-k K] [-b B] [-j N] [--output FILE]
    wirecheck sweep FILE...              (the same, through the harness)

A cell is one run: a fault at call k, a fault at byte N of connection C,
or a clamp over the whole run. The clean run (the scenario as it is)
counts the subject's calls; K is its writing calls (send, sendto, sendmsg,
writev, write(2) on sockets), and its peer's bytes give the byte cells.
"""
from __future__ import annotations

import argparse
import errno
import json
import os
import re
import shlex
import stat
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional, Sequence

from . import runner

WRITING = ("send", "sendto", "sendmsg", "writev", "write")
READING = ("recv", "read")

# name -> (rules with {at} for where the fault lands, kind). {at} is
# "after=K-1" for call k, or "conn=C,byte=N" for the call that carries
# byte N of connection C (the gate's rule keys, docs/scenario-language.md).
# "transient": the stack must retry, the peer gets the clean run's bytes.
# "fatal": the connection fails. "death": the subject dies of the signal.
# The signal is SIGURG, whose default action is to be ignored: it is raised
# before the call, which then fails with EINTR, as a call a signal
# interrupted does; the subject lives on, and the stack's EINTR path runs.
# "death" raises SIGTERM, which the subject does not handle: it dies in the
# middle of a write, and the harness must say so (signal, not a timeout).
FAULTS = {
    "EAGAIN": (("write:errno=EAGAIN,{at}",), "transient"),
    "EINTR": (("write:errno=EINTR,{at}",), "transient"),
    "ENOBUFS": (("write:errno=ENOBUFS,{at}",), "transient"),
    "short1": (("write:short=1,{at}",), "transient"),
    "signal": (("write:signal=SIGURG,{at}",
                "write:errno=EINTR,{at}"), "transient"),
    "EPIPE": (("write:errno=EPIPE,{at}",), "fatal"),
    "ECONNRESET": (("write:errno=ECONNRESET,{at}",), "fatal"),
    "death": (("write:signal=SIGTERM,{at}",), "death"),
}
# A zero return where the call allows it. send(2) does not return 0 for a
# non-empty buffer (a stream socket that takes nothing says EAGAIN), nor do
# write(2) and writev(2) on a socket; recv(2) and read(2) return 0 at the
# end of the stream, the peer's FIN. So the zero cells are on the reading
# calls, k = 1..(the clean run's reading calls): the subject sees its peer
# end the stream early, which the peer did not. epoll_wait returns 0 only at
# its timeout, which the stack's loop (timeout -1) never asks for.
READ_FAULTS = {
    "zero": (("read:zero,{at}",), "eof"),
}
DEATH_SIGNAL = "SIGTERM"
CLAMPS = (1, 2, 3, 7, 64, 4096)
# Byte cells: at most this many connections (the first ones) of a scenario.
BYTE_CONNS = 2

@dataclass(frozen=True)
class Declaration:
    """A scenario whose peer bytes a fault changes by design, declared with
    its reason (docs/sweeps.md, "Declared by design"): on connection
    `conn`, the bytes in [start, end) may differ from the clean run's; the
    stream's other bytes, its length and every other invariant are judged
    as usual. A run that needed the declaration passes as `declared`, not
    `ok`, and the result and the report print the reason."""
    conn: int
    start: int
    end: int
    reason: str

    def text(self) -> str:
        return f"connection {self.conn}, bytes {self.start}..{self.end - 1}: {self.reason}"


def declaration(meta: dict) -> Optional[Declaration]:
    """The scenario's declaration, from its `sweep-declare` line as
    `wirecheck check --json` reads it (docs/scenario-language.md), or None."""
    for d in meta.get("sweep_declared") or []:
        return Declaration(d["conn"], d["start"], d["end"], d["reason"])
    return None


def _masked(hex_: str, d: Optional[Declaration], conn: int) -> str:
    """A stream's hex with the declared bytes of connection conn blotted."""
    if d is None or d.conn != conn:
        return hex_
    a, b = 2 * d.start, min(len(hex_), 2 * d.end)
    return hex_[:a] + "?" * max(0, b - a) + hex_[b:] if a < len(hex_) else hex_



# A WebSocket connection reports its end as ws-closed with the code: 1006
# (abnormal closure, RFC 6455 7.1.5) is how it reports a failed write when
# no close frame came from the peer. Once the peer's close came, the code
# stays the peer's (7.1.5), and a failed answer shows as `unclean` (the
# closing handshake did not complete, 7.1.4; npm ws: the peer's code with
# wasClean false): the connection's one failure report then.
_COMPLETION = re.compile(
    r"^(write#\d+ (?:cb|released) \S+|end cb \S+|finish|error \S+|"
    r"close had_error=\d bytes_written=\d+|ws-closed code=\d+(?: unclean)?)")
_WS_FAILED = re.compile(r"^ws-closed code=(?:1006|\d+ unclean)$")


def _is_error(event: str) -> bool:
    """A completion event that reports the connection's failure."""
    return event.startswith("error ") or bool(_WS_FAILED.match(event))


def _errors(events: list[str]) -> list[str]:
    """A connection's failure reports: its `error` events, or for a
    WebSocket one without them, its abnormal or unclean ws-closed (one
    failure, not two)."""
    return [e for e in events if e.startswith("error ")] or \
        [e for e in events if _WS_FAILED.match(e)]
_EVENT = re.compile(r"^t\d+ c(\d+) (.*)$")


def _fault(name: str) -> tuple:
    return FAULTS[name] if name in FAULTS else READ_FAULTS[name]


@dataclass(frozen=True)
class Cell:
    """One run of a sweep: `fault` at writing call `k` (reading call for
    the READ_FAULTS), `fault` at byte `byte` of connection `conn` (k 0), or
    `clamp=N` (k 0) over the whole run. `pos` is a byte cell not placed yet
    (the pytest items are made before any run): its position among the
    connection's byte positions (byte_positions), placed by Sweep.place."""
    fault: str
    k: int = 0
    conn: Optional[int] = None
    byte: Optional[int] = None
    pos: Optional[int] = None

    @property
    def id(self) -> str:
        if self.conn is not None:
            where = f"b{self.byte}" if self.byte is not None else f"p{self.pos}"
            return f"{self.fault}@c{self.conn}.{where}"
        return f"{self.fault}@{self.k}" if self.k else self.fault

    @property
    def kind(self) -> str:
        return "transient" if self.fault.startswith("clamp=") else _fault(self.fault)[1]

    def flags(self) -> list[str]:
        if self.fault.startswith("clamp="):
            return ["--clamp-send", self.fault.split("=", 1)[1]]
        if self.conn is not None:
            if self.byte is None:
                raise ValueError(f"cell {self.id}: its byte is not placed yet")
            at = f"conn={self.conn},byte={self.byte}"
        else:
            at = f"after={self.k - 1}"
        out = []
        for rule in _fault(self.fault)[0]:
            out += ["--fault", rule.format(at=at)]
        return out


def writing_calls(trace: dict) -> int:
    """The writing calls of a run: every kind of WRITING in its syscalls."""
    sc = trace.get("syscalls") or {}
    return sum(int(sc.get(k, 0)) for k in WRITING)


def reading_calls(trace: dict) -> int:
    """The reading calls of a run (recv, read): where a zero can land."""
    sc = trace.get("syscalls") or {}
    return sum(int(sc.get(k, 0)) for k in READING)


def byte_positions(total: int, n: int) -> list[int]:
    """n bytes spread over a stream of `total` bytes, the first and the
    last among them (fewer when the stream is shorter): where the byte
    cells aim. The same for both strategies, which send the same stream."""
    if total <= 0 or n <= 0:
        return []
    if n == 1:
        return [0]
    return sorted({(total - 1) * j // (n - 1) for j in range(n)})


def cells(calls: int, k_max: Optional[int] = None,
          faults: Iterable[str] = FAULTS, clamps: Iterable[int] = CLAMPS,
          *, reads: int = 0, conn_bytes: Sequence[int] = (),
          n_bytes: int = 0) -> list[Cell]:
    """Every cell of a sweep over `calls` writing calls and `reads` reading
    calls (at most k_max of each), and n_bytes byte positions of each of
    the first BYTE_CONNS connections (conn_bytes: the clean stream's
    bytes of each)."""
    k_top = calls if k_max is None else min(calls, k_max)
    r_top = reads if k_max is None else min(reads, k_max)
    faults = list(faults)
    out = [Cell(f, k) for k in range(1, k_top + 1) for f in faults]
    out += [Cell(f, k) for k in range(1, r_top + 1) for f in READ_FAULTS]
    for c, total in enumerate(list(conn_bytes)[:BYTE_CONNS]):
        out += [Cell(f, conn=c, byte=b) for b in byte_positions(total, n_bytes)
                for f in faults]
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


def _subject_ended(ex: dict) -> bool:
    """Whether the subject ended by itself (an exit code, or a signal other
    than the timeout's SIGKILL) in a run that timed out."""
    return ex.get("code") is not None or \
        (bool(ex.get("signal")) and ex.get("signal") != "SIGKILL")


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
    fired = trace.get("fired") or {}
    calls = fired.get("calls") or []
    if any(c.get("rule") in ours for c in calls):
        return True
    # The trace lists the first FI_FIRED_MAX (256) fired calls only, and a
    # scenario's own clamp fires at every send (half-open/peer-closes-after-
    # reply: 512, its zero at the last recv). Past the list, the counts
    # say it: more refused calls of a kind than the clean run (errno, zero,
    # signal's EINTR), or, in a run that ended (a killed one stopped
    # early), another number of changed calls (a short send).
    if len(calls) >= int(fired.get("total") or 0):
        return False
    cf = clean.get("fired") or {}
    refused, crefused = fired.get("refused") or {}, cf.get("refused") or {}
    if any(int(n) > int(crefused.get(k, 0)) for k, n in refused.items()):
        return True
    return not (trace.get("exit") or {}).get("timed_out") and \
        int(fired.get("total") or 0) != int(cf.get("total") or 0)


_TRY_FALSE = re.compile(r"^try-write(?:#\d+|-rest) .* -> false\b")


def _left_to_the_app(run: dict) -> bool:
    """Whether the run's last try-write returned false and the stack then
    told the application `writable` (what the application does next is its
    own)."""
    left = False
    for ev in run.get("events") or []:
        m = _EVENT.match(ev)
        if not m:
            continue
        text = m.group(2)
        if text.startswith("try-write"):
            left = False
            if _TRY_FALSE.match(text):
                left = None  # false: waiting for the stack's writable
        elif text.startswith("writable ") and left is None:
            left = True
    return left is True


def judge(clean: dict, run: dict, cell: Cell, *, valgrind: bool = False,
          half_open: bool = False, declared: Optional[Declaration] = None,
          waived: Optional[list] = None) -> list[str]:
    """The invariants `run` breaks, as sentences (empty: it passed). Each
    invariant that compares with the clean run is checked only where it
    holds on the clean run itself. With `declared` (the scenario's
    Declaration), the declared bytes may differ; each difference it excused
    is appended to `waived`, when given."""
    waived = [] if waived is None else waived
    broken = []
    ex, cex = run.get("exit") or {}, clean.get("exit") or {}
    fired = _fired(clean, run, cell)
    # An early end of stream on a connection that allows half-open leaves
    # it open until the application ends it, and an application that
    # answers only data it never got does not: that run can only time
    # out, by design, and is judged on its peer's bytes alone.
    if cell.kind == "eof" and fired and half_open and ex.get("timed_out"):
        ex = dict(cex)
    # A try-write that a fault turned to false leaves the rest of the
    # response to the application, which the stack tells with `writable`;
    # an application that then writes nothing more (a try-write without
    # resume and no `on writable` handler that ends the response:
    # chunked/final-128k, final-partial-terminator) never ends it, as a uWS
    # application that ignores tryEnd's false. That hang is the
    # application's: judged on the peer's bytes (a prefix).
    stalled = bool(ex.get("timed_out")) and fired and _left_to_the_app(run)
    if stalled:
        ex = dict(cex)
    # The subject was meant to die of the signal: it must have, and the
    # harness must say so (its signal, not a timeout); its peers then get
    # what went out before, a prefix of the clean run's streams.
    death = cell.kind == "death" and fired
    # A peer program (peer exec: python3-websockets, curl) waits for the
    # whole exchange it checks; a fault that cuts the exchange may leave it
    # waiting for ever after the subject ended by itself (its exit code or
    # own signal in the trace, not the timeout's SIGKILL). That wait is the
    # program's: the run is judged on the subject's ending.
    peer_waited = bool(ex.get("timed_out")) and fired and \
        cell.kind in ("fatal", "death", "eof") and _subject_ended(ex) and \
        any((p.get("program") or {}).get("timed_out") for p in _peers(run))
    if peer_waited:
        ex = {k: v for k, v in ex.items() if k != "timed_out"}
    if ex.get("timed_out"):
        broken.append("the subject hung: killed at the timeout")
    elif death:
        if ex.get("signal") != DEATH_SIGNAL:
            broken.append(f"the subject did not die of {DEATH_SIGNAL} raised in a write: "
                          f"{_exit_text(ex)}")
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
    fatal = (cell.kind == "fatal" and fired) or any(
        _is_error(e) for es in cevs.values() for e in es)
    # An early end of stream (a zero from recv) ends a connection the peer
    # did not end: what it still had queued may be lost, as after a fatal
    # fault, but no error is owed. A death loses what was queued too.
    lossy = fatal or death or stalled or (cell.kind == "eof" and fired)
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
        # A peer program's "bytes" are its own output (its report on what
        # it got), not the wire stream: after a lossy fault it reports the
        # loss in its own words, no prefix of the clean report. Its output
        # is judged only where it is owed whole.
        if lossy and "program" in p:
            continue
        if abrupt:
            h, ch = p.get("hex"), cp.get("hex")
            if h is not None and ch is not None and not (h.startswith(ch) or ch.startswith(h)):
                broken.append(f"connection {i}: the peer's {p.get('bytes')} bytes and the "
                              f"clean run's {cp.get('bytes')} differ where both have bytes")
        elif not lossy:
            if p.get("sha256") != cp.get("sha256") and declared is not None \
                    and declared.conn == i and "hex" in p and "hex" in cp \
                    and p.get("bytes") == cp.get("bytes") \
                    and _masked(p["hex"], declared, i) == _masked(cp["hex"], declared, i):
                waived.append(f"connection {i}: the peer's bytes differ from the clean "
                              f"run's in the declared bytes only ({declared.text()})")
            elif p.get("sha256") != cp.get("sha256"):
                broken.append(f"connection {i}: the peer got {p.get('bytes')} bytes "
                              f"(sha256 {str(p.get('sha256'))[:12]}), the clean run's peer "
                              f"{cp.get('bytes')} (sha256 {str(cp.get('sha256'))[:12]})")
        else:
            if p.get("bytes", 0) > cp.get("bytes", 0):
                broken.append(f"connection {i}: the peer got {p.get('bytes')} bytes, more "
                              f"than the clean run's {cp.get('bytes')}")
            elif "hex" in p and "hex" in cp and not cp["hex"].startswith(p["hex"]):
                if _masked(cp["hex"], declared, i).startswith(_masked(p["hex"], declared, i)):
                    waived.append(f"connection {i}: the peer's bytes are a prefix of the "
                                  "clean run's but for the declared bytes "
                                  f"({declared.text()})")
                    continue
                broken.append(f"connection {i}: the peer's {p.get('bytes')} bytes are not "
                              "a prefix of the clean run's stream")
    conns = sorted(set(evs) | set(cevs))
    for c in conns:
        got, want = evs.get(c, []), cevs.get(c, [])
        if not lossy and not abrupt and got != want:
            broken.append(f"connection {c}: completion events {got}, the clean run's {want}")
        errors = _errors(got)
        if len(errors) > max(1, len(_errors(want))):
            broken.append(f"connection {c}: {len(errors)} errors reported ({errors})")
        if lossy and errors:
            after = got[got.index(errors[0]) + 1:]
            bad = [e for e in after if e.endswith(" ok") or e == "finish"]
            if bad:
                broken.append(f"connection {c}: {bad} after '{errors[0]}': a completion "
                              "claims bytes the kernel did not take")
    # After an early end of stream no error is owed, even in a scenario
    # whose clean run fails by its own rule: the zero may come before the
    # call that rule refuses (chunked/try-epipe-then-end-rest, zero@1: the
    # request never comes, nothing is written).
    eof = cell.kind == "eof" and fired
    if fatal and not death and not abrupt and not eof and \
            not any(_is_error(e) for c in conns for e in evs.get(c, [])):
        broken.append("the fault fired but no connection reported an error")
    # bytes_written is what the kernel took: the peer's bytes, when the clean
    # run says so too.
    closes, ccloses = _closes(run), _closes(clean)
    for c, n in closes.items():
        if not abrupt and not lossy and c < len(peers) and c < len(cpeers) \
                and ccloses.get(c) == cpeers[c].get("bytes") \
                and n != peers[c].get("bytes"):
            broken.append(f"connection {c}: close says bytes_written={n}, the peer got "
                          f"{peers[c].get('bytes')}")
    return broken


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
        return [int(p.get("bytes") or 0) for p in _peers(src.run_clean())]

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
                    and not _fired(clean, trace, cell):
                res.command = self.command(cell, full=True)
                trace = self._run(cell, full=True)
        except runner.WirecheckError as e:
            res.broken = [f"wirecheck failed (status {e.returncode}): {e}"]
            return res
        res.exit = _exit_text(trace.get("exit") or {})
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
            "clean_exit": _exit_text((s.clean or {}).get("exit") or {}),
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


def output_problem(path: str) -> Optional[str]:
    """Why --output's path cannot be written, or None: the check of
    wirecheck's own output flags (harness/outpath.c; docs/cli.md, "Output
    files"), made before the sweep runs. It opens nothing, so that a result
    of an earlier sweep stays whole until the new one is written."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        pass
    except OSError as e:  # ENOTDIR, EACCES, ELOOP, ENAMETOOLONG
        return e.strerror
    else:
        if stat.S_ISDIR(st.st_mode):
            return os.strerror(errno.EISDIR)
        return None if os.access(path, os.W_OK) else os.strerror(errno.EACCES)
    if path == "":
        return os.strerror(errno.ENOENT)
    if path.endswith("/"):
        return os.strerror(errno.EISDIR)
    parent = os.path.dirname(path) or "."
    try:
        st = os.stat(parent)
    except OSError as e:
        return f"its directory {parent}: {e.strerror}"
    if not stat.S_ISDIR(st.st_mode):
        return f"its directory {parent}: {os.strerror(errno.ENOTDIR)}"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"its directory {parent}: {os.strerror(errno.EACCES)}"
    return None


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(
        prog="wirecheck sweep",
        description="Fail each writing call of a scenario with each fault in turn and "
                    "judge every run by invariants against the clean run (docs/sweeps.md).")
    ap.add_argument("files", nargs="+", metavar="FILE")
    ap.add_argument("-k", "--max-k", type=int, default=None, metavar="K",
                    help="sweep calls 1..K only (default: every writing call of the clean run)")
    ap.add_argument("-b", "--bytes", type=int, default=3, metavar="B",
                    help="byte cells: B bytes spread over each of the first "
                         f"{BYTE_CONNS} connections' clean streams, first and last "
                         "included (default 3; 0: none)")
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
    if a.bytes < 0:
        ap.error(f"--bytes {a.bytes}: expected a count from 0")
    why = output_problem(a.output) if a.output is not None else None
    if why is not None:
        ap.error(f"--output '{a.output}': cannot write there: {why}")
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
        per_file.append((f, sets, runner.profiles(meta)[0]))
    report = sweep_files([], plan=per_file, jobs=a.jobs, binary=binary,
                         valgrind=a.valgrind, timeout=a.timeout, k_max=a.max_k,
                         n_bytes=a.bytes)
    report["command"] = shlex.join(["wirecheck", "sweep", *(argv if argv is not None
                                                            else sys.argv[1:])])
    text = json.dumps(report, indent=2, sort_keys=True) + "\n"
    written = True
    if a.output is not None:
        try:
            Path(a.output).write_text(text)
        except OSError as e:  # checked before the sweep: a full disk, a change since
            print(f"wirecheck sweep: cannot write the result to {a.output}: {e.strerror}",
                  file=sys.stderr)
            written = False
    for s in report["scenarios"]:
        for fl in s["failures"]:
            print(f"FAIL {s['path']} {fl['cell']}: " + "; ".join(fl["broken"]), file=sys.stderr)
            print(f"  reproduce: {fl['command']}", file=sys.stderr)
    declared = 0
    for s in report["scenarios"]:
        d = s.get("declared") or {}
        if d.get("cells"):
            declared += len(d["cells"])
            print(f"DECLARED {s['path']}{' ' + ' '.join(s['variants']) if s['variants'] else ''} "
                  f"{' '.join(d['cells'])}: {d['reason']}", file=sys.stderr)
    print(f"wirecheck sweep: {report['cells']} runs over {len(report['scenarios'])} "
          f"sweep(s), {report['failing']} broke an invariant, {declared} passed by a "
          f"declaration, {report['seconds']}s", file=sys.stderr)
    if not written:
        return 3
    return 1 if report["failing"] else 0


if __name__ == "__main__":
    sys.exit(main())
