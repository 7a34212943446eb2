"""The sweep's judge: the invariants a run under a fault must keep, checked
against the scenario's clean run instead of a golden (docs/sweeps.md).

judge() first says what the fault did (Facts: did it fire, did the
connection fail, was the end of the stream lossy...), then runs the named
checks in order: how the subject ended, valgrind, the peers' streams, each
connection's completion events, the error a fatal fault owes, and close's
bytes_written. Each check that compares with the clean run is made only
where it holds on the clean run itself.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from .catalog import DEATH_SIGNAL, Cell


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


# ------------------------------------------------------ reading a trace

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
_EVENT = re.compile(r"^t\d+ c(\d+) (.*)$")
_TRY_FALSE = re.compile(r"^try-write(?:#\d+|-rest) .* -> false\b")


def _is_error(event: str) -> bool:
    """A completion event that reports the connection's failure."""
    return event.startswith("error ") or bool(_WS_FAILED.match(event))


def _errors(events: list[str]) -> list[str]:
    """A connection's failure reports: its `error` events, or for a
    WebSocket one without them, its abnormal or unclean ws-closed (one
    failure, not two)."""
    return [e for e in events if e.startswith("error ")] or \
        [e for e in events if _WS_FAILED.match(e)]


def _event_texts(trace: dict):
    """(connection, text) of each event, its task number left out."""
    for ev in trace.get("events") or []:
        m = _EVENT.match(ev)
        if m:
            yield int(m.group(1)), m.group(2)


def peers(trace: dict) -> list[dict]:
    """The trace's peer streams, one per connection."""
    p = trace.get("peer")
    if p is None:
        return []
    return p if isinstance(p, list) else [p]


def _per_conn(trace: dict) -> dict[int, list[str]]:
    """Each connection's completion events, task numbers and syscall names
    left out (they move when a fault delays a write)."""
    out: dict[int, list[str]] = {}
    for conn, text in _event_texts(trace):
        c = _COMPLETION.match(text)
        if c:
            out.setdefault(conn, []).append(c.group(1))
    return out


def _closes(trace: dict) -> dict[int, int]:
    out = {}
    for conn, evs in _per_conn(trace).items():
        for e in evs:
            if e.startswith("close "):
                out[conn] = int(e.rsplit("=", 1)[1])
    return out


def exit_text(ex: dict) -> str:
    """How a run ended, in a few words (a result's `exit`)."""
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


def fired(clean: dict, trace: dict, cell: Cell) -> bool:
    """Whether the cell's fault changed a call (a fault past the run's last
    call never fires: that run must be the clean run). The cell's rules are
    the run's rules (canonical) that the clean run does not have."""
    if cell.fault.startswith("clamp="):
        return True
    ours = list(trace.get("faults") or [])
    for r in clean.get("faults") or []:
        if r in ours:
            ours.remove(r)
    fired_ = trace.get("fired") or {}
    calls = fired_.get("calls") or []
    if any(c.get("rule") in ours for c in calls):
        return True
    # The trace lists the first FI_FIRED_MAX (256) fired calls only, and a
    # scenario's own clamp fires at every send (half-open/peer-closes-after-
    # reply: 512, its zero at the last recv). Past the list, the counts
    # say it: more refused calls of a kind than the clean run (errno, zero,
    # signal's EINTR), or, in a run that ended (a killed one stopped
    # early), another number of changed calls (a short send).
    if len(calls) >= int(fired_.get("total") or 0):
        return False
    cf = clean.get("fired") or {}
    refused, crefused = fired_.get("refused") or {}, cf.get("refused") or {}
    if any(int(n) > int(crefused.get(k, 0)) for k, n in refused.items()):
        return True
    return not (trace.get("exit") or {}).get("timed_out") and \
        int(fired_.get("total") or 0) != int(cf.get("total") or 0)


