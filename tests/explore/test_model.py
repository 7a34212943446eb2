"""The explorer's oracle on made-up traces: each rule of the model can
fail, and the model's own bytes are what real peers (h11, http.client,
wsproto, python3-websockets) decode. No subject runs here."""
import pathlib
import sys

import pytest
from hypothesis import given, settings, strategies as st

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))
from wirecheck.explore import model, peers  # noqa: E402
from wirecheck.explore.case import (Block, Case, Faults, Op, parse)  # noqa: E402

HEAD = model.HTTP_HEAD


def stream_case(*ops, faults=Faults(), settings_=()):
    return Case("queue", tuple(settings_), (Block("task", tuple(ops)),), faults)


def trace(events, data: bytes, exit=None):
    return {"events": list(events),
            "peer": {"bytes": len(data), "hex": data.hex(), "sha256": "x"},
            "exit": exit or {"code": 0, "timed_out": False}}


P = model.pattern


def test_pattern_is_the_documented_stream():
    assert P(0, 16) == b'!tWM0rgK@$e[>"uY'


CASE = stream_case(Op("write", 3, opts=("cb",)), Op("end", 2, opts=("cb",)))
GOOD = ["t1 c0 connect", "t2 c0 write#1 3 -> true", "t2 c0 end 2 -> ok",
        "t3 c0 write#1 cb ok", "t3 c0 end cb ok", "t3 c0 finish", "t4 c0 eof",
        "t4 c0 close had_error=0 bytes_written=5"]


def test_a_clean_stream_passes():
    assert model.judge(CASE, trace(GOOD, P(0, 5))) == []


def test_lost_bytes_with_finish_fail():
    probs = model.judge(CASE, trace(GOOD[:-1] + ["t4 c0 close had_error=0 bytes_written=3"],
                                    P(0, 3)))
    assert any("`end cb ok` but the peer got 3 of the 5" in p for p in probs)


def test_a_write_callback_for_bytes_the_peer_lacks_fails():
    evs = ["t1 c0 connect", "t2 c0 write#1 3 -> true", "t3 c0 write#1 cb ok",
           "t4 c0 close had_error=1 bytes_written=1", ]
    probs = model.judge(stream_case(Op("write", 3, opts=("cb",)), Op("destroy")),
                        trace(evs, P(0, 1)))
    assert any("does not have write#1's bytes" in p for p in probs)


def test_doubled_bytes_fail():
    probs = model.judge(CASE, trace(GOOD[:-1] + ["t4 c0 close had_error=0 bytes_written=6"],
                                    P(0, 3) + P(2, 3)))
    assert any("the peer got 6 bytes" in p for p in probs)


def test_a_callback_twice_and_out_of_order_fail():
    c = stream_case(Op("write", 1, opts=("cb",)), Op("write", 1, opts=("cb",)), Op("end"))
    evs = ["t2 c0 write#1 1 -> true", "t2 c0 write#2 1 -> true", "t2 c0 end 0 -> ok",
           "t3 c0 write#2 cb ok", "t3 c0 write#1 cb ok", "t3 c0 write#1 cb ok", "t3 c0 finish",
           "t4 c0 close had_error=0 bytes_written=2"]
    probs = model.judge(c, trace(evs, P(0, 2)))
    assert any("write#1 reported 2 times" in p for p in probs)
    assert any("out of order" in p for p in probs)


def test_a_short_send_that_surfaces_as_an_error_fails():
    evs = ["t2 c0 write#1 3 -> true", "t2 c0 end 2 -> ok", "t3 c0 error EAGAIN send",
           "t3 c0 close had_error=1 bytes_written=1"]
    probs = model.judge(stream_case(Op("write", 3), Op("end", 2),
                                    faults=Faults(clamp=1)), trace(evs, P(0, 1)))
    assert any("surfaced as an error" in p for p in probs)


def test_epipe_after_end_is_the_rule():
    c = stream_case(Op("end", 1), Op("write", 1, opts=("cb",)))
    evs = ["t2 c0 end 1 -> ok", "t2 c0 write#1 1 -> EPIPE", "t2 c0 write#1 cb EPIPE",
           "t2 c0 error EPIPE write", "t2 c0 close had_error=1 bytes_written=1"]
    assert model.judge(c, trace(evs, P(0, 1))) == []


