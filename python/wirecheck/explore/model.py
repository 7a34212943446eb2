"""The oracle: what the peer must receive for a run, and which completion
events may come in which order, written from the behaviours' rules
(docs/ARCHITECTURE.md; the seed pull requests) and the RFCs, not from the C
code.

The model reads the operations' calls and their results from the trace's
events (a call's return value is the stack's claim), and checks the claims
against what the peer received:
- a stream's bytes are the stream pattern of every byte handed to a call
  the stack accepted, in call order (docs/scenario-language.md, "The bytes");
- nothing lost, nothing doubled: a connection that ends cleanly delivered
  exactly those bytes; one that failed or was destroyed delivered a prefix;
- no success for bytes that never left: a write callback, end()'s callback
  or `finish` reporting ok means the peer has every byte up to there;
- callbacks once each, in write order, end()'s after the writes', `finish`
  after end()'s, nothing after `close`;
- a transient refusal (EAGAIN, ENOBUFS, EINTR) or a short send is never an
  error the application sees;
- a chunked response is RFC 9112 framing of exactly the body the calls
  accepted (one chunk per write() or try_write(), however many sends it
  took), decoded by h11 and http.client (peers.py);
- a WebSocket stream is RFC 6455 frames of exactly the messages sent, each
  with the frame type of the rule (the `binary` option, else the data's
  kind; the legacy strategy: the kind), decoded by wsproto and by
  python3-websockets' frame parser.

judge(case, trace) returns a list of problems; none means the run passed.
"""
from __future__ import annotations

import hashlib
import re
from typing import Optional

from . import peers
from .subjects import Allowance, allowance
from .case import TRANSIENT, Case

HTTP_HEAD = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
             b"Connection: close\r\n\r\n")
# The head of a response to a request that keeps the connection alive.
HTTP_HEAD_KEEP = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"


def pattern(at: int, n: int) -> bytes:
    """Bytes at..at+n of a connection's stream pattern."""
    return bytes(0x21 + (((x * 2654435761) & 0xFFFFFFFF) >> 16) % 94
                 for x in range(at, at + n))


_EV = re.compile(r"t(\d+) c(\d+) (.*)")


def events_of(trace: dict) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for e in trace.get("events", []):
        m = _EV.fullmatch(e)
        if m:
            out.setdefault(int(m.group(2)), []).append(m.group(3))
    return out


class Received:
    """What the peer received on one connection: its bytes when the trace
    has them (streams up to 4 KiB), else only its length and digest."""

    def __init__(self, peer: dict):
        self.n = peer.get("bytes", 0)
        self.sha = peer.get("sha256")
        self.data: Optional[bytes] = (bytes.fromhex(peer["hex"]) if "hex" in peer
                                      else None)
        self.reset = bool(peer.get("reset"))

    def equals(self, want: bytes) -> bool:
        if self.data is not None:
            return self.data == want
        return self.n == len(want) and self.sha == hashlib.sha256(want).hexdigest()

    def has_prefix(self, want: bytes) -> bool:
        """The peer got at least these bytes, as they are."""
        if self.n < len(want):
            return False
        if self.data is not None:
            return self.data[:len(want)] == want
        return self.n != len(want) or self.equals(want)

    def is_prefix_of(self, want: bytes) -> bool:
        if self.n > len(want):
            return False
        if self.data is not None:
            return want[:self.n] == self.data
        return True   # too long to hold: the length is all there is


def _first_difference(got: Optional[bytes], want: bytes) -> str:
    if got is None:
        return ""
    i = next((k for k in range(min(len(got), len(want))) if got[k] != want[k]),
             min(len(got), len(want)))
    return f"; first difference at byte {i}: got {got[i:i + 24]!r}, want {want[i:i + 24]!r}"


def _peers(trace: dict) -> list[dict]:
    p = trace.get("peer")
    if isinstance(p, list):
        return p
    return [p] if isinstance(p, dict) else []


# Operations after which the process ends (the batch gets one send, what
# the queue holds is lost with the process: the seed's signal rules).
ENDS_PROCESS = ("exit", "signal", "abort", "execve")


