"""The mutation pass (scripts/mutants.py, docs/mutants.md): how
many hand-written mutants of reference/ and faultinject/ the scenario suite
catches, how many only the other tests catch, and which are missed, each
named with its reason.

The pass takes over an hour on two cores, so the report does not run it: it
reads the pass's last result, `tests/mutants/result.json` (the runner's
--json, merged), or the report's own "mutants" entry when the report holds
one. Like the benchmarks, it is left out with --no-bench."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from ...runner import REPO
from ..fmt import md_table

NAME = "mutants"
RESULT = REPO / "tests" / "mutants" / "result.json"
# The runner's statuses that count (a patch that did not build or apply
# measures nothing).
COUNTED = ("scenarios", "unit", "missed")


def load(report: dict, path: Path = RESULT) -> Optional[dict]:
    """The pass's result: the report's entry, else the file (None when the
    report was made with --no-bench, or the file is missing or not JSON)."""
    if report.get(NAME):
        return report[NAME]
    if not (report.get("bench") or {}).get("ran"):
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "mutants" in data else None


def figures(result: dict) -> dict:
    """The counts and rates, from the mutants themselves (not trusting the
    file's summary): mutants counted, by scenarios, only by other tests,
    by any test, missed, and the ones that did not build or apply."""
    ms = result["mutants"]
    counted = [m for m in ms if m.get("status") in COUNTED]
    n = len(counted)
    sc = sum(m["status"] == "scenarios" for m in counted)
    un = sum(m["status"] == "unit" for m in counted)
    return {
        "mutants": n,
        "scenarios": sc,
        "unit": un,
        "any": sc + un,
        "missed": n - sc - un,
        "not_counted": len(ms) - n,
        "scenario_rate": 100.0 * sc / n if n else 0.0,
        "any_rate": 100.0 * (sc + un) / n if n else 0.0,
    }


def _cell(text: str) -> str:
    return (text or "-").replace("|", "\\|").replace("\n", " ")


def summary(report: dict) -> list[str]:
    result = load(report)
    if not result or not result.get("mutants"):
        return []
    f = figures(result)
    line = (f"- Mutation pass (`mutants`): {f['mutants']} mutants, caught by the scenario "
            f"suite {f['scenarios']} ({f['scenario_rate']:.1f}%), by any test {f['any']} "
            f"({f['any_rate']:.1f}%), missed {f['missed']}")
    missed = [m["name"] for m in result["mutants"] if m.get("status") == "missed"]
    if missed:
        line += ": " + ", ".join(f"`{n}`" for n in missed)
    return [line + "."]


def markdown(report: dict) -> list[str]:
    L = ["", "## Mutation pass: what the tests catch", ""]
    result = load(report)
    if result is None:
        if not (report.get("bench") or {}).get("ran"):
            return L + ["Left out with the benchmarks (--no-bench)."]
        return L + [f"No result: `{RESULT.relative_to(REPO)}` is missing or not JSON "
                    "(`scripts/mutants.py --json`)."]
    f = figures(result)
    s = result.get("summary") or {}
    cmd = s.get("command") or "scripts/mutants.py"
    took = f", {s['seconds'] / 60:.0f} min of runs in all" if s.get("seconds") else ""
    L += [f"`{cmd}`{took}: each hand-written mutant (`tests/mutants/*.patch`, one "
          "plausible bug of reference/ or faultinject/, its first line the rule it breaks) "
          "applied to a scratch copy, rebuilt, then the scenario suite run, and when that "
          "passes, the pass's own bounds (tests/mutants), the C unit tests and the other "
          "pytest suites (docs/mutants.md).", ""]
    L += md_table(["", "count", "rate"], [
        ["mutants", f["mutants"], ""],
        ["caught by the scenario suite", f["scenarios"], f"{f['scenario_rate']:.1f}%"],
        ["caught only by other tests", f["unit"], ""],
        ["caught by some test", f["any"], f"{f['any_rate']:.1f}%"],
        ["missed", f["missed"], ""],
    ], "lrr")
    if f["not_counted"]:
        bad = [f"`{m['name']}` ({m.get('status') or 'not run'})" for m in result["mutants"]
               if m.get("status") not in COUNTED]
        L += ["", "Not counted (did not build or apply): " + ", ".join(bad) + "."]
    rows = [[f"`{m['name']}`", m["status"], _cell(m.get("by", "")),
             _cell(m.get("reason") or ("no reason written" if m["status"] == "missed" else ""))]
            for m in result["mutants"] if m.get("status") in ("unit", "missed")]
    if rows:
        L += ["", "Not caught by the scenario suite, each with why no golden can catch it "
              "(the patch's `# not by scenarios:` line):", ""]
        L += md_table(["mutant", "result", "caught by", "reason"], rows, "llll")
    return L
