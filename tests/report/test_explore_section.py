"""The report's explore section (sections/explore.py): it reads what
`wirecheck explore --report` writes, refuses a file that is not one, and
renders each behaviour's figures and each failure."""
import json
import pathlib
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))
from wirecheck.report.sections import explore  # noqa: E402

REPORT = {"seed": 3, "per_batch": 50, "subject": "refstack", "seconds": 12.5, "legacy": True,
          "budget": None, "examples_requested": 100,
          "behaviours": {
              "chunked": {"examples": 188, "batches": 2, "seconds": 20.1, "seeds": [3, 4],
                          "unsupported": 0,
                          "failures": [{"file": "explore-out/chunked-1.wcs", "seed": 4,
                                        "operations": 1, "flags": [], "examples": 88,
                                        "problems": ["the peer got 5 bytes"]}]},
              "queue": {"examples": 100, "batches": 2, "seconds": 9.0, "seeds": [3, 4],
                        "unsupported": 0, "failures": []}}}


def test_a_report_renders_its_figures_and_failures(tmp_path):
    p = tmp_path / "explore.json"
    p.write_text(json.dumps(REPORT))
    data = explore.load(p)
    md = "\n".join(explore.markdown({"explore": data}))
    assert "| chunked | 188 | 2 | 3..4 | 20 | 1 | 1 |" in md
    assert "| queue | 100 | 2 | 3..4 | 9 | 0 | - |" in md
    assert "`explore-out/chunked-1.wcs` (1 operations): the peer got 5 bytes" in md
    assert explore.summary({"explore": data}) == [
        "- Exploration (`wirecheck explore`, refstack): 288 generated cases over 2 "
        "behaviours, 1 failures."]


def test_a_file_that_is_not_a_report_is_refused_by_name(tmp_path):
    p = tmp_path / "bad.json"
    bad = dict(REPORT, behaviours={"queue": {"examples": "many"}})
    p.write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="bad.json: behaviour 'queue': field 'examples'"):
        explore.load(p)
    with pytest.raises(ValueError, match="no such explore report"):
        explore.load(tmp_path / "none.json")


def test_no_report_says_how_to_make_one():
    assert "wirecheck explore all --budget" in "\n".join(explore.markdown({}))
