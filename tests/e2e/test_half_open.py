"""Half-open connections (oven-sh/bun "usockets: dispatch on_end before the poll change"): the per-connection figure and
its independent cross-check by strace.

per-connection.wcs: every peer sends a request, reads the 1 KiB reply, then
sends its FIN. The figure is (count at N=300 - count at N=100) / 200.
"""
import json
import re
import shutil

import pytest

from conftest import REPO
from test_run import trace_of

SCENARIO = REPO / "scenarios" / "half-open" / "per-connection.wcs"
FROM, TO = 100, 300


def per_connection(wc, variant):
    proc = wc("per-connection", SCENARIO, "--from", FROM, "--to", TO,
              "--variant", f"halfopen={variant}")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_fixed_makes_no_poll_change_per_peer_closed_connection(wc):
    fixed = per_connection(wc, "end-first")
    legacy = per_connection(wc, "poll-first")
    assert fixed["per_connection"]["epoll_ctl.mod"] == 0.0
    assert legacy["per_connection"]["epoll_ctl.mod"] >= 1.0
    # Every other count is the same on both strategies.
    for kind, value in fixed["per_connection"].items():
        if kind in ("epoll_ctl.mod", "epoll_ctl"):
            continue
        assert legacy["per_connection"][kind] == value, kind
    # The seed's other figures: ADD 1, DEL 1, send 1, recv 2, shutdown 1.
    pc = fixed["per_connection"]
    assert (pc["epoll_ctl.add"], pc["epoll_ctl.del"], pc["send"], pc["recv"],
            pc["shutdown"]) == (1.0, 1.0, 1.0, 2.0, 1.0)


def test_per_connection_rejects_bad_ranges(wc):
    proc = wc("per-connection", SCENARIO, "--from", 300, "--to", 100)
    assert proc.returncode == 2
    assert "N1 < N2" in proc.stderr
    proc = wc("per-connection", SCENARIO, "--from", 0, "--to", 100)
    assert proc.returncode == 2
    assert "--from '0'" in proc.stderr


def strace_counts(path):
    """syscall name -> calls, from `strace -c`'s table."""
    counts = {}
    for line in path.read_text().splitlines():
        m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)$", line)
        if m:
            counts[m.group(2)] = int(m.group(1))
    return counts


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
@pytest.mark.parametrize("variant", ["end-first", "poll-first"])
def test_gate_counts_agree_with_strace(wc, tmp_path, variant):
    """The gate's per-connection counts equal strace's for the same runs.
    glibc's send() and recv() are the sendto and recvfrom syscalls."""
    ours, theirs = {}, {}
    for n in (FROM, TO):
        out = tmp_path / f"strace.{n}"
        t = trace_of(wc("run", SCENARIO, "--connections", n, "--strace", out,
                        "--variant", f"halfopen={variant}"))
        assert t["exit"]["code"] == 0
        ours[n] = t["syscalls"]
        theirs[n] = strace_counts(out)

    def figure(counts, key):
        return (counts[TO].get(key, 0) - counts[FROM].get(key, 0)) / (TO - FROM)

    pairs = {"send": "sendto", "recv": "recvfrom", "epoll_ctl": "epoll_ctl",
             "shutdown": "shutdown", "accept": "accept4"}
    for mine, sys_name in pairs.items():
        assert figure(ours, mine) == figure(theirs, sys_name), (mine, sys_name)
    assert figure(ours, "epoll_ctl") == (2.0 if variant == "end-first" else 3.0)


def test_strace_and_valgrind_do_not_go_together(wc, tmp_path):
    proc = wc("run", SCENARIO, "--strace", tmp_path / "s", "--valgrind")
    assert proc.returncode == 2
    assert "--strace and --valgrind" in proc.stderr


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_strace_sends_an_external_signal_to_the_subject(wc, tmp_path):
    # The harness sent `signal ... external` to its child, strace, instead
    # of the subject: the run timed out and the strace file was empty.
    out = tmp_path / "strace.txt"
    path = REPO / "scenarios" / "batching" / "signal-external.wcs"
    proc = wc("run", path, "--strace", out, "--timeout", 20)
    assert proc.returncode == 0, proc.stderr
    t = json.loads(proc.stdout)
    assert t["exit"]["signal"] == "SIGTERM" and t["exit"]["timed_out"] is False
    assert "t2 c0 signal SIGTERM external" in t["events"]
    assert "total" in out.read_text()


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
@pytest.mark.parametrize("signal", [None, "SIGTERM@send:2"])
def test_gate_counts_agree_with_strace_when_a_signal_ends_a_send(wc, tmp_path, signal):
    """A send the signal rule ended in raise() never reached the kernel:
    the gate does not count it (it counted it before), as strace does not.
    The run without a signal is the reference: 5 connections, 5 sends."""
    out = tmp_path / "strace.txt"
    args = ["--signal", signal] if signal else []
    t = trace_of(wc("run", SCENARIO, "--connections", 5, "--strace", out, *args))
    theirs = strace_counts(out)
    assert t["syscalls"]["send"] == theirs.get("sendto", 0) == (1 if signal else 5)
    assert t["syscalls"]["recv"] == theirs.get("recvfrom", 0)
    if signal:
        assert t["exit"]["signal"] == "SIGTERM"
        assert t["fired"]["total"] == 1
