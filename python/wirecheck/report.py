"""`python3 -m wirecheck.report`: one run of the scenario suite and the
benchmarks, turned into reports/out/ (report.md, report.json, SVG plots).

What it runs (docs/reports.md):

- every scenario under --paths (default: scenarios/), for every profile of
  its matrix, once with the fixed queue (the default, `queue=cursor`) and,
  when the scenario declares `legacy`, once with its legacy variant
  (`queue=memmove`), through wirecheck.runner.run;
- the benchmarks beside the wirecheck binary: `bytes_moved --json`,
  `sender_cpu --json` (small sizes and few rounds unless --full) and
  `gate_cost` (text; --no-gate-cost skips it). --no-bench skips all three.

What it writes in --out (default reports/out): report.md, report.json (the
same figures, plus the raw traces and bench output), one SVG per scenario
profile (fixed vs legacy: syscalls by kind, bytes moved, bytes delivered) and
the scaling plots (bytes moved and sender CPU against payload size, log-log).

Exit status: 0 when everything ran; 1 when the report was written but a
scenario or a benchmark failed to run (the report says which); 2 on bad
usage or when nothing could be run (no wirecheck binary, no scenario).
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

from .runner import REPO, WirecheckError, check, find_binary, profiles, run

SCHEMA = 1
DEFAULT_OUT = REPO / "reports" / "out"
DEFAULT_PATHS = [REPO / "scenarios"]

# sender_cpu's sizes (MiB). --quick keeps the bench's 3 rounds but adds 2 MiB
# to its 4,8 so that every line has two doublings; --full runs 7 rounds from
# 4 to 64 MiB (memmove at the 4 KiB clamp is skipped by the bench itself past
# its 2e10-byte prediction limit, i.e. from 16 MiB on).
CPU_SIZES_QUICK = "2,4,8"
CPU_SIZES_FULL = "4,8,16,32,64"

# The syscall kinds that are parts of another (epoll_ctl by op).
SPLIT_KIND = re.compile(r"^[a-z_]+\.[a-z_]+$")
WRITE_KINDS = ("send", "sendto", "sendmsg", "write", "writev")
# Trace fields that say what a run did (not how fast): compared between the
# fixed and legacy runs to say where they differ.
COMPARED_FIELDS = ("exit", "peer", "events", "syscalls", "queue")

FIXED_COLOR = "#1f77b4"
LEGACY_COLOR = "#d95f02"


# --------------------------------------------------------------- formatting

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


def compare(fixed: Any, legacy: Any) -> dict:
    """legacy / fixed. ratio is a number, the string "inf" when fixed is 0
    and legacy is not, or None when both are 0 or a side is missing; text is
    how report.md shows it ('x4.00', 'inf', '-')."""
    if fixed is None or legacy is None:
        ratio = None
    elif fixed == 0:
        ratio = "inf" if legacy != 0 else None
    else:
        ratio = legacy / fixed
    return {"fixed": fixed, "legacy": legacy, "ratio": ratio,
            "ratio_text": ratio_text(ratio)}


def ratio_text(ratio: Any) -> str:
    if ratio is None:
        return "-"
    if ratio == "inf":
        return "inf"
    if ratio >= 100:
        return f"x{ratio:,.0f}"
    return f"x{ratio:.2f}"


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
    return re.sub(r"[^A-Za-z0-9._=+-]+", "_", text).strip("_") or "x"


# ------------------------------------------------------------------ scenarios

def find_scenarios(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """Every *.wcs under each path (a file is taken as it is), sorted, once."""
    found: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            found += sorted(p.rglob("*.wcs"))
        elif p.is_file():
            found.append(p)
        else:
            raise FileNotFoundError(f"no such scenario file or folder: {p}")
    seen, out = set(), []
    for f in found:
        key = f.resolve()
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def scenario_stem(path: Path) -> str:
    """scenarios/queue/end-large.wcs -> 'queue-end-large' (the plot name)."""
    r = Path(rel(path)).with_suffix("")
    parts = list(r.parts)
    if len(parts) > 1 and parts[0] == "scenarios":
        parts = parts[1:]
    return safe_name("-".join(parts))


def summarize_trace(trace: dict, seconds: float) -> dict:
    """The figures the report compares, from one trace."""
    peers = trace.get("peer")
    peers = peers if isinstance(peers, list) else [peers] if peers else []
    syscalls = trace.get("syscalls") or {}
    queue = trace.get("queue")
    return {
        "variant": trace.get("variant"),
        "exit": trace.get("exit"),
        "syscalls": syscalls,
        "syscalls_total": sum(v for k, v in syscalls.items() if not SPLIT_KIND.match(k)),
        "writing_syscalls": sum(syscalls.get(k, 0) for k in WRITE_KINDS),
        "bytes_moved": queue.get("bytes_moved") if queue else None,
        "allocations": queue.get("allocations") if queue else None,
        "bytes_delivered": sum(p.get("bytes", 0) for p in peers),
        "peer_sha256": [p.get("sha256") for p in peers],
        "events": len(trace.get("events") or []),
        "seconds": round(seconds, 3),
        "trace": trace,
    }


def clean_exit(summary: dict | None) -> bool:
    ex = (summary or {}).get("exit") or {}
    return ex.get("code") == 0 and not ex.get("timed_out") and "error" not in ex


def exit_text(summary: dict | None) -> str:
    if not summary:
        return "-"
    ex = summary.get("exit") or {}
    if ex.get("timed_out"):
        return "timed out"
    if "signal" in ex:
        return f"signal {ex['signal']}"
    text = f"exit {ex.get('code')}"
    if "error" in ex:
        text += f" ({ex['error']})"
    return text


def compare_runs(fixed: dict | None, legacy: dict | None) -> dict:
    f, l = fixed or {}, legacy or {}
    kinds = sorted(set(f.get("syscalls", {})) | set(l.get("syscalls", {})))
    return {
        "bytes_moved": compare(f.get("bytes_moved"), l.get("bytes_moved")),
        "allocations": compare(f.get("allocations"), l.get("allocations")),
        "bytes_delivered": compare(f.get("bytes_delivered"), l.get("bytes_delivered")),
        "syscalls_total": compare(f.get("syscalls_total"), l.get("syscalls_total")),
        "writing_syscalls": compare(f.get("writing_syscalls"), l.get("writing_syscalls")),
        "syscalls": {k: compare(f.get("syscalls", {}).get(k), l.get("syscalls", {}).get(k))
                     for k in kinds},
    }


def differing_fields(fixed: dict | None, legacy: dict | None) -> list[str] | None:
    if not fixed or not legacy:
        return None
    a, b = fixed["trace"], legacy["trace"]
    return [k for k in COMPARED_FIELDS if a.get(k) != b.get(k)]


def run_scenarios(paths: Sequence[Path], binary: Path, log) -> list[dict]:
    """Checks every scenario, then runs each profile fixed and legacy."""
    scenarios: list[dict] = []
    jobs: list[tuple[dict, dict, str]] = []
    for path in paths:
        entry: dict = {"path": rel(path), "name": path.stem, "stem": scenario_stem(path),
                       "behaviour": None, "legacy": None, "profiles": [], "error": None}
        scenarios.append(entry)
        try:
            meta = check(path, binary)
        except (WirecheckError, OSError, ValueError) as e:
            entry["error"] = f"check failed: {e}"
            log(f"[check] {rel(path)}: {entry['error']}")
            continue
        entry["name"] = meta.get("name", path.stem)
        entry["behaviour"] = meta.get("behaviour")
        entry["legacy"] = meta.get("legacy")
        for prof in profiles(meta):
            p = {"id": prof.id, "values": [list(v) for v in prof.values], "flags": prof.flags,
                 "plot": None, "fixed": None, "legacy": None, "errors": {}}
            entry["profiles"].append(p)
            jobs.append((entry, p, "fixed"))
            if entry["legacy"]:
                jobs.append((entry, p, "legacy"))
    total = len(jobs)
    for i, (entry, p, side) in enumerate(jobs, 1):
        label = f"{Path(entry['path']).with_suffix('')} {p['id'] or '(no matrix)'} {side}"
        log(f"[{i}/{total}] {label}")
        variants = [entry["legacy"]["variant"]] if side == "legacy" else []
        start = time.monotonic()
        try:
            trace = run(REPO / entry["path"] if not Path(entry["path"]).is_absolute()
                        else entry["path"], p["flags"], variants=variants, binary=binary)
        except (WirecheckError, OSError, ValueError, subprocess.TimeoutExpired) as e:
            p["errors"][side] = str(e)
            log(f"[{i}/{total}] {label}: FAILED: {e}")
            continue
        p[side] = summarize_trace(trace, time.monotonic() - start)
    for entry in scenarios:
        for p in entry["profiles"]:
            p["comparison"] = compare_runs(p["fixed"], p["legacy"])
            p["legacy_differs_in"] = differing_fields(p["fixed"], p["legacy"])
            p["same_bytes_delivered"] = (
                None if not p["fixed"] or not p["legacy"]
                else p["fixed"]["peer_sha256"] == p["legacy"]["peer_sha256"])
    return scenarios


# --------------------------------------------------------------- benchmarks

def run_bench(argv: Sequence[str], log, label: str, timeout: float = 3600) -> dict:
    """Runs one benchmark; returns {command, seconds, returncode, stdout,
    stderr_tail, error}."""
    start = time.monotonic()
    log(f"[bench] {label}: {' '.join(rel(Path(argv[0])) if i == 0 else a for i, a in enumerate(argv))}")
    res: dict = {"command": [rel(Path(argv[0]))] + list(argv[1:]), "error": None}
    try:
        proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        res.update(seconds=round(time.monotonic() - start, 3), returncode=None,
                   stdout="", stderr_tail="", error=str(e))
        log(f"[bench] {label}: FAILED: {e}")
        return res
    res.update(seconds=round(time.monotonic() - start, 3), returncode=proc.returncode,
               stdout=proc.stdout, stderr_tail="\n".join(proc.stderr.splitlines()[-5:]))
    if proc.returncode != 0:
        res["error"] = f"{label} exited {proc.returncode}: {res['stderr_tail'].strip()}"
        log(f"[bench] {label}: FAILED: {res['error']}")
    return res


def parse_json_bench(res: dict) -> dict | None:
    try:
        return json.loads(res["stdout"]) if res.get("stdout") else None
    except ValueError as e:
        res["error"] = (res.get("error") or "") + f" (output is not JSON: {e})"
        return None


GATE_ROW = re.compile(r"^(direct|disarmed|armed)\s+([-+0-9.]+)\s+([-+0-9.]+)\s*$")


def parse_gate_cost(text: str) -> dict | None:
    """gate_cost's text: its first line and the median ns per variant."""
    rows = []
    for line in text.splitlines():
        m = GATE_ROW.match(line.strip())
        if m:
            rows.append({"variant": m.group(1), "median_ns": float(m.group(2)),
                         "median_diff_ns": float(m.group(3))})
    if not rows:
        return None
    return {"setup": text.splitlines()[0].strip(), "rows": rows}


