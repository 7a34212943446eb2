"""`peer exec`: a real program as the subject's peer (harness/peer_exec.c,
docs/scenario-language.md, "peer exec").

The programs are real ones: /usr/bin/python3 scripts written by the tests
(a client that prints what it received, a server that prints the length and
sha256 of what it received), and curl. What they print on stdout is the
peer's stream of the trace, so each test compares it with what the subject
wrote, derived from the scenario (the stream pattern of protocol/protocol.h
for generated writes).
"""
import hashlib
import json
import shutil

import pytest

from test_run import CLEAN_EXIT, pattern, scenario, sha, texts, trace_of

PYTHON = "/usr/bin/python3"

# Connects to HOST PORT (or to the unix socket PATH), reads to EOF, prints
# the bytes it got as they are.
CLIENT = """
import socket, sys
if len(sys.argv) == 2:
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
else:
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
got = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    got += chunk
sys.stdout.buffer.write(got)
"""

# Listens on HOST PORT (or the unix socket PATH), takes one connection,
# reads to EOF, prints the byte count and sha256 of what it got; with
# --stay it then waits forever (a server that never ends by itself).
SERVER = """
import hashlib, socket, sys, time
stay = sys.argv[-1] == "--stay"
args = sys.argv[1:-1] if stay else sys.argv[1:]
if len(args) == 1:
    l = socket.socket(socket.AF_UNIX)
    l.bind(args[0])
else:
    l = socket.socket()
    l.bind((args[0], int(args[1])))
l.listen()
c, _ = l.accept()
got = b""
while True:
    chunk = c.recv(65536)
    if not chunk:
        break
    got += chunk
print(len(got), hashlib.sha256(got).hexdigest(), flush=True)
c.close()
while stay:
    time.sleep(1)
"""


@pytest.fixture
def programs(tmp_path):
    (tmp_path / "client.py").write_text(CLIENT)
    (tmp_path / "server.py").write_text(SERVER)
    return tmp_path


def stdout_of(trace):
    return bytes.fromhex(trace["peer"]["hex"])


# ---- the subject is the server: the program connects -----------------------------


@pytest.mark.parametrize("transport", ["tcp", "unix"])
def test_a_python_client_receives_what_the_subject_wrote(wc, programs, transport):
    where = "{unix}" if transport == "unix" else "{host} {port}"
    path = scenario(programs, f"role server\ntransport {transport}\n"
                              f"peer exec {PYTHON} client.py {where}\n"
                              "task\n  write 3000\n  end \"bye\\n\"\n")
    t = trace_of(wc("run", path, "--timeout", 20))
    expected = pattern(3000) + b"bye\n"
    assert t["exit"] == CLEAN_EXIT
    assert t["peer"]["bytes"] == len(expected) and stdout_of(t) == expected
    assert t["peer"]["sha256"] == sha(expected)
    prog = t["peer"]["program"]
    assert prog["exit"] == {"code": 0} and prog["timed_out"] is False
    assert prog["argv"][:2] == [PYTHON, "client.py"]  # as written, not substituted
    assert prog["stderr"] == "" and prog["stderr_bytes"] == 0
    # The program's connect is not the subject's: the gate counts only the
    # subject's calls.
    assert t["syscalls"]["connect"] == 0 and t["syscalls"]["accept"] == 1
    assert "t1 c0 accept" in t["events"]


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
@pytest.mark.parametrize("raw", [True, False])
def test_curl_decodes_a_chunked_response(wc, tmp_path, raw):
    # The subject answers curl's request with a chunked body of two chunks;
    # curl --raw prints the framing as it came, curl alone the decoded body.
    body = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n7\r\n world!\r\n0\r\n\r\n"
    wire = "\\r\\n".join(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked", "", "5", "hello",
                          "7", " world!", "0", "", ""])
    path = scenario(tmp_path, "role server\n"
                              f"peer exec curl -s -S {'--raw ' if raw else ''}{{url}}\n"
                              f"on data\n  end \"{wire}\"\n")
    t = trace_of(wc("run", path, "--timeout", 20))
    assert t["exit"] == CLEAN_EXIT
    assert t["peer"]["program"]["exit"] == {"code": 0}
    head_end = body.index(b"\r\n\r\n") + 4
    assert stdout_of(t) == (body[head_end:] if raw else b"hello world!")
    # The request curl sent reached the subject (one data event).
    assert any(e.startswith("data ") for e in texts(t))