def test_a_write_after_end_may_fail_with_the_stacks_own_error():
    """node:net's write-after-end: the call returns false, its callback
    and the error event carry ERR_STREAM_WRITE_AFTER_END, and end()'s
    pending callback gets it too (scenarios/subjects/node.differences)."""
    c = stream_case(Op("end", 1, opts=("cb",)), Op("end", 1, opts=("cb",)))
    evs = ["t2 c0 end 1 -> ok", "t2 c0 end 1 -> ok",
           "t2 c0 end cb ERR_STREAM_WRITE_AFTER_END", "t2 c0 error ERR_STREAM_WRITE_AFTER_END -",
           "t2 c0 end cb ERR_STREAM_WRITE_AFTER_END", "t3 c0 close had_error=1 bytes_written=1"]
    assert model.judge(c, trace(evs, P(0, 1))) == []


def test_an_end_after_finish_may_fail_its_callback():
    """Without allow-half-open the peer's FIN ends our side; node's end()
    after that finish calls back with ERR_STREAM_ALREADY_FINISHED."""
    c = Case("half_open", ("allow-half-open no", "peer shutdown at start"),
             (Block("task", ()), Block("task", (Op("end", opts=("cb",)),))))
    evs = ["t1 c0 connect", "t2 c0 eof", "t3 c0 finish", "t4 c0 end 0 -> ok",
           "t4 c0 end cb ERR_STREAM_ALREADY_FINISHED", "t5 c0 close had_error=0 bytes_written=0"]
    assert model.judge(c, trace(evs, b"")) == []


def test_an_error_of_a_write_made_before_end_still_fails():
    """The allowance is for calls made after the side ended and what their
    failure cancels: a transient errno is a short send surfacing whatever
    came before it, and with no late call an earlier write's callback error
    under a clamp alone is one too, whatever the error's name."""
    c = stream_case(Op("write", 3, opts=("cb",)), Op("end", 2), Op("write", 1),
                    faults=Faults(clamp=1))
    evs = ["t2 c0 write#1 3 -> true", "t2 c0 end 2 -> ok", "t2 c0 write#2 1 -> false",
           "t2 c0 write#2 cb ERR_STREAM_WRITE_AFTER_END",
           "t3 c0 write#1 cb ERR_SOCKET_CLOSED", "t3 c0 error EAGAIN write",
           "t3 c0 close had_error=1 bytes_written=1"]
    probs = model.judge(c, trace(evs, P(0, 1)))
    assert any("surfaced as an error" in p and "error EAGAIN write" in p
               and "write#2" not in p for p in probs), probs
    c1 = stream_case(Op("write", 3, opts=("cb",)), Op("end", 2), faults=Faults(clamp=1))
    evs1 = [e for e in evs if "write#2" not in e and "EAGAIN" not in e]
    probs = model.judge(c1, trace(evs1, P(0, 1)))
    assert any("surfaced as an error" in p and "write#1 cb ERR_SOCKET_CLOSED" in p
               for p in probs), probs


def test_ecanceled_by_name_after_destroy():
    """libuv names errno 125 (uv_err_name), the reference stack prints E125;
    a refusal that cancels nothing is still an error."""
    c = stream_case(Op("write", 1, opts=("cb",)), Op("destroy"),
                    faults=Faults(refuse="EAGAIN@1x1"))
    evs = ["t1 c0 connect", "t2 c0 write#1 1 -> true", "t2 c0 destroy",
           "t3 c0 write#1 cb ECANCELED", "t4 c0 close had_error=0 bytes_written=0"]
    assert model.judge(c, trace(evs, b"")) == []
    evs[3] = "t3 c0 write#1 cb EAGAIN"
    assert any("surfaced as an error" in p for p in model.judge(c, trace(evs, b"")))


def test_a_hang_and_a_crash_fail():
    assert "timed out" in model.judge(CASE, trace(GOOD, P(0, 5), {"timed_out": True}))[0]
    assert "SIGSEGV" in model.judge(CASE, trace(GOOD, P(0, 5),
                                                {"signal": "SIGSEGV", "timed_out": False}))[0]


def chunked_case(*ops, faults=Faults()):
    return Case("chunked", ("role server", "http yes"), (Block("on request", tuple(ops)),),
                faults)


def test_the_head_lost_under_a_short_send_fails():
    """The bug the explorer found first: try_write("", final) under a clamp
    of 7 left the peer with "HTTP/1." and the terminator."""
    c = chunked_case(Op("try-write", 0, opts=("final", "resume")), faults=Faults(clamp=7))
    evs = ["t1 c0 accept", "t2 c0 data 47", "t2 c0 request GET /r body=0",
           "t2 c0 try-write#1 0 final -> true offset=0", "t3 c0 finish", "t4 c0 eof",
           "t4 c0 close had_error=0 bytes_written=12"]
    probs = model.judge(c, trace(evs, b"HTTP/1.0\r\n\r\n"))
    assert any("the peer got 12 bytes" in p for p in probs)
    assert any("h11" in p for p in probs) and any("http.client" in p for p in probs)
    good = evs[:-1] + ["t4 c0 close had_error=0 bytes_written=71"]
    assert model.judge(c, trace(good, HEAD + b"0\r\n\r\n")) == []