def _exit_problems(case: Case, trace: dict) -> list[str]:
    ex = trace.get("exit", {})
    ends = any(op.name in ENDS_PROCESS for op in case.ops())
    if ex.get("timed_out"):
        return ["the run timed out: the stack never finished (a hang, or bytes it "
                "never sent)"]
    if ex.get("error"):
        return [f"the subject stopped with an error: {ex['error']}"]
    if ex.get("signal") and not ends:
        return [f"the subject died of {ex['signal']}"]
    if not ends and ex.get("code", 0) != 0:
        return [f"the subject exited {ex.get('code')}"]
    return []


# ---- streams: queue, batching, half-open ---------------------------------

_WRITE = re.compile(r"write#(\d+) (\d+)( owned)? -> (.*)")
_END = re.compile(r"end (\d+) -> (.*)")
_CB = re.compile(r"write#(\d+) (?:cb|released) (.*)")
_CLOSE = re.compile(r"close had_error=(\d) bytes_written=(\d+)")


def _stream_problems(case: Case, evs: list[str], got: Received, conn: int,
                     allow: Allowance = Allowance()) -> list[str]:
    probs: list[str] = []
    want = bytearray()
    x = 0
    ends_at: dict[int, int] = {}       # write K -> stream offset of its last byte
    called_cb: set[int] = set()        # writes whose call took a callback
    end_ok = False
    cbs: list[int] = []
    seen_cb: dict[str, int] = {}
    errors: list[str] = []
    closed = None
    after_close: list[str] = []
    ended_process = False
    transient_only = case.faults.errno() in (None, *TRANSIENT)
    cb_writes = _cb_numbers(case)
    for e in evs:
        if closed is not None and _SOCKET_EVENT.match(e):
            after_close.append(e)
        m = _WRITE.fullmatch(e)
        if m:
            k, n, r = int(m.group(1)), int(m.group(2)), m.group(4)
            if r.endswith("(closed)"):
                continue
            seg = pattern(x, n)
            x += n
            if r in ("true", "false"):
                want += seg
                ends_at[k] = len(want)
                if k in cb_writes:
                    called_cb.add(k)
            else:
                errors.append(e)
            continue
        m = _END.fullmatch(e)
        if m:
            n, r = int(m.group(1)), m.group(2)
            if r.endswith("(closed)"):
                continue
            seg = pattern(x, n)
            x += n
            if r == "ok":
                want += seg
                end_ok = True
            else:
                errors.append(e)
            continue
        m = _CB.fullmatch(e)
        if m:
            k = int(m.group(1))
            key = f"write#{k}"
            seen_cb[key] = seen_cb.get(key, 0) + 1
            if m.group(2) == "ok":
                cbs.append(k)
                if k in ends_at and not got.has_prefix(bytes(want[:ends_at[k]])):
                    probs.append(f"c{conn}: `{e}` but the peer does not have write#{k}'s "
                                 f"bytes (it got {got.n} bytes, write#{k} ends at byte "
                                 f"{ends_at[k]})")
            else:
                errors.append(e)
            continue
        if e.startswith("end cb") or e == "finish":
            key = "end cb" if e.startswith("end cb") else "finish"
            seen_cb[key] = seen_cb.get(key, 0) + 1
            if e in ("end cb ok", "finish") and not got.has_prefix(bytes(want)):
                probs.append(f"c{conn}: `{e}` but the peer got {got.n} of the "
                             f"{len(want)} bytes written"
                             + _first_difference(got.data, bytes(want)))
            if e == "end cb ok" and any(k not in cbs for k in called_cb):
                probs.append(f"c{conn}: `end cb ok` before the callbacks of writes "
                             f"{sorted(k for k in called_cb if k not in cbs)}")
            if e.startswith("end cb") and e != "end cb ok":
                errors.append(e)
            continue
        if e.startswith("error "):
            errors.append(e)
            continue
        m = _CLOSE.fullmatch(e)
        if m:
            closed = (int(m.group(1)), int(m.group(2)))
            continue
        if e.split()[0] in ENDS_PROCESS:
            ended_process = True
    end_calls = sum(1 for e in evs if _END.fullmatch(e) and not e.endswith("(closed)"))
    for key, n in seen_cb.items():
        if n > (end_calls if key == "end cb" else 1):
            probs.append(f"c{conn}: {key} reported {n} times"
                         + (f" for {end_calls} end() calls" if key == "end cb" else ""))
    if cbs != sorted(cbs):
        probs.append(f"c{conn}: write callbacks out of order: {cbs}")
    # A call refused at once (-> ERR) has its callback run with the error
    # in a microtask, which may come after a close already on its way
    # (rs.h; node's order too). Any other event after close is a bug.
    refused = {e.split(" ", 1)[0] for e in evs
               if re.fullmatch(r"(write#\d+|end) \d+( owned)? -> E\w+", e)}
    # So is a call made after the writable side ended, whatever it
    # returned: end() has no result to refuse with (node:net returns the
    # stream), and its error reaches the callback the same way.
    refused |= _late_calls(case, evs)
    after_close = [e for e in after_close
                   if not (e.split(" ", 1)[0] in refused
                           and re.fullmatch(r"\S+ (cb|released) E\w+", e))]
    if after_close:
        probs.append(f"c{conn}: events after close: {after_close}")
    if transient_only:
        allowed = _epipe_allowed(case, evs) | _after_end_errors(case, evs)
        bad = [e for e in errors if e not in allowed]
        if bad:
            probs.append(f"c{conn}: a short send or transient refusal "
                         f"({case.faults.describe()}) surfaced as an error: {bad}")
    destroyed = any(op.name == "destroy" for op in case.ops())
    clean = not errors and not destroyed and not ended_process and not got.reset
    if clean and closed is None and not ended_process:
        probs.append(f"c{conn}: never closed")
    if clean:
        if not got.equals(bytes(want)):
            probs.append(f"c{conn}: the peer got {got.n} bytes, the calls the stack "
                         f"accepted hold {len(want)}" + _first_difference(got.data, bytes(want)))
        missing = sorted(k for k in called_cb if seen_cb.get(f"write#{k}", 0) == 0)
        if missing and not ended_process:
            probs.append(f"c{conn}: no callback for writes {missing}")
    elif not got.is_prefix_of(bytes(want)):
        probs.append(f"c{conn}: the peer got {got.n} bytes that are not a prefix of the "
                     f"{len(want)} written" + _first_difference(got.data, bytes(want)))
    if closed is not None and not got.reset and closed[1] != got.n and not (
            allow.written_may_lag_on_failure and not clean and closed[1] < got.n):
        probs.append(f"c{conn}: close says bytes_written={closed[1]}, the peer got {got.n}")
    return probs


