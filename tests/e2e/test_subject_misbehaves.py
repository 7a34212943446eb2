"""A foreign subject that misbehaves (docs/subjects.md, docs/subject-protocol.md):
what it prints, a program that cannot be started, lines that break the
protocol, a gate that never attached. Each is reported, naming the subject,
never turned silently into a trace that looks real.

The subjects are small scripts written into the test's directory; the
scenario is the client role (the subject connects to the peer)."""
import json
import os

from exec_helpers import PYTHON, script

SCENARIO = 'behaviour queue\ntask\n  write "hello" cb\n  end cb\n'

# Reads the script up to "run"; out(b"...") writes one line on fd 4.
READ_SCRIPT = f"""#!{PYTHON}
import os, socket, sys
d = b""
while not d.endswith(b"run\\n"):
    b = os.read(3, 65536)
    if not b:
        sys.exit(9)
    d += b
def out(b):
    os.write(4, b + b"\\n")
"""
# The same, then connects to the peer; a subject body follows.
PROLOGUE = READ_SCRIPT + """line = [l for l in d.decode().split("\\n") if l.startswith("connect ")][0].split()
s = socket.create_connection((line[2], int(line[3])))
"""


def subject(tmp_path, body, name="subject.py"):
    p = script(tmp_path, name, PROLOGUE + body)
    p.chmod(0o755)
    return p


