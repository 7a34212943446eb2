"""Generators of scenarios, one per behaviour, as hypothesis strategies.

Each draws a legal sequence of the behaviour's operations, with sizes drawn
from the boundaries that matter to the stack's rules (docs/ARCHITECTURE.md:
the 16 KiB batch and high-water limits, the 64 KiB batch bound, the chunked
writer's 32 KiB copy threshold, the WebSocket length encodings at 125, 126,
65535 and 65536), and a fault profile (a clamp, a refusal at call k or at
byte b). Lists shrink to fewer operations and sampled choices to the first
one listed, so the simplest values come first: hypothesis' own shrinker then
turns a failure into the shortest case that still fails.
"""
from __future__ import annotations

from hypothesis import strategies as st

from .. import behaviours as registry

from .case import (Block, Case, Faults, HTTP_KEEP_ALIVE, HTTP_REQUEST, Op, WS_PEER_CLOSE,
                   WS_REQUEST, peer_send)

from .names import ALIASES, BEHAVIOURS, canonical  # noqa: F401 (the generators' names)

LEGACY = {b: registry.get(b).legacy for b in BEHAVIOURS}


KiB = 1024
STREAM_SIZES = (1, 0, 2, 7, 8, 4095, 4096, 16 * KiB - 1, 16 * KiB, 16 * KiB + 1,
                64 * KiB, 100_000)
# Body sizes where the chunk header's length grows a hex digit (15/16,
# 255/256, 4095/4096), and around the fixed strategy's copy threshold
# (RS_HTTP_COPY_MAX, 32 KiB, head and framing included).
BODY_SIZES = (1, 0, 2, 7, 8, 15, 16, 255, 256, 4095, 4096,
              32 * KiB - 100, 32 * KiB - 80, 32 * KiB, 40 * KiB)
WS_SIZES = (1, 0, 2, 7, 125, 126, 127, 65535, 65536)
WS_TEXTS = ("h\u00e9", "\u20ac", "\U0001F600", "a\u00e9\u20ac\U0001F600z")


def _size(table, top: int):
    return st.one_of(st.sampled_from(table), st.integers(1, top))


def faults(big: int = 4096) -> st.SearchStrategy:
    """No fault, a clamp of 1..8 bytes or a page, and at most one refusal:
    a transient errno (EAGAIN, ENOBUFS, EINTR) at writing call k for n
    calls, or EPIPE at call k; or a refusal at the call carrying byte b."""
    clamp = st.one_of(st.none(), st.integers(1, 8), st.just(big))
    err = st.sampled_from(("EAGAIN", "ENOBUFS", "EINTR", "EPIPE"))
    at_call = st.builds(lambda e, k, n: f"{e}@{k}x{n}" if e != "EPIPE" else f"{e}@{k}",
                        err, st.integers(1, 6), st.integers(1, 3))
    at_byte = st.builds(lambda e, b: f"write:errno={e},byte={b}",
                        st.sampled_from(("EAGAIN", "ENOBUFS", "EPIPE")),
                        st.integers(0, 300))
    return st.builds(
        lambda c, kind, r, f: Faults(c, r if kind == 1 else None,
                                     f if kind == 2 else None),
        clamp, st.sampled_from((0, 1, 2)), at_call, at_byte)


def _variant(behaviour: str, legacy: bool):
    return st.sampled_from((None, LEGACY[behaviour])) if legacy else st.just(None)


# ---- the stream behaviours: queue, batching, half-open ---------------------

@st.composite
def _stream_ops(draw, behaviour: str, n_max: int, cap: int, cork: int = 0):
    """Operations of one block; cork is how many corks are open before it.
    Returns the operations and how many are open after it."""
    ops = []
    kinds = ["write", "write-cb", "cork", "uncork", "await-drained"]
    if behaviour == "queue":
        kinds.append("write-owned")
    if behaviour == "batching":
        kinds += ["microtask-write", "checkpoint"]
    for kind in draw(st.lists(st.sampled_from(kinds), max_size=n_max)):
        size = min(draw(_size(STREAM_SIZES, 9000)), cap)
        if kind == "write":
            ops.append(Op("write", size))
        elif kind == "write-cb":
            ops.append(Op("write", size, opts=("cb",)))
        elif kind == "microtask-write":
            ops.append(Op("write", min(size, 16 * KiB),
                          opts=("cb",) if draw(st.booleans()) else (), microtask=True))
        elif kind == "write-owned":
            ops.append(Op("write-owned", max(size, 1)))
        elif kind == "cork":
            cork += 1
            ops.append(Op("cork"))
        elif kind == "uncork" and cork:
            cork -= 1
            ops.append(Op("uncork"))
        elif kind == "checkpoint" or (kind == "await-drained" and not cork):
            # await-drained while corked waits for bytes the cork holds:
            # the scenario's own deadlock, not the stack's.
            ops.append(Op(kind))
    return ops, cork


@st.composite
def _last_op(draw, behaviour: str, cap: int):
    choices = ["end", "end-cb", "destroy-soon"]
    if behaviour == "batching":
        choices += ["destroy", "exit", "signal"]
    kind = draw(st.sampled_from(choices))
    size = draw(st.one_of(st.none(), _size(STREAM_SIZES, 9000)))
    size = None if size is None else min(size, cap)
    if kind == "end":
        return Op("end", size)
    if kind == "end-cb":
        return Op("end", size, opts=("cb",))
    if kind == "exit":
        return Op("exit", 0)
    if kind == "signal":
        return Op("signal", opts=("SIGTERM",))
    return Op(kind)