# The socket's own events and the calls' callbacks: none may come after
# `close` (an operation run after it reports itself, `(closed)` or not).
_SOCKET_EVENT = re.compile(r"(write#\d+ (cb|released) |end cb |finish$|drain$|eof$|data |"
                           r"error |close )")


def _epipe_allowed(case: Case, evs: list[str]) -> set[str]:
    """The error events the rules call for: EPIPE for a write after end()
    (destroy-soon() is an end() first), or after the peer's FIN without
    allow-half-open, and ECANCELED or EBADF
    after destroy() (docs/scenario-language.md), with the callback and
    error events that follow from them."""
    half_open = case.setting("allow-half-open") == "yes"
    out, closed_for_writes, destroyed = set(), False, False
    for e in evs:
        if ((e.startswith("end ") and e.endswith("-> ok")) or e == "destroy-soon"
                or (e == "eof" and not half_open)):
            closed_for_writes = True
        elif e == "destroy" or (e == "finish" and "destroy-soon" in evs):
            # destroy-soon() destroys once finished: later calls get EBADF.
            destroyed = True
        elif closed_for_writes and "EPIPE" in e:
            # A write after end() fails the socket as an error does
            # (node's write-after-end): what follows is a destroy's.
            out.add(e)
            destroyed = True
        elif destroyed and (e.endswith((" E125", " ECANCELED")) or "EBADF" in e):
            # (ECANCELED is errno 125: the reference stack prints the
            # number, libuv's uv_err_name the name.)
            # destroy(): callbacks not run yet get ECANCELED, even for
            # bytes the kernel has (docs/scenario-language.md,
            # "Operations"); later calls EBADF.
            out.add(e)
    return out


