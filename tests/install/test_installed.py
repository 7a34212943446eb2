"""The installed tool, used as a stranger would.

`cmake --install` of the build into a temporary prefix, the Python package
pip-installed (offline) into a venv with the system's site packages, then,
in an empty folder outside the checkout, with an environment that names
nothing of it (PATH = venv/bin, prefix/bin, /usr/bin, /bin; no PYTHONPATH):
run and sweep a new scenario, pytest a folder of two scenarios with goldens
made by --update-goldens, build a C program against `pkg-config wirecheck`
and run it under `wirecheck exec --clamp-send 7`, and run the bundled
scenarios of share/wirecheck/scenarios on the node subject.

Every step would still pass if it read the checkout, so the test also
checks that no installed file names the checkout's path (the binaries,
scripts, .pc and package could only reach it through such a path: the cwd
and the environment do not hold it).

With WIRECHECK_INSTALLED=PREFIX (e.g. /usr, after `apt install
./wirecheck_*.deb`) the same steps run on that installed tool instead, with
no build and no checkout at all: tests/install/deb-fresh.sh runs them so
in a fresh Debian root.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("WIRECHECK_BUILD_DIR", REPO / "build"))
HERE = Path(__file__).resolve().parent
# An installed prefix to test as it is (the .deb's /usr), or None: install
# the build into a temporary prefix.
INSTALLED = os.environ.get("WIRECHECK_INSTALLED") or None
needs_checkout = pytest.mark.skipif(INSTALLED is not None,
                                    reason="compares with the checkout's build")

SCENARIO_ONE = """\
# written for the installed-tool test: one write under clamps
matrix clamp 1 7
task
  write 3000 cb
  end