@st.composite
def stream_case(draw, behaviour: str, legacy: bool = True):
    settings = []
    blocks = []
    fl = draw(faults())
    # Under a clamp of a few bytes every byte is a syscall: sizes past the
    # 16 KiB limits, not 100 KB, keep a case under a second.
    cap = 16 * KiB + 1 if fl.clamp is not None and fl.clamp <= 8 else 1 << 20
    n_tasks = draw(st.integers(1, 3))
    cork = 0
    for i in range(n_tasks):
        ops, cork = draw(_stream_ops(behaviour, 4, cap, cork))
        if i == n_tasks - 1:
            ops += [Op("uncork")] * cork
            ops.append(draw(_last_op(behaviour, cap)))
        blocks.append(Block("task", tuple(ops)))
    if behaviour == "half_open":
        settings.append("allow-half-open " + draw(st.sampled_from(("yes", "no"))))
        settings.append("peer shutdown at " + draw(st.sampled_from(("start", "task 1"))))
        on_eof, cork = draw(_stream_ops(behaviour, 2, cap))
        on_eof += [Op("uncork")] * cork
        if draw(st.booleans()):
            on_eof.append(draw(_last_op(behaviour, cap)))
        if on_eof:
            blocks.append(Block("on eof", tuple(on_eof)))
    return Case(behaviour, tuple(settings), tuple(blocks), fl,
                draw(_variant(behaviour, legacy)))


# ---- chunked responses -------------------------------------------------------

@st.composite
def chunked_case(draw, legacy: bool = True):
    ops = []
    for kind in draw(st.lists(st.sampled_from(("res-write", "res-write-cb", "try-rest")),
                              max_size=3)):
        size = draw(_size(BODY_SIZES, 3000))
        if kind == "res-write":
            ops.append(Op("res-write", size))
        elif kind == "res-write-cb":
            ops.append(Op("res-write", size, opts=("cb",)))
        else:
            # try_write, then its rest by write() (a write after a partial
            # try_write continues the same chunk).
            ops.append(Op("try-write", size))
            ops.append(Op("write-rest", opts=("cb",) if draw(st.booleans()) else ()))
    size = draw(_size(BODY_SIZES, 3000))
    last = draw(st.sampled_from(("try-final-resume", "res-end", "res-end-cb", "try-end-rest",
                                 "try-final-end-rest", "try-rest-final")))
    if last == "try-final-resume":
        ops.append(Op("try-write", size, opts=("final", "resume")))
    elif last == "res-end":
        ops.append(Op("res-end", size))
    elif last == "res-end-cb":
        ops.append(Op("res-end", size, opts=("cb",)))
    elif last == "try-end-rest":
        ops += [Op("try-write", size), Op("end-rest")]
    elif last == "try-final-end-rest":
        ops += [Op("try-write", size, opts=("final",)), Op("end-rest")]
    else:
        # try_write, its rest tried again as the final chunk, and whatever
        # is still left by end(): EPIPE when the rest went out and ended it.
        ops += [Op("try-write", size), Op("try-write-rest", opts=("final",)), Op("end-rest")]
    # One request, or two pipelined in one segment: the second response
    # waits for the first to end (rs.h), on the same connection.
    request = HTTP_REQUEST if not draw(st.booleans()) else HTTP_KEEP_ALIVE + HTTP_REQUEST
    settings = ("role server", "http yes", peer_send(request))
    return Case("chunked", settings, (Block("on request", tuple(ops)),),
                draw(faults()), draw(_variant("chunked", legacy)))


# ---- WebSocket framing -------------------------------------------------------

@st.composite
def _ws_send(draw):
    if draw(st.integers(0, 3)) == 0:
        data, size = draw(st.sampled_from(WS_TEXTS)).encode(), None
        kind = "text"
    else:
        data, size = None, draw(_size(WS_SIZES, 3000))
        kind = draw(st.sampled_from(("text", "bytes")))
    opts = [kind]
    binary = draw(st.sampled_from((None, "binary", "binary=false")))
    if binary:
        opts.append(binary)
    return Op("ws-send", size, data, tuple(opts))


@st.composite
def ws_case(draw, legacy: bool = True):
    ops = []
    open_message = False
    for kind in draw(st.lists(st.sampled_from(("send", "fragment", "ping")), min_size=1,
                              max_size=4)):
        if kind == "ping":
            ops.append(Op("ws-ping", draw(st.sampled_from((None, 0, 1, 125))) ))
            continue
        op = draw(_ws_send())
        if kind == "fragment":
            op = Op(op.name, op.size, op.data, op.opts + ("fin=0",))
            open_message = True
        else:
            open_message = False
        ops.append(op)
    if open_message:
        ops.append(draw(_ws_send()))
    if draw(st.booleans()):
        ops.append(Op("ws-close", 1000))
    settings = ("role server", "websocket yes", peer_send(WS_REQUEST),
                peer_send(WS_PEER_CLOSE, "done"))
    return Case("websocket", settings, (Block("task", tuple(ops)),), draw(faults()),
                draw(_variant("websocket", legacy)))


def case(behaviour: str, legacy: bool = True) -> st.SearchStrategy:
    behaviour = canonical(behaviour)
    if behaviour == "chunked":
        return chunked_case(legacy)
    if behaviour == "websocket":
        return ws_case(legacy)
    return stream_case(behaviour, legacy)
