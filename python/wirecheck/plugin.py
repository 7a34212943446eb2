"""pytest plugin: every *.wcs scenario is a set of test items checked against
goldens beside it. See docs/pytest-plugin.md.

Installed (`pip install ./python`, or the .deb), pytest loads it by itself
through its pytest11 entry point. From a checkout: `-p wirecheck.plugin`
(PYTHONPATH=<wirecheck>/python), or `pytest_plugins = ["wirecheck.plugin"]`
in a root conftest.py.

A scenario collects as one item per matrix profile and variant:

    scenarios/queue/end-large.wcs::clamp=7::variant=fixed
    scenarios/queue/end-large.wcs::clamp=7::variant=legacy
    scenarios/queue/epipe-prefix.wcs::variant=fixed

Each matrix value is a collector level of its own (`clamp=7`), so that a node
id given on the command line selects exactly that item.
"""
from __future__ import annotations

import copy
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pytest

from . import behaviours
from . import differences as D
from . import golden as G
from . import runner
from . import sweep_pytest
from .explore import pytest_items as explore_items

_TRUE = ("1", "true", "yes", "on")

# The command a golden's header and a missing golden's message give, to be
# run from the rootdir: the plugin named (another project has no conftest
# that loads it) and Debian's python3 (docs/pytest-plugin.md).
REGENERATE = "/usr/bin/python3 -m pytest -p wirecheck.plugin {nodeid} --update-goldens"
# Our options that take a value (see _replace_rootdir).
_VALUE_OPTIONS = ("--wirecheck-bin", "--wirecheck-subject", "--wirecheck-repeat")


# The folder that holds the wirecheck package (the repository's python/).
_PACKAGE_DIR = Path(__file__).resolve().parents[1]


def regenerate_command(nodeid: str) -> str:
    """The command that rewrites the golden of a test, from the rootdir, as
    a golden's header gives it: the same on every machine."""
    return REGENERATE.format(nodeid=shlex.quote(nodeid))


def _package_outside(config) -> bool:
    """True when the wirecheck package is a checkout's python/ folder that
    is not under the rootdir (another project's suite): python3 finds it
    only through PYTHONPATH. An installed package needs nothing."""
    if _PACKAGE_DIR.name in ("site-packages", "dist-packages"):
        return False
    root = Path(str(config.rootpath)).resolve()
    return not _PACKAGE_DIR.is_relative_to(root)


def regenerate_hint(nodeid: str, config) -> str:
    """The command a failure message gives, to paste as it is: with
    PYTHONPATH set when the package is outside the rootdir, and the
    --wirecheck-bin of this run."""
    cmd = regenerate_command(nodeid)
    if _package_outside(config):
        cmd = f"PYTHONPATH={shlex.quote(str(_PACKAGE_DIR))} {cmd}"
    binary = config.getoption("wirecheck_bin")
    if binary:
        cmd += f" --wirecheck-bin {shlex.quote(str(binary))}"
    return cmd


def header_note(config) -> list[str]:
    """A golden header's extra line for a suite outside the repository."""
    if _package_outside(config):
        return ["(with wirecheck's python/ folder on PYTHONPATH: docs/pytest-plugin.md)"]
    return []


def obtained_path(golden: Path) -> Path:
    """Where a failed comparison writes the run's trace beside its golden,
    in the golden's format, for a diff tool: x.golden -> x.obtained
    (ignored by git)."""
    return golden.with_suffix(".obtained")


def write_obtained(golden: Path, actual: G.Golden, header: list[str]) -> Path:
    """Writes the obtained trace beside the golden; returns its path."""
    path = obtained_path(golden)
    G.write(path, G.render(actual, header=header))
    return path


def drop_obtained(golden: Path) -> None:
    """Removes the obtained trace of an earlier failure, once the run
    matches its golden again (or the golden is rewritten)."""
    try:
        obtained_path(golden).unlink()
    except FileNotFoundError:
        pass


class WirecheckFailure(Exception):
    """An item's failure; its message is the whole report."""


class _Crash:
    def __init__(self, message: str):
        self.message = message


class _FailureRepr:
    """A failure's report: the text as it is, and its first line for the
    short test summary and JUnit's failure message."""

    def __init__(self, text: str):
        self.text = text
        self.reprcrash = _Crash(text.splitlines()[0] if text else "failed")

    def toterminal(self, tw) -> None:
        for line in self.text.splitlines():
            tw.line(line)

    def __str__(self) -> str:
        return self.text


