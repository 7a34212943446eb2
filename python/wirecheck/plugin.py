"""pytest plugin: every *.wcs scenario is a set of test items checked against
goldens beside it. See docs/pytest-plugin.md.

Installed (`pip install ./python`, or the .deb), pytest loads it by itself
through its pytest11 entry point. From a checkout: `-p wirecheck.plugin`
(PYTHONPATH=<wirecheck>/python), or `pytest_plugins = ["wirecheck.plugin"]`
in a root conftest.py.

This module only registers the options and wires the hooks: the nodes are
in items.py, the verdicts (hook-free) in verdicts.py, the session's state
in session.py, the sweep's and the explorer's items in sweep/ and explore/.
"""
from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Optional, Sequence

import pytest

from . import behaviours
from . import session as S
from .explore import pytest_items as explore_items
from .items import GoldenFixture, ScenarioFile, ScenarioItem
from .verdicts import shown


# ------------------------------------------------------------------ options


class _Group:
    """The plugin's option group, noting which options take a value (for
    space_form_problem)."""

    def __init__(self, group, valued: set):
        self._group = group
        self._valued = valued

    def addoption(self, *names, **kw):
        if kw.get("action") not in ("store_true", "store_false"):
            self._valued.update(n for n in names if n.startswith("--"))
        self._group.addoption(*names, **kw)


# Our options that take a value.
_VALUED: set = set()


def pytest_addoption(parser):
    group = _Group(parser.getgroup("wirecheck", "wirecheck scenarios (*.wcs) and their goldens"),
                   _VALUED)
    group.addoption("--update-goldens", action="store_true", default=False,
                    help="write the goldens of the fixed items that run (never the "
                         "legacy ones); refused when CI=true")
    group.addoption("--wirecheck-bin", metavar="PATH", default=None,
                    help="the wirecheck binary (default: $WIRECHECK_BIN, else "
                         "<repo>/build/bin/wirecheck in a checkout, else wirecheck on PATH). "
                         "Write it --wirecheck-bin=PATH (docs/pytest-plugin.md)")
    group.addoption("--wirecheck-subject", metavar="NAME|PATH", default=None,
                    help="the subject (wirecheck run --subject): refstack (the default), "
                         "node, libuv, bun, node-upgrade, bun-upgrade (each connection handed "
                         "off by an HTTP server's 'upgrade' listener), or a program's PATH. "
                         "Another subject than refstack "
                         "is compared with the reference goldens through its reviewed "
                         "differences file, subjects/NAME.differences (docs/subjects.md)")
    group.addoption("--wirecheck-subject-preload", action="store_true", default=False,
                    help="run the subject PATH with the gate preloaded "
                         "(wirecheck run --subject-preload)")
    group.addoption("--wirecheck-differences", metavar="FILE", default=None,
                    help="the subject's reviewed differences file, wherever it is (your own "
                         "repository), instead of subjects/NAME.differences beside the "
                         "scenarios; its keys are the same (docs/subjects.md)")
    group.addoption("--wirecheck-repeat", metavar="N", type=int, default=None,
                    help="run every scenario N times (wirecheck run --repeat N); "
                         "an item fails if two runs give different traces")
    group.addoption("--wirecheck-sweep", action="store_true", default=False,
                    help="instead of the goldens, sweep each scenario: fail each writing "
                         "call with each fault in turn and judge by invariants "
                         "(docs/sweeps.md); one item per cell, so -n and --tx spread them")
    group.addoption("--wirecheck-sweep-k", metavar="K", type=int, default=8,
                    help="--wirecheck-sweep: the calls swept, 1..K (default 8)")
    group.addoption("--wirecheck-sweep-bytes", metavar="B", type=int, default=3,
                    help="--wirecheck-sweep: B bytes of each of the first 2 connections' "
                         "streams, where both strategies meet the faults (default 3)")
    explore_items.add_options(group)
    group.addoption("--wirecheck-record", metavar="DIR", default=None,
                    help="write each scenario run's trace into DIR (emptied first), for "
                         "`python3 -m wirecheck.report --from-record DIR`, which then runs "
                         "no scenario again; plain runs only (the reference subject, no "
                         "--valgrind, no --wirecheck-repeat)")
    group.addoption("--valgrind", action="store_true", default=False,
                    help="run every subject under valgrind memcheck; memcheck "
                         "errors fail the item")


def space_form_problem(args: Sequence[str], valued, where: Path) -> Optional[str]:
    """Why an option of ours is given as `--option VALUE` where VALUE names
    an existing file or folder (relative to `where`), or None. pytest places
    its rootdir and reads its ini file from the paths on the command line
    before it loads a plugin, so it takes such a value for a path to test:
    the rootdir moves and the project's ini file can be lost
    (pytest-dev/pytest#8846). `--option=VALUE` is one argument, which
    pytest never takes for a path."""
    for opt, value in zip(args, args[1:]):
        if opt in valued and not value.startswith("-") and (where / value).exists():
            return (f"{opt} {value}: write {opt}={value}. pytest places its rootdir and reads "
                    f"its ini file before it loads the wirecheck plugin, so it takes a value "
                    f"after a space that names a file or folder for a path to test, and the "
                    f"rootdir and the ini file would be the wrong ones (pytest-dev/pytest#8846; "
                    f"docs/pytest-plugin.md)")
    return None