def run_benches(bench_dir: Path, opts, log) -> dict:
    bench: dict = {"ran": True, "bytes_moved": None, "sender_cpu": None, "gate_cost": None,
                   "runs": {}, "errors": []}
    cpu_sizes = opts.cpu_sizes or (CPU_SIZES_FULL if opts.full else CPU_SIZES_QUICK)
    plan = [("bytes_moved", [str(bench_dir / "bytes_moved"), "--json"])]
    cpu = [str(bench_dir / "sender_cpu"), "--json", "--sizes", cpu_sizes]
    if not opts.full:
        cpu.insert(2, "--quick")
    plan.append(("sender_cpu", cpu))
    if not opts.no_gate_cost:
        plan.append(("gate_cost", [str(bench_dir / "gate_cost")]))
    for i, (name, argv) in enumerate(plan, 1):
        res = run_bench(argv, log, f"{i}/{len(plan)} {name}")
        parsed = parse_gate_cost(res["stdout"]) if name == "gate_cost" else parse_json_bench(res)
        if parsed is None and not res["error"]:
            res["error"] = f"{name}: no figures in its output"
        bench[name] = parsed
        bench["runs"][name] = {k: v for k, v in res.items() if k != "stdout"}
        if res["error"]:
            bench["errors"].append(res["error"])
    return bench


# ------------------------------------------------------------------ scaling

