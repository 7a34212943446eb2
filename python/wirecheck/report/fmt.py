"""Text helpers of the report: numbers, units, paths and Markdown tables, as
report.md and the plots print them. Pure: no I/O."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence

from ..runner import REPO
# sender_cpu's modes, as the plots and the tables name them.
MODE_TITLES = {"clamp_4k": "every send clamped to 4 KiB", "unclamped": "unclamped"}


def fmt_int(v: Any) -> str:
    """12345 -> '12,345'; None -> '-'."""
    if v is None:
        return "-"
    if isinstance(v, float) and not v.is_integer():
        return f"{v:,.1f}"
    return f"{int(v):,}"


def fmt_ms(v: float | None) -> str:
    """CPU ms with 3 significant digits at least: 0.0413 -> '0.0413'."""
    if v is None:
        return "-"
    return f"{v:.1f}" if v >= 10 else f"{v:.3g}"


def fmt_load(v: Any) -> str:
    """A load average as the benches print it: 2.10."""
    return f"{v:.2f}" if isinstance(v, (int, float)) else "-"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def iec(n: float) -> str:
    """Bytes in IEC units, 3 significant digits: 4194304 -> '4 MiB'."""
    if n is None:
        return "-"
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{n:.0f} B"
        n /= 1024
    raise AssertionError("unreachable")


def byte_unit(maxv: float) -> tuple[int, str]:
    """The IEC unit to draw bytes up to maxv in: (divisor, name)."""
    for k, name in ((4, "TiB"), (3, "GiB"), (2, "MiB"), (1, "KiB")):
        if maxv >= 1024 ** k:
            return 1024 ** k, name
    return 1, "bytes"


def ratio_text(ratio: Any) -> str:
    if ratio is None:
        return "-"
    if ratio == "inf":
        return "inf"
    if ratio >= 100:
        return f"x{ratio:,.0f}"
    return f"x{ratio:.2f}"


def fmt_pc(v: float | None) -> str:
    """A per-connection figure: 0.00, 1.00."""
    return "-" if v is None else f"{v:.2f}"


def rel(path: Path) -> str:
    """A path relative to the repository (or the working directory) when it
    is under it, else absolute."""
    path = Path(path).resolve()
    for base in (REPO, Path.cwd()):
        try:
            return str(path.relative_to(base))
        except ValueError:
            pass
    return str(path)


def safe_name(text: str) -> str:
    """A file name from text: letters, digits and ._=+- only, and no leading
    dash or dot (a name like '-x.svg' reads as an option to a shell tool,
    and GitHub does not render an image whose link starts with one)."""
    return re.sub(r"[^A-Za-z0-9._=+-]+", "_", text).strip("_").lstrip("-.") or "x"


def exit_text(summary: dict | None) -> str:
    """How a subject ended, in words: 'exit 0', 'exit 1 (error)',
    'signal SIGABRT', 'timed out', '-' (no run)."""
    return _exit(summary, "exit ", lambda ex: f"signal {ex['signal']}")


def exit_short(summary: dict | None) -> str:
    """How a subject ended, for a table cell: '0', '1', 'SIGABRT',
    'timed out', '-' (no run). A data point, not a failure of the report."""
    return _exit(summary, "", lambda ex: str(ex["signal"]) + (" (core)" if ex.get("core") else ""))


def _exit(summary: dict | None, code_prefix: str, signal_text) -> str:
    if not summary:
        return "-"
    ex = summary.get("exit") or {}
    if ex.get("timed_out"):
        return "timed out"
    if "signal" in ex:
        return signal_text(ex)
    text = f"{code_prefix}{ex.get('code')}"
    if "error" in ex:
        text += f" ({ex['error']})"
    return text


def sends_text(st: dict) -> str:
    """Sends per round as the bench prints them: the count when every round
    had the same, else the mean."""
    return fmt_int(st["min"]) if st["min"] == st["max"] else f"{st['mean']:.1f}"


def md_table(header: Sequence[str], rows: Iterable[Sequence[Any]], align: Sequence[str]) -> list[str]:
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    return out


def failed_targets_text(targets: Sequence[dict]) -> str:
    failed = [t["target"] for t in targets if not t["pass"]]
    return f" (FAIL: {'; '.join(failed)})" if failed else ""


def targets_text(b: dict) -> str:
    return (f"targets met {b.get('targets_met')} of {b.get('targets_total')}"
            + failed_targets_text(b.get("targets") or []))


def bench_command(report: dict, name: str):
    """The command line a bench ran with: as the report ran it, else as the
    bench's own JSON says (a --bench-json file)."""
    run = (report["bench"]["runs"].get(name) or {}).get("command")
    return run or (report["bench"].get(name) or {}).get("command")


def not_run_text(report: dict, name: str) -> str:
    bench = report["bench"]
    if not bench["ran"]:
        return "Not run (--no-bench)."
    if bench.get("from_file"):
        return f"Not in `{bench['from_file']}` (--bench-json)."
    if name not in (bench.get("runs") or {}):
        return "Not run (not in --benches)."
    err = (bench["runs"][name] or {}).get("error")
    return f"Failed: {err}." if err else "Not run."


def command_md(report: dict, name: str, default: Sequence[str]) -> str:
    """A bench's command line as Markdown code, `...`: bench_command's,
    else default."""
    return f"`{' '.join(bench_command(report, name) or default)}`"


def bench_start(report: dict, name: str, heading: str,
                default: Sequence[str]) -> tuple[Any, list[str], str]:
    """The start of a bench's section: its figures (report["bench"][name],
    None when it has none), its lines so far (the heading, then why there
    are no figures when there are none) and its command (command_md)."""
    data = report["bench"].get(name)
    lines = ["", heading, ""]
    if not data:
        return None, lines + [not_run_text(report, name)], ""
    return data, lines, command_md(report, name, default)


def cell_text(x: Optional[dict], text: Callable[[dict], str]) -> str:
    """A table cell of one run that may be absent ("-") or skipped
    (x["skipped"]: "skipped"): else text(x)."""
    if x is None:
        return "-"
    if x["skipped"]:
        return "skipped"
    return text(x)
