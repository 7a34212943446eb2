"""wirecheck explore end to end: bad input, a fixed seed reproduces a run,
a reproducer judged again, and the pytest items."""
import json
import os
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
SAFETY_TIMEOUT = 600  # a net against a hung harness, never a speed assertion
ENV = dict(os.environ, PYTHONPATH=str(REPO / "python"))
REGRESSION = REPO / "scenarios" / "chunked" / "try-final-empty-short.wcs"


def explore(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "wirecheck.explore", *map(str, args)],
                          capture_output=True, text=True, env=ENV, cwd=cwd,
                          timeout=SAFETY_TIMEOUT)


def test_bad_arguments_are_usage_errors_that_name_the_problem():
    r = explore("chunkd")
    assert r.returncode == 2 and "unknown behaviour 'chunkd'" in r.stderr
    r = explore("ws", "--examples", "0")
    assert r.returncode == 2 and "--examples must be at least 1" in r.stderr
    r = explore("ws", "--examples", "5", "--budget", "5")
    assert r.returncode == 2 and "not allowed with" in r.stderr
    r = explore()
    assert r.returncode == 2 and "at least one BEHAVIOUR" in r.stderr


def test_check_names_a_missing_or_bad_file(tmp_path):
    r = explore("--check", tmp_path / "nope.wcs")
    assert r.returncode == 2 and "nope.wcs: No such file" in r.stderr
    bad = tmp_path / "bad.wcs"
    bad.write_text("task\n  write 1\n")
    r = explore("--check", bad)
    assert r.returncode == 2 and "bad.wcs: no 'behaviour' line" in r.stderr
    broken = tmp_path / "broken.wcs"
    broken.write_text("behaviour queue\ntask\n  write lots\n")
    r = explore("--check", broken)
    assert r.returncode == 2 and "broken.wcs:3" in r.stderr


def test_the_regression_scenario_passes_the_model():
    r = explore("--check", REGRESSION)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok (0 problems)" in r.stdout


def test_a_fixed_seed_reproduces_the_run_whatever_the_jobs(tmp_path):
    reports = []
    for jobs in (1, 2, 1):
        path = tmp_path / f"r{len(reports)}.json"
        r = explore("chunked", "ws", "--examples", 16, "--per-batch", 8, "--seed", 7,
                    "-j", jobs, "--report", path, "--out", tmp_path / "out", "-q")
        assert r.returncode == 0, r.stdout + r.stderr
        rep = json.loads(path.read_text())
        for b in rep["behaviours"].values():
            b.pop("seconds")
        rep.pop("seconds")
        reports.append(rep)
    assert reports[0] == reports[1] == reports[2]
    chunked = reports[0]["behaviours"]["chunked"]
    assert chunked["seeds"] == [7, 8] and chunked["examples"] == 16
    assert reports[0]["seed"] == 7


def test_the_pytest_items_run_under_xdist(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "wirecheck.plugin", "-p", "no:cacheprovider",
         "-n", "2", "-q", "--rootdir", tmp_path, f"--wirecheck-bin={REPO / 'build/bin/wirecheck'}",
         "--wirecheck-explore", "chunked,half-open", "--wirecheck-explore-examples", "4",
         "--wirecheck-explore-per-batch", "2", "--wirecheck-explore-seed", "3"],
        capture_output=True, text=True, env=ENV, cwd=tmp_path, timeout=SAFETY_TIMEOUT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "4 passed" in r.stdout


def test_a_bad_behaviour_for_the_pytest_items_is_a_usage_error(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "wirecheck.plugin", "-p", "no:cacheprovider",
         "-q", "--rootdir", tmp_path, f"--wirecheck-bin={REPO / 'build/bin/wirecheck'}",
         "--wirecheck-explore", "chunked,nope"],
        capture_output=True, text=True, env=ENV, cwd=tmp_path, timeout=SAFETY_TIMEOUT)
    assert r.returncode == 4 and "unknown behaviour 'nope'" in r.stderr


def test_wirecheck_explore_runs_the_package_beside_the_binary(tmp_path):
    """`wirecheck explore` is the same program, found from the binary, with
    PYTHONPATH unset and another working directory."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([str(REPO / "build/bin/wirecheck"), "explore", "--check", REGRESSION],
                       capture_output=True, text=True, env=env, cwd=tmp_path,
                       timeout=SAFETY_TIMEOUT)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([str(REPO / "build/bin/wirecheck"), "explore", "chunkd"],
                       capture_output=True, text=True, env=env, cwd=tmp_path,
                       timeout=SAFETY_TIMEOUT)
    assert r.returncode == 2 and "unknown behaviour 'chunkd'" in r.stderr
