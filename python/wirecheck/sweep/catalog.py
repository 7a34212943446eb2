"""The sweep's cells: which faults it injects, where they land, and the
rules and flags each cell passes to `wirecheck run` (docs/sweeps.md).

A cell is one run: a fault at call k, a fault at byte N of connection C,
or a clamp over the whole run. The clean run (the scenario as it is)
counts the subject's calls; K is its writing calls (send, sendto, sendmsg,
writev, write(2) on sockets), and its peer's bytes give the byte cells.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

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
