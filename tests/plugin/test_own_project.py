"""Using the plugin from another project: the rootdir and ini file with
`--wirecheck-bin=PATH`, the usage error for its space form, the golden
header's command, the obtained trace beside a golden that differs, and the
wirecheck_golden fixture for a test of one's own."""
import os
import shlex
import subprocess
import textwrap
from pathlib import Path

from wirecheck import golden as G

REPO = Path(__file__).resolve().parents[2]


def wirecheck_path() -> Path:
    return Path(os.environ.get("WIRECHECK_BIN") or REPO / "build" / "bin" / "wirecheck")

SMALL = 'behaviour queue\ntask\n  write "hello" cb\n  end cb\n'


def test_the_equals_form_keeps_the_rootdir_and_the_ini(suite):
    suite.scenario("small", SMALL)
    suite.scenario("other", SMALL)
    (suite.path / "pytest.ini").write_text("[pytest]\naddopts = -k small\n")
    res = suite.run(f"--wirecheck-bin={wirecheck_path()}", "--collect-only")
    assert res.ret == 0, res.stdout.str()
    res.stdout.fnmatch_lines([f"rootdir: {suite.path}, configfile: pytest.ini"])
    ids = [l for l in res.stdout.lines if "ScenarioItem" in l or "<" in l]
    assert not any("other" in l for l in ids), res.stdout.str()
    assert any("small" in l for l in ids), res.stdout.str()


def test_the_space_form_with_a_path_is_a_usage_error(suite):
    """pytest takes the value of `--wirecheck-bin /abs/path` for a path to
    test when it places the rootdir, before the plugin is loaded: the
    rootdir would move to the binary's folder and the project's pytest.ini
    be lost. The plugin refuses it and says how to write it."""
    suite.scenario("small", SMALL)
    (suite.path / "pytest.ini").write_text("[pytest]\naddopts = -k small\n")
    (suite.path / "my-subject").write_text("")
    for args in (["--wirecheck-bin", str(wirecheck_path())],
                 ["--wirecheck-subject", "my-subject"]):
        res = suite.run(*args, "--collect-only")
        assert res.ret == 4, res.stdout.str() + res.stderr.str()
        res.stderr.fnmatch_lines([f"ERROR: {args[0]} {args[1]}: write {args[0]}={args[1]}. *"])
    # A value that names no file (a count, a subject's name) is no path.
    res = suite.run("--wirecheck-repeat", "2", "--collect-only")
    assert res.ret == 0, res.stdout.str() + res.stderr.str()
    res.stdout.fnmatch_lines([f"rootdir: {suite.path}, configfile: pytest.ini"])


def test_golden_header_command_names_the_plugin_and_runs(suite):
    suite.scenario("small", SMALL)
    suite.update()
    text = suite.golden("small").read_text()
    cmd = ("/usr/bin/python3 -m pytest -p wirecheck.plugin s/small.wcs::variant=fixed "
           "--update-goldens")
    assert f"# regenerate with: {cmd}\n" in text
    # The package is outside this project: the header says what the
    # command needs, without a path of this machine's.
    assert "# (with wirecheck's python/ folder on PYTHONPATH" in text
    assert str(REPO) not in text
    # The command works as written, from the rootdir, in a project without
    # a conftest that loads the plugin.
    suite.golden("small").unlink()
    proc = subprocess.run(shlex.split(cmd), cwd=suite.path, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert suite.golden("small").read_text() == text
    # A missing golden's message gives the same command.
    suite.golden("small").unlink()
    res = suite.run()
    # A missing golden's message gives it to paste as it is: PYTHONPATH
    # set to the package's folder, and this run's --wirecheck-bin if any.
    res.stdout.fnmatch_lines([f"*no golden: run PYTHONPATH={REPO / 'python'} {cmd}"])
    res = suite.run(f"--wirecheck-bin={wirecheck_path()}")
    res.stdout.fnmatch_lines([f"*no golden: run PYTHONPATH={REPO / 'python'} {cmd}"
                              f" --wirecheck-bin={wirecheck_path()}"])


def test_a_mismatch_writes_the_obtained_trace_beside_the_golden(suite):
    wcs = suite.scenario("small", SMALL)
    suite.update()
    golden = suite.golden("small")
    obtained = golden.with_suffix(".obtained")
    wcs.write_text(SMALL.replace('"hello"', '"hellO"'))
    res = suite.run()
    assert res.ret == 1
    assert obtained.is_file()
    res.stdout.fnmatch_lines([f"*the run's trace is in s/small.obtained: diff s/small.golden "
                              "s/small.obtained)"])
    got, want = G.load(obtained), G.load(golden)
    assert got != want
    assert b"hellO" in got.peers[0].data and b"hello" in want.peers[0].data
    # Once the run matches again, the obtained trace goes.
    wcs.write_text(SMALL)
    res = suite.run()
    assert res.ret == 0, res.stdout.str()
    assert not obtained.exists()


def test_obtained_traces_are_ignored_by_git():
    proc = subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q",
                           "scenarios/queue/end-large.clamp=7.obtained"])
    assert proc.returncode == 0


