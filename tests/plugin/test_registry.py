"""The behaviour registry (wirecheck.behaviours) is the one list of the
suite's behaviours: the plugin's markers, the docs' table and the suite's
scenario folders agree with it."""
import os
import re
from pathlib import Path

import pytest

from wirecheck import behaviours, runner

REPO = Path(__file__).resolve().parents[2]


def test_markers_are_the_registry_entries(suite):
    res = suite.run("--markers")
    for b in behaviours.BEHAVIOURS:
        res.stdout.fnmatch_lines([f"@pytest.mark.{b.name}: wirecheck scenarios of behaviour "
                                  f"{b.name}: {b.title} (scenarios/{b.folder})"])


def test_the_docs_table_is_the_registry():
    """docs/pytest-plugin.md shows the registry as `python3 -m
    wirecheck.behaviours` prints it; a new entry without the docs fails."""
    text = (REPO / "docs" / "pytest-plugin.md").read_text()
    m = re.search(r"<!-- behaviours: begin -->\n(.*?)\n<!-- behaviours: end -->", text, re.S)
    assert m, "docs/pytest-plugin.md has no behaviours table"
    assert m.group(1) == behaviours.markdown_table(), (
        "docs/pytest-plugin.md's behaviour table is not the registry's: paste "
        "`PYTHONPATH=python python3 -m wirecheck.behaviours` between its markers")


def test_titles_and_names_are_unique():
    names = [b.name for b in behaviours.BEHAVIOURS]
    titles = [b.title for b in behaviours.BEHAVIOURS]
    assert len(set(names)) == len(names) and len(set(titles)) == len(titles)
    assert behaviours.title("queue") == "Pending-write queue"
    assert behaviours.title("frobnication") == "frobnication"
    assert behaviours.title(None) == "No behaviour declared"


@pytest.mark.parametrize("wcs", sorted((REPO / "scenarios").rglob("*.wcs")),
                         ids=lambda p: str(p.relative_to(REPO)))
def test_suite_scenarios_agree_with_the_registry(wcs):
    """A suite scenario lives in its behaviour's folder and declares the
    registry's legacy variant (when it declares one)."""
    binary = Path(os.environ.get("WIRECHECK_BIN") or REPO / "build" / "bin" / "wirecheck")
    if not binary.is_file():
        pytest.skip(f"wirecheck binary not found at {binary}")
    meta = runner.check(wcs, binary)
    b = behaviours.get(meta.get("behaviour"))
    assert b is not None, f"{wcs}: behaviour {meta.get('behaviour')!r} is not in the registry"
    assert wcs.parent == REPO / "scenarios" / b.folder
    if meta.get("legacy"):
        assert meta["legacy"]["variant"] == b.legacy