@dataclass
class _State:
    binary: Optional[Path] = None
    binary_error: Optional[str] = None
    update: bool = False
    repeat: Optional[int] = None
    valgrind: bool = False
    subject: Optional[str] = None
    # a foreign subject (node, libuv, a PATH): its name, for its reviewed
    # differences file (subjects/NAME.differences, docs/subjects.md)
    foreign: Optional[str] = None
    # --wirecheck-differences FILE: the foreign subject's file, wherever it is
    differences: Optional[Path] = None
    # folders of collected scenarios (for stale goldens), and the metadata of
    # the scenarios collected in this process
    dirs: set = field(default_factory=set)
    metas: dict = field(default_factory=dict)
    written: list = field(default_factory=list)
    behaviours: set = field(default_factory=set)
    # differences files read in this process: path -> Differences, or the
    # DifferencesError that says why it cannot be used
    tables: dict = field(default_factory=dict)


_STATE = pytest.StashKey[_State]()


def _state(config) -> _State:
    return config.stash[_STATE]


def _is_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in _TRUE


# ------------------------------------------------------------------ options


def pytest_addoption(parser):
    group = parser.getgroup("wirecheck", "wirecheck scenarios (*.wcs) and their goldens")
    group.addoption("--update-goldens", action="store_true", default=False,
                    help="write the goldens of the fixed items that run (never the "
                         "legacy ones); refused when CI=true")
    group.addoption("--wirecheck-bin", metavar="PATH", default=None,
                    help="the wirecheck binary (default: $WIRECHECK_BIN, else "
                         "<repo>/build/bin/wirecheck in a checkout, else wirecheck on PATH)")
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
    group.addoption("--valgrind", action="store_true", default=False,
                    help="run every subject under valgrind memcheck; memcheck "
                         "errors fail the item")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    _replace_rootdir(early_config, parser, args)


def _replace_rootdir(config, parser, args) -> None:
    """pytest places the rootdir and finds its ini file before it loads a
    plugin named by -p, so the value of `--wirecheck-bin /abs/path` (space
    form) is taken for a path to test and moves the rootdir, and the ini
    file is lost (pytest-dev/pytest#8846; the `=` form is not affected).
    Once our options are known, place them again as pytest does, from the
    same arguments without our options' values. pytest offers no public way
    to do it: the attributes are those its own _initini sets, and with
    another pytest this does nothing."""
    if not any(a in _VALUE_OPTIONS for a in args):
        return
    try:
        from _pytest.config.findpaths import determine_setup
        ns, unknown = parser.parse_known_and_unknown_args(args, namespace=copy.copy(config.option))
        rootpath, inipath, inicfg = determine_setup(
            ns.inifilename, ns.file_or_dir + unknown, rootdir_cmd_arg=ns.rootdir or None,
            config=config)
    except (ImportError, TypeError, AttributeError):
        return
    if rootpath == config.rootpath or not hasattr(config, "_rootpath"):
        return
    old_ini = config.inipath
    config._rootpath, config._inipath, config.inicfg = rootpath, inipath, inicfg
    parser.extra_info["rootdir"] = str(rootpath)
    parser.extra_info["inifile"] = str(inipath)
    known = config.known_args_namespace
    if ns.confcutdir is None:
        known.confcutdir = str(inipath.parent) if inipath is not None else None
    if inipath != old_ini and inipath is not None:
        # The ini file pytest did not find: its addopts, before the
        # command line's (as pytest puts them). A -p in them comes too late.
        addopts = inicfg.get("addopts") or []
        if isinstance(addopts, str):
            addopts = shlex.split(addopts)
        args[:] = list(addopts) + args


