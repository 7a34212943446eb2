"""`peer exec`'s {dir}: the absolute folder of the scenario file
(docs/scenario-language.md, "peer exec"), so that a program or script kept
beside a scenario is found whichever directory the harness runs in.

Each test keeps the scenario and its helper in one folder (with a space in
its name: {dir} is one argument) and runs wirecheck from another, with a
relative path to the scenario. Before {dir}, `{dir}` was an unknown name
(exit 2), and a path relative to the scenario (`../suite/client.py`)
depended on the harness's current directory.
"""
import os
import subprocess

import pytest

import test_peer_exec
from test_run import CLEAN_EXIT, trace_of

PYTHON = "/usr/bin/python3"

# test_peer_exec.py's client (connects to HOST PORT, reads to EOF, prints
# what it got), runnable as a program of its own.
CLIENT = "#!/usr/bin/python3" + test_peer_exec.CLIENT


@pytest.fixture
def suite(tmp_path):
    """tmp/my suite/ with client.py (and an executable copy, client), and
    tmp/elsewhere/, the harness's current directory."""
    folder = tmp_path / "my suite"
    folder.mkdir()
    (folder / "client.py").write_text(CLIENT)
    prog = folder / "client"
    prog.write_text(CLIENT)
    prog.chmod(0o755)
    (tmp_path / "elsewhere").mkdir()
    return folder


def wc_in(wirecheck, cwd, *args, stdin=None):
    return subprocess.run([str(wirecheck), *map(str, args)], cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=60)


def write(suite, text):
    (suite / "s.wcs").write_text(text)
    return os.path.join("..", suite.name, "s.wcs")  # relative to elsewhere/


def test_a_script_beside_the_scenario_runs_from_anywhere(wirecheck, suite):
    rel = write(suite, f"role server\npeer exec {PYTHON} {{dir}}/client.py {{host}} {{port}}\n"
                       "task\n  end \"hello\\n\"\n")
    t = trace_of(wc_in(wirecheck, suite.parent / "elsewhere", "run", rel, "--timeout", 20))
    assert t["exit"] == CLEAN_EXIT
    prog = t["peer"]["program"]
    assert prog["exit"] == {"code": 0}, prog["stderr"]
    assert bytes.fromhex(t["peer"]["hex"]) == b"hello\n"
    # As written: the golden does not change with the scenario's place.
    assert prog["argv"] == [PYTHON, "{dir}/client.py", "{host}", "{port}"]


def test_dir_in_program(wirecheck, suite):
    rel = write(suite, "role server\npeer exec {dir}/client {host} {port}\n"
                       "task\n  end \"hi\\n\"\n")
    elsewhere = suite.parent / "elsewhere"
    proc = wc_in(wirecheck, elsewhere, "check", rel)
    assert proc.returncode == 0, proc.stderr
    t = trace_of(wc_in(wirecheck, elsewhere, "run", rel, "--timeout", 20))
    assert t["peer"]["program"]["exit"] == {"code": 0}
    assert bytes.fromhex(t["peer"]["hex"]) == b"hi\n"
    assert t["peer"]["program"]["argv"][0] == "{dir}/client"


def test_check_refuses_a_missing_program_in_dir(wirecheck, suite):
    rel = write(suite, "task\n  end\npeer exec {dir}/missing {port}\n")
    for cmd in ("check", "run"):
        proc = wc_in(wirecheck, suite.parent / "elsewhere", cmd, rel)
        assert proc.returncode == 2, (cmd, proc.stdout)
        assert (f"s.wcs:3: peer exec: no program '{suite}/missing' (not an executable file)"
                in proc.stderr), proc.stderr


def test_the_address_is_not_replaced_in_program(wirecheck, suite):
    rel = write(suite, "peer exec /bin/echo{port} x\n")
    proc = wc_in(wirecheck, suite.parent / "elsewhere", "check", rel)
    assert proc.returncode == 2
    assert "s.wcs:1: peer exec: {port} in PROGRAM" in proc.stderr, proc.stderr


def test_a_scenario_from_stdin_takes_the_current_directory(wirecheck, suite):
    # No file to take a folder from: {dir} is the harness's directory.
    text = (f"role server\npeer exec {PYTHON} {{dir}}/client.py {{host}} {{port}}\n"
            "task\n  end \"in\\n\"\n")
    t = trace_of(wc_in(wirecheck, suite, "run", "/dev/stdin", "--timeout", 20, stdin=text))
    assert t["peer"]["program"]["exit"] == {"code": 0}
    assert bytes.fromhex(t["peer"]["hex"]) == b"in\n"


def test_stdin_from_a_file_takes_the_current_directory(wirecheck, suite, tmp_path):
    # `wirecheck check /dev/stdin < FILE`: /dev/stdin is then a regular
    # file, but its folder is /dev; {dir} is the current directory still.
    (tmp_path / "elsewhere" / "s.wcs").write_text("peer exec {dir}/client {host} {port}\n")
    for cwd, ok in ((suite, True), (tmp_path / "elsewhere", False)):
        with open(tmp_path / "elsewhere" / "s.wcs") as f:
            proc = subprocess.run([str(wirecheck), "check", "/dev/stdin"], cwd=cwd, stdin=f,
                                  capture_output=True, text=True, timeout=60)
        if ok:
            assert proc.returncode == 0, proc.stderr
        else:
            assert proc.returncode == 2
            assert f"no program '{cwd}/client'" in proc.stderr, proc.stderr


def test_unknown_names_are_still_refused(wirecheck, suite):
    rel = write(suite, "peer exec /bin/echo {dri}\n")
    proc = wc_in(wirecheck, suite.parent / "elsewhere", "check", rel)
    assert proc.returncode == 2
    assert "s.wcs:1: peer exec: unknown substitution '{dri}'" in proc.stderr
    assert "dir" in proc.stderr.split("unknown substitution")[1]


def test_a_link_to_the_scenario_takes_the_links_folder(wirecheck, suite, tmp_path):
    # {dir} is the folder the scenario is named in: a link elsewhere/s.wcs
    # to the suite's s.wcs looks for the program beside the link.
    write(suite, "peer exec {dir}/client {host} {port}\n")
    (tmp_path / "elsewhere" / "s.wcs").symlink_to(suite / "s.wcs")
    assert wc_in(wirecheck, tmp_path, "check", suite / "s.wcs").returncode == 0
    proc = wc_in(wirecheck, tmp_path, "check", "elsewhere/s.wcs")
    assert proc.returncode == 2
    assert f"no program '{tmp_path}/elsewhere/client'" in proc.stderr, proc.stderr