def loglog_slope(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Least-squares slope of log y against log x; None with fewer than two
    positive points."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y and y > 0]
    if len(pts) < 2:
        return None
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    if sxx == 0:
        return None
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx


def doubling_factors(points: Sequence[dict], key: str) -> list:
    """Factor between consecutive points whose payload doubles."""
    out = []
    for a, b in zip(points, points[1:]):
        va, vb = a.get(key), b.get(key)
        if b["payload"] == 2 * a["payload"] and va and vb is not None:
            out.append(round(vb / va, 4))
        else:
            out.append(None)
    return out


def bytes_moved_scaling(bm: dict | None) -> list[dict]:
    """Per clamp: legacy and fixed bytes moved against payload."""
    if not bm:
        return []
    series = []
    for clamp in sorted({r["clamp"] for r in bm.get("rows", [])}):
        rows = sorted((r for r in bm["rows"] if r["clamp"] == clamp), key=lambda r: r["payload"])
        points = [{"payload": r["payload"], "legacy": r["memmove_bytes_moved"],
                   "fixed": r["cursor_bytes_moved"], "closed_form": r["closed_form"],
                   "flushes": r["flushes"]} for r in rows]
        series.append({
            "clamp": clamp,
            "points": points,
            "legacy_per_doubling": doubling_factors(points, "legacy"),
            "legacy_slope": loglog_slope([p["payload"] for p in points],
                                         [p["legacy"] for p in points]),
            "fixed_all_zero": all(p["fixed"] == 0 for p in points),
        })
    return series


def sender_cpu_scaling(sc: dict | None) -> list[dict]:
    """Per (mode, transport, sender): median CPU ms against payload."""
    if not sc:
        return []
    keys = []
    for c in sc.get("cells", []):
        k = (c["mode"], c["transport"], c["sender"])
        if k not in keys:
            keys.append(k)
    series = []
    for mode, transport, sender in keys:
        cells = sorted((c for c in sc["cells"] if (c["mode"], c["transport"], c["sender"])
                        == (mode, transport, sender)), key=lambda c: c["payload"])
        points = [{"payload": c["payload"], "skipped": c.get("skipped", False),
                   "median_cpu_ms": None if c.get("skipped") else c.get("median_cpu_ms"),
                   "predicted_bytes_moved": c.get("predicted_bytes_moved"),
                   "median_bytes_moved": c.get("median_bytes_moved")} for c in cells]
        ran = [p for p in points if not p["skipped"]]
        series.append({
            "mode": mode, "transport": transport, "sender": sender, "points": points,
            "per_doubling": doubling_factors(ran, "median_cpu_ms"),
            "slope": loglog_slope([p["payload"] for p in ran], [p["median_cpu_ms"] for p in ran]),
            "skipped_payloads": [p["payload"] for p in points if p["skipped"]],
        })
    return series


def seed_table(bm: dict | None) -> list[dict]:
    """The seed's "Bytes moved" table, from the bytes_moved bench: payload,
    clamp, flushes, legacy bytes moved, fixed bytes moved; rows ordered as
    the seed's (payload, then clamp descending)."""
    if not bm:
        return []
    rows = sorted(bm.get("rows", []), key=lambda r: (r["payload"], -r["clamp"]))
    return [{"payload": r["payload"], "clamp": r["clamp"], "flushes": r["flushes"],
             "legacy_bytes_moved": r["memmove_bytes_moved"],
             "fixed_bytes_moved": r["cursor_bytes_moved"],
             "seed_flushes": r.get("seed_flushes"), "seed_table": r.get("seed_table")}
            for r in rows]


# -------------------------------------------------------------------- plots

def _plt():
    try:
        import matplotlib
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise SystemExit("wirecheck.report: matplotlib is missing "
                         "(apt-get install -y python3-matplotlib)") from e
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
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


def _save(fig, path: Path, extra_formats: Sequence[str] = ()) -> None:
    fig.savefig(path, format="svg", metadata={"Date": None}, bbox_inches="tight")
    for fmt in extra_formats:
        fig.savefig(path.with_suffix("." + fmt), format=fmt, dpi=110, bbox_inches="tight")


def _iec_formatter():
    from matplotlib.ticker import FuncFormatter
    return FuncFormatter(lambda v, _pos: iec(v) if v > 0 else "0")


def plot_profile(entry: dict, p: dict, path: Path, extra_formats=()) -> None:
    """Fixed vs legacy for one scenario profile: syscalls by kind (log),
    bytes moved, bytes delivered."""
    plt = _plt()
    cmp = p["comparison"]
    has_legacy = p["legacy"] is not None
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2),
                             gridspec_kw={"width_ratios": [3.2, 1.2, 1.2]})
    sides = [("fixed", FIXED_COLOR, p["fixed"])]
    if has_legacy:
        sides.append(("legacy", LEGACY_COLOR, p["legacy"]))
    variant_of = {"fixed": "queue=cursor",
                  "legacy": (entry.get("legacy") or {}).get("variant", "legacy")}

    # Syscalls by kind, log scale (counts span 1 to 10^5); epoll_ctl is shown
    # split by op, kinds 0 on both sides are left out.
    ax = axes[0]
    kinds = [k for k, c in cmp["syscalls"].items()
             if (c["fixed"] or c["legacy"])
             and not (k == "epoll_ctl" and any(s.startswith("epoll_ctl.") for s in cmp["syscalls"]))]
    width = 0.8 / len(sides)
    for i, (side, color, _summary) in enumerate(sides):
        xs = [j + (i - (len(sides) - 1) / 2) * width for j in range(len(kinds))]
        vals = [cmp["syscalls"][k][side] or 0 for k in kinds]
        ax.bar(xs, [v if v > 0 else float("nan") for v in vals], width,
               color=color, label=f"{side} ({variant_of[side]})")
    # One count per kind when the sides agree; else one per bar, the
    # second raised a line so that long counts do not overlap.
    for j, k in enumerate(kinds):
        vals = [cmp["syscalls"][k][side] or 0 for side, _, _ in sides]
        if len(set(vals)) == 1:
            ax.annotate(fmt_int(vals[0]), (j, max(vals[0], 1)), xytext=(0, 2),
                        textcoords="offset points", ha="center", va="bottom", fontsize=7)
            continue
        for i, v in enumerate(vals):
            x = j + (i - (len(sides) - 1) / 2) * width
            ax.annotate(fmt_int(v), (x, max(v, 1)), xytext=(0, 2 + 9 * i),
                        textcoords="offset points", ha="center", va="bottom", fontsize=7,
                        color=sides[i][1])
    ax.set_yscale("log")
    ax.set_ylim(0.6, max([1] + [(cmp["syscalls"][k][s] or 0) for k in kinds for s, _, _ in sides]) * 40)
    ax.set_xticks(range(len(kinds)))
    ax.set_xticklabels(kinds, rotation=30, ha="right")
    ax.set_ylabel("calls (log scale)")
    ratios = ", ".join(f"{k} {cmp['syscalls'][k]['ratio_text']}" for k in kinds
                       if k in WRITE_KINDS and has_legacy)
    ax.set_title("Syscalls by kind" + (f"\nlegacy/fixed: {ratios}" if ratios else ""))
    ax.legend(loc="upper left", fontsize=8, frameon=False)

    def pair(ax, metric: str, title: str):
        vals = [cmp[metric][side] for side, _, _ in sides]
        colors = [c for _, c, _ in sides]
        labels = [side for side, _, _ in sides]
        heights = [v or 0 for v in vals]
        div, unit = byte_unit(max(heights + [1]))
        ax.bar(range(len(vals)), [h / div for h in heights], 0.6, color=colors)
        top = max(heights + [1]) / div
        for x, v in enumerate(vals):
            ax.annotate("n/a" if v is None else f"{fmt_int(v)} B", (x, (v or 0) / div),
                        xytext=(0, 3), textcoords="offset points", ha="center",
                        va="bottom", fontsize=8)
        ax.set_ylim(0, top * 1.25)
        if not any(heights):  # nothing to scale: no fractional byte ticks
            ax.set_yticks([0])
        ax.set_xticks(range(len(vals)))
        ax.set_xticklabels(labels)
        ax.set_ylabel(unit)
        r = cmp[metric]
        if not has_legacy:
            sub = "no legacy variant declared"
        elif r["ratio"] == "inf":
            sub = "legacy/fixed: inf (fixed is 0)"
        elif r["ratio"] is None:
            sub = "legacy/fixed: - (both 0)" if r["fixed"] == 0 else "legacy/fixed: -"
        else:
            sub = f"legacy/fixed: {r['ratio_text']}"
        ax.set_title(f"{title}\n{sub}")

    pair(axes[1], "bytes_moved", "Bytes moved by the queue")
    pair(axes[2], "bytes_delivered", "Bytes delivered to the peer")
    prof = p["id"] or "no matrix"
    fig.suptitle(f"{Path(entry['path']).with_suffix('')}  [{prof}]: "
                 f"fixed vs legacy, one run each", fontsize=11, x=0.01, ha="left")
    fig.tight_layout()
    _save(fig, path, extra_formats)
    plt.close(fig)