def pytest_configure(config):
    # The suite's behaviours (wirecheck.behaviours); any other behaviour a
    # scenario declares is registered when it is collected.
    for b in behaviours.BEHAVIOURS:
        config.addinivalue_line("markers", behaviours.marker_line(b))
    st = _State(update=config.getoption("update_goldens"),
                repeat=config.getoption("wirecheck_repeat"),
                valgrind=config.getoption("valgrind"))
    config.stash[_STATE] = st
    config.pluginmanager.register(_SessionHooks(config), "wirecheck-session")
    if st.update and _is_ci():
        raise pytest.UsageError(
            "--update-goldens refuses to write goldens when CI=true: a golden is a "
            "reviewed expectation, so it changes only in a commit whose diff a person "
            "read. Run --update-goldens locally and commit the golden diffs.")
    if st.repeat is not None and st.repeat < 1:
        raise pytest.UsageError(f"--wirecheck-repeat {st.repeat}: expected a count from 1")
    subject = config.getoption("wirecheck_subject")
    if subject in _NAMED_SUBJECTS:
        st.subject = subject
        st.foreign = None if subject == "refstack" else subject
        subject = None
    elif subject is not None:
        st.foreign = Path(subject).stem
    if subject is not None:
        path = Path(subject)
        if not path.is_absolute():
            path = Path(config.invocation_params.dir) / path
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise pytest.UsageError(f"--wirecheck-subject: not an executable: {path}")
        st.subject = str(path)
    given = config.getoption("wirecheck_differences")
    if given is not None:
        if st.foreign is None:
            raise pytest.UsageError("--wirecheck-differences FILE goes with --wirecheck-subject: "
                                    "the reference stack's own items have no differences")
        path = Path(given)
        if not path.is_absolute():
            path = Path(config.invocation_params.dir) / path
        if path.is_dir() or not path.parent.is_dir():
            raise pytest.UsageError(f"--wirecheck-differences {given}: "
                                    + ("a directory, not a file" if path.is_dir() else
                                       f"no directory {path.parent}"))
        st.differences = path
    explicit = config.getoption("wirecheck_bin")
    if explicit is not None:
        path = Path(explicit)
        if not path.is_absolute():
            path = Path(config.invocation_params.dir) / path
        try:
            st.binary = runner.find_binary(path)
        except FileNotFoundError as e:
            raise pytest.UsageError(f"--wirecheck-bin: {e}") from None
    else:
        try:
            st.binary = runner.find_binary()
        except FileNotFoundError as e:
            # Only scenarios need it: report it on each one, at collection.
            st.binary_error = str(e)


# --------------------------------------------------------------- collection


def pytest_collection_modifyitems(session, config, items):
    """--wirecheck-explore: the explorer's items instead of the others."""
    if not config.getoption("wirecheck_explore"):
        return
    st = _state(config)
    if st.binary is None:
        raise pytest.UsageError(st.binary_error or "wirecheck binary not found")
    config.hook.pytest_deselected(items=list(items))
    items[:] = explore_items.items(session, config, st.binary, st.subject,
                                   config.getoption("wirecheck_subject_preload"))


_NAMED_SUBJECTS = ("refstack", "node", "libuv", "bun", "node-upgrade", "bun-upgrade")


def pytest_collect_file(file_path: Path, parent):
    if file_path.suffix == ".wcs":
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


