"""Bounds on what the goldens do not compare (docs/mutants.md).

A golden holds only what is deterministic, so how often the loop slept
(epoll_wait) and how often the kernel refused bytes (EAGAIN) stay out of it.
A busy loop, or a gate that stops counting EAGAIN apart, changes only those:
these tests bound them on a run where they are large and known.

bounds/paused-while-other-drains.bound: connection 0 is paused and ended with
the peer's bytes and FIN waiting (epoll reports it at every wait, level-
triggered, unless the stack takes it out of epoll), while connection 1 sends
8 MiB to a peer with a 4 KiB receive buffer, so the loop sleeps until
connection 1 is writable again, many times. Each wait of a loop that does not
spin ends with a send on connection 1 (taken, or refused with EAGAIN) or a
task, so epoll_wait is bounded by the sends, the refusals and the tasks; a
spinning loop made 41,000 to 62,000 waits in this run where the stack makes
about 12 (scripts/mutants.py hangup-spins pause-keeps-reading).
"""
import json
import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
WIRECHECK = pathlib.Path(os.environ.get("WIRECHECK_BIN") or REPO / "build" / "bin" / "wirecheck")
SCENARIO = pathlib.Path(__file__).resolve().parent / "bounds" / "paused-while-other-drains.bound"
# Slack for the waits that end with no send: the connects, the tasks, the
# peer's FIN and bytes; the spin is four orders of magnitude above it.
SLACK = 50


@pytest.fixture(scope="module")
def trace():
    if not (WIRECHECK.is_file() and os.access(WIRECHECK, os.X_OK)):
        pytest.skip(f"no wirecheck binary at {WIRECHECK} (build it, or set WIRECHECK_BIN)")
    out = subprocess.run([str(WIRECHECK), "run", str(SCENARIO)], capture_output=True,
                         text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_run_completes(trace):
    assert trace["exit"] == {"code": 0, "timed_out": False}
    assert [p["bytes"] for p in trace["peer"]] == [0, 8 << 20]


def test_epoll_wait_bounded_by_progress(trace):
    timing = trace["syscalls_timing"]
    calls = trace["syscalls"]
    progress = (calls["send"] + calls["sendmsg"] + calls["recv"]
                + timing.get("send.wouldblock", 0) + timing.get("sendmsg.wouldblock", 0))
    assert timing["epoll_wait"] <= 2 * progress + SLACK, (timing, calls)


@pytest.mark.skip(reason="depends on timing: the kernel refuses a send only when the "
                         "peer reads slower than the stack sends (CI saw 0 refusals); "
                         "to be rebuilt on an injected refusal")
def test_eagain_counted_apart(trace):
    # 8 MiB to a 4 KiB receive buffer: the kernel refuses some send. The
    # gate counts those calls as wouldblock, apart from the syscalls the
    # golden compares; a gate that stopped doing so shows 0 here.
    timing = trace["syscalls_timing"]
    assert timing.get("send.wouldblock", 0) + timing.get("sendmsg.wouldblock", 0) >= 1, timing


def test_fired_log_one_entry_per_call():
    # The same run under a 64 KiB clamp: every send of connection 1 asks
    # for more than 64 KiB until the last, so the clamp applies to nearly
    # every call, the refused ones (EAGAIN) included. A refused call moved
    # nothing and is not logged: each logged call has an index of its own,
    # and there are at most as many as the calls the kernel answered.
    if not (WIRECHECK.is_file() and os.access(WIRECHECK, os.X_OK)):
        pytest.skip(f"no wirecheck binary at {WIRECHECK}")
    out = subprocess.run([str(WIRECHECK), "run", "--clamp-send", "65536", str(SCENARIO)],
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    t = json.loads(out.stdout)
    fired = [(c["fd"], c["call"], c["index"]) for c in t["fired"]["calls"]]
    assert fired, "the clamp fired on no call"
    assert len(set(fired)) == len(fired), fired
    assert len(fired) <= t["syscalls"]["send"] + t["syscalls"]["sendmsg"], t["syscalls"]


FIN_WHILE_DRAINING = pathlib.Path(__file__).resolve().parent / "bounds" / "fin-while-queue-drains.bound"


def test_fin_with_queued_bytes_does_not_spin():
    # The peer's FIN arrives while 8 MiB wait for a 4 KiB receive buffer.
    # A socket that keeps EPOLLIN after it read the FIN is woken by that
    # FIN at every wait until it is writable again: with
    # halfopen-quiet-drops-queue (the poll is left alone when bytes are
    # queued) 1,659 to 4,566 waits in 6 of 6 runs, one run in 3 more
    # escaping (the FIN came in the same wait as a writable event); the
    # stack makes 7 to 9. Three runs, each bounded as above.
    if not (WIRECHECK.is_file() and os.access(WIRECHECK, os.X_OK)):
        pytest.skip(f"no wirecheck binary at {WIRECHECK}")
    for _ in range(3):
        out = subprocess.run([str(WIRECHECK), "run", str(FIN_WHILE_DRAINING)],
                             capture_output=True, text=True, timeout=180)
        assert out.returncode == 0, out.stderr
        t = json.loads(out.stdout)
        assert t["exit"] == {"code": 0, "timed_out": False}
        assert t["peer"]["bytes"] == 8 << 20
        timing, calls = t["syscalls_timing"], t["syscalls"]
        progress = (calls["send"] + calls["sendmsg"] + calls["recv"]
                    + timing.get("send.wouldblock", 0) + timing.get("sendmsg.wouldblock", 0))
        assert timing["epoll_wait"] <= 2 * progress + SLACK, (timing, calls)