# A write or end() made once the writable side has ended -- the
# application's end() was accepted, destroy-soon(), `finish`, or the peer's
# FIN without allow-half-open -- fails (docs/scenario-language.md, "The
# trace's events": `write#K N -> ERR`, EPIPE after end()). The rule every
# stack keeps is that it fails and its callback and error event say so;
# the error's name is the stack's: EPIPE on the reference stack, node:net's
# ERR_STREAM_WRITE_AFTER_END, or ERR_STREAM_ALREADY_FINISHED for an end()
# after finish (node's documented writable.end() errors; the
# `write-after-end` reasons in scenarios/subjects/*.differences). The
# call's own result, its callback, and any callback or error event with
# the same error after it (node fails the pending callbacks with it) are
# allowed; a transient errno never is, nor an error of a call made before
# the side ended.
_LATE_CALL = re.compile(r"(write#\d+|end) \d+(?: owned)? -> (\S+)")
_LATE_CB = re.compile(r"(write#\d+ (?:cb|released)|end cb) (\S+)")
_ERROR_EV = re.compile(r"error (\S+) \S+")


def _after_end_errors(case: Case, evs: list[str]) -> set[str]:
    return _after_end(case, evs)[0]


def _late_calls(case: Case, evs: list[str]) -> set[str]:
    """The calls ("write#K", "end") made after the writable side ended."""
    return _after_end(case, evs)[1]


def _after_end(case: Case, evs: list[str]) -> tuple[set[str], set[str]]:
    half_open = case.setting("allow-half-open") == "yes"
    out: set[str] = set()
    ended = False
    late: set[str] = set()       # "write#K" or "end": calls made after the end
    codes: set[str] = set()      # the errors those calls failed with
    # Whether the next call after each event is a late one: the subject
    # reports a call once it returned, so what the call did inside it
    # (Bun destroys the socket in the write after end(), failing pending
    # callbacks: bun.differences write-after-end-destroys) comes first.
    late_next, nxt, was_ended = [False] * len(evs), False, False
    marks = []
    for e in evs:
        m = _LATE_CALL.fullmatch(e)
        marks.append(bool(m) and was_ended)
        if (m and m.group(1) == "end" and m.group(2) == "ok") or e in (
                "destroy-soon", "finish") or (e == "eof" and not half_open):
            was_ended = True
    for i in range(len(evs) - 1, -1, -1):
        late_next[i] = nxt
        if _LATE_CALL.fullmatch(evs[i]):
            nxt = marks[i]
    for i, e in enumerate(evs):
        m = _LATE_CALL.fullmatch(e)
        if m:
            if ended:
                late.add(m.group(1))
                r = m.group(2)
                if r not in ("true", "false", "ok") and r not in TRANSIENT:
                    out.add(e)
                    codes.add(r)
            if m.group(1) == "end" and m.group(2) == "ok":
                ended = True
            continue
        m = _LATE_CB.fullmatch(e)
        if m:
            who = "end" if m.group(1) == "end cb" else m.group(1).split()[0]
            r = m.group(2)
            # A late call fails the socket as an error does: callbacks
            # still pending then fail too, with the stack's error (the
            # reference stack's E125, node:net's ERR_SOCKET_CLOSED or the
            # late call's own error; bun.differences write-after-end-destroys).
            if r != "ok" and r not in TRANSIENT and (who in late or r in codes or late
                                                     or late_next[i]):
                out.add(e)
                codes.add(r)
            continue
        m = _ERROR_EV.fullmatch(e)
        # A late call that returned true or false fails afterwards: its
        # error event (node's ERR_STREAM_WRITE_AFTER_END, a tick later).
        if m and (m.group(1) in codes or (late and m.group(1) not in TRANSIENT)):
            out.add(e)
            continue
        if e in ("destroy-soon", "finish") or (e == "eof" and not half_open):
            ended = True
    return out, late


