"""The plugin's verdicts (wirecheck.verdicts) called as plain functions,
without pytest's machinery: goldens and traces in, a Verdict out."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

from wirecheck import differences as D  # noqa: E402
from wirecheck import golden as G  # noqa: E402
from wirecheck import verdicts as V  # noqa: E402


def trace(events=("t1 c0 connect", "t1 c0 write#1 cb ok"), code=0, **exit_):
    return {"exit": {"code": code, "timed_out": False, **exit_}, "faults": [],
            "peer": {"bytes": 2, "sha256": "0" * 64, "reads": [], "reset": False},
            "events": list(events), "syscalls": {"send": 1}, "queue": None}


FIXED = G.from_trace(trace())
OTHER = G.from_trace(trace(events=("t1 c0 connect", "t1 c0 write#1 cb ok", "t2 c0 finish")))


def test_check_golden_passes_writes_and_fails(tmp_path):
    path = tmp_path / "x.golden"
    with pytest.raises(V.WirecheckFailure, match="^no golden here$"):
        V.check_golden(path, FIXED, update=False, header=[], missing="no golden here")
    assert V.check_golden(path, FIXED, update=True, header=["h"], missing="") == ("written", None)
    assert V.check_golden(path, FIXED, update=True, header=["h"], missing="") == ("unchanged", None)
    assert V.check_golden(path, FIXED, update=False, header=[], missing="") == ("passed", None)
    with pytest.raises(V.WirecheckFailure, match="the trace differs from the golden"):
        V.check_golden(path, OTHER, update=False, header=[], missing="")
    assert V.obtained_path(path).is_file()
    V.check_golden(path, FIXED, update=False, header=[], missing="")
    assert not V.obtained_path(path).exists()


def test_legacy_must_differ_fails_when_nothing_differs():
    v = V.legacy_verdict(FIXED, FIXED, variant="queue=memmove", must_differ=True,
                         against="the golden g")
    assert v.failure.startswith("the legacy strategy gives the same trace as the fixed one")
    assert v.differs is None
    v = V.legacy_verdict(FIXED, OTHER, variant="queue=memmove", must_differ=True,
                         against="the golden g")
    assert v.failure is None and v.differs == ["events"]
    assert v.sections[0][0] == "wirecheck legacy"


def test_legacy_must_match_leaves_the_excepted_sections_out():
    v = V.legacy_verdict(FIXED, OTHER, variant="batch=off", must_differ=False,
                         against="the golden g")
    assert "declares 'legacy batch=off must-match'" in v.failure
    v = V.legacy_verdict(FIXED, OTHER, variant="batch=off", must_differ=False,
                         excepted=("events",), against="the golden g")
    assert v.failure is None
    assert "sections left out of the match differ" in v.sections[0][1]


def test_foreign_verdict_explained_unexplained_and_stopped(tmp_path):
    table_path = tmp_path / "node.differences"
    diff = G.compare(FIXED, OTHER)[0]
    line = f"s/x events {D.fingerprint(OTHER, D.field_name(diff))} the subject says finish\n"
    table_path.write_text(line)
    table = D.load(table_path)
    golden_path = tmp_path / "x.golden"
    v = V.foreign_verdict(FIXED, OTHER, table, "s/x", subject="node",
                          golden_path=golden_path, table_path=table_path)
    assert v.failure is None and v.differs == ["events"]
    v = V.foreign_verdict(FIXED, OTHER, D.parse("", table_path), "s/x", subject="node",
                          golden_path=golden_path, table_path=table_path)
    assert "in a way" in v.failure and "s/x events" in v.failure
    v = V.foreign_verdict(FIXED, FIXED, table, "s/x", subject="node",
                          golden_path=golden_path, table_path=table_path)
    assert "no longer shows" in v.failure
    crashed = G.from_trace(trace(code=None, signal="SIGSEGV"))
    v = V.foreign_verdict(FIXED, crashed, table, "s/x", subject="node",
                          golden_path=golden_path, table_path=table_path, stderr="boom\n")
    assert v.stderr_shown and "was killed by SIGSEGV" in v.failure and "boom" in v.failure


def test_unclean_exit_and_stderr_tail():
    assert V.unclean_exit({"code": 0}) is None
    assert V.unclean_exit({"code": 3}) == "exited with status 3"
    assert V.unclean_exit({"timed_out": True, "signal": "SIGKILL"}) == \
        "timed out (killed with SIGKILL)"
    assert V.stderr_tail("") == "wirecheck's stderr: (empty)"
    text = "wirecheck: s/x.wcs: run 1/3\n" + "".join(f"l{i}\n" for i in range(50))
    tail = V.stderr_tail(text, lines=2)
    assert tail == "wirecheck's stderr, its last 2 of 50 lines:\nl48\nl49"


def test_valgrind_verdict():
    assert V.valgrind_verdict(trace(valgrind="clean"), [], "").failure is None
    v = V.valgrind_verdict(trace(valgrind="errors"), ["queue=memmove"], "==1== bad\n")
    assert "variant queue=memmove" in v.failure and "==1== bad" in v.failure
    v = V.valgrind_verdict(trace(code=None, signal="SIGKILL"), [], "")
    assert v.failure is None and "no memcheck verdict" in v.sections[0][1]


def test_not_a_run_trace():
    assert V.not_a_run_trace(trace()) is None
    assert "not a `wirecheck run` trace" in V.not_a_run_trace([1])
    assert "`counts`" in V.not_a_run_trace({"counts": {}})
