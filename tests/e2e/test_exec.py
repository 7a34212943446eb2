"""`wirecheck exec`: the fault gate preloaded into a program that was not
built against it (faultinject/preload.c, harness/exec.c).

The programs are /usr/bin/python3 scripts, whose socket calls are libc's
send() and recv() (CPython's socket module calls them directly). Expected
figures come from the rules, written next to each assertion:
- sock.sendall(data) calls send() until every byte is taken; under a clamp
  C each call takes min(C, left), so P bytes take ceil(P / C) calls, and
  every call but the last (which offers fewer than C bytes when C does not
  divide P) was cut: injected = ceil(P / C) - 1 when P % C != 0.
- A refused call is a call (it is counted) and libc's caller sees -1 with
  the errno of the rule.
"""
import json
import os
import shutil
import sys

import pytest

from conftest import wirecheck_path

PYTHON = "/usr/bin/python3"

SENDALL = """
import socket, sys
n = int(sys.argv[1])
a, b = socket.socketpair()
a.sendall(bytes(range(256)) * (n // 256) + bytes(range(n % 256)))
got = b""
while len(got) < n:
    got += b.recv(65536)
assert got == bytes(range(256)) * (n // 256) + bytes(range(n % 256)), "bytes differ"
"""

FORK = """
import os, socket
a, b = socket.socketpair()
pid = os.fork()
if pid == 0:
    a.send(b"child")
    raise SystemExit(0)  # exit(), not _exit(): the counts are written at exit
os.waitpid(pid, 0)
assert b.recv(100) == b"child"
"""


@pytest.fixture
def preload(wirecheck):
    lib = wirecheck.parent.parent / "lib" / "libwirecheck-preload.so"
    if not lib.is_file():
        pytest.skip(f"{lib} is not built (sanitizer builds do not build it)")
    return lib


def script(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def report(wc, tmp_path, *args):
    out = tmp_path / "report.json"
    proc = wc("exec", *args[:-1], "--output", out, "--", *args[-1])
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text()), proc


