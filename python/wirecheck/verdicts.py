"""The verdicts of the pytest plugin, as plain functions: whether a run
matches its golden (or rewrites it), whether the legacy strategy differs
from the fixed one as the scenario declares, whether a foreign subject's
differences are all in its reviewed differences file, and whether a run
under valgrind was clean. No pytest here: a verdict takes goldens and
traces and says what failed and what the report shows, so a unit test can
call it (tests/plugin/test_verdicts.py) and the items in items.py only run
the scenario and hand the verdict to pytest."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from . import differences as D
from . import golden as G


class WirecheckFailure(Exception):
    """An item's failure; its message is the whole report."""


@dataclass
class Verdict:
    """What a check found: `failure` is the failure's whole message (None:
    it passed); `sections` are (title, text) report sections to show either
    way; `differs` the fields that differ and were allowed to (a legacy run
    that must differ, a foreign subject's explained differences)."""
    failure: Optional[str] = None
    sections: list = field(default_factory=list)
    differs: Optional[list] = None
    # the failure's message holds wirecheck's stderr already
    stderr_shown: bool = False


def shown(path) -> str:
    """A path as short as it can be: relative to the working folder when
    it is below it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


# ------------------------------------------------------- the obtained trace


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


# ---------------------------------------------------------------- goldens


def load_golden(path: Path) -> G.Golden:
    """A golden file, or WirecheckFailure saying why it cannot be read."""
    try:
        return G.parse(path.read_bytes(), shown(path))
    except G.GoldenError as e:
        raise WirecheckFailure(f"the golden cannot be read: {e}") from None


def _rewrite_golden(golden_path: Path, actual: G.Golden, header: list[str]) -> tuple[str, Optional[str]]:
    """--update-goldens: writes the golden unless it holds the same trace
    already (then the file stays byte for byte, comments and all)."""
    old = None
    if golden_path.exists():
        try:
            old = G.parse(golden_path.read_bytes(), shown(golden_path))
        except G.GoldenError:
            old = None
    drop_obtained(golden_path)
    if old is not None and old == actual:
        return "unchanged", None
    golden_path.parent.mkdir(parents=True, exist_ok=True)
    G.write(golden_path, G.render(actual, header=header))
    if old is None:
        return "written", None
    return "written", f"updated {shown(golden_path)}:\n\n" + G.report(G.compare(old, actual))


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
    if update:
        return _rewrite_golden(golden_path, actual, header)
    if not golden_path.exists():
        raise WirecheckFailure(missing)
    golden = load_golden(golden_path)
    diffs = G.compare(golden, actual)
    if diffs:
        obtained = write_obtained(golden_path, actual, header)
        where = shown(golden_path)
        raise WirecheckFailure(f"the trace differs from the golden {where}\n"
                               f"(the run's trace is in {shown(obtained)}: diff {where} "
                               f"{shown(obtained)})\n\n" + G.report(diffs))
    drop_obtained(golden_path)
    return "passed", None


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


# ------------------------------------------------------------ the legacy run


def legacy_verdict(reference: G.Golden, actual: G.Golden, *, variant: str, must_differ: bool,
                   excepted: tuple = (), against: str) -> Verdict:
    """The legacy run (actual) against the fixed one (reference, described
    by `against`), by the scenario's `legacy VARIANT must-differ|must-match
    [except=SECTIONS]` line: must-differ fails when nothing differs (the
    suite could not tell the strategies apart), must-match when anything
    outside the excepted sections differs."""
    out = Verdict()
    diffs = G.compare(reference, actual)
    rule = f"legacy {variant} {'must-differ' if must_differ else 'must-match'}"
    if excepted:
        rule += " except=" + ",".join(excepted)
        left_out = [d for d in diffs if d.field.split()[0] in excepted]
        diffs = [d for d in diffs if d.field.split()[0] not in excepted]
        if left_out:
            out.sections.append(("wirecheck legacy",
                                 f"{rule}: sections left out of the match differ:\n\n"
                                 + G.report(left_out)))
    if must_differ:
        if not diffs:
            out.failure = (
                f"the legacy strategy gives the same trace as the fixed one: the suite "
                f"cannot tell them apart.\nThe scenario declares '{rule}', but the run with "
                f"--variant {variant} matches {against} in every field "
                f"(exit, faults, peer, events, syscalls, queue).")
            return out
        out.differs = sorted({d.field for d in diffs})
        out.sections.append(("wirecheck legacy",
                             f"{rule}: the legacy run differs from {against}, as it must:\n\n"
                             + G.report(diffs)))
    elif diffs:
        out.failure = (f"the scenario declares '{rule}', but the run with --variant "
                       f"{variant} differs from {against}\n\n" + G.report(diffs))
    return out


# ------------------------------------------------------- a foreign subject

# The progress lines of `wirecheck run --repeat`.
_PROGRESS = re.compile(r"wirecheck: .*: run [0-9]+/[0-9]+")
STDERR_TAIL = 40


def without_progress(stderr: str) -> list[str]:
    """wirecheck's stderr lines but --repeat's progress."""
    return [l for l in stderr.splitlines() if not _PROGRESS.fullmatch(l)]


def stderr_tail(stderr: str, lines: int = STDERR_TAIL) -> str:
    """The last lines of wirecheck's stderr (a foreign subject's own stderr
    goes there: its traceback, the harness's warnings about it), without
    --repeat's progress, as a failure report shows them."""
    kept = without_progress(stderr)
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


def _unexplained_text(verdict: D.Verdict, key: str, subject: str, golden_path: Path,
                      table_path: Path) -> str:
    lines = sorted({f"{key} {fld} {fp} REASON" for _, fld, fp in verdict.unexplained})
    return (f"subject {subject} differs from the golden {shown(golden_path)} in a way "
            f"{shown(table_path)} does not explain"
            + ("" if table_path.exists() else " (there is no such file yet: create it)")
            + ".\nRead the difference, then add a line "
            "with its reason:\n" + "\n".join(f"  {l}" for l in lines) + "\n\n"
            + G.report(d for d, _, _ in verdict.unexplained))


def _stale_text(verdict: D.Verdict, subject: str, table_path: Path) -> str:
    return (f"{shown(table_path)} lists differences that subject {subject} no longer shows "
            f"here; remove them:\n" + "\n".join(
                f"  line {e.line}: {e.scenario} {e.field} {e.fingerprint}" for e in verdict.stale))


def foreign_verdict(golden: G.Golden, actual: G.Golden, table: D.Differences, key: str, *,
                    subject: str, golden_path: Path, table_path: Path,
                    stderr: str = "") -> Verdict:
    """Another stack's run (actual) against the reference golden: every
    difference must be in the subject's reviewed differences file (table,
    read from table_path; key: the scenario and profile its lines name),
    and every line of it for this key must still be needed. A subject that
    did not finish a scenario the reference stack finishes fails whatever
    the file says: that is not a difference of behaviour to record."""
    out = Verdict()
    stopped = unclean_exit(actual.exit)
    if stopped and unclean_exit(golden.exit) is None:
        out.stderr_shown = True
        out.failure = (
            f"subject {subject} {stopped}, where the reference stack ends the scenario "
            f"cleanly (golden {shown(golden_path)}: exit {G.exit_text(golden.exit)}).\n"
            f"The subject did not finish the scenario: that is not a difference to record in "
            f"{shown(table_path)}; fix the subject.\n\n{stderr_tail(stderr)}")
        return out
    verdict = D.judge(G.compare(golden, actual), actual, table, key)
    out.differs = sorted({e.field for _, e in verdict.explained})
    if verdict.explained:
        out.sections.append((f"wirecheck {subject}", "\n\n".join(
            f"{d.text}\n  explained ({shown(table_path)}:{e.line}): {e.reason}"
            for d, e in verdict.explained)))
    problems = []
    if verdict.unexplained:
        problems.append(_unexplained_text(verdict, key, subject, golden_path, table_path))
    if verdict.stale:
        problems.append(_stale_text(verdict, subject, table_path))
    if problems:
        out.failure = "\n\n".join(problems)
    return out


# --------------------------------------------------------------- valgrind


def valgrind_verdict(trace: dict, variants, stderr: str) -> Verdict:
    """A run under --valgrind: memcheck's verdict in the trace must be
    `clean`. A subject that did not exit has none: the report says so, and
    the golden comparison judges the run."""
    out = Verdict()
    ex = trace.get("exit", {})
    memcheck = ex.get("valgrind")
    if memcheck is None:
        out.sections.append(("wirecheck valgrind",
                             f"no memcheck verdict: the subject did not exit "
                             f"({G.exit_text({k: ex[k] for k in G.EXIT_KEYS if k in ex})})"))
    elif memcheck != "clean":
        out.failure = (f"valgrind: memcheck found errors in the subject (exit.valgrind = "
                       f"{memcheck!r}{', variant ' + ' '.join(variants) if variants else ''})"
                       f"\n\n{stderr.strip()}")
    return out