def _cb_numbers(case: Case) -> set[int]:
    """The write numbers that asked for a callback, when they can be known
    from the file alone (write-owned always has its release)."""
    # Numbers run in call order, which microtasks and handlers change; the
    # trace's calls are matched instead: a write whose op had `cb` in a
    # file with no microtask and no handler. Otherwise only the trace's own
    # callbacks are checked.
    if any(op.microtask for op in case.ops()) or any(
            b.header != "task" for b in case.blocks):
        return set()
    out, k = set(), 0
    for op in case.ops():
        if op.name in ("write", "write-owned"):
            k += 1
            if "cb" in op.opts or op.name == "write-owned":
                out.add(k)
    return out


def judge_stream(case: Case, trace: dict, subject: Optional[str] = None) -> list[str]:
    probs = _exit_problems(case, trace)
    evs = events_of(trace)
    for conn, peer in enumerate(_peers(trace)):
        probs += _stream_problems(case, evs.get(conn, []), Received(peer), conn,
                                  allowance(subject))
    return probs


# ---- chunked responses ------------------------------------------------------

_RES = re.compile(r"(res-write#\d+|res-end|write-rest|end-rest) (\d+) -> (.*)")
_TRY = re.compile(r"try-write(?:#\d+)? (\d+)( final)? -> (\w+) offset=(\d+)")
_TRY_REST = re.compile(r"try-write-rest (\d+)( final)? -> (\w+) offset=(\d+)")
_DONE = re.compile(r"try-write#\d+ done -> (\w+) offset=(\d+)")


class _Response:
    """The model of one chunked response: the body the calls accepted, the
    chunks it goes out in, and whether it ended."""

    def __init__(self, transient: bool = True, x: int = 0, head: bytes = HTTP_HEAD):
        self.transient = transient       # no fault may make a call fail
        self.head = head
        self.body = bytearray()
        self.chunks: list[int] = []
        self.ended = False
        self.x = x                       # the body's stream pattern offset: the
                                         # connection's, across its responses
        self.rest = b""                  # the open try_write's bytes not yet out
        self.failed = False              # a call failed: the wire is an upper bound
        self.probs: list[str] = []

    def _call(self, e: str, r: str, n: int, rest: bool) -> Optional[bytes]:
        """The bytes of a call (its rest's for a *-rest call, else the next n
        of the body pattern); None when the call was refused (judged by
        refused()). A call accepted after the response ended is a problem."""
        data = self.rest if rest else pattern(self.x, n)
        if not rest:
            self.x += n
        if r.startswith("E"):
            self.refused(e, data)
            return None
        if self.ended:
            self.probs.append(f"`{e}`: accepted after the response ended")
        return data

    def refused(self, e: str, data: bytes):
        """A call that failed. After the response ended, EPIPE is the rule
        (rs.h). Before, only a fault that fails calls for good may make it
        fail, and then some of its bytes may have gone out before the
        failing send: they count for the prefix check (self.failed)."""
        if self.ended:
            if not e.endswith("EPIPE") and not e.endswith("EBADF"):
                self.probs.append(f"`{e}`: after the response ended, EPIPE is the rule")
            return
        if self.transient:
            self.probs.append(f"`{e}`: refused while the response is open, with no "
                              "fault that fails a call for good")
        if not self.failed:
            self.chunk(data)
            self.failed = True

    def chunk(self, data: bytes, continues: bool = False):
        self.body += data
        if continues and self.chunks:
            return
        if data:
            self.chunks.append(len(data))

    def event(self, e: str):
        m = _RES.fullmatch(e)
        if m:
            op, n, r = m.group(1), int(m.group(2)), m.group(3)
            rest_op = op in ("write-rest", "end-rest")
            data = self._call(e, r, n, rest_op)
            if data is None:
                return
            if rest_op:
                self.body += data          # the same chunk, no second header
                self.rest = b""
            else:
                self.chunk(data)
            if op in ("res-end", "end-rest"):
                self.ended = True
            return
        m = _TRY.fullmatch(e) or _TRY_REST.fullmatch(e)
        if m:
            n, final, r, off = int(m.group(1)), bool(m.group(2)), m.group(3), int(m.group(4))
            is_rest = e.startswith("try-write-rest")
            data = self._call(e, r, n, is_rest)
            if data is None:
                return
            before = len(self.body)
            if r == "true":
                if off != before + n:
                    self.probs.append(f"`{e}`: true, but offset {off} is not the "
                                      f"{before + n} body bytes written")
                if is_rest:
                    self.body += data
                else:
                    self.chunk(data)
                self.rest = b""
                self.ended = self.ended or final
            else:
                if not before <= off < before + max(n, 1):
                    self.probs.append(f"`{e}`: false with offset {off}, outside "
                                      f"[{before}, {before + n})")
                out = max(0, min(off - before, n))
                if is_rest:
                    self.body += data[:out]
                else:
                    self.chunk(data[:out])
                    if out == 0 and data:
                        self.chunks.append(len(data))
                    elif out and len(data) != out:
                        self.chunks[-1] = len(data)
                self.rest = data[out:]
                self.final = final
            return
        m = _DONE.fullmatch(e)
        if m:
            r, off = m.group(1), int(m.group(2))
            if r == "true":
                self.body += self.rest
                self.rest = b""
                if off != len(self.body):
                    self.probs.append(f"`{e}`: offset {off} is not the {len(self.body)} "
                                      "body bytes written")
                self.ended = self.ended or getattr(self, "final", False)

    def wire(self) -> bytes:
        """RFC 9112 section 7.1: each chunk as its size in hex, CRLF, the
        data, CRLF; then the last chunk `0` CRLF and the final CRLF."""
        out = bytearray(self.head)
        at = 0
        for n in self.chunks:
            out += b"%x\r\n" % n + bytes(self.body[at:at + n]) + b"\r\n"
            at += n
        if self.ended:
            out += b"0\r\n\r\n"
        return bytes(out)


