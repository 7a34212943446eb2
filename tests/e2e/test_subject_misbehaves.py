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

# Reads the script up to "run" and connects to the peer; a subject body
# follows. out(b"...") writes one line on fd 4.
PROLOGUE = f"""#!{PYTHON}
import os, socket, sys
d = b""
while not d.endswith(b"run\\n"):
    b = os.read(3, 65536)
    if not b:
        sys.exit(9)
    d += b
line = [l for l in d.decode().split("\\n") if l.startswith("connect ")][0].split()
s = socket.create_connection((line[2], int(line[3])))
def out(b):
    os.write(4, b + b"\\n")
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
    """A subject's print() landed in wirecheck's stdout, the trace: the
    JSON no longer parsed (the pytest plugin died with JSONDecodeError).
    Fails on the code before: stdout starts with the subject's text."""
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