@pytest.mark.parametrize("size,clamp", [(100, 7), (4096, 1000), (1000, 1000)])
def test_clamp_cuts_every_send_of_an_unmodified_program(wc, tmp_path, preload, size, clamp):
    prog = script(tmp_path, "sendall.py", SENDALL)
    rep, _ = report(wc, tmp_path, "--clamp-send", clamp, [PYTHON, prog, size])
    assert rep["exit"] == {"code": 0, "timed_out": False}
    counts = rep["counts"]
    calls = -(-size // clamp)  # ceil(P / C)
    assert counts["syscalls"]["send"] == calls
    # Every call that offered more than C bytes was cut: all but the last,
    # which offers P - (calls - 1) * C <= C bytes.
    assert counts["injected"].get("send", 0) == calls - 1
    assert counts["faults"] == [f"write:short={clamp},repeat=forever"]
    assert rep["faults"] == counts["faults"]
    assert counts["pid"] > 0 and rep["children"] == []


def test_without_faults_the_program_is_only_counted(wc, tmp_path, preload):
    prog = script(tmp_path, "sendall.py", SENDALL)
    rep, _ = report(wc, tmp_path, [PYTHON, prog, 100])
    assert rep["exit"]["code"] == 0
    # A unix socketpair's buffer takes 100 bytes in one call.
    assert rep["counts"]["syscalls"]["send"] == 1
    assert rep["counts"]["injected"] == {} and rep["faults"] == []


def test_refused_send_reaches_the_program_as_its_errno(wc, tmp_path, preload):
    prog = script(tmp_path, "sendall.py", SENDALL)
    rep, proc = report(wc, tmp_path, "--fault", "send:errno=EPIPE", [PYTHON, prog, 100])
    # sendall's first send() returns -1 with EPIPE: Python raises
    # BrokenPipeError and exits 1; the call is counted and injected.
    assert rep["exit"] == {"code": 1, "timed_out": False}
    assert "BrokenPipeError" in proc.stderr
    assert rep["counts"]["syscalls"]["send"] == 1
    assert rep["counts"]["injected"] == {"send": 1}


def test_a_forked_child_reports_its_own_counts(wc, tmp_path, preload):
    prog = script(tmp_path, "fork.py", FORK)
    rep, _ = report(wc, tmp_path, [PYTHON, prog])
    assert rep["exit"]["code"] == 0
    # The child's one send is its own; the parent made none (its counts
    # were not copied into the child's, nor the child's into its).
    assert "send" not in rep["counts"]["syscalls"]
    assert [c["syscalls"].get("send") for c in rep["children"]] == [1]
    assert rep["children"][0]["pid"] != rep["counts"]["pid"]


def test_a_crash_and_a_hang_are_reported(wc, tmp_path, preload):
    rep, _ = report(wc, tmp_path, [PYTHON, "-c", "import os; os.abort()"])
    assert rep["exit"]["signal"] == "SIGABRT" and rep["exit"]["timed_out"] is False
    assert rep["counts"] is None  # abort() runs no destructor
    # A safety timeout, never a speed assertion: the program never ends.
    rep, _ = report(wc, tmp_path, "--timeout", "0.5", [PYTHON, "-c", "import time\nwhile True: time.sleep(60)"])
    assert rep["exit"] == {"signal": "SIGKILL", "core": False, "timed_out": True}


def test_the_report_goes_to_stdout_after_the_programs_output(wc, tmp_path, preload):
    proc = wc("exec", "--", PYTHON, "-c", "print('hello')")
    assert proc.returncode == 0, proc.stderr
    first, rest = proc.stdout.split("\n", 1)
    assert first == "hello"
    assert json.loads(rest)["exit"]["code"] == 0


@pytest.mark.parametrize("args,message", [
    (["--clamp-send", "7"], "exec needs -- PROGRAM"),
    (["--", ], "exec needs -- PROGRAM"),
    (["--fault", "send:bogus", "--", "true"], 'spec "send:bogus": unknown action "bogus"'),
    (["--clamp-send", "0", "--", "true"], "clamp-send '0'"),
    (["--signal", "SIGTERM@task:1", "--", "true"], "a task point (SIG@task:N) needs a scenario"),
    (["--bogus", "1", "--", "true"], "unknown flag '--bogus'"),
    (["--timeout", "--", "true"], "'--timeout' needs a value"),
])
def test_bad_usage_names_the_problem(wc, preload, args, message):
    proc = wc("exec", *args)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Try 'wirecheck exec --help'." in proc.stderr


def test_a_missing_library_or_program(wc, tmp_path, preload):
    proc = wc("exec", "--preload", tmp_path / "nope.so", "--", "true")
    assert proc.returncode == 3 and "nope.so" in proc.stderr
    rep, proc = report(wc, tmp_path, [tmp_path / "no-such-program"])
    # The exec fails in the child, which says why and exits 127.
    assert rep["exit"]["code"] == 127 and "no-such-program" in proc.stderr


def test_a_bad_faults_variable_stops_the_program(preload, tmp_path):
    # The library read directly, as a user's LD_PRELOAD line would: a spec
    # it cannot arm ends the process before main, with a message naming it.
    import subprocess
    env = dict(os.environ, LD_PRELOAD=str(preload), WIRECHECK_FAULTS="send:short=0")
    proc = subprocess.run([PYTHON, "-c", "print('ran')"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2 and "ran" not in proc.stdout
    assert "WIRECHECK_FAULTS" in proc.stderr and "send:short=0" in proc.stderr


RECV_FORMS = """
import socket
a, b = socket.socketpair()
a.send(b"abcdefghij")
data, _ = b.recvfrom(100)
assert data == b"abc", data
data, _, _, _ = b.recvmsg(100)
assert data == b"def", data
assert b.recv(100) == b"ghi"
print("ok")
"""


def test_recvfrom_and_recvmsg_are_recv(wc, tmp_path, preload):
    # CPython's recvfrom() and recvmsg() call libc's of the same names; the
    # library counts both as recv and clamps them like recv: 3 bytes each.
    prog = script(tmp_path, "forms.py", RECV_FORMS)
    rep, proc = report(wc, tmp_path, "--fault", "recv:short=3,repeat=forever", [PYTHON, prog])
    assert rep["exit"]["code"] == 0, proc.stderr
    assert rep["counts"]["syscalls"]["recv"] == 3
    assert rep["counts"]["injected"] == {"recv": 3}


def test_the_librarys_own_calls_are_not_the_programs(wc, tmp_path, preload):
    # The library's constructor and destructor (libfiu, jansson, stdio) may
    # call read() and close(); those pass straight to libc. Before, jansson
    # read /dev/urandom through the gate at exit: /bin/true "made" a read
    # and a close, and a rule on close killed it inside the destructor.
    rep, _ = report(wc, tmp_path, "--fault", "close:signal=SIGTERM", ["/bin/true"])
    assert rep["exit"] == {"code": 0, "timed_out": False}
    assert "close" not in rep["counts"]["syscalls"]
    rep, _ = report(wc, tmp_path, "--fault", "sysread:errno=EIO", ["/bin/true"])
    assert "read" not in rep["counts"]["syscalls"] and rep["counts"]["injected"] == {}


NODE_ECHO = """
const net = require("net");
const path = process.argv[2];
const srv = net.createServer((c) => {
  let n = 0;
  c.on("data", (d) => { n += d.length; });
  c.on("end", () => { console.log("got " + n); srv.close(); });
});
srv.listen(path, () => { const s = net.connect(path, () => s.end(Buffer.alloc(100, 97))); });
"""


def test_node_is_counted_through_libuv(wc, tmp_path, preload):
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    prog = script(tmp_path, "echo.js", NODE_ECHO)
    rep, proc = report(wc, tmp_path, [node, prog, tmp_path / "s.sock"])
    assert rep["exit"]["code"] == 0, proc.stderr
    c = rep["counts"]["syscalls"]
    # libuv waits with epoll_pwait (counted as epoll_wait), accepts one
    # connection and connects once; each side shuts its write side down.
    assert c["epoll_wait"] > 0 and c["accept"] == 1 and c["connect"] == 1
    assert c["shutdown"] == 2


ORPHAN = """
import os, socket
r, w = os.pipe()
if os.fork() == 0:
    os.close(w)
    os.read(r, 1)  # end of file once the parent has exited
    a, b = socket.socketpair()
    a.send(b"late")
    raise SystemExit(0)
os.close(r)
"""

STUCK_ORPHAN = """
import os
r, w = os.pipe()
if os.fork() == 0:
    os.read(r, 1)  # it holds the write end itself: never returns
"""


def test_processes_left_behind_are_waited_for(wc, tmp_path, preload):
    # The child sends only after the program has exited. exec waits for it
    # (it is ours, as subreaper) before it reads the counts; the first
    # version read them when the program ended, and listed no child.
    prog = script(tmp_path, "orphan.py", ORPHAN)
    rep, _ = report(wc, tmp_path, [PYTHON, prog])
    assert rep["exit"] == {"code": 0, "timed_out": False}
    assert [c["syscalls"].get("send") for c in rep["children"]] == [1]


def test_processes_left_behind_are_killed_at_the_deadline(wc, tmp_path, preload):
    prog = script(tmp_path, "stuck.py", STUCK_ORPHAN)
    # 5 s: ample for the program itself to end on a loaded machine; what it
    # leaves behind never ends, and is killed then.
    rep, _ = report(wc, tmp_path, "--timeout", "5", [PYTHON, prog])
    # The program itself ended at once; what it left was killed.
    assert rep["exit"] == {"code": 0, "timed_out": False, "others_killed": True}
    assert rep["children"] == []  # killed: no exit handlers ran


def test_an_inherited_ignored_sigchld(wirecheck, tmp_path, preload):
    # With SIGCHLD ignored the kernel would reap the program itself, and the
    # first version failed with "waitpid: No child processes". The program
    # still inherits the ignored disposition.
    import signal
    import subprocess
    out = tmp_path / "report.json"
    proc = subprocess.run(
        [str(wirecheck), "exec", "--output", str(out), "--", PYTHON, "-c",
         "import signal; print(signal.getsignal(signal.SIGCHLD) == signal.SIG_IGN)"],
        capture_output=True, text=True, timeout=60,
        preexec_fn=lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True"
    assert json.loads(out.read_text())["exit"]["code"] == 0


def test_more_rules_than_the_gate_arms_is_a_usage_error(wc, preload):
    args = []
    for fd in range(33):
        args += ["--fault", f"send:errno=EPIPE,fd={fd + 100}"]
    proc = wc("exec", *args, "--", "true")
    assert proc.returncode == 2
    assert "33 rules; the gate arms at most 32" in proc.stderr


def test_a_preload_path_ld_preload_cannot_carry(wc, tmp_path, preload):
    odd = tmp_path / "a b"
    odd.mkdir()
    copy = odd / "lib.so"
    copy.write_bytes(preload.read_bytes())
    proc = wc("exec", "--preload", copy, "--", "true")
    assert proc.returncode == 3
    assert "LD_PRELOAD cannot carry a path with a space or a colon" in proc.stderr


def test_the_python_api(tmp_path, preload):
    # wirecheck.exec_program: the same run from a pytest test of one's own.
    sys.path.insert(0, str(wirecheck_path().parents[2] / "python"))
    from wirecheck import WirecheckError, exec_program

    prog = script(tmp_path, "sendall.py", SENDALL)
    res = exec_program([PYTHON, prog, 100], ["--clamp-send", 7],
                       binary=wirecheck_path())
    assert res.exit == {"code": 0, "timed_out": False}
    assert res.calls("send") == 15 and res.calls("recvmsg") == 0
    assert res.counts["injected"] == {"send": 14}
    with pytest.raises(WirecheckError) as e:
        exec_program(["true"], ["--clamp-send", 0], binary=wirecheck_path())
    assert e.value.returncode == 2 and "clamp-send '0'" in str(e.value)


def test_a_signal_to_wirecheck_takes_the_program_with_it(wirecheck, tmp_path, preload):
    # The program tells us it runs (its pid and its counts directory) through
    # a FIFO it keeps open; wirecheck gets SIGTERM; the FIFO's end of file
    # then says the program has died (a blocking read, no sleep). The first
    # version died alone: the program ran on under init, and the temporary
    # directory stayed.
    import signal
    import subprocess
    fifo = tmp_path / "alive"
    os.mkfifo(fifo)
    prog = script(tmp_path, "hold.py", f"""
import os, signal
signal.alarm(120)  # a safety net only: a regression must fail, not hang
f = open({str(fifo)!r}, "w")
f.write(f"{{os.getpid()}} {{os.path.dirname(os.environ['WIRECHECK_COUNTS'])}}\\n")
f.flush()
r, w = os.pipe()
os.read(r, 1)  # never returns: it holds the write end itself
""")
    wc = subprocess.Popen([str(wirecheck), "exec", "--", PYTHON, str(prog)],
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    try:
        with open(fifo) as f:
            pid, counts_dir = f.readline().split()
            wc.send_signal(signal.SIGTERM)
            assert f.read() == ""  # end of file: the program is gone
        assert wc.wait(timeout=60) == -signal.SIGTERM
    finally:
        if wc.poll() is None:
            wc.kill()
            wc.wait()
    assert not os.path.exists(counts_dir)


def test_a_fifo_in_the_counts_directory_does_not_hang(wc, tmp_path, preload):
    # Anything the program puts where the counts go is read only if it is
    # a regular file; the first version blocked forever opening a FIFO.
    rep, proc = report(wc, tmp_path, [PYTHON, "-c",
        "import os; os.mkfifo(os.path.join(os.path.dirname("
        "os.environ['WIRECHECK_COUNTS']), 'x.json'))"])
    assert rep["exit"]["code"] == 0 and rep["counts"] is not None
    assert "x.json" in proc.stderr and "not a regular file" in proc.stderr


def test_an_injected_end_of_file_on_recvmsg_is_a_clean_one(wc, tmp_path, preload):
    # A real end of file leaves no control data and no flags; the first
    # version left the caller's input lengths in the header, which Python
    # then parsed as control messages.
    prog = script(tmp_path, "eof.py", """
import socket
a, b = socket.socketpair()
data, anc, flags, addr = b.recvmsg(100, 64)
print(repr((data, anc, flags)))
""")
    rep, proc = report(wc, tmp_path, "--fault", "recv:zero", [PYTHON, prog])
    assert rep["exit"]["code"] == 0, proc.stderr
    assert proc.stdout.strip() == "(b'', [], 0)"
    assert rep["counts"]["injected"] == {"recv": 1}


FORTIFIED = r"""
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	int sv[2];
	char buf[64];
	size_t want = (size_t)atoi(argv[1]);   /* not a constant: fortified */
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0 ||
	    send(sv[0], "abcdefghij", 10, 0) != 10)
		return 1;
	ssize_t a = recv(sv[1], buf, want, 0);
	ssize_t b = read(sv[1], buf, want);
	printf("%zd %zd\n", a, b);
	return 0;
}
"""


def test_fortified_programs_are_seen(wc, tmp_path, preload):
    # Distributions build with _FORTIFY_SOURCE, which turns recv() and
    # read() with a known buffer into __recv_chk and __read_chk: those
    # bypassed the first version's gate entirely.
    import subprocess
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    src = tmp_path / "fortified.c"
    src.write_text(FORTIFIED)
    exe = tmp_path / "fortified"
    subprocess.run([cc, "-O2", "-D_FORTIFY_SOURCE=2", "-o", str(exe), str(src)], check=True)
    syms = subprocess.run(["nm", "-D", str(exe)], capture_output=True, text=True).stdout
    if "__recv_chk" not in syms or "__read_chk" not in syms:
        pytest.skip("this compiler did not fortify recv and read")
    rep, proc = report(wc, tmp_path, "--fault", "read:short=3,repeat=forever", [exe, 64])
    assert rep["exit"]["code"] == 0, proc.stderr
    assert proc.stdout.strip() == "3 3"
    assert rep["counts"]["syscalls"]["recv"] == 1 and rep["counts"]["syscalls"]["read"] == 1
    assert rep["counts"]["injected"] == {"read": 1, "recv": 1}