def scenario(tmp_path, text=SCENARIO, name="s.wcs"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_what_the_subject_prints_goes_to_stderr(wc, tmp_path):
    """A subject's print() must not land in wirecheck's stdout, the trace:
    the JSON would not parse (the pytest plugin dies with JSONDecodeError).
    Where it does land, stdout starts with the subject's text."""
    subj = subject(tmp_path, 'print("hello from my stack", flush=True)\n'
                             'out(b"ev 1 0 connect")\n')
    proc = wc("run", scenario(tmp_path), "--subject", subj)
    assert proc.returncode == 0, proc.stderr
    trace = json.loads(proc.stdout)
    assert trace["events"] == ["t1 c0 connect"]
    assert "hello from my stack" in proc.stderr
    assert "hello from my stack" not in proc.stdout


# ---- a subject that cannot be executed ------------------------------------
# On the code before, each of these ran (or failed in execvp after fork) and
# ended with exit 0, "exit": {"code": 127} and a warning that the subject
# wrote nothing on its event pipe.

def assert_refused(proc, *texts):
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stdout == ""
    assert "wrote nothing on its event pipe" not in proc.stderr
    for t in texts:
        assert t in proc.stderr, proc.stderr


def test_a_directory_is_not_a_subject(wc, tmp_path):
    (tmp_path / "stack").mkdir()
    proc = wc("run", scenario(tmp_path), "--subject", tmp_path / "stack")
    assert_refused(proc, f"the subject {tmp_path / 'stack'} is not an executable file: "
                         "Is a directory")


def test_a_bare_name_is_the_file_in_the_current_directory(wc, tmp_path):
    """execvp looked a name without a slash up in PATH: `--subject
    mysubj.py` beside the user was not found (exit 127), and `--subject
    true` ran /bin/true."""
    subject(tmp_path, 'out(b"ev 1 0 connect")\n', name="mysubj.py")
    proc = wc("run", scenario(tmp_path), "--subject", "mysubj.py")  # cwd is tmp_path
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["events"] == ["t1 c0 connect"]
    proc = wc("run", scenario(tmp_path), "--subject", "true")
    assert_refused(proc, "the subject ./true is not an executable file: No such file or "
                         "directory", "never one found through PATH")


def test_a_crlf_interpreter_line_is_named(wc, tmp_path):
    p = tmp_path / "crlf.py"
    p.write_bytes(f"#!{PYTHON}\r\nprint(1)\r\n".encode())
    p.chmod(0o755)
    proc = wc("run", scenario(tmp_path), "--subject", p)
    assert_refused(proc, f"the subject {p} cannot be executed: No such file or directory: "
                         f"its #! line names the interpreter '{PYTHON}\\r', with a CR")


def test_a_missing_interpreter_is_named(wc, tmp_path):
    p = script(tmp_path, "typo.py", "#!/usr/bin/pyhton3\nprint(1)\n")
    p.chmod(0o755)
    proc = wc("run", scenario(tmp_path), "--subject", p)
    assert_refused(proc, f"the subject {p} cannot be executed: No such file or directory: "
                         "its #! line names the interpreter '/usr/bin/pyhton3', which does "
                         "not exist")


def test_a_script_without_an_interpreter_line_is_refused(wc, tmp_path):
    """execvp ran it under /bin/sh ("import: not found")."""
    p = script(tmp_path, "nobang.py", "import os\n")
    p.chmod(0o755)
    proc = wc("run", scenario(tmp_path), "--subject", p)
    assert_refused(proc, f"the subject {p} cannot be executed: Exec format error")


# ---- lines that break the subject protocol ---------------------------------
# Each ends the run as a subject failure: exit 4, the trace written, its
# exit.error "protocol: line N `LINE`: PROBLEM", and stderr naming the
# subject. On the code before, each was taken silently (exit 0).

def broken(wc, tmp_path, body, sc=None):
    """Runs a subject whose body writes lines; returns (trace, stderr)
    after checking the run is a subject protocol failure."""
    subj = subject(tmp_path, body)
    proc = wc("run", sc or scenario(tmp_path), "--subject", subj, "--timeout", 60)
    assert proc.returncode == 4, (proc.returncode, proc.stderr)
    assert f"the subject {subj} broke the subject protocol" in proc.stderr, proc.stderr
    trace = json.loads(proc.stdout)
    assert trace["exit"]["error"].startswith("protocol: line "), trace["exit"]
    assert trace["exit"]["error"] in proc.stderr
    return trace, proc.stderr


def test_a_nul_byte_is_an_error_and_the_fatal_line_after_it_is_kept(wc, tmp_path):
    """strchr split the pipe's bytes: after one NUL every later line was
    dropped, `fatal` included; the trace had one event and no error."""
    trace, _ = broken(wc, tmp_path, 'out(b"ev 1 0 before")\n'
                                    'os.write(4, b"note a\\x00b\\nev 1 0 after\\n'
                                    'fatal my stack blew up\\n")\n'
                                    'os._exit(2)\n')
    assert trace["exit"]["error"] == ("protocol: line 2 `note a\\x00b`: a NUL byte (byte 7 of "
                                      "the line); its fatal line: my stack blew up")
    assert trace["events"] == ["t1 c0 before"]


BAD_LINES = [
    (b"hello there", "not a line of the protocol (ev, sync, kill, listening, stats, fatal or note)"),
    (b"ev x y connect", "TASK is not a number (ev TASK CONN TEXT)"),
    (b"ev 1 7 connect", "CONN is not a connection of the scenario (0 to 0; ev TASK CONN TEXT)"),
    (b"ev 1 0", "an event without a TEXT (ev TASK CONN TEXT)"),
    (b"ev 1 0x y", "CONN is not a connection of the scenario (0 to 0; ev TASK CONN TEXT)"),
    (b"ev 1 0 ", "an event without a TEXT (ev TASK CONN TEXT)"),
    (b"ev 1 0 caf\xe9", "TEXT is not UTF-8"),
    (b"sync bogus 5", "POINT is not start, done, task:N or checkpoint:N (sync POINT W0 W1 ...)"),
    (b"sync checkpoint:1 abc", "W0 is not a byte count"),
    (b"sync checkpoint:1", "too few byte counts: the scenario has 1 connection (sync POINT W0 W1 ...)"),
    (b"sync task:1 5 6", "too many byte counts: the scenario has 1 connection (sync POINT W0 W1 ...)"),
    (b"sync checkpoint:1 99999999999999999999", "W0 is not a byte count"),
    (b"kill TERM", "expected kill SIG [PID], numbers"),
    (b"stats bytes_moved=1", "expected stats bytes_moved=N allocations=M bytes_copied=C"),
    (b"listening 80", "the subject is the client in this scenario: it connects, and listens on nothing"),
    (b"fatal caf\xe9", "MESSAGE is not UTF-8 (fatal MESSAGE)"),
]


def test_each_malformed_line_is_named(wc, tmp_path):
    """One subject per line; the line comes after a good event, so that it
    is line 2. `sync bogus 5` was answered go, `sync checkpoint:1 abc`
    read as 0 bytes, `ev x y connect` became the event "tx cy connect"."""
    for i, (line, problem) in enumerate(BAD_LINES):
        d = tmp_path / f"case{i}"
        d.mkdir()
        # a subject that waits for "go" after a sync would hang: it reads fd 3
        # once, and the harness ends it
        trace, _ = broken(wc, d, f'out(b"ev 1 0 connect")\nout({line!r})\nos.read(3, 3)\n')
        shown = line.decode("latin-1").replace("\xe9", "\\xe9")
        assert trace["exit"]["error"] == f"protocol: line 2 `{shown}`: {problem}", line
        assert trace["events"] == ["t1 c0 connect"], line


def test_a_long_event_text_is_kept_whole(wc, tmp_path):
    """An ev text over 1 KiB was cut to 1023 characters, silently."""
    subj = subject(tmp_path, 'out(b"ev 1 0 " + b"y" * 3000 + b"END")\n')
    proc = wc("run", scenario(tmp_path), "--subject", subj)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["events"] == ["t1 c0 " + "y" * 3000 + "END"]


def test_an_over_long_line_is_the_subjects_error(wc, tmp_path):
    """200 KB without a newline was exit 3, a harness failure blaming the
    scenario file ("an event line longer than 65536 bytes"), no trace."""
    trace, err = broken(wc, tmp_path, 'os.write(4, b"x" * 200000 + b"\\n")\n')
    assert trace["exit"]["error"] == ("protocol: line 1 `" + "x" * 80 + "...`: a line longer "
                                      "than 65534 bytes, the most a line may have")


def test_a_last_line_without_its_newline_is_named(wc, tmp_path):
    """The bytes after the last newline were dropped silently."""
    trace, _ = broken(wc, tmp_path, 'out(b"ev 1 0 connect")\nos.write(4, b"ev 1 0 end")\n')
    assert trace["exit"]["error"] == ("protocol: line 2 `ev 1 0 end`: the subject ended "
                                      "without the line's newline")
    assert trace["events"] == ["t1 c0 connect"]


SERVER = 'behaviour queue\nrole server\ntask\n  write "hello"\n  end\n'

LISTEN_PROLOGUE = READ_SCRIPT


def test_a_bad_listening_line_is_the_subjects_error(wc, tmp_path):
    """`listening abc` was atoi'd to port 0: "peer connect: Connection
    refused", exit 3 (a harness failure), no trace, the scenario blamed."""
    sc = scenario(tmp_path, SERVER)
    for line, problem in ((b"listening abc", "PORT is not a TCP port, 1 to 65535 (listening PORT)"),
                          (b"listening 70000", "PORT is not a TCP port, 1 to 65535 (listening PORT)")):
        d = tmp_path / line.decode().replace(" ", "-")
        d.mkdir()
        subj = script(d, "server.py", LISTEN_PROLOGUE + f"out({line!r})\nos.read(3, 3)\n")
        subj.chmod(0o755)
        proc = wc("run", sc, "--subject", subj, "--timeout", 60)
        assert proc.returncode == 4, (proc.returncode, proc.stderr)
        trace = json.loads(proc.stdout)
        assert trace["exit"]["error"] == f"protocol: line 1 `{line.decode()}`: {problem}"
        assert f"the subject {subj} broke the subject protocol" in proc.stderr


def test_a_listening_port_where_nothing_listens_is_the_subjects_error(wc, tmp_path):
    """A well-formed `listening PORT` on which nothing listens was "peer
    connect: Connection refused", exit 3 (a harness failure), no trace.
    The port here is bound by the test and never listened on, so that no
    other program can take it meanwhile."""
    import socket
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    port = held.getsockname()[1]
    try:
        subj = script(tmp_path, "server.py",
                      LISTEN_PROLOGUE + f"out(b'listening {port}')\nos.read(3, 3)\n")
        subj.chmod(0o755)
        proc = wc("run", scenario(tmp_path, SERVER), "--subject", subj, "--timeout", 60)
    finally:
        held.close()
    assert proc.returncode == 4, (proc.returncode, proc.stderr)
    trace = json.loads(proc.stdout)
    assert trace["exit"]["error"] == (f"protocol: line 1 `listening {port}`: nothing listens "
                                      "there (peer connect: Connection refused)")


# ---- a gate that never attached ---------------------------------------------
# A stack not built against the gate gets its counters and faults from the
# preloaded gate (--subject-preload). Without it, the `arm SPEC` lines the
# subject writes to fd 5 landed in the counters' memfd: the trace showed
# "send": 4428290156431358565, fired 0, the faults listed, exit 0, no word.

GATE_SUBJECT = READ_SCRIPT + """lines = d.decode().split("\\n")
for l in lines:
    if l.startswith("fault "):
        os.write(5, b"arm " + l[6:].encode())  # as docs/subjects.md says
c = [l for l in lines if l.startswith("connect ")][0].split()
s = socket.create_connection((c[2], int(c[3])))
s.sendall(b"hello")
os.write(4, b"ev 1 0 connect\\n")
s.close()
"""


def gate_subject(tmp_path):
    p = script(tmp_path, "gate.py", GATE_SUBJECT)
    p.chmod(0o755)
    return p


def test_without_the_gate_the_faults_are_an_error_and_no_counters_are_shown(wc, tmp_path):
    proc = wc("run", scenario(tmp_path, "clamp-send 2\n" + SCENARIO), "--subject",
              gate_subject(tmp_path))
    assert proc.returncode == 4, (proc.returncode, proc.stderr)
    trace = json.loads(proc.stdout)
    assert "syscalls" not in trace and "fired" not in trace and "syscalls_timing" not in trace
    assert trace["faults"] == ["write:short=2,repeat=forever"]
    assert trace["exit"]["error"] == (
        "gate: the subject never attached the gate (fd 5): the scenario's 1 fault rule "
        "was not applied (a stack not built against the gate runs with --subject-preload)")
    assert (f"the subject {tmp_path / 'gate.py'} never attached the gate: its counters' memfd "
            "(fd 5) holds other bytes (`arm write:short=") in proc.stderr, proc.stderr
    assert "none of the scenario's faults was applied" in proc.stderr
    assert "--subject-preload" in proc.stderr


def test_without_the_gate_and_without_faults_the_run_warns(wc, tmp_path):
    subj = subject(tmp_path, 'out(b"ev 1 0 connect")\n')
    proc = wc("run", scenario(tmp_path), "--subject", subj, "--repeat", 2)
    assert proc.returncode == 0, proc.stderr  # --repeat: two runs without counters agree
    trace = json.loads(proc.stdout)
    assert "syscalls" not in trace and "fired" not in trace
    assert trace["events"] == ["t1 c0 connect"]
    assert (f"the subject {subj} never attached the gate: its counters' memfd (fd 5) is "
            "still all zeros, so the trace has no syscalls and no fired calls. A stack "
            "not built against the gate runs with the gate preloaded: --subject-preload"
            ) in proc.stderr, proc.stderr


def test_with_the_preloaded_gate_the_same_subject_is_counted(wc, tmp_path, preload):
    proc = wc("run", scenario(tmp_path, "clamp-send 2\n" + SCENARIO), "--subject",
              gate_subject(tmp_path), "--subject-preload")
    assert proc.returncode == 0, proc.stderr
    assert "never attached" not in proc.stderr
    trace = json.loads(proc.stdout)
    assert trace["peer"]["bytes"] == 5
    assert trace["fired"]["total"] >= 2  # "hello" went 2 bytes at a time
    assert trace["syscalls"]["connect"] == 1


def _state(pid):
    """The process's state letter, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return None


def test_a_subject_under_strace_is_killed_with_strace(wc, tmp_path):
    """Under --strace the harness's child is strace; killing it alone
    detached the subject, which ran on after the run ended (found with a
    subject that hangs; the same kill serves the timeout). Fails on the code
    before: the subject is still sleeping ('S') after wirecheck exits."""
    import shutil
    import pytest
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed (scripts/setup.sh installs it)")
    pidfile = tmp_path / "pid"
    subj = subject(tmp_path, f'open({str(pidfile)!r}, "w").write(str(os.getpid()))\n'
                             'out(b"ev 1 0 connect")\n'
                             'out(b"ev x 0 broken")\n'
                             'import time\n'
                             'while True:\n'
                             '    time.sleep(1000)\n')
    proc = wc("run", scenario(tmp_path), "--subject", subj, "--strace", tmp_path / "st.txt")
    assert proc.returncode == 4, proc.stderr
    assert "protocol: line 2" in json.loads(proc.stdout)["exit"]["error"]
    pid = int(pidfile.read_text())
    # Killed, and waited for by the harness (a pidfd): gone, dead, or a
    # zombie its new parent has not reaped yet.
    assert _state(pid) in (None, "Z", "X"), f"the subject {pid} runs on: state {_state(pid)}"


def test_a_timeout_at_a_sync_point_says_what_the_peer_waited_for(wc, tmp_path):
    """A sync line that claims bytes the subject never sent: the peer reads
    for them until the run's timeout (the only way such a run can end), and
    the run said no more than `timed_out`. Now stderr says where the peer
    stood. Fails on the code before (nothing on stderr)."""
    sc = scenario(tmp_path, 'behaviour queue\npeer read at checkpoint 1\ntask\n'
                            '  write "hello"\n  checkpoint\n  end\n')
    subj = subject(tmp_path, 's.sendall(b"hello")\n'
                             'out(b"sync checkpoint:1 999999")\n'
                             'os.read(3, 3)\n')
    proc = wc("run", sc, "--subject", subj, "--timeout", 1)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["exit"]["timed_out"] is True
    assert ("the run timed out at checkpoint:1 the peer waited for byte 999999 of connection 0, "
            "which the subject's sync line said it had written, and had 5") in proc.stderr, proc.stderr