def _shown(path: Path) -> str:
    """A path as short as it can be: relative to the working folder when
    it is below it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


class ScenarioFile(pytest.File):
    """A scenario file: its items, one per profile x variant."""

    def collect(self):
        config = self.config
        st = _state(config)
        if st.binary is None:
            raise self.CollectError(f"wirecheck: {st.binary_error}")
        try:
            meta = runner.check(_shown(self.path), st.binary)
        except runner.WirecheckError as e:
            raise self.CollectError(str(e)) from None
        st.dirs.add(str(self.path.parent))
        st.metas[str(self.path)] = meta
        behaviour = meta.get("behaviour")
        if behaviour and behaviour not in st.behaviours:
            st.behaviours.add(behaviour)
            if behaviours.get(behaviour) is None:
                config.addinivalue_line("markers", f"{behaviour}: wirecheck scenarios of behaviour {behaviour}")
        if config.getoption("wirecheck_sweep"):
            yield from sweep_pytest.collect(self, meta, _shown(self.path), binary=st.binary,
                                            valgrind=st.valgrind,
                                            k_max=config.getoption("wirecheck_sweep_k"))
            return
        profiles = runner.profiles(meta)
        yield from _children(self, meta, profiles, 0)


def _children(parent, meta, profiles, depth):
    """Collectors for the matrix level `depth`, or the items when every key
    is placed."""
    if all(len(p.values) == depth for p in profiles):
        profile = profiles[0]
        yield ScenarioItem.from_parent(parent, name="variant=fixed", meta=meta,
                                       profile=profile, variant="fixed")
        if meta.get("legacy"):
            yield ScenarioItem.from_parent(parent, name="variant=legacy", meta=meta,
                                           profile=profile, variant="legacy")
        return
    groups: dict = {}
    for p in profiles:
        groups.setdefault(p.values[depth], []).append(p)
    for (key, value), members in groups.items():
        yield ProfileNode.from_parent(parent, name=f"{key}={value}", meta=meta,
                                      profiles=members, depth=depth + 1)


class ProfileNode(pytest.Collector):
    """One value of a matrix axis (`clamp=7`)."""

    def __init__(self, *, meta, profiles, depth, **kw):
        super().__init__(**kw)
        self.meta = meta
        self.profiles = profiles
        self.depth = depth

    def collect(self):
        return list(_children(self, self.meta, self.profiles, self.depth))


def check_golden(golden_path: Path, actual: G.Golden, *, update: bool, header: list[str],
                 missing: str) -> tuple[str, Optional[str]]:
    """Compares a run with its golden, or writes the golden (update).

    Returns (status, report): with update, "written" (report: the changes
    from the old golden, None without one) or "unchanged" (same content: the
    file is left byte for byte as it is, comments and all); without update,
    "passed". A mismatch raises WirecheckFailure with the differences and
    writes the obtained trace beside the golden (obtained_path); a missing
    golden raises WirecheckFailure(missing). A match removes an old
    obtained trace."""
    shown = _shown(golden_path)
    if update:
        old = None
        if golden_path.exists():
            try:
                old = G.parse(golden_path.read_bytes(), shown)
            except G.GoldenError:
                old = None
        drop_obtained(golden_path)
        if old is not None and old == actual:
            return "unchanged", None
        golden_path.parent.mkdir(parents=True, exist_ok=True)
        G.write(golden_path, G.render(actual, header=header))
        if old is None:
            return "written", None
        return "written", f"updated {shown}:\n\n" + G.report(G.compare(old, actual))
    if not golden_path.exists():
        raise WirecheckFailure(missing)
    try:
        golden = G.parse(golden_path.read_bytes(), shown)
    except G.GoldenError as e:
        raise WirecheckFailure(f"the golden cannot be read: {e}") from None
    diffs = G.compare(golden, actual)
    if diffs:
        obtained = write_obtained(golden_path, actual, header)
        raise WirecheckFailure(f"the trace differs from the golden {shown}\n"
                               f"(the run's trace is in {_shown(obtained)}: diff {shown} "
                               f"{_shown(obtained)})\n\n" + G.report(diffs))
    drop_obtained(golden_path)
    return "passed", None


# The progress lines of `wirecheck run --repeat`.
_PROGRESS = re.compile(r"wirecheck: .*: run [0-9]+/[0-9]+")
STDERR_TAIL = 40


def stderr_tail(stderr: str, lines: int = STDERR_TAIL) -> str:
    """The last lines of wirecheck's stderr (a foreign subject's own stderr
    goes there: its traceback, the harness's warnings about it), without
    --repeat's progress, as a failure report shows them."""
    kept = [l for l in stderr.splitlines() if not _PROGRESS.fullmatch(l)]
    while kept and not kept[-1].strip():
        kept.pop()
    if not kept:
        return "wirecheck's stderr: (empty)"
    head = (f"wirecheck's stderr, its last {lines} of {len(kept)} lines:" if len(kept) > lines
            else "wirecheck's stderr:")
    return head + "\n" + "\n".join(kept[-lines:])


def unclean_exit(ex: dict) -> Optional[str]:
    """How a subject's run did not end cleanly (timed out, killed by a
    signal, stopped with a fatal error, a non-zero status), as a sentence's
    end; None for a clean exit (status 0)."""
    if ex.get("timed_out"):
        return f"timed out (killed with {ex.get('signal', 'a signal')})"
    if ex.get("signal"):
        return f"was killed by {ex['signal']}"
    if ex.get("error"):
        return f"stopped with a fatal error: {ex['error']}"
    if ex.get("code", 0) != 0:
        return f"exited with status {ex['code']}"
    return None


def _meta(wcs: Path, st: _State) -> Optional[dict]:
    """A scenario's metadata (`wirecheck check`), read once per process, or
    None when the scenario cannot be read (its collection says why)."""
    meta = st.metas.get(str(wcs))
    if meta is None:
        try:
            meta = runner.check(_shown(wcs), st.binary)
        except (runner.WirecheckError, OSError, ValueError):
            return None
        st.metas[str(wcs)] = meta
    return meta


def _profile_ids(wcs: Path, st: _State) -> Optional[list]:
    """The matrix profile ids of a scenario ("" without a matrix), or None
    when the scenario cannot be read."""
    meta = _meta(wcs, st)
    return None if meta is None else [p.id for p in runner.profiles(meta)]


