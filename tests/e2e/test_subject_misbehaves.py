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