def _left_to_the_app(run: dict) -> bool:
    """Whether the run's last try-write returned false and the stack then
    told the application `writable` (what the application does next is its
    own)."""
    left = False
    for _, text in _event_texts(run):
        if text.startswith("try-write"):
            left = False
            if _TRY_FALSE.match(text):
                left = None  # false: waiting for the stack's writable
        elif text.startswith("writable ") and left is None:
            left = True
    return left is True


# -------------------------------------------------- what the fault did


@dataclass
class Facts:
    """What a run under a fault is judged as. `ex` is the run's exit once
    the hangs that are by design are excused (see _judged_exit)."""
    ex: dict
    cex: dict
    fired: bool
    death: bool  # the subject was meant to die of the signal
    stalled: bool  # a hang the application chose (see _judged_exit)
    eof: bool  # an early end of stream that fired
    fatal: bool  # the connection must fail (or failed by itself)
    lossy: bool  # what was queued may be lost
    abrupt: bool  # the scenario itself drops what is queued


def _judged_exit(clean: dict, run: dict, cell: Cell, fired_: bool,
                 half_open: bool) -> tuple[dict, bool]:
    """The run's exit as judged, and whether the run stalled by design."""
    ex, cex = run.get("exit") or {}, clean.get("exit") or {}
    # An early end of stream on a connection that allows half-open leaves
    # it open until the application ends it, and an application that
    # answers only data it never got does not: that run can only time
    # out, by design, and is judged on its peer's bytes alone.
    if cell.kind == "eof" and fired_ and half_open and ex.get("timed_out"):
        ex = dict(cex)
    # A try-write that a fault turned to false leaves the rest of the
    # response to the application, which the stack tells with `writable`;
    # an application that then writes nothing more (a try-write without
    # resume and no `on writable` handler that ends the response:
    # chunked/final-128k, final-partial-terminator) never ends it, as a uWS
    # application that ignores tryEnd's false. That hang is the
    # application's: judged on the peer's bytes (a prefix).
    stalled = bool(ex.get("timed_out")) and fired_ and _left_to_the_app(run)
    if stalled:
        ex = dict(cex)
    # A peer program (peer exec: python3-websockets, curl) waits for the
    # whole exchange it checks; a fault that cuts the exchange may leave it
    # waiting for ever after the subject ended by itself (its exit code or
    # own signal in the trace, not the timeout's SIGKILL). That wait is the
    # program's: the run is judged on the subject's ending.
    peer_waited = bool(ex.get("timed_out")) and fired_ and \
        cell.kind in ("fatal", "death", "eof") and _subject_ended(ex) and \
        any((p.get("program") or {}).get("timed_out") for p in peers(run))
    if peer_waited:
        ex = {k: v for k, v in ex.items() if k != "timed_out"}
    return ex, stalled


def facts(clean: dict, run: dict, cell: Cell, *, half_open: bool = False) -> Facts:
    """What the cell's fault did to the run, for the checks."""
    fired_ = fired(clean, run, cell)
    ex, stalled = _judged_exit(clean, run, cell, fired_, half_open)
    # The subject was meant to die of the signal: it must have, and the
    # harness must say so (its signal, not a timeout); its peers then get
    # what went out before, a prefix of the clean run's streams.
    death = cell.kind == "death" and fired_
    eof = cell.kind == "eof" and fired_
    # A scenario whose connection fails by itself (its own refuse-write,
    # counted by call index) may fail elsewhere once a transient fault adds
    # a call: such runs are judged as after a fatal fault.
    fatal = (cell.kind == "fatal" and fired_) or any(
        _is_error(e) for es in _per_conn(clean).values() for e in es)
    # An early end of stream (a zero from recv) ends a connection the peer
    # did not end: what it still had queued may be lost, as after a fatal
    # fault, but no error is owed. A death loses what was queued too.
    lossy = fatal or death or stalled or eof
    # A scenario that ends the subject itself (exit, abort, execve, a fatal
    # signal: its clean run has no queue figures) or destroys a connection
    # drops what is still queued at that point, and a fault changes how
    # much that is: the peer's stream and the clean run's then agree on
    # their common part, nothing more.
    abrupt = clean.get("queue") is None or any(
        text.startswith("destroy") for _, text in _event_texts(clean))
    return Facts(ex=ex, cex=clean.get("exit") or {}, fired=fired_, death=death,
                 stalled=stalled, eof=eof, fatal=fatal, lossy=lossy, abrupt=abrupt)