def _differences(path: Path, root: Path, st: _State) -> D.Differences:
    """A subject's differences file, read and checked once per process:
    each entry must name an existing scenario below root and one of its
    profiles."""
    key = f"{path}\0{root}"
    if key not in st.tables:
        try:
            table = D.load(path)
            D.check_scenarios(table, lambda wcs: _profile_ids(wcs, st), root)
            st.tables[key] = table
        except D.DifferencesError as e:
            st.tables[key] = e
    table = st.tables[key]
    if isinstance(table, D.DifferencesError):
        raise WirecheckFailure(f"the differences file cannot be read: {table}")
    return table


class ScenarioItem(pytest.Item):
    """One run of a scenario under one profile and variant, compared with
    the profile's golden."""

    def __init__(self, *, meta, profile, variant, **kw):
        super().__init__(**kw)
        self.meta = meta
        self.profile = profile
        self.variant = variant
        legacy = meta.get("legacy") or {}
        self.legacy_variant = legacy.get("variant")
        self.must_differ = bool(legacy.get("must_differ"))
        # must-match ... except=syscalls: sections a strategy changes by
        # design (batching changes syscall counts), left out of the match.
        self.legacy_except = tuple(legacy.get("except") or ())
        self.golden_path = G.golden_path(self.path, profile.golden_suffix)
        self.wirecheck_golden: Optional[str] = None  # written / unchanged
        self.wirecheck_differs: Optional[list] = None
        # wirecheck's stderr of the last run (a foreign subject's own stderr
        # goes there), for the report of a failure
        self.wirecheck_stderr: Optional[str] = None
        behaviour = meta.get("behaviour")
        if behaviour:
            self.add_marker(behaviour)

    # -- helpers

    @property
    def fixed_nodeid(self) -> str:
        return re.sub(r"variant=legacy$", "variant=fixed", self.nodeid)

    def _hint(self) -> str:
        return (f"no golden: run {regenerate_hint(self.fixed_nodeid, self.config)}\n"
                f"(expected {_shown(self.golden_path)})")

    def _header(self) -> list[str]:
        prof = self.profile.id or "(no matrix)"
        return [
            f"wirecheck golden of scenario {self.meta.get('name')} ({_shown(self.path)}), "
            f"profile {prof}, variant fixed.",
            "Only the trace's deterministic fields (docs/pytest-plugin.md). Do not edit:",
            f"regenerate with: {regenerate_command(self.fixed_nodeid)}",
            *header_note(self.config),
            "and review the diff line by line.",
        ]

    def _run(self, variants) -> dict:
        st = _state(self.config)
        try:
            flags = list(self.profile.flags)
            if st.subject:
                flags += ["--subject", st.subject]
            if st.subject and self.config.getoption("wirecheck_subject_preload"):
                flags.append("--subject-preload")
            trace, stderr = runner.run_capture(
                _shown(self.path), flags, variants=variants,
                repeat=st.repeat, valgrind=st.valgrind, binary=st.binary)
        except runner.NotATrace as e:
            begins = next((l for l in e.stdout.splitlines() if l.strip()), "")
            raise WirecheckFailure(
                f"{e}: the trace cannot be read (its output begins {begins[:200]!r}; "
                f"did the subject write on its stdout?)\n\n{stderr_tail(e.stderr)}\n"
                f"command: {shlex.join(e.argv)}") from None
        except runner.WirecheckError as e:
            msg = "\n".join(l for l in e.stderr.splitlines() if not _PROGRESS.fullmatch(l))
            what = ("the runs differ (--wirecheck-repeat): the scenario is not deterministic"
                    if e.returncode == 1 else f"wirecheck run failed (exit {e.returncode})")
            raise WirecheckFailure(f"{what}\n{msg.strip()}\ncommand: {shlex.join(e.argv)}") from None
        if st.valgrind:
            ex = trace.get("exit", {})
            verdict = ex.get("valgrind")
            if verdict is None:
                self.add_report_section("call", "wirecheck valgrind",
                                        f"no memcheck verdict: the subject did not exit "
                                        f"({G.exit_text({k: ex[k] for k in G.EXIT_KEYS if k in ex})})")
            elif verdict != "clean":
                raise WirecheckFailure(
                    f"valgrind: memcheck found errors in the subject (exit.valgrind = {verdict!r}"
                    f"{', variant ' + ' '.join(variants) if variants else ''})\n\n{stderr.strip()}")
        self.wirecheck_stderr = stderr
        return trace

    def _load_golden(self) -> G.Golden:
        try:
            return G.parse(self.golden_path.read_bytes(), _shown(self.golden_path))
        except G.GoldenError as e:
            raise WirecheckFailure(f"the golden cannot be read: {e}") from None

    # -- pytest

    def runtest(self):
        st = _state(self.config)
        if st.foreign:
            try:
                self._run_foreign(st)
            except WirecheckFailure:
                # What the subject and the harness said, whatever the failure.
                if self.wirecheck_stderr and self.wirecheck_stderr.strip():
                    self.add_report_section("call", "wirecheck stderr",
                                            stderr_tail(self.wirecheck_stderr))
                raise
        elif self.variant == "fixed":
            self._run_fixed(st)
        else:
            self._run_legacy(st)

    def _run_fixed(self, st: _State):
        actual = G.from_trace(self._run([]))
        status, section = check_golden(self.golden_path, actual, update=st.update,
                                       header=self._header(), missing=self._hint())
        self.wirecheck_golden = status if st.update else None
        if section:
            self.add_report_section("call", "wirecheck golden", section)

    def _run_legacy(self, st: _State):
        actual = G.from_trace(self._run([self.legacy_variant]))
        if st.update:
            # The golden is being rewritten in this session: compare with
            # what it will hold, whatever order (or worker) the items run in.
            reference = G.from_trace(self._run([]))
            against = f"the fixed run (the golden --update-goldens writes, {_shown(self.golden_path)})"
        else:
            if not self.golden_path.exists():
                raise WirecheckFailure(self._hint())
            reference = self._load_golden()
            against = f"the golden {_shown(self.golden_path)}"
        diffs = G.compare(reference, actual)
        rule = f"legacy {self.legacy_variant} {'must-differ' if self.must_differ else 'must-match'}"
        if self.legacy_except:
            rule += " except=" + ",".join(self.legacy_except)
            excepted = [d for d in diffs if d.field.split()[0] in self.legacy_except]
            diffs = [d for d in diffs if d.field.split()[0] not in self.legacy_except]
            if excepted:
                self.add_report_section("call", "wirecheck legacy",
                                        f"{rule}: sections left out of the match differ:\n\n"
                                        + G.report(excepted))
        if self.must_differ:
            if not diffs:
                raise WirecheckFailure(
                    f"the legacy strategy gives the same trace as the fixed one: the suite "
                    f"cannot tell them apart.\nThe scenario declares '{rule}', but the run with "
                    f"--variant {self.legacy_variant} matches {against} in every field "
                    f"(exit, faults, peer, events, syscalls, queue).")
            self.wirecheck_differs = sorted({d.field for d in diffs})
            self.add_report_section("call", "wirecheck legacy",
                                    f"{rule}: the legacy run differs from {against}, as it must:\n\n"
                                    + G.report(diffs))
        elif diffs:
            raise WirecheckFailure(
                f"the scenario declares '{rule}', but the run with --variant "
                f"{self.legacy_variant} differs from {against}\n\n" + G.report(diffs))

    def _run_foreign(self, st: _State):
        """Another stack against the reference golden: every difference must
        be in the subject's reviewed differences file (differences.py)."""
        if self.variant != "fixed":
            pytest.skip(f"{self.legacy_variant} is a strategy of the reference stack; "
                        f"subject {st.foreign} runs the fixed items only")
        if st.update:
            pytest.skip(f"--update-goldens writes the reference stack's goldens: "
                        f"not with subject {st.foreign}")
        path, key = D.find_file(Path(self.path), st.foreign)
        root = path.parent.parent
        if st.differences is not None:
            path = st.differences
        if self.profile.id:
            key += "::" + self.profile.id
        table = _differences(path, root, st)
        trace = self._run([])
        error = (trace.get("exit") or {}).get("error") or ""
        if error.startswith("unsupported "):
            pytest.skip(f"subject {st.foreign}: {error}")
        actual = G.from_trace(trace)
        if not self.golden_path.exists():
            raise WirecheckFailure(self._hint())
        golden = self._load_golden()
        stopped = unclean_exit(actual.exit)
        if stopped and unclean_exit(golden.exit) is None:
            # Not the stack's behaviour but a subject that did not finish the
            # scenario: a line in the differences file would hide it.
            tail, self.wirecheck_stderr = stderr_tail(self.wirecheck_stderr or ""), None
            raise WirecheckFailure(
                f"subject {st.foreign} {stopped}, where the reference stack ends the scenario "
                f"cleanly (golden {_shown(self.golden_path)}: exit {G.exit_text(golden.exit)}).\n"
                f"The subject did not finish the scenario: that is not a difference to record in "
                f"{_shown(path)}; fix the subject.\n\n{tail}")
        verdict = D.judge(G.compare(golden, actual), actual, table, key)
        self.wirecheck_differs = sorted({e.field for _, e in verdict.explained})
        if verdict.explained:
            self.add_report_section("call", f"wirecheck {st.foreign}", "\n\n".join(
                f"{d.text}\n  explained ({_shown(path)}:{e.line}): {e.reason}"
                for d, e in verdict.explained))
        problems = []
        if verdict.unexplained:
            lines = sorted({f"{key} {fld} {fp} REASON" for _, fld, fp in verdict.unexplained})
            problems.append(
                f"subject {st.foreign} differs from the golden {_shown(self.golden_path)} in a way "
                f"{_shown(path)} does not explain"
                + ("" if path.exists() else " (there is no such file yet: create it)")
                + ".\nRead the difference, then add a line "
                "with its reason:\n" + "\n".join(f"  {l}" for l in lines) + "\n\n"
                + G.report(d for d, _, _ in verdict.unexplained))
        if verdict.stale:
            problems.append(
                f"{_shown(path)} lists differences that subject {st.foreign} no longer shows "
                f"here; remove them:\n" + "\n".join(
                    f"  line {e.line}: {e.scenario} {e.field} {e.fingerprint}" for e in verdict.stale))
        if problems:
            raise WirecheckFailure("\n\n".join(problems))

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, WirecheckFailure):
            return _FailureRepr(str(excinfo.value))
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, None, f"{self.nodeid} (scenario {self.meta.get('name')})"


