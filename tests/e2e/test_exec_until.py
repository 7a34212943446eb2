"""`wirecheck exec --until` when the program ends first, and in a terminal
(harness/exec.c): COMMAND is ended once the program and what it left have
ended, holds the terminal while it runs, and gives it back on every way
out; and --stop-after once the program is gone. Split from test_exec.py,
which holds the rest of exec's tests."""
import json
import os

import pytest

from exec_helpers import PYTHON, STUCK_ORPHAN, report, script


# --- `until` when the program ends first --------------------------------------
# The first version waited for COMMAND whatever happened: a client left
# retrying a server that crashed at start held the run until --timeout.
# Each run below has --timeout 600, so that version hangs past the e2e
# fixture's 180 s subprocess timeout and fails instead; none of them waits
# on time to pass the test.

@pytest.mark.parametrize("command,signal", [
    ("sleep 1000", "SIGTERM"),
    # The shell waits for sleep: the whole group is ended, not the shell
    # alone (sleep would be left for the SIGKILL 5 s later).
    ("sleep 1000; exit 0", "SIGTERM"),
    # Opening a FIFO nobody writes blocks the shell itself.
    ("cat < {fifo}", "SIGTERM"),
    # The shell and sleep (which inherits it) ignore SIGTERM: SIGKILL
    # follows, after the grace (5 s; the test does not time it).
    ("trap '' TERM; sleep 1000; exit 0", "SIGKILL"),
])
def test_until_is_ended_when_the_program_ended_first(wc, tmp_path, preload, command, signal):
    fifo = tmp_path / "never"
    os.mkfifo(fifo)
    command = command.format(fifo=fifo)
    # The program exits 3 at once: a server that crashed at start. exec
    # passes its status on, since it ended by itself.
    rep, _ = report(wc, tmp_path, "--timeout", 600, "--until", command,
                    [PYTHON, "-c", "raise SystemExit(3)"], rc=3)
    assert rep["exit"] == {"code": 3, "timed_out": False}
    assert rep["until"] == {"command": command, "signal": signal, "core": False,
                            "ended_by": "program-ended", "ended_with": signal}


def test_what_until_left_is_ended_once_the_program_stopped(wc, tmp_path, preload):
    # COMMAND ends first (exit 4), leaving sleep in its process group: the
    # stop signal ends the program, then exec ends what COMMAND left. The
    # status is COMMAND's own, since it ended by itself; SIGTERM at its
    # default action ends the program whenever it comes.
    command = "sleep 1000 & exit 4"
    rep, _ = report(wc, tmp_path, "--timeout", 600, "--until", command,
                    [PYTHON, "-c", "import time; time.sleep(1000)"], rc=4)
    assert rep["exit"] == {"signal": "SIGTERM", "core": False, "timed_out": False,
                           "stopped": {"signal": "SIGTERM", "by": "until"}}
    assert rep["until"] == {"command": command, "code": 4,
                            "ended_by": "program-ended", "ended_with": "SIGTERM"}


def test_until_in_a_terminal_is_ended_too(wirecheck, tmp_path, preload):
    # In the foreground of a terminal the program stays in exec's process
    # group; COMMAND leads its own, which holds the terminal while COMMAND
    # runs (test_until_reads_the_terminal): `read line` waits for a line
    # nobody types. The program ends first: exec ends COMMAND with SIGTERM
    # and takes the terminal back. (When COMMAND read the terminal from the
    # background, it was stopped there, and this test guarded the SIGCONT
    # beside the SIGTERM; COMMAND is not stopped now, and the result is the
    # same.) Here exec is the session's leader, as under `script -c`.
    import pty
    import select
    import signal
    out = tmp_path / "report.json"
    pid, master = pty.fork()
    if pid == 0:  # a session leader, the terminal's foreground group
        try:
            os.execv(str(wirecheck), [str(wirecheck), "exec", "--timeout", "600",
                                      "--output", str(out), "--until", "read line",
                                      "--", PYTHON, "-c", "raise SystemExit(3)"])
        finally:
            os._exit(127)
    try:
        # Read the terminal until exec closes it (EIO); the select timeout
        # is a safety net only: a hang fails the test.
        while select.select([master], [], [], 120)[0]:
            try:
                if not os.read(master, 4096):
                    break
            except OSError:
                break
        else:
            pytest.fail("exec did not end")
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(master)
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
    assert os.waitstatus_to_exitcode(status) == 3
    rep = json.loads(out.read_text())
    assert rep["exit"] == {"code": 3, "timed_out": False}
    assert rep["until"] == {"command": "read line", "signal": "SIGTERM", "core": False,
                            "ended_by": "program-ended", "ended_with": "SIGTERM"}