def test_a_try_write_continued_by_write_rest_is_one_chunk():
    c = chunked_case(Op("try-write", 10), Op("write-rest"), Op("res-end"))
    body = P(0, 10)
    want = HEAD + b"a\r\n" + body + b"\r\n0\r\n\r\n"
    evs = ["t2 c0 request GET /r body=0", "t2 c0 try-write#1 10 -> false offset=4",
           "t2 c0 write-rest 6 -> true",
           "t2 c0 res-end 0 -> ok", "t3 c0 finish",
           f"t4 c0 close had_error=0 bytes_written={len(want)}"]
    assert model.judge(c, trace(evs, want)) == []
    # A second chunk header for the rest is a framing the model refuses.
    twice = HEAD + b"4\r\n" + body[:4] + b"\r\n6\r\n" + body[4:] + b"\r\n0\r\n\r\n"
    evs[-1] = f"t4 c0 close had_error=0 bytes_written={len(twice)}"
    assert any("the peer got" in p for p in model.judge(c, trace(evs, twice)))


def test_an_offset_beyond_the_body_fails():
    c = chunked_case(Op("try-write", 5, opts=("final",)))
    evs = ["t2 c0 request GET /r body=0", "t2 c0 try-write#1 5 final -> true offset=9",
           "t3 c0 finish"]
    probs = model.judge(c, trace(evs, HEAD + b"5\r\n" + P(0, 5) + b"\r\n0\r\n\r\n"))
    assert any("offset 9 is not the 5 body bytes" in p for p in probs)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 300), st.booleans()), max_size=5),
       st.integers(0, 300))
def test_the_models_responses_decode_with_h11_and_http_client(writes, last):
    """Whatever the calls, the model's wire is what the real peers decode
    to the model's body: the model is judged by the peers too."""
    r = model._Response()
    x = 0
    for n, as_try in writes:
        r.event(f"try-write#1 {n} -> true offset={len(r.body) + n}" if as_try
                else f"res-write#1 {n} -> true")
        x += n
    r.event(f"res-end {last} -> ok")
    assert peers.judge_http(r.wire(), [(bytes(r.body), True)]) == []


def ws_case(*ops, variant=None):
    return Case("websocket", ("role server", "websocket yes"), (Block("task", tuple(ops)),),
                Faults(), variant)


def frame(op, payload: bytes, fin=True):
    n = len(payload)
    head = bytes([(0x80 if fin else 0) | op])
    if n < 126:
        head += bytes([n])
    elif n < 65536:
        head += bytes([126]) + n.to_bytes(2, "big")
    else:
        head += bytes([127]) + n.to_bytes(8, "big")
    return head + payload


SWITCH = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n"
CLOSE = frame(8, (1000).to_bytes(2, "big"))


@pytest.mark.parametrize("variant,opcode", [(None, 2), ("ws=by-kind", 1)])
def test_the_frame_type_rule_by_option_and_by_kind(variant, opcode):
    c = ws_case(Op("ws-send", 3, opts=("text", "binary")), variant=variant)
    evs = ["t2 c0 ws-open", "t3 c0 ws-send#1 3 text binary=true -> sent",
           "t4 c0 ws-peer-close 1000 reason=-", "t5 c0 ws-closed code=1000 dropped=0 "
           "bytes_written=1"]
    ok = SWITCH + frame(opcode, P(0, 3)) + CLOSE
    assert model.judge(c, trace(evs, ok)) == []
    wrong = SWITCH + frame(3 - opcode, P(0, 3)) + CLOSE
    probs = model.judge(c, trace(evs, wrong))
    assert any("wsproto decoded" in p for p in probs)
    assert any("websockets decoded" in p for p in probs)


@pytest.mark.parametrize("n", [0, 125, 126, 65535, 65536])
def test_ws_edge_lengths_are_judged_by_both_peers(n):
    c = ws_case(Op("ws-send", n, opts=("bytes",)))
    evs = ["t3 c0 ws-send#1 %d bytes -> sent" % n,
           "t5 c0 ws-closed code=1000 dropped=0 bytes_written=1"]
    assert model.judge(c, trace(evs, SWITCH + frame(2, P(0, n)) + CLOSE)) == []
    bad = SWITCH + frame(2, P(0, n))[:-1] + CLOSE   # one payload byte lost
    assert model.judge(c, trace(evs, bad)) != []