def test_the_golden_fixture_in_a_test_of_ones_own(suite):
    test = suite.path / "test_mine.py"

    def write_test(text):
        test.write_text(textwrap.dedent(f"""
            from wirecheck.api import Scenario

            def test_mine(wirecheck_golden):
                trace = Scenario().task().end({text!r}, cb=True).run()
                path = wirecheck_golden(trace)
                assert path.name == "test_mine.golden"
            """))
    write_test("hi")
    res = suite.run("test_mine.py")
    assert res.ret == 1
    res.stdout.fnmatch_lines([f"*no golden: run PYTHONPATH={REPO / 'python'} "
                              "/usr/bin/python3 -m pytest -p wirecheck.plugin "
                              "test_mine.py::test_mine --update-goldens"])
    # Once, not again as "During handling of the above exception".
    assert res.stdout.str().count("no golden: run") == 1, res.stdout.str()
    res = suite.run("test_mine.py", "--update-goldens")
    assert res.ret == 0, res.stdout.str()
    golden = suite.path / "goldens" / "test_mine.golden"
    assert G.load(golden).peers[0].data == b"hi"
    res = suite.run("test_mine.py")
    assert res.ret == 0, res.stdout.str()
    write_test("ho")
    res = suite.run("test_mine.py")
    assert res.ret == 1
    res.stdout.fnmatch_lines(["*the trace differs from the golden goldens/test_mine.golden"])
    assert G.load(golden.with_suffix(".obtained")).peers[0].data == b"ho"


def test_the_golden_fixture_refuses_what_is_not_a_run_trace(suite):
    """An exec report (or exec_program's result) has no events and no
    syscalls: its golden held an exit and nothing else, and a program that
    sent 5 bytes instead of 1000 still passed. The fixture now fails the
    test with why, under --update-goldens too, and writes no golden. (On
    the code before, --update-goldens wrote that golden and the test
    passed.)"""
    test = suite.path / "test_mine.py"
    test.write_text(textwrap.dedent("""
        import sys
        from wirecheck import exec_program

        def test_report(wirecheck_golden):
            res = exec_program([sys.executable, "-c", "pass"], binary=BIN)
            wirecheck_golden(res.report)

        def test_result(wirecheck_golden):
            res = exec_program([sys.executable, "-c", "pass"], binary=BIN)
            wirecheck_golden(res)

        def test_other(wirecheck_golden):
            wirecheck_golden({"exit": {"code": 0}})
        """).replace("BIN", repr(str(wirecheck_path()))))
    for flags in ((), ("--update-goldens",)):
        res = suite.run("test_mine.py", *flags)
        assert res.ret == 1, res.stdout.str()
        res.assert_outcomes(failed=3)
        res.stdout.fnmatch_lines_random([
            "*wirecheck_golden: got a `wirecheck exec` report (it has `counts`), not a "
            "`wirecheck run` trace*",
            "*wirecheck_golden: got an ExecResult (wirecheck.exec_program's result)*",
            "*wirecheck_golden: not a `wirecheck run` trace: it has no events and no syscalls "
            "(its keys: exit)*"])
    assert not (suite.path / "goldens").exists()