def _log2_payload_axis(ax, payloads):
    from matplotlib.ticker import FixedLocator, NullLocator
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(sorted(set(payloads))))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([iec(p) for p in sorted(set(payloads))])
    lo, hi = min(payloads), max(payloads)
    ax.set_xlim(lo / 1.25, hi * 1.25)


def plot_bytes_moved_scaling(series: list[dict], path: Path, extra_formats=()) -> None:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 5.2))
    payloads = [pt["payload"] for s in series for pt in s["points"]]
    styles = ["o-", "s-", "^-", "D-"]
    colors = [LEGACY_COLOR, "#7570b3", "#e7298a", "#66a61e"]
    for i, s in enumerate(series):
        xs = [pt["payload"] for pt in s["points"]]
        ys = [pt["legacy"] for pt in s["points"]]
        pds = [d for d in s["legacy_per_doubling"] if d]
        pd_text = f"x{sum(pds) / len(pds):.2f} per doubling" if pds else ""
        slope = f"slope {s['legacy_slope']:.2f}" if s["legacy_slope"] is not None else ""
        ax.plot(xs, ys, styles[i % 4], color=colors[i % 4], lw=1.8, ms=5,
                label=f"legacy (memmove), clamp {iec(s['clamp'])}: {slope}, {pd_text}")
        above = i % 2 == 0
        for (x0, y0), (x1, y1), d in zip(zip(xs, ys), zip(xs[1:], ys[1:]), s["legacy_per_doubling"]):
            if d:
                ax.annotate(f"x{d:.2f}", (math.sqrt(x0 * x1), math.sqrt(y0 * y1)),
                            xytext=(-6, 6) if above else (6, -6), textcoords="offset points",
                            ha="right" if above else "left", va="bottom" if above else "top",
                            fontsize=8, color=colors[i % 4])
    # The cursor's bound: bytes moved <= bytes sent = P (slope 1).
    xs = sorted(set(payloads))
    ax.plot(xs, xs, ":", color="0.45", lw=1.4,
            label="payload P = bytes sent (slope 1): the cursor's bound, moved ≤ sent")
    _log2_payload_axis(ax, payloads)
    ax.set_yscale("log", base=2)
    ys_all = [pt["legacy"] for s in series for pt in s["points"] if pt["legacy"]] + xs
    from matplotlib.ticker import FixedLocator, NullLocator
    lo = 2 * math.floor(math.log2(min(ys_all)) / 2)
    hi = 2 * math.ceil(math.log2(max(ys_all)) / 2)
    ax.yaxis.set_major_locator(FixedLocator([2.0 ** e for e in range(lo, hi + 1, 2)]))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(_iec_formatter())
    ax.set_ylim(2.0 ** lo / 1.5, 2.0 ** hi * 1.5)
    ax.set_xlabel("payload P (log scale: one tick per doubling)")
    ax.set_ylabel("bytes moved by the queue (log scale: one tick per x4)")
    ax.set_title("Bytes moved by end(P) at clamp C (bench/bytes_moved):\n"
                 "legacy is quadratic in P, fixed moves nothing", loc="left")
    ax.grid(True, which="major", alpha=0.3)
    zero = all(s["fixed_all_zero"] for s in series)
    note = ("fixed (cursor): 0 bytes moved at every payload and clamp;\n"
            "0 has no place on a log axis, so it is not drawn"
            if zero else "fixed (cursor) moved bytes: see report.md")
    ax.text(0.98, 0.04, note, transform=ax.transAxes, ha="right", va="bottom", fontsize=9,
            color=FIXED_COLOR, bbox={"boxstyle": "round", "fc": "white", "ec": FIXED_COLOR})
    ax.legend(loc="upper left", fontsize=8, frameon=False)
    fig.tight_layout()
    _save(fig, path, extra_formats)
    plt.close(fig)


