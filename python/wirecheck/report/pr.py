"""summary.md: the short form of report.md, to paste into a pull request.

GitHub refuses a pull request body or comment over 65,536 characters, and
report.md is about 54 KB with 49 collapsed sections. summary.md keeps the
header, the summary, every target with its result and the benchmarks'
plots, and links the full report. Its links are relative to the report's
folder (they render where the folder is browsed on GitHub, e.g.
reports/sample/), or start with --link-base, an absolute URL of that folder,
so that they render pasted anywhere. Pure: a string from a report dict."""
from __future__ import annotations

from . import compare_builds
from .fmt import md_table
from .markdown import header_line, summary_lines

# Far below GitHub's 65,536 characters; tests/report holds summary.md to it.
SUMMARY_LIMIT = 16_000

# The benchmarks' plots, in the order summary.md shows them: (file, caption).
PLOTS = (("scaling-bytes-moved.svg", "Bytes moved by end(P) against payload, log-log"),
         ("scaling-sender-cpu.svg", "Sender CPU against payload, log-log"),
         ("batching.svg", "Write batching: sends and time per round against N"))
PLOTS = PLOTS + (("chunked.svg", "Chunked responses: requests per second and syscalls "
                                 "per response, fixed, separate and node"),)


def link(base: str, name: str) -> str:
    """name under base: 'https://.../sample/' + 'batching.svg', or name
    itself without a base."""
    if not base:
        return name
    return base.rstrip("/") + "/" + name


def targets_rows(report: dict) -> list[list[str]]:
    """Every target of the report, as (source, target, measured, result)."""
    rows = []
    for name in ("batching", "chat", "chunked"):
        b = report["bench"].get(name) or {}
        for t in b.get("targets") or []:
            measured = t["measured"] if isinstance(t["measured"], str) else (
                f"{t['measured']:.2f} (bound {t['bound']:.2f})")
            rows.append([f"bench/{name}", t["target"], measured, "PASS" if t["pass"] else "FAIL"])
    for t in (report.get("per_connection") or {}).get("targets") or []:
        rows.append(["per-connection", t["target"], t["measured"],
                     "PASS" if t["pass"] else "FAIL"])
    return rows


def render_summary(report: dict, link_base: str = "") -> str:
    """summary.md of a report (report["files"] says which plots exist)."""
    files = set(report.get("files") or ())
    L = ["# wirecheck report: summary", "", header_line(report), "",
         f"The full report: [report.md]({link(link_base, 'report.md')}) (a table per "
         f"behaviour and per benchmark, one plot per scenario profile) and "
         f"[report.json]({link(link_base, 'report.json')}) (every figure and the raw "
         f"traces).", "", "## Summary", ""]
    L += summary_lines(report)
    rows = targets_rows(report)
    if rows:
        met = sum(1 for r in rows if r[3] == "PASS")
        L += ["", "## Targets", "", f"{met} of {len(rows)} met.", ""]
        L += md_table(["Source", "Target", "Measured", "Result"], rows, "llll")
    L += compare_builds.pr_lines(report)  # with --base-bin: base against head
    plots = [(f, caption) for f, caption in PLOTS if f in files]
    if plots:
        L += ["", "## Plots", ""]
        for f, caption in plots:
            L += [f"![{caption}]({link(link_base, f)})", ""]
    return "\n".join(L).rstrip("\n") + "\n"