def test_a_client_that_hangs_is_killed_at_the_deadline(wc, tmp_path):
    # The shell prints, closes its stdout, then sleeps: the run ends at its
    # deadline, and the trace keeps what it printed and its stderr.
    path = scenario(tmp_path, "role server\n"
                              "peer exec /bin/sh -c \"echo up; echo waiting >&2; exec 1>&-; sleep 600\"\n")
    t = trace_of(wc("run", path, "--timeout", 2))
    prog = t["peer"]["program"]
    assert prog["timed_out"] is True and prog["exit"] == {"signal": "SIGKILL"}
    assert stdout_of(t) == b"up\n" and prog["stderr"] == "waiting\n"
    assert t["exit"]["timed_out"] is True  # the subject waited for a connection


def test_the_stderr_tail_keeps_the_last_bytes(wc, tmp_path):
    # The program connects, so the run ends when it is done, not at a
    # deadline that a loaded machine's interpreter start-up can miss.
    path = scenario(tmp_path, "role server\n"
                              f"peer exec {PYTHON} -c \"import socket, sys; "
                              "c = socket.create_connection((sys.argv[1], int(sys.argv[2]))); "
                              "sys.stderr.write('x' * 5000 + 'END'); c.close()\" {host} {port}\n")
    t = trace_of(wc("run", path, "--timeout", 60))
    prog = t["peer"]["program"]
    assert prog["exit"] == {"code": 0}
    assert prog["stderr_bytes"] == 5003
    assert prog["stderr"] == "x" * 2045 + "END"  # the last 2048 bytes


# ---- the subject is the client: the program listens --------------------------------


@pytest.mark.parametrize("transport", ["tcp", "unix"])
def test_a_python_server_receives_the_subjects_stream(wc, programs, transport):
    where = "{unix}" if transport == "unix" else "{host} {port}"
    path = scenario(programs, f"transport {transport}\n"
                              f"peer exec {PYTHON} server.py {where}\n"
                              "clamp-send 4096\n"
                              "task\n  write 100KiB\n  end\n")
    t = trace_of(wc("run", path, "--timeout", 20))
    assert t["exit"] == CLEAN_EXIT
    prog = t["peer"]["program"]
    assert prog["exit"] == {"code": 0} and prog["listened"] is True
    n = 100 * 1024
    assert stdout_of(t) == f"{n} {sha(pattern(n))}\n".encode()
    assert t["syscalls"]["connect"] == 1


def test_stop_ends_a_server_that_stays(wc, programs):
    # A server that never exits by itself gets stop=SIGTERM once the
    # subject has exited, and the run ends without waiting for the deadline.
    path = scenario(programs, f"peer exec stop=SIGTERM {PYTHON} server.py {{host}} {{port}} --stay\n"
                              "task\n  end \"abc\"\n")
    t = trace_of(wc("run", path, "--timeout", 30))
    assert t["exit"] == CLEAN_EXIT
    prog = t["peer"]["program"]
    assert prog["stopped"] == "SIGTERM" and prog["exit"] == {"signal": "SIGTERM"}
    assert prog["timed_out"] is False
    assert stdout_of(t) == f"3 {hashlib.sha256(b'abc').hexdigest()}\n".encode()


def test_a_server_that_never_listens(wc, tmp_path):
    # The program exits without listening: the harness stops waiting, the
    # subject's connect is refused (the stack's connect is non-blocking: an
    # error event), and the trace says both.
    path = scenario(tmp_path, "peer exec /bin/true {port}\ntask\n  end\n")
    t = trace_of(wc("run", path, "--timeout", 10))
    assert t["peer"]["program"]["listened"] is False
    assert t["peer"]["program"]["exit"] == {"code": 0}
    assert "t1 c0 error ECONNREFUSED connect" in t["events"]