# ------------------------------------------------------ the golden fixture


class GoldenFixture:
    """The `wirecheck_golden` fixture: compares a trace made in a test of
    one's own (wirecheck.api, wirecheck.runner) with a golden, as a scenario
    item does (docs/pytest-plugin.md):

        def test_mine(wirecheck_golden):
            trace = Scenario().task().end("hi", cb=True).run()
            wirecheck_golden(trace)                       # goldens/test_mine.golden
            wirecheck_golden(other, "goldens/other.golden")  # beside the test file

    --update-goldens writes the golden instead (refused when CI=true); a
    mismatch fails the test with the differences and writes the trace beside
    the golden (NAME.obtained)."""

    def __init__(self, request):
        self._request = request
        self._used: set = set()

    def default_path(self) -> Path:
        """goldens/<test name>.golden beside the test's file."""
        node = self._request.node
        return Path(node.path).parent / "goldens" / (_file_name(node.name) + ".golden")

    def __call__(self, trace: dict, path=None) -> Path:
        node = self._request.node
        problem = not_a_run_trace(trace)
        if problem:
            pytest.fail(f"wirecheck_golden: {problem}", pytrace=False)
        golden = Path(path) if path is not None else self.default_path()
        if not golden.is_absolute():
            golden = Path(node.path).parent / golden
        if golden in self._used:
            raise WirecheckFailure(f"wirecheck_golden: {_shown(golden)} is used twice in "
                                   f"{node.nodeid}: give each trace its own path")
        self._used.add(golden)
        header = [f"wirecheck golden of test {node.nodeid}.",
                  "Only the trace's deterministic fields (docs/pytest-plugin.md). Do not edit:",
                  f"regenerate with: {regenerate_command(node.nodeid)}",
                  *header_note(self._request.config),
                  "and review the diff line by line."]
        st = _state(self._request.config)
        try:
            status, section = check_golden(
                golden, G.from_trace(trace), update=st.update, header=header,
                missing=f"no golden: run {regenerate_hint(node.nodeid, self._request.config)}\n"
                        f"(expected {_shown(golden)})")
        except WirecheckFailure as e:
            failure = str(e)
        else:
            failure = None
        if failure is not None:  # outside the except: pytest would show the message twice
            pytest.fail(failure, pytrace=False)
        if status == "written":
            st.written.append(str(golden))
        if section:
            print(section)
        return golden