# ------------------------------------------------------------ the checks


def check_ending(f: Facts) -> list[str]:
    """The subject ended as the clean run did, or died of the signal it
    was meant to die of; it never hung."""
    ex, cex = f.ex, f.cex
    if ex.get("timed_out"):
        return ["the subject hung: killed at the timeout"]
    if f.death:
        if ex.get("signal") != DEATH_SIGNAL:
            return [f"the subject did not die of {DEATH_SIGNAL} raised in a write: "
                    f"{exit_text(ex)}"]
        return []
    if ex.get("signal") and ex.get("signal") != cex.get("signal"):
        return [f"the subject crashed: {exit_text(ex)} (clean run: {exit_text(cex)})"]
    if (ex.get("code"), ex.get("signal"), ex.get("error")) != \
            (cex.get("code"), cex.get("signal"), cex.get("error")):
        return [f"the subject did not end as the clean run did: {exit_text(ex)} "
                f"(clean run: {exit_text(cex)})"]
    return []


def check_valgrind(f: Facts) -> list[str]:
    if f.ex.get("valgrind") not in (None, "clean"):
        return ["valgrind reported errors or leaks"]
    return []


def _check_whole_stream(i: int, p: dict, cp: dict, declared: Optional[Declaration],
                        waived: list) -> list[str]:
    """Nothing was lost: the peer got the clean run's stream, but for the
    declared bytes."""
    if p.get("sha256") == cp.get("sha256"):
        return []
    if declared is not None and declared.conn == i and "hex" in p and "hex" in cp \
            and p.get("bytes") == cp.get("bytes") \
            and _masked(p["hex"], declared, i) == _masked(cp["hex"], declared, i):
        waived.append(f"connection {i}: the peer's bytes differ from the clean "
                      f"run's in the declared bytes only ({declared.text()})")
        return []
    return [f"connection {i}: the peer got {p.get('bytes')} bytes "
            f"(sha256 {str(p.get('sha256'))[:12]}), the clean run's peer "
            f"{cp.get('bytes')} (sha256 {str(cp.get('sha256'))[:12]})"]


def _check_prefix(i: int, p: dict, cp: dict, declared: Optional[Declaration],
                  waived: list) -> list[str]:
    """Bytes may be lost, never made up: the peer got a prefix of the
    clean run's stream, but for the declared bytes."""
    if p.get("bytes", 0) > cp.get("bytes", 0):
        return [f"connection {i}: the peer got {p.get('bytes')} bytes, more "
                f"than the clean run's {cp.get('bytes')}"]
    if "hex" in p and "hex" in cp and not cp["hex"].startswith(p["hex"]):
        if _masked(cp["hex"], declared, i).startswith(_masked(p["hex"], declared, i)):
            waived.append(f"connection {i}: the peer's bytes are a prefix of the "
                          "clean run's but for the declared bytes "
                          f"({declared.text()})")
            return []
        return [f"connection {i}: the peer's {p.get('bytes')} bytes are not "
                "a prefix of the clean run's stream"]
    return []


def _check_common_part(i: int, p: dict, cp: dict) -> list[str]:
    """The scenario drops what is queued itself: the streams agree where
    both have bytes."""
    h, ch = p.get("hex"), cp.get("hex")
    if h is not None and ch is not None and not (h.startswith(ch) or ch.startswith(h)):
        return [f"connection {i}: the peer's {p.get('bytes')} bytes and the "
                f"clean run's {cp.get('bytes')} differ where both have bytes"]
    return []


