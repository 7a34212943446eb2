"""What the pytest plugin keeps for one pytest session: the options as
read once (the binary, the subject, its differences file), the scenarios
collected (for stale goldens), the per-process caches of `wirecheck check`
and of differences files, and the commands a golden's header and a
failure give. Kept in the config's stash, so that pytester's sessions
inside a session stay apart."""
from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pytest

from . import differences as D
from . import record
from . import golden as G
from . import runner
from .verdicts import WirecheckFailure, shown

_TRUE = ("1", "true", "yes", "on")

NAMED_SUBJECTS = ("refstack", "node", "libuv", "bun", "node-upgrade", "bun-upgrade")

# The command a golden's header and a missing golden's message give, to be
# run from the rootdir: the plugin named (another project has no conftest
# that loads it) and Debian's python3 (docs/pytest-plugin.md).
REGENERATE = "/usr/bin/python3 -m pytest -p wirecheck.plugin {nodeid} --update-goldens"

# The folder that holds the wirecheck package (the repository's python/).
_PACKAGE_DIR = Path(__file__).resolve().parents[1]


@dataclass
class State:
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
    # --wirecheck-record DIR: where each run's trace goes (wirecheck.record)
    record: Optional[Path] = None
    # folders of collected scenarios (for stale goldens), and the metadata of
    # the scenarios collected in this process
    dirs: set = field(default_factory=set)
    metas: dict = field(default_factory=dict)
    written: list = field(default_factory=list)
    behaviours: set = field(default_factory=set)
    # differences files read in this process: path -> Differences, or the
    # DifferencesError that says why it cannot be used
    tables: dict = field(default_factory=dict)


STATE = pytest.StashKey[State]()


def state(config) -> State:
    return config.stash[STATE]


def is_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in _TRUE


# ------------------------------------------------------------ the options


def _given_path(config, value: str) -> Path:
    """An option's path, relative to where pytest was started."""
    path = Path(value)
    return path if path.is_absolute() else Path(config.invocation_params.dir) / path


def _read_subject(config, st: State) -> None:
    subject = config.getoption("wirecheck_subject")
    if subject in NAMED_SUBJECTS:
        st.subject = subject
        st.foreign = None if subject == "refstack" else subject
        return
    if subject is None:
        return
    st.foreign = Path(subject).stem
    path = _given_path(config, subject)
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise pytest.UsageError(f"--wirecheck-subject: not an executable: {path}")
    st.subject = str(path)


def _read_differences(config, st: State) -> None:
    given = config.getoption("wirecheck_differences")
    if given is None:
        return
    if st.foreign is None:
        raise pytest.UsageError("--wirecheck-differences FILE goes with --wirecheck-subject: "
                                "the reference stack's own items have no differences")
    path = _given_path(config, given)
    if path.is_dir() or not path.parent.is_dir():
        raise pytest.UsageError(f"--wirecheck-differences {given}: "
                                + ("a directory, not a file" if path.is_dir() else
                                   f"no directory {path.parent}"))
    st.differences = path


def _read_binary(config, st: State) -> None:
    explicit = config.getoption("wirecheck_bin")
    if explicit is not None:
        try:
            st.binary = runner.find_binary(_given_path(config, explicit))
        except FileNotFoundError as e:
            raise pytest.UsageError(f"--wirecheck-bin: {e}") from None
        return
    try:
        st.binary = runner.find_binary()
    except FileNotFoundError as e:
        # Only scenarios need it: report it on each one, at collection.
        st.binary_error = str(e)


def read_options(config) -> State:
    """The session's state from its options; pytest.UsageError for a
    value that cannot be used."""
    st = State(update=config.getoption("update_goldens"),
               repeat=config.getoption("wirecheck_repeat"),
               valgrind=config.getoption("valgrind"))
    if st.update and is_ci():
        raise pytest.UsageError(
            "--update-goldens refuses to write goldens when CI=true: a golden is a "
            "reviewed expectation, so it changes only in a commit whose diff a person "
            "read. Run --update-goldens locally and commit the golden diffs.")
    if st.repeat is not None and st.repeat < 1:
        raise pytest.UsageError(f"--wirecheck-repeat {st.repeat}: expected a count from 1")
    _read_subject(config, st)
    _read_differences(config, st)
    _read_binary(config, st)
    _read_record(config, st)
    return st


def _read_record(config, st: State) -> None:
    folder = config.getoption("wirecheck_record")
    if folder is None:
        return
    if st.subject or st.valgrind or st.repeat is not None:
        raise pytest.UsageError("--wirecheck-record records plain runs of the reference "
                                "stack: not with --wirecheck-subject, --valgrind or "
                                "--wirecheck-repeat")
    st.record = _given_path(config, folder)
    # The controller empties it once, before any worker writes (an xdist
    # worker has workerinput).
    if not hasattr(config, "workerinput"):
        try:
            record.clear(st.record)
            st.record.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise pytest.UsageError(f"--wirecheck-record {folder}: {e}") from None


# --------------------------------------------- the commands goldens give


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
        cmd += f" --wirecheck-bin={shlex.quote(str(binary))}"
    return cmd


def header_note(config) -> list[str]:
    """A golden header's extra line for a suite outside the repository."""
    if _package_outside(config):
        return ["(with wirecheck's python/ folder on PYTHONPATH: docs/pytest-plugin.md)"]
    return []


def golden_header(subject_line: str, nodeid: str, config) -> list[str]:
    """A golden's header: what it is the golden of, and how to rewrite it."""
    return [subject_line,
            "Only the trace's deterministic fields (docs/pytest-plugin.md). Do not edit:",
            f"regenerate with: {regenerate_command(nodeid)}",
            *header_note(config),
            "and review the diff line by line."]


# ------------------------------------------------ per-process caches


def meta(wcs: Path, st: State) -> Optional[dict]:
    """A scenario's metadata (`wirecheck check`), read once per process, or
    None when the scenario cannot be read (its collection says why)."""
    found = st.metas.get(str(wcs))
    if found is None:
        try:
            found = runner.check(shown(wcs), st.binary)
        except (runner.WirecheckError, OSError, ValueError):
            return None
        st.metas[str(wcs)] = found
    return found


def _profile_ids(wcs: Path, st: State) -> Optional[list]:
    """The matrix profile ids of a scenario ("" without a matrix), or None
    when the scenario cannot be read."""
    m = meta(wcs, st)
    return None if m is None else [p.id for p in runner.profiles(m)]


def differences_table(path: Path, root: Path, st: State) -> D.Differences:
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


# ------------------------------------------------------------ stale goldens


def _expected_goldens(wcs: Path, st: State):
    """The golden names a scenario produces, or None when it cannot be read."""
    m = meta(wcs, st)
    if m is None:
        return None
    return {G.golden_path(wcs, p.golden_suffix).name for p in runner.profiles(m)}


def stale_goldens(st: State) -> list[Path]:
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