def _requests(case: Case) -> int:
    """How many requests the peer sends (pipelined; the last asks to close)."""
    return max(1, sum(line.count("GET ") for line in case.settings
                      if line.startswith("peer send")))


def judge_chunked(case: Case, trace: dict) -> list[str]:
    probs = _exit_problems(case, trace)
    evs = events_of(trace).get(0, [])
    transient = case.faults.errno() in (None, *TRANSIENT)
    n = _requests(case)
    responses: list[_Response] = []
    for e in evs:
        if e.startswith("request "):
            last = len(responses) >= n - 1
            responses.append(_Response(transient, responses[-1].x if responses else 0,
                                       HTTP_HEAD if last else HTTP_HEAD_KEEP))
        elif responses:
            responses[-1].event(e)
    for r in responses:
        probs += r.probs
    peer = _peers(trace)[0] if _peers(trace) else {}
    got = Received(peer)
    want = b"".join(r.wire() for r in responses)
    errors = [e for e in evs if e.startswith("error ")]
    if transient and errors:
        probs.append(f"a short send or transient refusal ({case.faults.describe()}) "
                     f"surfaced as an error: {errors}")
    if any(r.failed for r in responses) and not errors:
        errors.append("(a call failed)")
    last = responses[-1] if responses else None
    if "finish" in evs and not (last and last.ended and len(responses) == n):
        probs.append("`finish` for a response the calls never ended")
    if not errors:
        if len(responses) < n:
            probs.append(f"{len(responses)} of the {n} requests answered")
        elif last.ended and "finish" not in evs:
            probs.append("the response ended but no `finish` came")
        if not got.equals(want):
            probs.append(f"the peer got {got.n} bytes, the responses the calls "
                         f"accepted are {len(want)}" + _first_difference(got.data, want))
        bodies = [(bytes(r.body), r.ended) for r in responses] or [(b"", False)]
        if got.data is not None:
            probs += peers.judge_http(got.data, bodies)
        probs += peers.judge_http(want, bodies, model=True)
    elif not got.is_prefix_of(want):
        probs.append(f"the peer got {got.n} bytes that are not a prefix of the "
                     f"{len(want)}-byte response" + _first_difference(got.data, want))
    m = next((_CLOSE.fullmatch(e) for e in evs if e.startswith("close ")), None)
    if m and not got.reset and int(m.group(2)) != got.n:
        probs.append(f"close says bytes_written={m.group(2)}, the peer got {got.n}")
    return probs