# --- `until` holds the terminal -----------------------------------------------
# In the foreground of a terminal, COMMAND's process group is the terminal's
# foreground group while COMMAND runs: `--until 'read _'` ends when Enter is
# pressed, and Ctrl-C ends COMMAND. Each run is in a new terminal (a pty)
# whose session leader runs exec as a shell runs a job: in a process group
# of its own, made the foreground one, and waited for with WUNTRACED; a
# job that stops is put in the foreground again and continued (`fg`,
# "[fg]" on the terminal), three times at most, and the terminal's
# foreground group at each stop is kept ("at_stops"). --timeout is 600:
# a run that does not end fails by the helper's timeout instead.

TERMINAL_SHELL = r"""
import json, os, signal, sys
out, argv = sys.argv[1], sys.argv[2:]
signal.signal(signal.SIGTTOU, signal.SIG_IGN)  # tcsetpgrp from the background
pid = os.fork()
if pid == 0:
    os.setpgid(0, 0)
    os.tcsetpgrp(0, os.getpgrp())
    signal.signal(signal.SIGTTOU, signal.SIG_DFL)
    os.execv(argv[0], argv)
try:
    os.setpgid(pid, pid)  # also from here, as shells do
except PermissionError:
    pass  # the child has exec'd: it did it itself
os.tcsetpgrp(0, pid)
at_stops = []
while True:
    _, status = os.waitpid(pid, os.WUNTRACED)
    if not os.WIFSTOPPED(status):
        break
    at_stops.append(os.tcgetpgrp(0))
    if len(at_stops) == 3:  # it keeps stopping: enough
        os.killpg(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        break
    os.tcsetpgrp(0, pid)  # fg
    os.killpg(pid, signal.SIGCONT)
    os.write(1, b"[fg]\n")
with open(out, "w") as f:
    json.dump({"job": pid, "after": os.tcgetpgrp(0), "at_stops": at_stops,
               "rc": None if os.WIFSTOPPED(status) else os.waitstatus_to_exitcode(status)}, f)
"""


def in_a_terminal(wirecheck, tmp_path, args, steps=(), limit=120):
    """Runs `wirecheck exec ARGS` as a job of a shell in a new terminal.
    steps: (shown, keys, ready) triples: once the terminal has shown the
    bytes `shown` and ready(shown text) is true, `keys` are typed. Returns
    what the shell saw ("rc", "at_stops", "job": exec's process group,
    "after": the terminal's foreground group once exec returned) and what
    the terminal showed. Fails when the terminal is not closed within
    `limit` seconds (a safety net: a run that ends takes well under one)."""
    import pty
    import select
    import signal
    import subprocess
    import time
    seen = tmp_path / "shell.json"
    pid, master = pty.fork()
    if pid == 0:  # a session leader: the shell
        try:
            os.execv(PYTHON, [PYTHON, "-c", TERMINAL_SHELL, str(seen), str(wirecheck),
                              "exec", *map(str, args)])
        finally:
            os._exit(127)
    shown, steps = b"", list(steps)
    end = time.monotonic() + limit
    try:
        while True:
            while steps and steps[0][0] in shown and steps[0][2](shown):
                os.write(master, steps.pop(0)[1])
            # A step waiting on something else than output looks again
            # every 50 ms; otherwise the wait is for output.
            wait = 0.05 if steps and steps[0][0] in shown else end - time.monotonic()
            if time.monotonic() >= end:
                raise subprocess.TimeoutExpired(["wirecheck", "exec", *map(str, args)], limit,
                                                output=shown)
            if not select.select([master], [], [], max(wait, 0))[0]:
                continue
            try:
                got = os.read(master, 4096)
            except OSError:  # EIO: the session ended, the terminal is closed
                break
            if not got:
                break
            shown += got
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(master)
        try:  # the shell: the terminal's hangup then ends its job
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
    assert os.waitstatus_to_exitcode(status) == 0, shown
    return json.loads(seen.read_text()), shown.decode(errors="replace")


def now(shown):
    return True


SLEEPS = [PYTHON, "-c", "import time; time.sleep(1000)"]
# The program's exit once exec stopped it with SIGTERM after COMMAND ended.
STOPPED_BY_UNTIL = {"signal": "SIGTERM", "core": False, "timed_out": False,
                    "stopped": {"signal": "SIGTERM", "by": "until"}}