def check_streams(f: Facts, got: list[dict], want: list[dict],
                  declared: Optional[Declaration], waived: list) -> list[str]:
    """Each peer's stream against the clean run's, as much of it as the
    fault leaves owed."""
    broken = []
    for i, (p, cp) in enumerate(zip(got, want)):
        # A peer program's "bytes" are its own output (its report on what
        # it got), not the wire stream: after a lossy fault it reports the
        # loss in its own words, no prefix of the clean report. Its output
        # is judged only where it is owed whole.
        if f.lossy and "program" in p:
            continue
        if f.abrupt:
            broken += _check_common_part(i, p, cp)
        elif not f.lossy:
            broken += _check_whole_stream(i, p, cp, declared, waived)
        else:
            broken += _check_prefix(i, p, cp, declared, waived)
    return broken


def check_completions(f: Facts, evs: dict, cevs: dict) -> list[str]:
    """Each connection's completion events: the clean run's when nothing
    was lost; at most one failure report; no completion that claims bytes
    after the connection failed."""
    broken = []
    for c in sorted(set(evs) | set(cevs)):
        got, want = evs.get(c, []), cevs.get(c, [])
        if not f.lossy and not f.abrupt and got != want:
            broken.append(f"connection {c}: completion events {got}, the clean run's {want}")
        errors = _errors(got)
        if len(errors) > max(1, len(_errors(want))):
            broken.append(f"connection {c}: {len(errors)} errors reported ({errors})")
        if f.lossy and errors:
            after = got[got.index(errors[0]) + 1:]
            bad = [e for e in after if e.endswith(" ok") or e == "finish"]
            if bad:
                broken.append(f"connection {c}: {bad} after '{errors[0]}': a completion "
                              "claims bytes the kernel did not take")
    return broken


def check_error_owed(f: Facts, evs: dict, cevs: dict) -> list[str]:
    """A fatal fault that fired is reported as an error on a connection.
    After an early end of stream no error is owed, even in a scenario
    whose clean run fails by its own rule: the zero may come before the
    call that rule refuses (chunked/try-epipe-then-end-rest, zero@1: the
    request never comes, nothing is written)."""
    conns = set(evs) | set(cevs)
    if f.fatal and not f.death and not f.abrupt and not f.eof and \
            not any(_is_error(e) for c in conns for e in evs.get(c, [])):
        return ["the fault fired but no connection reported an error"]
    return []


def check_bytes_written(f: Facts, run: dict, clean: dict, got: list[dict],
                        want: list[dict]) -> list[str]:
    """bytes_written is what the kernel took: the peer's bytes, when the
    clean run says so too."""
    broken = []
    ccloses = _closes(clean)
    for c, n in _closes(run).items():
        if not f.abrupt and not f.lossy and c < len(got) and c < len(want) \
                and ccloses.get(c) == want[c].get("bytes") \
                and n != got[c].get("bytes"):
            broken.append(f"connection {c}: close says bytes_written={n}, the peer got "
                          f"{got[c].get('bytes')}")
    return broken


def judge(clean: dict, run: dict, cell: Cell, *, valgrind: bool = False,
          half_open: bool = False, declared: Optional[Declaration] = None,
          waived: Optional[list] = None) -> list[str]:
    """The invariants `run` breaks, as sentences (empty: it passed). With
    `declared` (the scenario's Declaration), the declared bytes may differ;
    each difference it excused is appended to `waived`, when given."""
    waived = [] if waived is None else waived
    f = facts(clean, run, cell, half_open=half_open)
    broken = check_ending(f)
    if valgrind:
        broken += check_valgrind(f)
    got, want = peers(run), peers(clean)
    if len(got) != len(want):
        return broken + [f"{len(got)} peer streams, the clean run has {len(want)}"]
    broken += check_streams(f, got, want, declared, waived)
    evs, cevs = _per_conn(run), _per_conn(clean)
    broken += check_completions(f, evs, cevs)
    broken += check_error_owed(f, evs, cevs)
    broken += check_bytes_written(f, run, clean, got, want)
    return broken