def test_a_reproducer_reads_back_as_the_same_case():
    c = Case("chunked", ("role server", "http yes", 'peer send "GET /\\r\\n" at start'),
             (Block("on request", (Op("try-write", 0, opts=("final", "resume")),
                                   Op("res-write", data=b'a"\\\x00', opts=("cb",)))),),
             Faults(7, "EAGAIN@1"))
    text = c.text("a comment\nof two lines")
    back = parse(text.replace("behaviour chunked\n",
                              "behaviour chunked\nclamp-send 7\nrefuse-write EAGAIN@1\n"))
    assert back.blocks == c.blocks
    assert back.faults == c.faults
    assert back.flags() == []


def test_a_file_without_behaviour_is_refused_with_its_name():
    with pytest.raises(ValueError, match="x.wcs: no 'behaviour' line"):
        parse("task\n  write 1\n", "x.wcs")


def test_pipelined_responses_are_judged_one_after_the_other():
    """Two requests on one connection: the first response keeps it alive,
    the second closes; the body pattern runs on across them."""
    c = Case("chunked", ("role server", "http yes",
                         'peer send "GET /k HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n'
                         'GET /r HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n" at start'),
             (Block("on request", (Op("res-end", 3),)),))
    want = (model.HTTP_HEAD_KEEP + b"3\r\n" + P(0, 3) + b"\r\n0\r\n\r\n"
            + HEAD + b"3\r\n" + P(3, 3) + b"\r\n0\r\n\r\n")
    evs = ["t2 c0 request GET /k body=0", "t2 c0 res-end 3 -> ok",
           "t2 c0 request GET /r body=0", "t2 c0 res-end 3 -> ok", "t2 c0 finish",
           f"t3 c0 close had_error=0 bytes_written={len(want)}"]
    assert model.judge(c, trace(evs, want)) == []
    # The second response answered before the first: h11 and the model see it.
    swapped = want[len(want) // 2:] + want[:len(want) // 2]
    assert model.judge(c, trace(evs, swapped)) != []
    # Only the first answered, and the connection closed: not a pass.
    one = ["t2 c0 request GET /k body=0", "t2 c0 res-end 3 -> ok",
           "t3 c0 close had_error=0 bytes_written=%d" % (len(want) // 2)]
    assert any("1 of the 2 requests" in p
               for p in model.judge(c, trace(one, want[:len(want) // 2])))


def test_a_write_after_destroy_soon_finished_may_be_ebadf_but_no_other_error():
    """Found by the long run (batching, seed 108): destroy-soon() ends,
    then destroys once finished, so a microtask's write after the finish
    is EBADF, not EPIPE. An EBADF before any destroy is still an error."""
    c = stream_case(Op("write", 1), Op("write", 1, opts=("cb",)),
                    Op("write", 1, microtask=True), Op("destroy-soon"))
    evs = ["t2 c0 write#1 1 -> true", "t2 c0 write#2 1 -> true", "t2 c0 destroy-soon",
           "t2 c0 write#2 cb ok", "t2 c0 finish", "t2 c0 write#3 1 -> EBADF",
           "t2 c0 close had_error=0 bytes_written=2"]
    assert model.judge(c, trace(evs, P(0, 2))) == []
    early = ["t2 c0 write#1 1 -> true", "t2 c0 write#2 1 -> EBADF", "t2 c0 destroy-soon",
             "t2 c0 finish", "t2 c0 close had_error=0 bytes_written=1"]
    assert any("surfaced as an error" in p for p in model.judge(c, trace(early, P(0, 1))))

def test_a_subjects_count_may_lag_the_peer_on_a_failed_connection():
    """subjects.py: Bun's count holds a write whole (count-whole-write), so
    its bytes_written is a lower bound once the connection failed; exact on
    a clean one, never above the peer's, and exact for every other subject."""
    c = stream_case(Op("write", 3), Op("destroy"))
    evs = ["t2 c0 write#1 3 -> true", "t2 c0 destroy", "t3 c0 close had_error=0 bytes_written=0"]
    t = trace(evs, P(0, 2))
    assert model.judge(c, t, "bun") == []
    assert model.judge(c, t, "node") == []
    assert any("bytes_written=0, the peer got 2" in p for p in model.judge(c, t))
    over = trace(evs[:-1] + ["t3 c0 close had_error=0 bytes_written=3"], P(0, 2))
    assert any("bytes_written=3" in p for p in model.judge(c, over, "bun"))
    clean = trace(GOOD[:-1] + ["t4 c0 close had_error=0 bytes_written=3"], P(0, 5))
    assert any("bytes_written=3" in p for p in model.judge(CASE, clean, "bun"))


def test_a_write_after_end_that_returned_false_may_fail_in_its_error_event():
    """node: a microtask's write after end() returns false; the error event
    comes a tick later. With no call after end(), the same event fails."""
    c = Case("batching", (), (Block("task", (Op("write", 1, microtask=True), Op("end"))),))
    evs = ["t1 c0 connect", "t2 c0 end 0 -> ok", "t2 c0 write#1 1 -> false",
           "t2 c0 error ERR_STREAM_WRITE_AFTER_END -", "t3 c0 close had_error=1 bytes_written=0"]
    assert model.judge(c, trace(evs, b"")) == []
    c2 = stream_case(Op("write", 1), Op("end"))
    evs2 = ["t1 c0 connect", "t2 c0 write#1 1 -> true", "t2 c0 end 0 -> ok",
            "t2 c0 error ERR_STREAM_WRITE_AFTER_END -", "t3 c0 close had_error=1 bytes_written=0"]
    assert any("surfaced as an error" in p for p in model.judge(c2, trace(evs2, b"")))


def test_a_late_calls_error_may_cancel_what_is_pending_and_follow_close():
    """bun-upgrade: the write after end() fails write#1's callback, still
    pending under a clamp, with its error; an end() after finish gets its
    callback's error after a close already on its way. Without the late
    call the same callback error fails, and so does any event after close."""
    c = Case("batching", ("clamp-send 1",), (Block("task", (
        Op("write", 2, opts=("cb",)), Op("write", 1, microtask=True), Op("end"))),),
        Faults(clamp=1))
    evs = ["t1 c0 connect", "t2 c0 write#1 2 -> true", "t2 c0 end 0 -> ok",
           "t2 c0 write#2 1 -> false", "t3 c0 write#1 cb ERR_STREAM_WRITE_AFTER_END",
           "t3 c0 error ERR_STREAM_WRITE_AFTER_END -", "t3 c0 close had_error=0 bytes_written=0"]
    assert model.judge(c, trace(evs, P(0, 1)), "bun-upgrade") == []
    no_late = [e for e in evs if "write#2" not in e]
    assert any("surfaced as an error" in p
               for p in model.judge(c, trace(no_late, P(0, 1)), "bun-upgrade"))
    h = Case("half_open", ("allow-half-open yes", "peer shutdown at start"),
             (Block("task", (Op("end"),)), Block("on eof", (Op("end", 1, opts=("cb",)),))))
    evs = ["t1 c0 connect", "t2 c0 end 0 -> ok", "t2 c0 finish", "t3 c0 eof",
           "t3 c0 end 1 -> ok", "t3 c0 error ERR_STREAM_WRITE_AFTER_END -",
           "t3 c0 close had_error=0 bytes_written=0", "t3 c0 end cb ERR_STREAM_WRITE_AFTER_END"]
    assert model.judge(h, trace(evs, b"")) == []
    assert any("events after close" in p
               for p in model.judge(h, trace(evs + ["t4 c0 drain"], b"")))


def test_what_a_late_call_cancels_inside_it_comes_before_its_line():
    """Bun destroys the socket inside the write after end(): write#1's
    callback fails before `write#2 1 -> false` is reported. The same
    callback error with no late call after it still fails."""
    c = Case("batching", (), (Block("task", (
        Op("write", 2, opts=("cb",)), Op("write", 1, microtask=True), Op("end"))),),
        Faults(clamp=1))
    evs = ["t1 c0 connect", "t2 c0 write#1 2 -> true", "t2 c0 end 0 -> ok",
           "t2 c0 write#1 cb ERR_SOCKET_CLOSED", "t2 c0 write#2 1 -> false",
           "t2 c0 error ERR_STREAM_WRITE_AFTER_END -", "t3 c0 close had_error=1 bytes_written=0"]
    assert model.judge(c, trace(evs, P(0, 1)), "bun") == []
    evs[3], evs[4] = evs[4], evs[3]
    assert model.judge(c, trace(evs, P(0, 1)), "bun") == []
    early = ["t1 c0 connect", "t2 c0 write#1 2 -> true", "t2 c0 write#1 cb ERR_SOCKET_CLOSED",
             "t2 c0 end 0 -> ok", "t2 c0 write#2 1 -> false",
             "t3 c0 close had_error=1 bytes_written=0"]
    assert any("surfaced as an error" in p
               for p in model.judge(c, trace(early, P(0, 1)), "bun"))
