"""The committed sample report (reports/sample/, reports/README.md): its
files are the ones its report.json lists, and every link of report.md and
summary.md resolves inside the folder, so that the plots render where
GitHub shows the folder."""
import json
import re
import subprocess
from pathlib import Path
from urllib.parse import unquote

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "reports" / "sample"
MD_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")

pytestmark = pytest.mark.skipif(not SAMPLE.is_dir(), reason="no reports/sample")


def test_the_sample_holds_what_its_report_json_lists():
    rep = json.loads((SAMPLE / "report.json").read_text())
    assert {p.name for p in SAMPLE.iterdir()} == set(rep["files"])
    assert {"report.md", "summary.md", "report.json", "batching.svg",
            "scaling-bytes-moved.svg", "scaling-sender-cpu.svg"} <= set(rep["files"])
    assert rep["command"] == ["python3", "-m", "wirecheck.report", "--out", "reports/sample"]
    assert rep["environment"]["git"]["dirty"] is False
    assert not any(f.startswith(("-", ".")) for f in rep["files"])


@pytest.mark.parametrize("name", ["report.md", "summary.md"])
def test_every_link_resolves_inside_the_sample(name):
    links = MD_LINK.findall((SAMPLE / name).read_text())
    svgs = [l for l in links if l.endswith(".svg")]
    assert svgs
    for link in links:
        assert "://" not in link and not link.startswith("/"), link
        target = (SAMPLE / unquote(link)).resolve()
        assert target.parent == SAMPLE.resolve() and target.is_file(), link


def test_the_readme_gives_the_command_and_out_stays_ignored():
    readme = (REPO / "reports" / "README.md").read_text()
    assert "python3 -m wirecheck.report --out reports/sample" in readme
    ignored = subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q", "reports/out/report.md"])
    assert ignored.returncode == 0
    kept = subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q",
                           "reports/sample/report.md"])
    assert kept.returncode == 1