def not_a_run_trace(trace) -> str | None:
    """Why trace is not what a golden holds, a `wirecheck run` trace (a
    dict with its events and syscalls), or None when it is. A `wirecheck
    exec` report has neither: its golden would hold an exit and nothing
    else, and pass whatever the program sent."""
    what = type(trace).__name__
    if hasattr(trace, "report") and hasattr(trace, "counts"):
        return (f"got an {what} (wirecheck.exec_program's result), not a `wirecheck run` "
                "trace: a golden holds a run trace's events, syscalls and peer bytes. "
                "Assert on the exec report's own fields instead (.calls(kind), .counts, "
                ".exit; docs/pytest-plugin.md, \"Programs not built against the gate\")")
    if not isinstance(trace, dict):
        return f"got a {what}, not a `wirecheck run` trace (a dict, as Scenario.run() returns)"
    if "counts" in trace and "syscalls" not in trace:
        return ("got a `wirecheck exec` report (it has `counts`), not a `wirecheck run` "
                "trace: a golden holds a run trace's events, syscalls and peer bytes. "
                "Assert on the exec report's own fields instead (docs/pytest-plugin.md, "
                "\"Programs not built against the gate\")")
    missing = [k for k in ("events", "syscalls") if k not in trace]
    if missing:
        return (f"not a `wirecheck run` trace: it has no {' and no '.join(missing)} "
                f"(its keys: {', '.join(sorted(map(str, trace))) or 'none'})")
    return None