"""
SCENARIO_TWO = """\
task
  write 100
  write 200 cb
  end
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(prefix, site, env, work): the installed tool, the folder its Python
    package was installed in, the stranger's environment and an empty
    folder to work in."""
    if INSTALLED:
        prefix = Path(INSTALLED)
        work = tmp_path_factory.mktemp("work")
        env = {"PATH": f"{prefix / 'bin'}:/usr/bin:/bin", "HOME": str(work), "LANG": "C.UTF-8"}
        site = prefix / "lib" / "python3" / "dist-packages"
        return prefix, site, env, work
    if not (BUILD / "bin" / "wirecheck").exists():
        pytest.fail(f"no build at {BUILD}: cmake --preset default && cmake --build --preset default")
    top = tmp_path_factory.mktemp("installed")
    prefix = top / "prefix"
    done = subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(prefix)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    # The package from a copy, so that pip's build leaves nothing in the checkout.
    source = top / "python-src"
    shutil.copytree(REPO / "python", source,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "build", "*.egg-info"))
    venv = top / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", "--system-site-packages",
                    str(venv)], check=True)
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                           "--no-build-isolation", "--no-index", str(source)],
                          capture_output=True, text=True, cwd=top)
    assert done.returncode == 0, done.stdout + done.stderr
    shutil.rmtree(source)
    work = top / "work"
    work.mkdir()
    env = {"PATH": f"{venv / 'bin'}:{prefix / 'bin'}:/usr/bin:/bin", "HOME": str(work),
           "LANG": "C.UTF-8", "PKG_CONFIG_PATH": str(prefix / "lib" / "pkgconfig")}
    for value in env.values():
        assert str(REPO) not in value
    return prefix, next(venv.glob("lib/python3*/site-packages")), env, work


# The venv's python (the package pip-installed in it), or the system's,
# where the .deb put the package.
PYTHON = "python3" if INSTALLED else "python"


def run(installed, argv, ok=(0,), cwd=None, timeout=600):
    prefix, venv, env, work = installed
    proc = subprocess.run(argv, capture_output=True, text=True, errors="replace", env=env,
                          cwd=cwd or work, timeout=timeout)
    assert proc.returncode in ok, f"{argv}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


def test_the_layout_is_the_documented_one(installed):
    prefix = installed[0]
    for rel in ("bin/wirecheck", "bin/wirecheck-report", "bin/wirecheck-sweep",
                "bin/wirecheck-explore", "share/man/man1/wirecheck-explore.1",
                "libexec/wirecheck/refstack-subject", "libexec/wirecheck/node-subject",
                "lib/libwirecheck-preload.so", "lib/libwirecheck-gate.a",
                "include/wirecheck/fi.h", "lib/pkgconfig/wirecheck.pc",
                "share/wirecheck/scenarios/queue/end-large.wcs",
                "share/wirecheck/scenarios/subjects/node.differences",
                "share/doc/wirecheck/cli.md", "share/man/man1/wirecheck.1",
                "share/man/man1/wirecheck-run.1",
                "lib/python3/dist-packages/wirecheck/plugin.py"):
        assert (prefix / rel).is_file(), rel
    assert list((prefix / "share/wirecheck/scenarios/queue").glob("*.golden"))


@needs_checkout
def test_no_installed_file_names_the_checkout(installed):
    prefix, site = installed[0], installed[1]
    needle = str(REPO).encode()
    trees = [prefix, site / "wirecheck"] + list(site.glob("wirecheck-*.dist-info"))
    named, linked = [], []
    for tree in trees:
        for path in tree.rglob("*"):
            if path.is_symlink():
                linked.append(f"{path} -> {os.readlink(path)}")
            elif path.is_file() and needle in path.read_bytes():
                named.append(str(path))
    assert not linked, "installed links (into the build or the checkout?): " + ", ".join(linked)
    assert not named, f"installed files that name {REPO}: " + ", ".join(named)


def test_the_version_is_one_everywhere(installed):
    out = run(installed, ["wirecheck", "--version"]).stdout.split()[-1]
    site = installed[1]
    meta = next(site.glob("wirecheck-*.dist-info")) / "METADATA"
    assert re.search(r"^Version: (\S+)$", meta.read_text(), re.M).group(1) == out
    if INSTALLED is None:
        pyproject = (REPO / "python" / "pyproject.toml").read_text()
        assert re.search(r'^version = "([^"]+)"', pyproject, re.M).group(1) == out
    assert run(installed, ["pkg-config", "--modversion", "wirecheck"]).stdout.strip() == out


def test_man_wirecheck_run_shows_the_flags_of_run(installed):
    prefix = installed[0]
    if shutil.which("man") is None:
        pytest.skip("man is not installed")
    proc = run(installed, ["man", "-P", "cat", "-M", str(prefix / "share" / "man"),
                           "wirecheck-run"])
    assert "--clamp-send" in proc.stdout and "wirecheck-run" in proc.stdout


def test_run_check_per_connection_and_sweep_a_new_scenario(installed):
    prefix, work = installed[0], installed[3]
    (work / "new.wcs").write_text(SCENARIO_ONE)
    run(installed, ["wirecheck", "check", "new.wcs"])
    trace = json.loads(run(installed, ["wirecheck", "run", "new.wcs", "--clamp-send", "7"]).stdout)
    assert trace["peer"]["bytes"] == 3000
    assert trace["exit"]["code"] == 0
    node = json.loads(run(installed, ["wirecheck", "run", "new.wcs", "--subject", "node"]).stdout
                      ) if shutil.which("node") else None
    assert node is None or node["peer"]["bytes"] == 3000
    per = run(installed, ["wirecheck", "per-connection",
                          str(prefix / "share/wirecheck/scenarios/half-open/per-connection.wcs"),
                          "--from", "2", "--to", "4"])
    assert per.stdout.strip()
    sweep = run(installed, ["wirecheck", "sweep", "new.wcs", "-k", "2"])
    assert "0 broke an invariant" in sweep.stdout + sweep.stderr
    script = run(installed, ["wirecheck-sweep", "new.wcs", "-k", "1"])
    assert "0 broke an invariant" in script.stdout + script.stderr
    explore = run(installed, ["wirecheck", "explore", "chunked", "--examples", "4",
                              "--per-batch", "4", "-q"])
    assert "chunked: 4 examples" in explore.stdout and "0 failures" in explore.stdout
    regression = prefix / "share/wirecheck/scenarios/chunked/try-final-empty-short.wcs"
    script = run(installed, ["wirecheck-explore", "--check", str(regression)])
    assert "ok (0 problems)" in script.stdout


def test_pytest_collects_a_folder_of_scenarios_with_no_options(installed):
    work = installed[3] / "suite"
    work.mkdir()
    (work / "one.wcs").write_text(SCENARIO_ONE)
    (work / "two.wcs").write_text(SCENARIO_TWO)
    made = run(installed, [PYTHON, "-m", "pytest", "-q", "--update-goldens"], cwd=work)
    assert "3 passed" in made.stdout
    assert sorted(p.name for p in work.glob("*.golden")) == [
        "one.clamp=1.golden", "one.clamp=7.golden", "two.golden"]
    compared = run(installed, [PYTHON, "-m", "pytest", "-q"], cwd=work)
    assert "3 passed" in compared.stdout
    # A golden that no longer matches fails: the goldens are compared.
    golden = work / "two.golden"
    golden.write_text(golden.read_text().replace("bytes=300", "bytes=301"))
    failed = run(installed, [PYTHON, "-m", "pytest", "-q"], ok=(1,), cwd=work)
    assert "1 failed, 2 passed" in failed.stdout
    # A conftest that names the plugin, as the checkout's does, does not
    # register it a second time.
    golden.write_text(golden.read_text().replace("bytes=301", "bytes=300"))
    (work / "conftest.py").write_text('pytest_plugins = ["wirecheck.plugin"]\n')
    again = run(installed, [PYTHON, "-m", "pytest", "-q", "-p", "wirecheck.plugin"], cwd=work)
    assert "3 passed" in again.stdout


def test_the_report_of_a_folder_of_scenarios_is_written_there(installed):
    """wirecheck-report with no options, in a folder of the user's: its
    scenarios, and reports/out in that folder (it once took the bundled
    suite's paths relative to the installed package, and wrote there)."""
    prefix, work = installed[0], installed[3] / "report"
    work.mkdir()
    for f in (prefix / "share/wirecheck/scenarios/queue").glob("epipe-prefix.*"):
        shutil.copy(f, work / f.name)
    before = sorted(p for p in prefix.rglob("*"))
    run(installed, ["wirecheck-report", "-q", "--no-bench"], cwd=work)
    report = (work / "reports" / "out" / "report.md").read_text()
    assert "epipe-prefix" in report
    assert sorted(p for p in prefix.rglob("*")) == before


def test_a_program_built_against_the_gate_runs_clamped(installed):
    work = installed[3] / "cprog"
    work.mkdir()
    shutil.copy(HERE / "gate_send.c", work / "gate_send.c")
    flags = run(installed, ["pkg-config", "--cflags", "--libs", "wirecheck"]).stdout.split()
    run(installed, ["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-o", "gate_send",
                    "gate_send.c", *flags], cwd=work)
    plain = run(installed, ["./gate_send"], cwd=work).stdout.split("\n")
    assert plain[:2] == ["sent 100", "calls 1"]
    proc = run(installed, ["wirecheck", "exec", "--clamp-send", "7", "--output", "report.json",
                           "--", "./gate_send"], cwd=work)
    lines = proc.stdout.split("\n")
    assert lines[:14] == ["sent 7"] * 14 and lines[14:16] == ["sent 2", "calls 15"]
    report = json.loads((work / "report.json").read_text())
    assert report["exit"]["code"] == 0


def test_the_prefix_console_scripts_run(installed):
    """The scripts `cmake --install` writes (the .deb's), each by its path:
    on PATH the venv's pip-made ones would come first."""
    prefix = installed[0]
    for tool in ("report", "sweep", "explore"):
        proc = run(installed, [str(prefix / "bin" / f"wirecheck-{tool}"), "--help"])
        assert "usage:" in proc.stdout, tool


# The node major that scenarios/subjects/node.differences was reviewed on
# (its first line): another major differs in other ways (docs/subjects.md,
# "node versions").
REVIEWED_NODE_MAJOR = "20"


def test_the_bundled_scenarios_pass_on_the_node_subject(installed):
    prefix = installed[0]
    if shutil.which("node") is None:
        pytest.skip("node is not installed (nodejs)")
    major = run(installed, ["node", "--version"]).stdout.strip().lstrip("v").split(".")[0]
    if major != REVIEWED_NODE_MAJOR:
        pytest.skip(f"node {major}: the bundled node.differences are reviewed on node "
                    f"{REVIEWED_NODE_MAJOR} (docs/subjects.md, \"node versions\")")
    scenarios = prefix / "share" / "wirecheck" / "scenarios"
    proc = run(installed, [PYTHON, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider",
                           str(scenarios), "--wirecheck-subject", "node"], timeout=1200)
    assert re.search(r"\d+ passed", proc.stdout), proc.stdout


@needs_checkout
def test_a_lone_binary_says_where_it_looked_for_the_package(tmp_path):
    """wirecheck found its Python package at ../../python (the checkout);
    now at its layout's lib/python3/dist-packages, and says so when it is
    not there."""
    (tmp_path / "bin").mkdir()
    shutil.copy(BUILD / "bin" / "wirecheck", tmp_path / "bin" / "wirecheck")
    proc = subprocess.run([str(tmp_path / "bin" / "wirecheck"), "sweep", "x.wcs"],
                          capture_output=True, text=True, cwd=tmp_path,
                          env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode == 3
    assert "the wirecheck Python package is not where" in proc.stderr
    assert str(tmp_path / "bin" / "../lib/python3/dist-packages/wirecheck/__init__.py") in proc.stderr