SENDER_COLORS = {"cursor": FIXED_COLOR, "memmove": LEGACY_COLOR, "floor": "0.4"}
SENDER_LABELS = {"cursor": "cursor (fixed)", "memmove": "memmove (legacy)",
                 "floor": "floor (plain send loop)"}
MODE_TITLES = {"clamp_4k": "every send clamped to 4 KiB", "unclamped": "unclamped"}


def plot_cpu_scaling(series: list[dict], sc: dict, path: Path, extra_formats=()) -> None:
    plt = _plt()
    modes = [m for m in ("clamp_4k", "unclamped") if any(s["mode"] == m for s in series)]
    modes += sorted({s["mode"] for s in series} - set(modes))
    fig, axes = plt.subplots(1, len(modes), figsize=(6.2 * len(modes), 6.2), squeeze=False)
    for ax, mode in zip(axes[0], modes):
        vals = [pt["median_cpu_ms"] for s in series if s["mode"] == mode
                for pt in s["points"] if pt["median_cpu_ms"]]
        ymin, ymax = min(vals, default=0.1), max(vals, default=1)
        payloads = [pt["payload"] for s in series for pt in s["points"] if s["mode"] == mode]
        for s in (s for s in series if s["mode"] == mode):
            ran = [pt for pt in s["points"] if not pt["skipped"] and pt["median_cpu_ms"]]
            if not ran and not s["skipped_payloads"]:
                continue
            pds = [d for d in s["per_doubling"] if d]
            pd_text = (", ".join(f"x{d:.1f}" for d in pds) + " per doubling" if pds
                       else "one size" if ran else "no run")
            if s["skipped_payloads"]:
                limit = (sc or {}).get("skip_threshold_bytes")
                pd_text += ("; skipped at " + ", ".join(iec(x) for x in s["skipped_payloads"])
                            + (f" (predicted move > {limit:.0e} B)" if limit else ""))
            ax.plot([pt["payload"] for pt in ran], [pt["median_cpu_ms"] for pt in ran],
                    "o-" if s["transport"] == "unix" else "s--",
                    color=SENDER_COLORS.get(s["sender"], "k"), lw=1.6, ms=4.5,
                    label=f"{SENDER_LABELS.get(s['sender'], s['sender'])}, {s['transport']}: {pd_text}")
        # Slope guides from the smallest payload, below the data.
        if payloads:
            x0, x1 = min(payloads), max(payloads)
            base = ymin / 2
            for slope, style in ((1, (0, (1, 2))), (2, (0, (5, 3)))):
                ax.plot([x0, x1], [base, base * (x1 / x0) ** slope], linestyle=style,
                        color="0.6", lw=1)
                ax.annotate(f"slope {slope}" + (" (linear)" if slope == 1 else " (quadratic)"),
                            (x1, base * (x1 / x0) ** slope), xytext=(4, 0),
                            textcoords="offset points", va="center", fontsize=7.5, color="0.45")
            _log2_payload_axis(ax, payloads)
            ax.set_xlim(x0 / 1.25, x1 * 2.2)
        ax.set_yscale("log")
        ax.set_ylim(ymin / 4, ymax * 2)
        ax.set_xlabel("payload P (log scale)")
        ax.set_ylabel("sender CPU, ms (median, log scale)")
        title = MODE_TITLES.get(mode, mode)
        moved = [pt.get("median_bytes_moved") for s in series
                 if s["mode"] == mode and s["sender"] == "memmove" for pt in s["points"]
                 if not pt["skipped"]]
        if moved and all(m == 0 for m in moved):
            title += ": the kernel sizes each send; memmove moved 0 bytes (median) here"
        ax.set_title(title, loc="left")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(0, -0.13), fontsize=8, frameon=False)
    rounds = sc.get("rounds")
    fig.suptitle(f"Sender CPU of end(P) to its callback (bench/sender_cpu): "
                 f"median of {rounds} rounds, CPU of the sending thread (user + system)",
                 fontsize=10.5, x=0.01, ha="left")
    fig.tight_layout()
    _save(fig, path, extra_formats)
    plt.close(fig)


# ----------------------------------------------------------------- markdown

def md_table(header: Sequence[str], rows: Iterable[Sequence[Any]], align: Sequence[str]) -> list[str]:
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    return out


def profile_label(p: dict) -> str:
    return p["id"] or "-"


def scenario_rows(report: dict) -> list[list[str]]:
    """The rows of report.md's "Scenarios: fixed vs legacy" table."""
    rows = []
    for s in report["scenarios"]:
        if s["error"]:
            msg = s["error"].replace("|", "\\|").replace("\n", " ")
            rows.append([f"`{s['path']}`", "-"] + ["-"] * 9 + [msg])
            continue
        for p in s["profiles"]:
            c = p["comparison"]
            differs = p["legacy_differs_in"]
            if s["legacy"] is None:
                legacy_note = "no legacy declared"
            else:
                decl = "must-differ" if s["legacy"].get("must_differ") else "must-match"
                legacy_note = f"{decl}; differs in: " + (", ".join(differs) if differs else "nothing") \
                    if differs is not None else f"{decl}; run missing"
            errs = "; ".join(f"{k} failed" for k in p["errors"])
            rows.append([
                f"`{Path(s['path']).with_suffix('')}`", profile_label(p),
                fmt_int(c["bytes_moved"]["fixed"]), fmt_int(c["bytes_moved"]["legacy"]),
                c["bytes_moved"]["ratio_text"],
                fmt_int(c["syscalls_total"]["fixed"]), fmt_int(c["syscalls_total"]["legacy"]),
                c["syscalls_total"]["ratio_text"],
                fmt_int(c["bytes_delivered"]["fixed"]), fmt_int(c["bytes_delivered"]["legacy"]),
                c["bytes_delivered"]["ratio_text"],
                legacy_note + (f"; {errs}" if errs else ""),
            ])
    return rows


SCENARIO_HEADER = ["scenario", "profile", "bytes moved: fixed", "legacy", "legacy/fixed",
                   "syscalls: fixed", "legacy", "legacy/fixed",
                   "bytes delivered: fixed", "legacy", "legacy/fixed", "legacy vs fixed"]


