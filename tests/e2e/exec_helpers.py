"""What tests/e2e/test_exec.py and test_exec_until.py share: the Python
they run programs with, and how a test writes a program and runs it under
`wirecheck exec` (the preload library's fixture, `preload`, is conftest.py's)."""
import json

PYTHON = "/usr/bin/python3"

STUCK_ORPHAN = """
import os
r, w = os.pipe()
if os.fork() == 0:
    os.read(r, 1)  # it holds the write end itself: never returns
"""


def script(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def report(wc, tmp_path, *args, rc=0):
    """Runs exec with args (the last one the command) and returns the
    report and the process; exec's status is the program's (rc)."""
    out = tmp_path / "report.json"
    proc = wc("exec", *args[:-1], "--output", out, "--", *args[-1])
    assert proc.returncode == rc, proc.stderr
    return json.loads(out.read_text()), proc