def until_in_a_terminal(wirecheck, tmp_path, command, steps=(), program=SLEEPS, timeout=600):
    """in_a_terminal for `exec --until COMMAND -- PROGRAM`: returns what the
    shell saw, what the terminal showed, and the report. Checks that the
    terminal was the job's again once exec returned: the shell's next
    command gets it."""
    out = tmp_path / "report.json"
    seen, shown = in_a_terminal(wirecheck, tmp_path, [
        "--timeout", timeout, "--output", out, "--until", command, "--", *program], steps)
    assert seen["after"] == seen["job"], shown
    return seen, shown, json.loads(out.read_text())


def test_until_reads_the_terminal(wirecheck, tmp_path, preload):
    # `--until 'read line'`: the line typed goes to COMMAND, which ends
    # with 0 (it got "hello"); exec then stops the program as usual. The
    # line is typed at once: the terminal keeps it until COMMAND reads it,
    # and nothing else reads the terminal. Before, COMMAND read it from a
    # background group and was stopped (SIGTTIN): the run hung.
    command = 'read line && [ "$line" = hello ]'
    seen, shown, rep = until_in_a_terminal(wirecheck, tmp_path, command,
                                           [(b"", b"hello\n", now)])
    assert seen["at_stops"] == [] and seen["rc"] == 0, shown
    assert rep["exit"] == STOPPED_BY_UNTIL
    assert rep["until"] == {"command": command, "code": 0}


def test_ctrl_c_ends_until_and_then_the_program(wirecheck, tmp_path, preload):
    # Ctrl-C while COMMAND holds the terminal goes to COMMAND's group: sh
    # dies of SIGINT, and exec stops the program with its stop signal (the
    # program, in exec's group, got no SIGINT). "holding" is written once
    # COMMAND runs, which is after its group got the terminal.
    command = "echo holding; read line"
    seen, shown, rep = until_in_a_terminal(wirecheck, tmp_path, command,
                                           [(b"holding", b"\x03", now)])
    # exec's status is COMMAND's, as when the stop signal ended the program.
    assert seen["at_stops"] == [] and seen["rc"] == 128 + 2, shown
    assert rep["exit"] == STOPPED_BY_UNTIL
    assert rep["until"] == {"command": command, "signal": "SIGINT", "core": False}


def test_the_timeout_gives_the_terminal_back(wirecheck, tmp_path, preload):
    # Nobody types: the timeout kills COMMAND (holding the terminal) and
    # the program; the shell has the terminal back all the same. The
    # short timeout only picks the way out; nothing is timed.
    seen, shown, rep = until_in_a_terminal(wirecheck, tmp_path, "read line", timeout="0.5")
    assert seen["at_stops"] == [] and seen["rc"] == 124, shown
    assert rep["exit"]["timed_out"] is True
    assert rep["until"] == {"command": "read line", "signal": "SIGKILL", "core": False}


def test_ctrl_z_stops_the_run_and_fg_goes_on(wirecheck, tmp_path, preload):
    # Ctrl-Z while COMMAND holds the terminal stops COMMAND's group alone:
    # exec takes the terminal back and stops its own group (itself and the
    # program), so that the shell sees its job stopped, the terminal in the
    # job's group, as with a job that has no --until. At fg, exec gives the
    # terminal to COMMAND again, which reads the line typed then. Without
    # this, the stopped COMMAND kept the terminal and the shell saw nothing;
    # Ctrl-C did not help (sh -c catches SIGINT, which waits for a SIGCONT
    # nobody sends): the run hung until the timeout.
    command = 'echo holding; read line && [ "$line" = hello ]'
    seen, shown, rep = until_in_a_terminal(wirecheck, tmp_path, command, [
        (b"holding", b"\x1a", now), (b"[fg]", b"hello\n", now)])
    assert seen["at_stops"] == [seen["job"]] and seen["rc"] == 0, shown
    assert rep["exit"] == STOPPED_BY_UNTIL
    assert rep["until"] == {"command": command, "code": 0}


READS_THE_TERMINAL = """
import os, signal, sys
def stop(*_):
    print("stopped cleanly", flush=True)
    raise SystemExit(0)
signal.signal(signal.SIGTERM, stop)
# Read only once COMMAND holds the terminal: from the background.
while os.tcgetpgrp(0) == os.getpgrp():
    pass
print(f"reading {os.getpid()}", flush=True)
sys.stdin.readline()
"""