def _file_name(name: str) -> str:
    """A test's name as a file name: test_x[a/b] -> test_x_a_b_."""
    return re.sub(r"[^A-Za-z0-9._=+-]", "_", name)


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
        what = "explained differences" if _state(config).foreign else "legacy differs"
        return "passed", ".", f"PASSED ({what}: {', '.join(differs)})"
    return None


def _expected_goldens(wcs: Path, st: _State):
    """The golden names a scenario produces, or None when it cannot be read."""
    meta = _meta(wcs, st)
    if meta is None:
        return None
    return {G.golden_path(wcs, p.golden_suffix).name for p in runner.profiles(meta)}


def stale_goldens(st: _State) -> list[Path]:
    """Goldens in the folders of the collected scenarios that no scenario of
    that folder produces (a scenario or a matrix value that went away)."""
    stale = []
    if st.binary is None:
        return stale
    for d in sorted(st.dirs):
        folder = Path(d)
        expected: set = set()
        unreadable: list = []
        for wcs in sorted(folder.glob("*.wcs")):
            names = _expected_goldens(wcs, st)
            if names is None:
                unreadable.append(wcs.stem)
            else:
                expected |= names
        for g in sorted(folder.glob("*.golden")):
            if g.name in expected:
                continue
            # A malformed scenario's goldens are not called stale: it may be
            # fixed, and the collection error already says it.
            if any(g.name == f"{s}.golden" or g.name.startswith(f"{s}.") for s in unreadable):
                continue
            stale.append(g)
    return stale


class _SessionHooks:
    """The hooks that need the session's config (registered per config, so
    that pytester's sessions inside a session stay apart)."""

    def __init__(self, config):
        self.config = config

    def pytest_report_header(self, config):
        st = _state(config)
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
            _state(self.config).written.append(report.wirecheck_golden_path)

    def pytest_sessionfinish(self, session):
        if hasattr(self.config, "workeroutput"):  # an xdist worker: tell the controller
            self.config.workeroutput["wirecheck_dirs"] = sorted(_state(self.config).dirs)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        """xdist's controller: the scenario folders its workers collected."""
        out = getattr(node, "workeroutput", None) or {}
        _state(self.config).dirs.update(out.get("wirecheck_dirs", ()))

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config):
        if hasattr(config, "workerinput"):
            return
        st = _state(config)
        tr = terminalreporter
        if st.update:
            tr.section("wirecheck goldens")
            if st.written:
                tr.line(f"{len(st.written)} golden(s) written:")
                for p in sorted(st.written):
                    tr.line(f"  {_shown(Path(p))}")
            else:
                tr.line("no golden written (every golden that ran was up to date)")
        if config.getoption("collectonly", False):
            return
        stale = stale_goldens(st)
        if stale:
            tr.section("wirecheck: stale goldens", yellow=True)
            tr.line(f"{len(stale)} golden(s) that no scenario produces any more "
                    "(a scenario, or a matrix value, went away); delete them:")
            for p in stale:
                tr.line(f"  stale golden: {_shown(p)}")
