"""Fixtures of the end-to-end suite: where the binaries are, and how to run one.

The suite runs the real `wirecheck` (env WIRECHECK_BIN, default
<repo>/build/bin/wirecheck) with the real subject beside it. When the binary
is missing every test is skipped with a reason that says so, and the report
header says so too, so that nothing is skipped silently.
"""
import collections
import os
import pathlib
import resource
import shutil
import signal
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]

# A suite started in the background of a shell without job control
# (`cmd &` in a script) inherits SIGINT and SIGQUIT ignored, and so would
# every program the tests run: an ignored signal stays ignored across
# exec, and sh may not even `trap -` it back. Tests that end a program or
# an --until command with SIGINT or Ctrl-C then hang to their timeout. The
# suite gives them the default actions, as a foreground launch would.
for _sig, _action in ((signal.SIGINT, signal.default_int_handler),
                      (signal.SIGQUIT, signal.SIG_DFL)):
    if signal.getsignal(_sig) == signal.SIG_IGN:
        signal.signal(_sig, _action)

# A safety net against a harness that hangs, never an assertion of speed:
# the slowest run of the suite (256 KiB at a 1-byte clamp under memmove)
# takes a few seconds.
SAFETY_TIMEOUT = 180


def wirecheck_path():
    return pathlib.Path(os.environ.get("WIRECHECK_BIN") or REPO / "build" / "bin" / "wirecheck")


def _missing(path):
    return not (path.is_file() and os.access(path, os.X_OK))


def pytest_report_header(config):
    path = wirecheck_path()
    lines = [f"wirecheck: {path}"]
    if _missing(path):
        lines.append("wirecheck: MISSING - every e2e test will be skipped "
                     "(build it, or set WIRECHECK_BIN)")
    if shutil.which("valgrind") is None:
        lines.append("valgrind: MISSING - the --valgrind test will be skipped")
    return lines


def pytest_terminal_summary(terminalreporter):
    # Skip reasons even under -q, which hides the header and the "s" details.
    reasons = collections.Counter(
        r.longrepr[2] if isinstance(r.longrepr, tuple) else str(r.longrepr)
        for r in terminalreporter.stats.get("skipped", []))
    if reasons:
        terminalreporter.section("e2e: skipped tests")
        for reason, n in reasons.most_common():
            terminalreporter.line(f"{n} skipped: {reason}")


@pytest.fixture(scope="session")
def wirecheck():
    path = wirecheck_path()
    if _missing(path):
        pytest.skip(f"wirecheck binary not found or not executable at {path}: "
                    "build it (cmake --build build) or set WIRECHECK_BIN")
    subject = path.parent / "refstack-subject"
    if _missing(subject):
        pytest.skip(f"the subject {subject} (beside wirecheck) is missing: build it")
    return path


def _no_core_dumps():
    # The crash tests kill the subject with SIGSEGV and SIGABRT; a core file
    # would land in the working directory and cost time.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


@pytest.fixture
def wc(wirecheck, tmp_path):
    """Runs `wirecheck ARGS...` in the test's own directory (parallel-safe);
    returns the CompletedProcess (text stdout and stderr)."""

    def run(*args, timeout=SAFETY_TIMEOUT):
        return subprocess.run(
            [str(wirecheck), *map(str, args)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=timeout,
            preexec_fn=_no_core_dumps,
        )

    return run


@pytest.fixture
def preload(wirecheck):
    """The gate's preload library of the build under test (`wirecheck
    exec`'s); skips where it is not built (sanitizer builds)."""
    lib = wirecheck.parent.parent / "lib" / "libwirecheck-preload.so"
    if not lib.is_file():
        pytest.skip(f"{lib} is not built (sanitizer builds do not build it)")
    return lib