def summary_lines(report: dict) -> list[str]:
    out = []
    profs = [(s, p) for s in report["scenarios"] for p in s["profiles"]]
    runs = sum(1 for _, p in profs for side in ("fixed", "legacy") if p[side])
    failed = [f"{s['path']} {p['id']} {side}" for s, p in profs for side in p["errors"]]
    bad_checks = [s["path"] for s in report["scenarios"] if s["error"]]
    out.append(f"- {plural(runs, 'scenario run')}: {plural(len(profs), 'profile')} of "
               f"{plural(len(report['scenarios']), 'scenario')}, each fixed (`queue=cursor`) and, where the scenario declares it, "
               f"legacy; {len(failed)} failed to run"
               + (f" ({'; '.join(failed)})" if failed else "")
               + (f"; {plural(len(bad_checks), 'scenario')} failed `wirecheck check` "
                  f"({', '.join(bad_checks)})" if bad_checks else "") + ".")
    unclean = [f"{s['path']} {p['id']} {side}" for s, p in profs
               for side in ("fixed", "legacy") if p[side] and not clean_exit(p[side])]
    out.append("- Every subject exited 0." if not unclean else
               f"- Subjects that did not exit 0: {'; '.join(unclean)}.")
    with_both = [(s, p) for s, p in profs if p["fixed"] and p["legacy"]]
    if with_both:
        fixed_zero = sum(1 for _, p in with_both if p["fixed"]["bytes_moved"] == 0)
        more = [(s, p) for s, p in with_both
                if (p["legacy"]["bytes_moved"] or 0) > (p["fixed"]["bytes_moved"] or 0)]
        line = (f"- Queue bytes moved: fixed 0 in {fixed_zero} of {len(with_both)} profiles; "
                f"legacy more than fixed in {len(more)} of {len(with_both)}")
        if more:
            s, p = max(more, key=lambda sp: sp[1]["legacy"]["bytes_moved"])
            line += (f", up to {fmt_int(p['legacy']['bytes_moved'])} bytes "
                     f"(`{Path(s['path']).with_suffix('')}` {profile_label(p)})")
        out.append(line + ".")
        same = sum(1 for _, p in with_both if p["same_bytes_delivered"])
        out.append(f"- Bytes delivered: fixed and legacy delivered the same stream (byte count "
                   f"and sha256) in {same} of {len(with_both)} profiles.")
    bms = report["scaling"]["bytes_moved"]
    if bms:
        parts = []
        for s in bms:
            pds = [d for d in s["legacy_per_doubling"] if d]
            parts.append(f"clamp {iec(s['clamp'])}: legacy x{min(pds):.2f} to x{max(pds):.2f} "
                         f"per doubling (log-log slope {s['legacy_slope']:.2f})" if pds else
                         f"clamp {iec(s['clamp'])}: one size")
        zero = all(s["fixed_all_zero"] for s in bms)
        out.append("- Bytes moved by end(P), 4 to 32 MiB (`bytes_moved`): " + "; ".join(parts)
                   + ("; fixed 0 bytes at every size." if zero else "; fixed moved bytes."))
    cpu = [s for s in report["scaling"]["sender_cpu"]
           if s["mode"] == "clamp_4k" and s["sender"] in ("cursor", "memmove")]
    if cpu:
        parts = []
        for s in cpu:
            pds = [d for d in s["per_doubling"] if d]
            if pds:
                parts.append(f"{s['sender']} {s['transport']} "
                             + ", ".join(f"x{d:.1f}" for d in pds))
        if parts:
            out.append("- Sender CPU at the 4 KiB clamp, per doubling of the payload "
                       "(`sender_cpu`, noisy): " + "; ".join(parts) + ".")
    if report["bench"].get("errors"):
        out.append("- Benchmark failures: " + "; ".join(report["bench"]["errors"]) + ".")
    return out


