"""The mutation pass's report section (python/wirecheck/report/sections/
mutants.py): its figures come from the mutants in the runner's result, and
every mutant the scenario suite does not catch is named with its reason."""
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

from wirecheck.report import sections  # noqa: E402
from wirecheck.report.sections import mutants  # noqa: E402


def result(*ms, summary=None):
    return {"summary": summary or {"command": "scripts/mutants.py", "seconds": 3600.0},
            "mutants": [dict(name=n, status=s, by=b, reason=r, breaks="a rule", files=[])
                        for n, s, b, r in ms]}


RESULT = result(("a", "scenarios", "scenarios/rules/x.wcs::variant=fixed", ""),
                ("b", "scenarios", "timeout", ""),
                ("c", "unit", "ctest test_gate", "only timing changes"),
                ("d", "missed", "", "equivalent: nothing reads it"),
                ("e", "missed", "", ""),
                ("f", "build-failed", "", ""))


def test_registered_after_the_benchmarks():
    # After the benchmarks; only the explorer's report comes later.
    assert sections.BENCH_SECTIONS[-2:] == (mutants, sections.explore)


def test_figures_count_the_mutants_not_the_files_summary():
    # A summary that disagrees is ignored: the rates are the mutants'.
    r = dict(RESULT, summary={"caught_by_scenarios": 99})
    f = mutants.figures(r)
    assert (f["mutants"], f["scenarios"], f["unit"], f["any"], f["missed"],
            f["not_counted"]) == (5, 2, 1, 3, 2, 1)
    assert round(f["scenario_rate"], 1) == 40.0 and round(f["any_rate"], 1) == 60.0


def test_markdown_names_each_miss_with_its_reason():
    text = "\n".join(mutants.markdown({"mutants": RESULT}))
    assert "| caught by the scenario suite | 2 | 40.0% |" in text
    assert "| caught by some test | 3 | 60.0% |" in text
    assert "| missed | 2 |  |" in text
    assert "| `c` | unit | ctest test_gate | only timing changes |" in text
    assert "| `d` | missed | - | equivalent: nothing reads it |" in text
    # A miss without a reason says so instead of passing in silence.
    assert "| `e` | missed | - | no reason written |" in text
    assert "Not counted (did not build or apply): `f` (build-failed)." in text
    # Caught by scenarios: counted, not listed.
    assert "`a`" not in text and "`b`" not in text


def test_summary_line_names_the_misses():
    assert mutants.summary({"mutants": RESULT}) == [
        "- Mutation pass (`mutants`): 5 mutants, caught by the scenario suite 2 (40.0%), "
        "by any test 3 (60.0%), missed 2: `d`, `e`."]


def test_reads_the_file_when_benchmarks_ran(tmp_path):
    p = tmp_path / "result.json"
    p.write_text(json.dumps(RESULT))
    assert mutants.load({"bench": {"ran": True}}, p) == RESULT
    # --no-bench leaves it out; a missing or broken file is no result.
    assert mutants.load({"bench": {"ran": False}}, p) is None
    assert mutants.load({"bench": {"ran": True}}, tmp_path / "none.json") is None
    p.write_text("{not json")
    assert mutants.load({"bench": {"ran": True}}, p) is None


def test_left_out_with_no_bench():
    report = {"bench": {"ran": False, "runs": {}, "errors": []}}
    assert mutants.summary(report) == []
    assert mutants.markdown(report)[-1] == "Left out with the benchmarks (--no-bench)."


def test_the_committed_result_renders():
    # tests/mutants/result.json, the pass's last result: every mutant it
    # lists has its patch, and every one the scenarios missed has a reason.
    data = json.loads(mutants.RESULT.read_text())
    names = {m["name"] for m in data["mutants"]}
    patches = {p.stem for p in (REPO / "tests" / "mutants").glob("*.patch")}
    assert names == patches
    for m in data["mutants"]:
        if m["status"] in ("unit", "missed"):
            assert m.get("reason"), m["name"]
    text = "\n".join(mutants.markdown({"bench": {"ran": True}}))
    assert "## Mutation pass" in text and "| mutants |" in text