# ---- WebSocket ---------------------------------------------------------------

_WS_SEND = re.compile(r"ws-send#(\d+) (\d+) (text|bytes)((?: \S+=\S+)*) -> (\w+)")
_WS_PING = re.compile(r"ws-ping (\d+) -> (\w+)")
_WS_CLOSE_OP = re.compile(r"ws-close (\d+) -> (\w+)")
_WS_CLOSED = re.compile(r"ws-closed code=(\d+)( unclean)? dropped=(\d+) bytes_written=(\d+)")


def _ws_payloads(case: Case) -> list:
    """The ws-send operations' payloads in file order (a string's bytes, or
    None for a byte count: the stream pattern)."""
    return [op for op in case.ops() if op.name == "ws-send"]


def judge_ws(case: Case, trace: dict) -> list[str]:
    probs = _exit_problems(case, trace)
    evs = events_of(trace).get(0, [])
    by_kind = case.variant == "ws=by-kind"
    sends = _ws_payloads(case)
    messages: list[tuple[str, bytes]] = []
    current: Optional[list] = None
    pings: list[bytes] = []
    close_code = None
    x = 0
    i = 0
    for e in evs:
        m = _WS_SEND.fullmatch(e)
        if m:
            op = sends[i] if i < len(sends) else None
            i += 1
            n, kind, opts, r = int(m.group(2)), m.group(3), m.group(4), m.group(5)
            if op is not None and op.data is not None:
                data = op.data
            else:
                data = pattern(x, n)
            x += n
            if r not in ("sent", "queued"):
                if case.faults.errno() in (None, *TRANSIENT):
                    probs.append(f"`{e}`: a valid send refused")
                continue
            binary = "binary=true" in opts or (op is not None and "binary" in op.opts)
            not_binary = "binary=false" in opts or (op is not None and "binary=false" in op.opts)
            if by_kind:
                typ = "text" if kind == "text" else "binary"
            elif binary:
                typ = "binary"
            elif not_binary:
                typ = "text"
            else:
                typ = "text" if kind == "text" else "binary"
            fin = not (op is not None and "fin=0" in op.opts)
            if current is None:
                current = [typ, bytearray()]
            current[1] += data
            if fin:
                messages.append((current[0], bytes(current[1])))
                current = None
            continue
        m = _WS_PING.fullmatch(e)
        if m:
            op = next((o for o in case.ops() if o.name == "ws-ping"), None)
            n = int(m.group(1))
            pings.append(pattern(x, n))
            x += n
            continue
        m = _WS_CLOSE_OP.fullmatch(e)
        if m and m.group(2) == "ok":
            close_code = close_code or int(m.group(1))
    if case.faults.errno() not in (None, *TRANSIENT):
        # A call failed for good: the connection may end anywhere, and
        # uncleanly. The model then only asks that the stack did not crash
        # or hang, and that a valid send was not refused at the call.
        return probs
    closed = next((_WS_CLOSED.fullmatch(e) for e in evs if e.startswith("ws-closed")), None)
    if closed is None:
        probs.append("no ws-closed event")
    else:
        if closed.group(2):
            probs.append(f"`{closed.group(0)}`: unclean")
        if int(closed.group(3)):
            probs.append(f"`{closed.group(0)}`: messages dropped")
    errs = [e for e in evs if e.startswith(("ws-error", "error "))]
    if errs:
        probs.append(f"errors: {errs}")
    peer = _peers(trace)[0] if _peers(trace) else {}
    got = Received(peer)
    if got.data is not None and not probs:
        probs += peers.judge_ws(got.data, messages, pings, close_code or 1000)
    return probs


def judge(case: Case, trace: dict, subject: Optional[str] = None) -> list[str]:
    """subject: the --subject name, for its entry in subjects.py."""
    if case.behaviour == "chunked":
        return judge_chunked(case, trace)
    if case.behaviour == "websocket":
        return judge_ws(case, trace)
    return judge_stream(case, trace, subject)