def stopped_program(shown):
    # The program printed its pid; its state in /proc is T once SIGTTIN
    # stopped it (the helper looks again every 50 ms).
    import re
    m = re.search(rb"reading (\d+)\r?\n", shown)
    if m is None:  # the line is not all there yet
        return False
    try:
        with open(f"/proc/{int(m[1])}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "T"
    except FileNotFoundError:
        return False


def test_a_program_stopped_reading_the_terminal_goes_on(wirecheck, tmp_path, preload):
    # The program reads the terminal while COMMAND holds it: SIGTTIN stops
    # it (exec, in its group, ignores SIGTTIN meanwhile, so the shell does
    # not see its job stopped). Once COMMAND has read its line, exec gives
    # the terminal back and continues its group, as `fg` does: the program
    # takes the stop signal in its handler. Without the SIGCONT it stayed
    # stopped, its SIGTERM pending, until the timeout.
    seen, shown, rep = until_in_a_terminal(
        wirecheck, tmp_path, "read line", [(b"reading", b"go\n", stopped_program)],
        program=[PYTHON, "-c", READS_THE_TERMINAL])
    assert seen["at_stops"] == [] and seen["rc"] == 0, shown
    assert "stopped cleanly" in shown
    assert rep["exit"] == {"code": 0, "timed_out": False,
                           "stopped": {"signal": "SIGTERM", "by": "until"}}
    assert rep["until"] == {"command": "read line", "code": 0}


DAEMON = """
import os, sys
up, go = sys.argv[1:]
r, w = os.pipe()
if os.fork() == 0:
    os.close(w)
    os.setsid()  # a daemon: out of the program's process group
    os.read(r, 1)  # end of file: the program has exited
    with open(up, "w") as f:  # blocks until the client opens the FIFO
        f.write("up\\n")
    with open(go) as f:
        assert f.read() == "go\\n"
    raise SystemExit(0)  # exit(): its counts say it ran to its end
"""


def test_until_is_not_ended_while_a_daemon_serves(wc, tmp_path, preload):
    # The program forks and exits at once; its child (setsid, so not in
    # the program's group) serves on once the program has exited. COMMAND
    # talks to it and ends first: had exec taken the program for ended, it
    # would have ended COMMAND while it waited for "up", and the child
    # would have blocked for ever.
    prog = script(tmp_path, "daemon.py", DAEMON)
    up, go = tmp_path / "up", tmp_path / "go"
    os.mkfifo(up)
    os.mkfifo(go)
    command = f'read line < {up} && [ "$line" = up ] && echo go > {go}'
    rep, _ = report(wc, tmp_path, "--timeout", 600, "--until", command,
                    [PYTHON, prog, up, go])
    # The program exited 0 before COMMAND ended (its pipe's end of file
    # comes at its exit; exec may reap it a moment after COMMAND, and
    # then sends it the stop signal: the status is 0 either way).
    assert rep["exit"]["timed_out"] is False and "others_killed" not in rep["exit"]
    assert rep["until"] == {"command": command, "code": 0}
    # Everything was reaped: the daemon ran to its end, before the report.
    [child] = rep["children"]
    assert child["exited"] is True and child["pid"] != rep["counts"]["pid"]


def test_stop_after_past_with_the_program_gone(wc, tmp_path, preload):
    # The program exits at once, leaving a child that never ends; the stop
    # signal's time then passes with nobody to send it to. The first
    # version slept for the negative time left until it: sigtimedwait
    # refused it (EINVAL) and exec failed with 3. The stop signal is
    # SIGCONT, which ends nobody: a program slow to start under load (past
    # the 0.5 s) still forks its child and exits by itself, so the outcome
    # does not depend on which comes first.
    prog = script(tmp_path, "stuck.py", STUCK_ORPHAN)
    rep, proc = report(wc, tmp_path, "--stop-after", "0.5", "--stop-signal", "SIGCONT",
                       "--timeout", 3, [PYTHON, prog])
    assert "sigtimedwait" not in proc.stderr
    assert rep["exit"]["others_killed"] is True and rep["exit"]["timed_out"] is False


@pytest.mark.parametrize("args,message", [
    (["--stop-signal", "SIGBOGUS", "--", "true"], "--stop-signal 'SIGBOGUS'"),
    (["--stop-after", "-1", "--", "true"], "--stop-after '-1'"),
    (["--stop-after", "x", "--", "true"], "--stop-after 'x'"),
])
def test_bad_stop_flags(wc, preload, args, message):
    proc = wc("exec", *args)
    assert proc.returncode == 2 and message in proc.stderr