def pytest_configure(config):
    # The suite's behaviours (wirecheck.behaviours); any other behaviour a
    # scenario declares is registered when it is collected.
    for b in behaviours.BEHAVIOURS:
        config.addinivalue_line("markers", behaviours.marker_line(b))
    # The arguments pytest placed its rootdir with: PYTEST_ADDOPTS and the
    # command line (an ini file's addopts come after).
    args = shlex.split(os.environ.get("PYTEST_ADDOPTS", "")) + list(config.invocation_params.args)
    problem = space_form_problem([str(a) for a in args], _VALUED,
                                 Path(config.invocation_params.dir))
    if problem:
        raise pytest.UsageError(problem)
    config.stash[S.STATE] = S.read_options(config)
    config.pluginmanager.register(_SessionHooks(config), "wirecheck-session")


# --------------------------------------------------------------- collection


def pytest_collect_file(file_path: Path, parent):
    if file_path.suffix == ".wcs":
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


def pytest_collection_modifyitems(session, config, items):
    """--wirecheck-explore: the explorer's items instead of the others."""
    if not config.getoption("wirecheck_explore"):
        return
    st = S.state(config)
    if st.binary is None:
        raise pytest.UsageError(st.binary_error or "wirecheck binary not found")
    config.hook.pytest_deselected(items=list(items))
    items[:] = explore_items.items(session, config, st.binary, st.subject,
                                   config.getoption("wirecheck_subject_preload"))


@pytest.fixture
def wirecheck_golden(request) -> GoldenFixture:
    """Compare a trace with a golden in a test of one's own (GoldenFixture)."""
    return GoldenFixture(request)


# ------------------------------------------------------------ reporting


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if isinstance(item, ScenarioItem) and call.when == "call":
        rep = outcome.get_result()
        rep.wirecheck_golden = item.wirecheck_golden
        rep.wirecheck_golden_path = str(item.golden_path)
        rep.wirecheck_differs = item.wirecheck_differs


def pytest_report_teststatus(report, config):
    differs = getattr(report, "wirecheck_differs", None)
    if differs and report.when == "call" and report.passed:
        what = "explained differences" if S.state(config).foreign else "legacy differs"
        return "passed", ".", f"PASSED ({what}: {', '.join(differs)})"
    return None


class _SessionHooks:
    """The hooks that need the session's config (registered per config, so
    that pytester's sessions inside a session stay apart)."""

    def __init__(self, config):
        self.config = config

    def pytest_report_header(self, config):
        st = S.state(config)
        extra = []
        if st.update:
            extra.append("update-goldens")
        if st.repeat:
            extra.append(f"repeat={st.repeat}")
        if st.valgrind:
            extra.append("valgrind")
        if st.subject:
            extra.append(f"subject={st.subject}")
        if st.foreign:
            extra.append(f"differences: subjects/{st.foreign}.differences")
        where = st.binary if st.binary else f"NOT FOUND ({st.binary_error})"
        return [f"wirecheck: {where}" + (f" ({', '.join(extra)})" if extra else "")]

    def pytest_runtest_logreport(self, report):
        if getattr(report, "wirecheck_golden", None) == "written" and report.passed:
            S.state(self.config).written.append(report.wirecheck_golden_path)

    def pytest_sessionfinish(self, session):
        if hasattr(self.config, "workeroutput"):  # an xdist worker: tell the controller
            self.config.workeroutput["wirecheck_dirs"] = sorted(S.state(self.config).dirs)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        """xdist's controller: the scenario folders its workers collected."""
        out = getattr(node, "workeroutput", None) or {}
        S.state(self.config).dirs.update(out.get("wirecheck_dirs", ()))

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config):
        if hasattr(config, "workerinput"):
            return
        st = S.state(config)
        tr = terminalreporter
        if st.update:
            tr.section("wirecheck goldens")
            if st.written:
                tr.line(f"{len(st.written)} golden(s) written:")
                for p in sorted(st.written):
                    tr.line(f"  {shown(Path(p))}")
            else:
                tr.line("no golden written (every golden that ran was up to date)")
        if config.getoption("collectonly", False):
            return
        stale = S.stale_goldens(st)
        if stale:
            tr.section("wirecheck: stale goldens", yellow=True)
            tr.line(f"{len(stale)} golden(s) that no scenario produces any more "
                    "(a scenario, or a matrix value, went away); delete them:")
            for p in stale:
                tr.line(f"  stale golden: {shown(p)}")
