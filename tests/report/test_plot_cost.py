"""What the report does to draw its plots with less CPU changes no byte:
real plots (per-profile and sweep plots of the committed sample, SVG and
PNG), drawn one after another in one process as the report's workers draw
them, are the files that matplotlib's own ways give: its own cache of text
measures (one per renderer) instead of figure.py's one for the process,
every minor tick its log locator gives instead of those in view, the
sweep plot's cells in the layout (they lie inside their axes, which the
layout and the crop take whole), and titles placed by matplotlib's search
instead of at the top of their axes."""
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
if {mode!r} == "own-measures":
    mtext._get_text_metrics_with_cache = own
if {mode!r} == "every-minor-tick":
    plots.drawn_minor_ticks_only = lambda axis: None
if {mode!r} == "titles-searched":
    figure._title_stays_at_top = lambda ax: False
if {mode!r} == "cells-in-layout":
    import matplotlib.patches as mpatches
    rectangle = mpatches.Rectangle.__init__
    def in_layout(self, *args, **kwargs):
        if "lw" in kwargs:  # a cell (the figure's own patch stays out)
            kwargs.pop("in_layout", None)
        rectangle(self, *args, **kwargs)
    mpatches.Rectangle.__init__ = in_layout
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


def draw(out: Path, mode: str) -> list[Path]:
    out.mkdir()
    code = DRAW.format(python=str(REPO / "python"), sample=str(SAMPLE), out=str(out), mode=mode)
    done = subprocess.run([sys.executable, "-c", code], check=True, timeout=600,
                          capture_output=True, text=True)
    assert int(done.stdout) >= 8
    return sorted(out.iterdir())


@pytest.fixture(scope="module")
def as_the_report_draws(tmp_path_factory) -> list[Path]:
    return draw(tmp_path_factory.mktemp("plots") / "report", "report")


@pytest.mark.parametrize("mode", ["own-measures", "every-minor-tick", "cells-in-layout",
                                  "titles-searched"])
def test_the_cut_changes_no_byte(as_the_report_draws, tmp_path, mode):
    theirs = draw(tmp_path / mode, mode)
    assert [p.name for p in theirs] == [p.name for p in as_the_report_draws]
    assert {p.suffix for p in theirs} == {".svg", ".png"}
    for a, b in zip(as_the_report_draws, theirs):
        assert a.read_bytes() == b.read_bytes(), a.name


TITLES = """
import sys
from pathlib import Path
sys.path.insert(0, {python!r})
from wirecheck.report import figure
plt = figure.pyplot()
out = Path({out!r})
# A log axis; counts large enough for an offset text ("1e7") above the y
# axis, which a long title meets; x tick labels at the top.
cases = {{"log": ([1, 300, 90000], "log", False),
         "offset": ([12345678, 23456789, 34567890], "linear", False),
         "top": ([1, 2, 3], "linear", True)}}
for name, (ys, scale, top) in cases.items():
    for how in ("matplotlib", "figure"):
        fig, ax = plt.subplots(figsize=(2.5, 2))
        ax.bar(range(3), ys)
        ax.set_yscale(scale)
        if top:
            ax.xaxis.tick_top()
        title = "a title as long as the axes are wide, " * 2
        if how == "figure":
            figure.set_title(ax, title)
        else:
            ax.set_title(title)
        fig.tight_layout()
        figure.save(fig, out / f"{{name}}-{{how}}.svg")
        plt.close(fig)
    print(name, figure._title_stays_at_top(ax))
"""


def test_a_title_is_put_at_the_top_only_where_matplotlib_would_leave_it(tmp_path):
    code = TITLES.format(python=str(REPO / "python"), out=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", code], check=True, timeout=120,
                          capture_output=True, text=True)
    assert done.stdout.split() == ["log", "True", "offset", "False", "top", "False"]
    for name in ("log", "offset", "top"):
        assert ((tmp_path / f"{name}-figure.svg").read_bytes()
                == (tmp_path / f"{name}-matplotlib.svg").read_bytes()), name
