"""The report's process-wide caches of text measures (figure.py) change no
byte: a run of real plots (per-profile and sweep plots of the committed
sample, SVG and PNG) drawn one after another in one process, the caches
shared across them, gives the files that matplotlib's own caches, one per
renderer, give."""
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "reports" / "sample" / "report.json"

pytest.importorskip("matplotlib", reason="python3-matplotlib is not installed")
pytestmark = pytest.mark.skipif(not SAMPLE.is_file(), reason="no reports/sample")

DRAW = """
import json, sys
from pathlib import Path
sys.path.insert(0, {python!r})
import matplotlib.text as mtext
own = mtext._get_text_metrics_with_cache
from wirecheck.report import figure, plots
figure.pyplot()
assert mtext._get_text_metrics_with_cache is not own
if {own_cache!r}:
    mtext._get_text_metrics_with_cache = own
report = json.loads(Path({sample!r}).read_text())
out = Path({out!r})
jobs = plots.plot_jobs(report, out, ("png",))[0]
# Profile plots of several behaviours and sweep plots: the shared measures
# of one plot's labels are met again by the next ones, in both renderers.
picked = [j for j in jobs if j[0] is plots.plot_profile][::40]
picked += [j for j in jobs if j[0].__name__ == "plot_scenario"][:3]
for func, args in picked:
    func(*args)
print(len(picked))
"""


def draw(out: Path, own_cache: bool) -> list[Path]:
    out.mkdir()
    code = DRAW.format(python=str(REPO / "python"), sample=str(SAMPLE), out=str(out),
                       own_cache=own_cache)
    done = subprocess.run([sys.executable, "-c", code], check=True, timeout=600,
                          capture_output=True, text=True)
    assert int(done.stdout) >= 8
    return sorted(out.iterdir())


def test_shared_text_measures_change_no_byte(tmp_path):
    shared = draw(tmp_path / "shared", own_cache=False)
    own = draw(tmp_path / "own", own_cache=True)
    assert [p.name for p in shared] == [p.name for p in own]
    assert {p.suffix for p in shared} == {".svg", ".png"}
    for a, b in zip(shared, own):
        assert a.read_bytes() == b.read_bytes(), a.name
