"""What `wirecheck exec` counts when one call has several rules, checked
against strace where it can see the calls: a send a signal rule ended
before the kernel saw it is neither in `syscalls` nor in the clamp's
`fired`; a send whose signal was handled is in both; a clamp does not count
the sends another rule refused (docs/cli.md, `rules` and `syscalls`).

SENDS writes 100 bytes at a time on a non-blocking unix socketpair and
prints what the peer end received after each send: glibc's send() is the
sendto syscall."""
import re
import shutil

import pytest

from exec_helpers import PYTHON, report, script

SENDS = """
import signal, socket, sys
if len(sys.argv) > 2:
    signal.signal(signal.SIGUSR1, lambda *_: None)
a, b = socket.socketpair()
a.setblocking(False)
b.setblocking(False)
for i in range(int(sys.argv[1])):
    try:
        a.send(b"x" * 100)
    except BlockingIOError:
        pass
    try:
        while True:
            print(f"got {len(b.recv(4096))}", flush=True)
    except BlockingIOError:
        pass
"""


def received(stdout):
    return sum(int(n) for n in re.findall(r"^got (\d+)$", stdout, re.M))


def run(wc, tmp_path, flags, args, rc, strace=False):
    """exec's report and the program's output; under strace, also the
    sendto calls strace saw the program make."""
    prog = script(tmp_path, "sends.py", SENDS)
    if not strace:
        rep, proc = report(wc, tmp_path, *flags, [PYTHON, prog, *args], rc=rc)
        return rep, proc.stdout, None
    out = tmp_path / "strace.txt"
    rep, proc = report(wc, tmp_path, *flags,
                       [shutil.which("strace"), "-f", "-qq", "-o", out,
                        "-e", "trace=sendto", PYTHON, prog, *args], rc=rc)
    return rep, proc.stdout, len(re.findall(r"^\d+\s+sendto\(", out.read_text(), re.M))


def clamp_fired(rep):
    (fired,) = [r["fired"] for r in rep["rules"] if "short=" in r["rule"]]
    return fired


def test_a_send_the_signal_ended_is_not_counted(wc, tmp_path, preload):
    rep, out, _ = run(wc, tmp_path, ["--clamp-send", 7, "--signal", "SIGTERM@send:5"],
                      [20], rc=143)
    assert rep["exit"]["signal"] == "SIGTERM"
    # 4 sends of 7 bytes reached the peer; the process died in raise()
    # before the 5th reached the kernel or the clamp.
    assert received(out) == 28
    counts = rep["counts"]
    assert counts["syscalls"]["send"] == 4
    assert clamp_fired(rep) == 4
    assert counts["injected"] == {"send": 4}
    # The signal's entry names the 5th send on the fd.
    sig = counts["fired"][-1]
    assert (sig["action"], sig["call"], sig["index"], sig["offset"]) == \
        ("signal=SIGTERM", "send", 5, 28)


def test_a_send_whose_signal_was_handled_is_counted(wc, tmp_path, preload):
    rep, out, _ = run(wc, tmp_path, ["--clamp-send", 7, "--signal", "SIGUSR1@send:5"],
                      [20, "handle"], rc=0)
    assert received(out) == 20 * 7
    assert rep["counts"]["syscalls"]["send"] == 20
    assert clamp_fired(rep) == 20


def test_a_clamp_does_not_count_the_sends_another_rule_refused(wc, tmp_path, preload):
    rep, out, _ = run(wc, tmp_path, ["--clamp-send", 7, "--refuse-write", "EAGAIN@2x3"],
                      [18], rc=0)
    counts = rep["counts"]
    assert received(out) == 15 * 7
    assert counts["syscalls"]["send"] == 15
    assert counts["refused"] == {"send": 3}
    assert clamp_fired(rep) == 15
    assert counts["injected"] == {"send": 18} and counts["fired_total"] == 18


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
@pytest.mark.parametrize("flags,args,rc,sends", [
    (["--clamp-send", 7, "--signal", "SIGTERM@send:5"], [20], 143, 4),
    (["--clamp-send", 7, "--signal", "SIGUSR1@send:5"], [20, "handle"], 0, 20),
    (["--clamp-send", 7, "--refuse-write", "EAGAIN@2x3"], [18], 0, 15),
], ids=["signal-ends", "signal-handled", "refused"])
def test_sends_agree_with_strace(wc, tmp_path, preload, flags, args, rc, sends):
    """strace runs under exec and traces the program (the library is
    preloaded into strace too, which makes no sendto of its own)."""
    rep, _, theirs = run(wc, tmp_path, flags, args, rc, strace=True)
    (counts,) = [c for c in [rep["counts"], *rep["children"]]
                 if c["syscalls"].get("send")]
    assert counts["syscalls"]["send"] == theirs == sends
