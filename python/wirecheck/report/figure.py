"""What every plot of the report shares: matplotlib set up for stable SVG
(text as text, fixed ids, no date, so the same figures give the same
bytes) and for less CPU (caches for the whole process, titles and minor
ticks that skip work whose result is known), saving, the strategies'
colours and the payload axis. The plots
(plots.py) and the sections that draw their own figures (sections/) both
use it, so neither imports the other."""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Sequence

from .fmt import iec

FIXED_COLOR = "#1f77b4"
LEGACY_COLOR = "#d95f02"


def pyplot():
    try:
        import matplotlib
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise SystemExit("wirecheck.report: matplotlib is missing "
                         "(apt-get install -y python3-matplotlib)") from e
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    _share_math_parses()
    _share_text_metrics()
    plt.rcParams.update({
        "svg.fonttype": "none",       # text stays text: searchable, small
        "svg.hashsalt": "wirecheck",  # stable ids: the same data, the same file
        "font.family": "DejaVu Sans",
        "font.size": 9,
        "axes.titlesize": 10,
        "axes.spines.top": False,
        "axes.spines.right": False,
    })
    return plt


def _share_math_parses() -> None:
    """One cache of parsed math text (the log axes' tick labels: 10^3 and
    the like) for the whole process. matplotlib keeps its cache per parser,
    and each figure's renderers make parsers of their own, so without this
    every plot parses the same labels again (about a third of a per-profile
    plot's CPU). A parse depends only on the text, the dpi, the font and
    the kind of output, never on the renderer, and its result is only read:
    sharing it leaves every file byte for byte as it was. The labels of a
    report are a few dozen, so the cache is not bounded. Where the
    matplotlib at hand lacks that cache, its own is used."""
    try:
        from matplotlib.mathtext import MathTextParser
        parse = MathTextParser._parse_cached.__wrapped__
        MathTextParser("path")._output_type
    except (ImportError, AttributeError):  # pragma: no cover - another matplotlib
        return
    if getattr(MathTextParser._parse_cached, "wirecheck_shared", False):
        return
    parsed: dict = {}

    def parse_cached(self, s, dpi, prop):
        key = (self._output_type, s, dpi, prop)
        if key not in parsed:
            parsed[key] = parse(self, s, dpi, prop)
        return parsed[key]

    parse_cached.wirecheck_shared = True
    MathTextParser._parse_cached = parse_cached


def _share_text_metrics() -> None:
    """One cache of text metrics (width, height, descent of a string in a
    font) for the whole process. matplotlib caches them per renderer, and
    every figure makes new renderers (one for its layout, one per save), so
    without this each plot measures its tick labels, titles and the like
    again, though the report's plots share most of them. A measure depends
    only on the kind of renderer, its resolution, the string, the font and
    the dpi, which are the key here; a renderer of the same kind gives the
    same figures, so every file stays byte for byte as it was. Where the
    matplotlib at hand lacks that cache, its own is used."""
    import matplotlib.text as mtext
    # Once a process: the mark is on the module, so that a caller that puts
    # matplotlib's own function back (a test) keeps it.
    if getattr(mtext, "wirecheck_shared_metrics", False):
        return
    if not hasattr(mtext, "_get_text_metrics_with_cache_impl"):  # pragma: no cover
        return
    measured: dict = {}

    def metrics(renderer, text, fontprop, ismath, dpi):
        kind = (type(renderer), getattr(renderer, "dpi", None), renderer.points_to_pixels(72.0))
        key = (kind, text, fontprop, ismath, dpi)
        if key not in measured:
            # The key keeps a copy of the font: the caller may change its own.
            measured[(kind, text, fontprop.copy(), ismath, dpi)] = \
                renderer.get_text_width_height_descent(text, fontprop, ismath)
        return measured[key]

    mtext._get_text_metrics_with_cache = metrics
    mtext.wirecheck_shared_metrics = True


def save(fig, path: Path, extra_formats: Sequence[str] = (), tight: bool = True) -> None:
    """Writes fig as SVG (and each extra format). tight=True crops to what
    was drawn, which draws the figure twice; a figure whose every artist
    lies inside it after tight_layout (nothing anchored outside the axes)
    passes False, which costs about a third less per plot."""
    bbox = "tight" if tight else None
    fig.savefig(path, format="svg", metadata={"Date": None}, bbox_inches=bbox)
    for fmt in extra_formats:
        fig.savefig(path.with_suffix("." + fmt), format=fmt, dpi=110, bbox_inches=bbox)


def set_title(ax, text: str, **kwargs) -> None:
    """ax.set_title(text, **kwargs), the title where matplotlib would put
    it, found for less. matplotlib raises a title above the top of its axes
    only to clear x tick labels placed at the top or the y axis's offset
    text ("1e6" and the like); it finds that out by measuring the y axis,
    its ticks and their labels, on every layout and every draw (an eighth of a
    per-profile plot's CPU). With neither, the title stays at the top (y
    1.0), so it is put there at once and not searched for. Call it once
    the axes' limits and ticks are set."""
    if _title_stays_at_top(ax):
        kwargs["y"] = 1.0
    ax.set_title(text, **kwargs)


def _title_stays_at_top(ax) -> bool:
    if (ax.xaxis.get_ticks_position() in ("top", "unknown")
            or ax.xaxis.get_label_position() == "top"):
        return False
    formatter = ax.yaxis.get_major_formatter()
    formatter.set_locs(ax.yaxis.get_majorticklocs())  # as the next draw will
    return not formatter.get_offset()


def drawn_minor_ticks_only(axis) -> None:
    """Makes axis's minor locator hand out only the ticks inside its view
    limits. matplotlib makes a tick object (two lines, two labels) for every
    place its locator gives and draws only those in view; a log axis's
    locator gives whole decades, so most of a log axis's 50 or so minor
    ticks were made and never drawn (an eighth of a per-profile plot's CPU).
    The ticks in view are the same, in the same order, so the file is byte
    for byte what it was."""
    axis.set_minor_locator(_in_view_locator()(axis.get_minor_locator()))


def _in_view(axis, locs):
    """locs without those outside axis's view limits, with a margin far
    wider than the rounding matplotlib allows when it picks the ticks to
    draw, so that none it draws is left out."""
    import numpy as np
    locs = np.asarray(locs)
    if not len(locs):
        return locs
    to_screen = axis.get_transform()
    lo, hi = sorted(to_screen.transform(axis.get_view_interval()))
    margin = (hi - lo) * 1e-6
    with np.errstate(divide="ignore", invalid="ignore"):
        at = to_screen.transform(locs)
    return locs[(at >= lo - margin) & (at <= hi + margin)]


@functools.cache
def _in_view_locator():
    from matplotlib.ticker import Locator

    class InView(Locator):
        """Another locator's ticks, those in view (drawn_minor_ticks_only)."""

        def __init__(self, inner):
            self.inner = inner

        def set_axis(self, axis):
            super().set_axis(axis)
            self.inner.set_axis(axis)

        def __call__(self):
            return _in_view(self.axis, self.inner())

        def tick_values(self, vmin, vmax):
            return self.inner.tick_values(vmin, vmax)

    return InView


def log2_payload_axis(ax, payloads):
    from matplotlib.ticker import FixedLocator, NullLocator
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(sorted(set(payloads))))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([iec(p) for p in sorted(set(payloads))])
    lo, hi = min(payloads), max(payloads)
    ax.set_xlim(lo / 1.25, hi * 1.25)