def render_markdown(report: dict) -> str:
    L: list[str] = []
    env = report["environment"]
    git = env.get("git") or {}
    commit = git.get("commit", "unknown")[:12]
    dirty = " (with uncommitted changes)" if git.get("dirty") else ""
    L += ["# wirecheck report", "",
          f"Commit `{commit}`{dirty} · {env.get('wirecheck_version', 'wirecheck')} · "
          f"{env.get('cpus')} CPUs · {report['generated']} · "
          f"`{' '.join(report['command'])}` · {report['seconds']:.0f} s", "",
          "## Summary", ""]
    L += summary_lines(report)
    L += ["", "## Scenarios: fixed vs legacy", "",
          "One run of each profile of each scenario's matrix with the fixed queue "
          "(`queue=cursor`) and one with the scenario's legacy variant. "
          "legacy/fixed is legacy divided by fixed: `inf` when fixed is 0 and legacy "
          "is not, `-` when both are 0 or a run is missing. Syscalls: every call "
          "the gate counted, minus those the kernel answered EAGAIN, without "
          "epoll_wait. \"legacy vs fixed\": the scenario's declared expectation "
          "(checked against goldens elsewhere) and the trace fields in which the two "
          "runs differ.", ""]
    L += md_table(SCENARIO_HEADER, scenario_rows(report), "llrrrrrrrrrl")

    seed = report["seed_table"]
    bm = report["bench"].get("bytes_moved")
    L += ["", "## Bytes moved: end(P) at clamp C", ""]
    if seed:
        L += ["The seed's \"Bytes moved\" table (reference-prs/002), from `bytes_moved`: "
              "the call sends C, P - C is queued once, each writable event sends C "
              "(n = P / C, n - 1 flushes). Legacy moves C(n-1)(n-2)/2 bytes; "
              "fixed moves none.", ""]
        L += md_table(["Payload, clamp", "legacy: flushes", "legacy: bytes moved",
                       "fixed: bytes moved"],
                      ([f"{iec(r['payload'])}, {iec(r['clamp'])}", fmt_int(r["flushes"]),
                        fmt_int(r["legacy_bytes_moved"]), fmt_int(r["fixed_bytes_moved"])]
                       for r in seed), "lrrr")
        given = [r for r in seed if r["seed_table"] is not None]
        if given:
            L += ["", "The seed's own rows (its end() sent twice in the call, so one flush "
                  "fewer: C(n-2)(n-3)/2): " + "; ".join(
                      f"{iec(r['payload'])}, {iec(r['clamp'])}: {fmt_int(r['seed_flushes'])} "
                      f"flushes, {fmt_int(r['seed_table'])} bytes" for r in given) + "."]
        checks = [k for k in ("memmove_equals_closed_form", "cursor_moves_nothing", "intact",
                              "seed_closed_form_equals_seed_table") if bm and k in bm]
        if checks:
            L += ["", "Bench checks: " + ", ".join(f"{k} {'yes' if bm[k] else 'NO'}"
                                                  for k in checks) + "."]
        L += ["", "![Bytes moved against payload, log-log](scaling-bytes-moved.svg)"]
    else:
        L += ["Not run" + (" (--no-bench)." if not report["bench"]["ran"] else
                           ": " + "; ".join(report["bench"]["errors"]) + ".")]

    sc = report["bench"].get("sender_cpu")
    cpu = report["scaling"]["sender_cpu"]
    L += ["", "## Sender CPU: end(P) to its callback", ""]
    if cpu:
        sizes = sorted({pt["payload"] for s in cpu for pt in s["points"]})
        cmd = (report["bench"]["runs"].get("sender_cpu") or {}).get("command") or sc.get("command")
        L += [f"`{' '.join(cmd or ['sender_cpu'])}`: CPU ms of the "
              f"sending thread, median of {sc.get('rounds')} rounds; floor is a plain "
              f"send loop. Load average {sc.get('load_average_start')} at the start, "
              f"{sc.get('load_average_end')} at the end. Timings are noisy on a shared "
              f"machine; the slope is the point.", ""]
        rows = []
        order = {"clamp_4k": 0, "unclamped": 1, "cursor": 0, "memmove": 1, "floor": 2,
                 "unix": 0, "tcp": 1}
        for s in sorted(cpu, key=lambda s: (order.get(s["mode"], 9), order.get(s["transport"], 9),
                                            order.get(s["sender"], 9))):
            by = {pt["payload"]: pt for pt in s["points"]}
            cells = []
            for size in sizes:
                pt = by.get(size)
                cells.append("-" if pt is None else "skipped" if pt["skipped"]
                             else fmt_ms(pt["median_cpu_ms"]))
            pds = [d for d in s["per_doubling"] if d]
            rows.append([MODE_TITLES.get(s["mode"], s["mode"]), s["transport"], s["sender"],
                         *cells, ", ".join(f"x{d:.2f}" for d in pds) or "-"])
        L += md_table(["mode", "transport", "sender", *[f"{iec(x)} ms" for x in sizes],
                       "per doubling"], rows, "lll" + "r" * len(sizes) + "l")
        L += ["", "![Sender CPU against payload, log-log](scaling-sender-cpu.svg)"]
    else:
        L += ["Not run" + (" (--no-bench)." if not report["bench"]["ran"] else ".")]

    gc = report["bench"].get("gate_cost")
    if gc:
        L += ["", "## Fault gate cost per send", "", f"`{gc['setup']}`.", ""]
        L += md_table(["variant", "median ns", "median diff to direct, ns"],
                      ([r["variant"], f"{r['median_ns']:.1f}", f"{r['median_diff_ns']:+.1f}"]
                       for r in gc["rows"]), "lrr")

    L += ["", "## Per scenario profile", ""]
    for s in report["scenarios"]:
        for p in s["profiles"]:
            name = f"{Path(s['path']).with_suffix('')} {profile_label(p)}"
            L += ["<details>", f"<summary>{name}: syscalls by kind</summary>", ""]
            rows = [[k, fmt_int(c["fixed"]), fmt_int(c["legacy"]), c["ratio_text"]]
                    for k, c in p["comparison"]["syscalls"].items()
                    if c["fixed"] or c["legacy"]]
            c = p["comparison"]
            rows += [["**queue allocations**", fmt_int(c["allocations"]["fixed"]),
                      fmt_int(c["allocations"]["legacy"]), c["allocations"]["ratio_text"]],
                     ["**exit**", exit_text(p["fixed"]), exit_text(p["legacy"]), ""]]
            L += md_table(["kind", "fixed", "legacy", "legacy/fixed"], rows, "lrrr")
            if p["errors"]:
                L += [""] + [f"- {side} failed: {err}" for side, err in p["errors"].items()]
            if p["plot"]:
                L += ["", f"![{name}]({p['plot']})"]
            L += ["", "</details>", ""]

    L += ["## Files", "",
          "- `report.json`: every figure above, the raw traces and benchmark output "
          "(docs/reports.md).",
          *[f"- `{f}`" for f in report["files"] if f.endswith(".svg")], ""]
    return "\n".join(L)


# --------------------------------------------------------------------- main

def environment(binary: Path | None) -> dict:
    env: dict = {"cpus": os.cpu_count(), "python": sys.version.split()[0],
                 "wirecheck": rel(binary) if binary else None}
    try:
        env["wirecheck_version"] = subprocess.run(
            [str(binary), "--version"], capture_output=True, text=True,
            timeout=10).stdout.strip() if binary else None
    except OSError:
        env["wirecheck_version"] = None
    try:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"],
                                capture_output=True, text=True, timeout=10)
        status = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain",
                                 "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10)
        if commit.returncode == 0:
            env["git"] = {"commit": commit.stdout.strip(), "dirty": bool(status.stdout.strip())}
    except OSError:
        pass
    return env


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="python3 -m wirecheck.report",
        description="Run the scenario suite (fixed and legacy) and the benchmarks; "
                    "write report.md, report.json and SVG plots.")
    ap.add_argument("--out", default=str(DEFAULT_OUT),
                    help="output folder (default: reports/out)")
    ap.add_argument("--paths", nargs="+", default=[str(p) for p in DEFAULT_PATHS],
                    metavar="PATH", help="scenario files or folders (default: scenarios/)")
    speed = ap.add_mutually_exclusive_group()
    speed.add_argument("--quick", action="store_true",
                       help="sender_cpu --quick, sizes 2,4,8 MiB (the default)")
    speed.add_argument("--full", action="store_true",
                       help="sender_cpu with 7 rounds, sizes 4..64 MiB (about a minute)")
    ap.add_argument("--cpu-sizes", metavar="MIB,MIB,...",
                    help="sender_cpu --sizes (default 2,4,8; 4,8,16,32,64 with --full)")
    ap.add_argument("--no-bench", action="store_true", help="run no benchmark")
    ap.add_argument("--no-gate-cost", action="store_true", help="skip gate_cost (about 12 s)")
    ap.add_argument("--bench-json", metavar="FILE",
                    help="take bytes_moved/sender_cpu/gate_cost figures from FILE (a JSON "
                         "object with those keys, as in report.json's bench) instead of "
                         "running the benchmarks")
    ap.add_argument("--wirecheck-bin", metavar="PATH",
                    help="the wirecheck binary (default: $WIRECHECK_BIN, else build/bin/wirecheck)")
    ap.add_argument("--bench-dir", metavar="DIR",
                    help="where bytes_moved, sender_cpu, gate_cost are (default: beside wirecheck)")
    ap.add_argument("--png", action="store_true",
                    help="also write a PNG next to each SVG (for looking at them)")
    ap.add_argument("--from-json", metavar="REPORT_JSON",
                    help="run nothing: re-render report.md and the plots from a report.json")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    return ap.parse_args(argv)