def test_repeat_is_deterministic(wc, programs):
    path = scenario(programs, f"role server\npeer exec {PYTHON} client.py {{host}} {{port}}\n"
                              "clamp-send 7\ntask\n  write 1000\n  end\n")
    proc = wc("run", path, "--repeat", 5, "--timeout", 20)
    assert proc.returncode == 0, proc.stderr


def test_the_golden_holds_the_programs_exit(wc, programs):
    from wirecheck import golden
    path = scenario(programs, f"role server\npeer exec {PYTHON} client.py {{host}} {{port}}\n"
                              "task\n  end \"hi\\n\"\n")
    t = trace_of(wc("run", path, "--timeout", 20))
    text = golden.render(golden.from_trace(t))
    assert f"peer: bytes=3 sha256={sha(b'hi' + bytes([10]))} reads=[] reset=false program_exit=0\n" in text
    assert golden.parse(text.encode()) == golden.from_trace(t)


# ---- bad input ------------------------------------------------------------------------


BAD = [
    ("peer exec /no/such/program\n", 1, "peer exec: no program '/no/such/program' (not an executable file)"),
    ("task\n  end\npeer exec no-such-program-wc {port}\n", 3,
     "peer exec: no program 'no-such-program-wc' (not found in PATH)"),
    ("peer exec /bin/echo {prot}\n", 1, "unknown substitution '{prot}'"),
    ("peer exec /bin/echo {port\n", 1, "an unclosed '{'"),
    ("transport unix\npeer exec /bin/echo {port}\n", 2, "{port} is for transport tcp"),
    ("peer exec /bin/echo {unix}\n", 1, "{unix} is for transport unix"),
    ("peer exec\n", 1, "'peer exec' needs a program"),
    ("peer exec stop=SIGNOPE /bin/true\n", 1, "stop=SIGNOPE"),
    ("peer exec /bin/true\npeer exec /bin/true\n", 2, "already given on line 1"),
    ("peer exec /bin/true\npeer send \"x\" at start\n", 2, "'peer send' does not go with 'peer exec' (line 1)"),
]


@pytest.mark.parametrize("text,line,needle", BAD, ids=[b[2] for b in BAD])
def test_bad_peer_exec_names_file_and_line(wc, tmp_path, text, line, needle):
    path = scenario(tmp_path, text, "bad.wcs")
    for cmd in ("check", "run"):
        proc = wc(cmd, path)
        assert proc.returncode == 2, (cmd, proc.stdout)
        assert f"bad.wcs:{line}: " in proc.stderr and needle in proc.stderr, proc.stderr


def test_a_flag_that_changes_the_transport_is_checked_too(wc, tmp_path):
    path = scenario(tmp_path, "role server\npeer exec /bin/echo {host} {port}\n", "t.wcs")
    assert wc("check", path).returncode == 0
    proc = wc("run", path, "--transport", "unix")
    assert proc.returncode == 2 and "t.wcs:2: peer exec: {host} is for transport tcp" in proc.stderr


def test_check_json_is_unchanged_by_peer_exec(wc, tmp_path):
    path = scenario(tmp_path, "role server\npeer exec /bin/echo {url}\ntask\n  end\n")
    proc = wc("check", "--json", path)
    assert proc.returncode == 0 and json.loads(proc.stdout)["tasks"] == 1


# ---- a subject that ends before its program starts ----------------------------------


def test_a_subject_that_exits_before_the_program_starts(wc, tmp_path):
    # A foreign subject that refuses the script (libuv and `http yes`) exits
    # before it listens, so the program never starts. The harness crashed
    # there (SIGSEGV on the unstarted program's spec) and would have closed
    # its own fd 0 when freeing it; now the trace says the program did not
    # start.
    path = scenario(tmp_path, "role server\n"
                              f"peer exec {PYTHON} -c \"print('never')\"\n"
                              "task\n  write 3\n")
    proc = wc("run", path, "--subject", "/bin/true", "--timeout", 20)
    assert proc.returncode in (0, 4), proc.stderr
    t = trace_of(proc)
    prog = t["peer"]["program"]
    assert prog["started"] is False
    assert prog["exit"] == {"code": None}
    assert t["peer"]["bytes"] == 0
