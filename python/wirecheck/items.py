"""The pytest nodes of the plugin: a scenario file, one collector per
matrix value, one item per profile and variant, and the wirecheck_golden
fixture's object. An item runs its scenario and hands the trace to a
verdict (verdicts.py); plugin.py registers them.

A scenario collects as one item per matrix profile and variant:

    scenarios/queue/end-large.wcs::clamp=7::variant=fixed
    scenarios/queue/end-large.wcs::clamp=7::variant=legacy
    scenarios/queue/epipe-prefix.wcs::variant=fixed

Each matrix value is a collector level of its own (`clamp=7`), so that a node
id given on the command line selects exactly that item.
"""
from __future__ import annotations

import re
import shlex
import time
from pathlib import Path
from typing import Optional

import pytest

from . import behaviours
from . import differences as D
from . import golden as G
from . import record
from . import runner
from . import session as S
from . import verdicts as V
from .sweep import pytest_items as sweep_items
from .verdicts import WirecheckFailure, shown


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


# --------------------------------------------------------------- collection


class ScenarioFile(pytest.File):
    """A scenario file: its items, one per profile x variant."""

    def collect(self):
        config = self.config
        st = S.state(config)
        if st.binary is None:
            raise self.CollectError(f"wirecheck: {st.binary_error}")
        try:
            meta = runner.check(shown(self.path), st.binary)
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
            yield from sweep_items.collect(self, meta, shown(self.path), binary=st.binary,
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


# -------------------------------------------------------------------- items


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
        return (f"no golden: run {S.regenerate_hint(self.fixed_nodeid, self.config)}\n"
                f"(expected {shown(self.golden_path)})")

    def _header(self) -> list[str]:
        prof = self.profile.id or "(no matrix)"
        return S.golden_header(
            f"wirecheck golden of scenario {self.meta.get('name')} ({shown(self.path)}), "
            f"profile {prof}, variant fixed.", self.fixed_nodeid, self.config)

    def _apply(self, verdict: V.Verdict) -> None:
        """Shows a verdict's sections and fails the item on its failure."""
        for title, text in verdict.sections:
            self.add_report_section("call", title, text)
        if verdict.failure is not None:
            raise WirecheckFailure(verdict.failure)

    def _run(self, variants) -> dict:
        st = S.state(self.config)
        try:
            flags = list(self.profile.flags)
            if st.subject:
                flags += ["--subject", st.subject]
            if st.subject and self.config.getoption("wirecheck_subject_preload"):
                flags.append("--subject-preload")
            start = time.monotonic()
            trace, stderr = runner.run_capture(
                shown(self.path), flags, variants=variants,
                repeat=st.repeat, valgrind=st.valgrind, binary=st.binary)
            seconds = time.monotonic() - start
        except runner.NotATrace as e:
            begins = next((l for l in e.stdout.splitlines() if l.strip()), "")
            raise WirecheckFailure(
                f"{e}: the trace cannot be read (its output begins {begins[:200]!r}; "
                f"did the subject write on its stdout?)\n\n{V.stderr_tail(e.stderr)}\n"
                f"command: {shlex.join(e.argv)}") from None
        except runner.WirecheckError as e:
            msg = "\n".join(V.without_progress(e.stderr))
            what = ("the runs differ (--wirecheck-repeat): the scenario is not deterministic"
                    if e.returncode == 1 else f"wirecheck run failed (exit {e.returncode})")
            raise WirecheckFailure(f"{what}\n{msg.strip()}\ncommand: {shlex.join(e.argv)}") from None
        if st.valgrind:
            self._apply(V.valgrind_verdict(trace, variants, stderr))
        if st.record is not None:
            record.write(st.record, self.path, self.profile.id,
                         "legacy" if variants else "fixed", flags, round(seconds, 3), trace)
        self.wirecheck_stderr = stderr
        return trace

    def _golden(self) -> G.Golden:
        """The profile's golden; a missing one fails with the command that
        writes it."""
        if not self.golden_path.exists():
            raise WirecheckFailure(self._hint())
        return V.load_golden(self.golden_path)

    # -- pytest

    def runtest(self):
        st = S.state(self.config)
        if st.foreign:
            try:
                self._run_foreign(st)
            except WirecheckFailure:
                # What the subject and the harness said, whatever the failure.
                if self.wirecheck_stderr and self.wirecheck_stderr.strip():
                    self.add_report_section("call", "wirecheck stderr",
                                            V.stderr_tail(self.wirecheck_stderr))
                raise
        elif self.variant == "fixed":
            self._run_fixed(st)
        else:
            self._run_legacy(st)

    def _run_fixed(self, st: S.State):
        actual = G.from_trace(self._run([]))
        status, section = V.check_golden(self.golden_path, actual, update=st.update,
                                         header=self._header(), missing=self._hint())
        self.wirecheck_golden = status if st.update else None
        if section:
            self.add_report_section("call", "wirecheck golden", section)

    def _run_legacy(self, st: S.State):
        actual = G.from_trace(self._run([self.legacy_variant]))
        if st.update:
            # The golden is being rewritten in this session: compare with
            # what it will hold, whatever order (or worker) the items run in.
            reference = G.from_trace(self._run([]))
            against = f"the fixed run (the golden --update-goldens writes, {shown(self.golden_path)})"
        else:
            reference = self._golden()
            against = f"the golden {shown(self.golden_path)}"
        verdict = V.legacy_verdict(reference, actual, variant=self.legacy_variant,
                                   must_differ=self.must_differ, excepted=self.legacy_except,
                                   against=against)
        self.wirecheck_differs = verdict.differs
        self._apply(verdict)

    def _run_foreign(self, st: S.State):
        """Another stack against the reference golden (verdicts.foreign_verdict)."""
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
        table = S.differences_table(path, root, st)
        trace = self._run([])
        error = (trace.get("exit") or {}).get("error") or ""
        if error.startswith("unsupported "):
            pytest.skip(f"subject {st.foreign}: {error}")
        actual = G.from_trace(trace)
        verdict = V.foreign_verdict(self._golden(), actual, table, key, subject=st.foreign,
                                    golden_path=self.golden_path, table_path=path,
                                    stderr=self.wirecheck_stderr or "")
        if verdict.stderr_shown:
            self.wirecheck_stderr = None
        self.wirecheck_differs = verdict.differs
        self._apply(verdict)

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
        config = self._request.config
        problem = V.not_a_run_trace(trace)
        if problem:
            pytest.fail(f"wirecheck_golden: {problem}", pytrace=False)
        golden = Path(path) if path is not None else self.default_path()
        if not golden.is_absolute():
            golden = Path(node.path).parent / golden
        if golden in self._used:
            raise WirecheckFailure(f"wirecheck_golden: {shown(golden)} is used twice in "
                                   f"{node.nodeid}: give each trace its own path")
        self._used.add(golden)
        header = S.golden_header(f"wirecheck golden of test {node.nodeid}.", node.nodeid, config)
        st = S.state(config)
        try:
            status, section = V.check_golden(
                golden, G.from_trace(trace), update=st.update, header=header,
                missing=f"no golden: run {S.regenerate_hint(node.nodeid, config)}\n"
                        f"(expected {shown(golden)})")
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


def _file_name(name: str) -> str:
    """A test's name as a file name: test_x[a/b] -> test_x_a_b_."""
    return re.sub(r"[^A-Za-z0-9._=+-]", "_", name)
