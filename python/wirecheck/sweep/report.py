"""The fault sweep's report section alone (docs/sweeps.md):

    python3 -m wirecheck.sweep.report [--json FILE] [--out DIR] [--no-plots]

writes OUT/sweep.md (the section of python/wirecheck/report/sections/sweep.py)
and its plots, for a sweep made apart from a report; reports/sweep/README.md
is made so."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from ..runner import REPO
from ..report.sections import sweep as section


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m wirecheck.sweep.report",
                                 description="Render the fault sweep's report section alone.")
    ap.add_argument("--json", default=None, metavar="FILE",
                    help=f"the sweep's result (default {section.DEFAULT_JSON.relative_to(REPO)})")
    ap.add_argument("--out", default=None, metavar="DIR",
                    help="where the Markdown and the plots go (default: beside the JSON)")
    ap.add_argument("--name", default="sweep.md", help="the Markdown file's name (sweep.md)")
    ap.add_argument("--no-plots", action="store_true", help="the Markdown alone")
    a = ap.parse_args(argv)
    src = Path(a.json) if a.json else section.DEFAULT_JSON
    try:
        data = section.load(src)
    except (OSError, ValueError) as e:
        print(f"wirecheck.sweep.report: {e}", file=sys.stderr)
        return 2
    out = Path(a.out) if a.out else src.parent
    out.mkdir(parents=True, exist_ok=True)
    report = {section.NAME: data, "files": []}
    if not a.no_plots:
        from ..report.plots import run_plots
        jobs, files = section.plot_jobs(report, out, ())
        run_plots(jobs, lambda m: None)
        report["files"] = files
    (out / a.name).write_text("\n".join(["# Fault sweep", "", *section.body(report)]) + "\n")
    print(f"wirecheck.sweep.report: wrote {out / a.name} and {len(report['files'])} plot(s)",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