def write_outputs(report: dict, out: Path, extra: Sequence[str] = (), log=lambda m: None) -> list[str]:
    """Plots, report.md and report.json into out; returns the files written.
    Removes first the files that a previous report.json in out lists (and
    only those), so that a scenario gone since leaves no stale plot."""
    out.mkdir(parents=True, exist_ok=True)
    old = out / "report.json"
    if old.is_file():
        try:
            previous = json.loads(old.read_text()).get("files", [])
        except (ValueError, OSError, AttributeError):
            previous = []
        for f in previous:
            target = out / Path(str(f)).name
            for t in (target, target.with_suffix(".png")):
                if t.suffix in (".svg", ".png", ".md", ".json") and t.is_file():
                    t.unlink()

    files: list[str] = []
    log("plots")
    for s in report["scenarios"]:
        for p in s["profiles"]:
            p["plot"] = None
            if not p["fixed"] and not p["legacy"]:
                continue
            suffix = "." + p["id"].replace("::", ".") if p["id"] else ""
            name = safe_name(f"{s['stem']}{suffix}") + ".svg"
            plot_profile(s, p, out / name, extra)
            p["plot"] = name
            files.append(name)
    if report["scaling"]["bytes_moved"]:
        plot_bytes_moved_scaling(report["scaling"]["bytes_moved"],
                                 out / "scaling-bytes-moved.svg", extra)
        files.append("scaling-bytes-moved.svg")
    if report["scaling"]["sender_cpu"]:
        plot_cpu_scaling(report["scaling"]["sender_cpu"], report["bench"]["sender_cpu"],
                         out / "scaling-sender-cpu.svg", extra)
        files.append("scaling-sender-cpu.svg")
    report["files"] = ["report.md", "report.json", *files]
    (out / "report.md").write_text(render_markdown(report))
    (out / "report.json").write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    return report["files"]


def empty_bench(ran: bool) -> dict:
    return {"ran": ran, "bytes_moved": None, "sender_cpu": None, "gate_cost": None,
            "runs": {}, "errors": []}


def main(argv: Sequence[str] | None = None) -> int:
    opts = parse_args(argv)
    started = time.monotonic()
    argv_list = list(argv if argv is not None else sys.argv[1:])

    def log(msg: str) -> None:
        if not opts.quiet:
            print(f"report: {msg}", file=sys.stderr, flush=True)

    out = Path(opts.out)
    extra = ("png",) if opts.png else ()
    _plt()  # fail early when matplotlib is missing

    if opts.from_json:
        try:
            report = json.loads(Path(opts.from_json).read_text())
        except (OSError, ValueError) as e:
            print(f"wirecheck.report: --from-json: {e}", file=sys.stderr)
            return 2
        if report.get("schema") != SCHEMA:
            print(f"wirecheck.report: --from-json: schema {report.get('schema')}, "
                  f"expected {SCHEMA}", file=sys.stderr)
            return 2
        files = write_outputs(report, out, extra, log)
        log(f"re-rendered {len(files)} files into {rel(out)}")
        return 0

    try:
        binary = find_binary(opts.wirecheck_bin)
        paths = find_scenarios(opts.paths)
    except FileNotFoundError as e:
        print(f"wirecheck.report: {e}", file=sys.stderr)
        return 2
    if not paths:
        print(f"wirecheck.report: no *.wcs under {' '.join(opts.paths)}", file=sys.stderr)
        return 2

    scenarios = run_scenarios(paths, binary, log)

    if opts.bench_json:
        try:
            given = json.loads(Path(opts.bench_json).read_text())
        except (OSError, ValueError) as e:
            print(f"wirecheck.report: --bench-json: {e}", file=sys.stderr)
            return 2
        bench = empty_bench(True)
        bench["from_file"] = rel(Path(opts.bench_json))
        bench.update({k: given.get(k) for k in ("bytes_moved", "sender_cpu", "gate_cost")})
    elif opts.no_bench:
        bench = empty_bench(False)
    else:
        bench = run_benches(Path(opts.bench_dir) if opts.bench_dir else binary.parent, opts, log)

    report: dict = {
        "schema": SCHEMA,
        "generated": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": ["python3", "-m", "wirecheck.report", *argv_list],
        "options": {"paths": [rel(Path(p)) for p in opts.paths], "full": opts.full,
                    "no_bench": opts.no_bench, "no_gate_cost": opts.no_gate_cost,
                    "bench_json": opts.bench_json,
                    "cpu_sizes": opts.cpu_sizes or (CPU_SIZES_FULL if opts.full else CPU_SIZES_QUICK)},
        "environment": environment(binary),
        "scenarios": scenarios,
        "bench": bench,
        "scaling": {"bytes_moved": bytes_moved_scaling(bench.get("bytes_moved")),
                    "sender_cpu": sender_cpu_scaling(bench.get("sender_cpu"))},
        "seed_table": seed_table(bench.get("bytes_moved")),
        "files": [],
        "seconds": round(time.monotonic() - started, 1),
    }
    files = write_outputs(report, out, extra, log)
    log(f"wrote {len(files)} files into {rel(out)} in {report['seconds']:.0f} s")

    failed = any(s["error"] or any(p["errors"] for p in s["profiles"]) for s in scenarios)
    return 1 if failed or bench.get("errors") else 0


if __name__ == "__main__":
    sys.exit(main())
