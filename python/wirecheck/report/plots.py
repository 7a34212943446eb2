"""The report's plots (matplotlib, SVG): one per scenario profile (fixed vs
legacy), and the benchmarks' scaling and batching plots. Each plot is its own
file, drawn from report.json's figures alone, so that --from-json redraws
the same bytes."""
from __future__ import annotations

import math
import multiprocessing
import os
import traceback
from pathlib import Path
from typing import Sequence

from .derive import WRITE_KINDS, batching_series, fixed_variant_label, key_comparison
from .fmt import MODE_TITLES, byte_unit, exit_short, fmt_int, iec, safe_name
from .sections import behaviour_section, bench_chunked, bench_ws
from .sections import sweep as sweep_section

from .figure import FIXED_COLOR, LEGACY_COLOR, drawn_minor_ticks_only, set_title
from .figure import log2_payload_axis as _log2_payload_axis
from .figure import pyplot as _plt
from .figure import save as _save


def _iec_formatter():
    from matplotlib.ticker import FuncFormatter
    return FuncFormatter(lambda v, _pos: iec(v) if v > 0 else "0")


def plot_profile(entry: dict, p: dict, path: Path, extra_formats=()) -> None:
    """Fixed vs legacy for one scenario profile: syscalls by kind (log),
    the behaviour's main figure (bytes moved for the queue, sends for
    batching, epoll_ctl MOD for half-open), bytes delivered."""
    plt = _plt()
    cmp = p["comparison"]
    has_legacy = p["legacy"] is not None
    section = behaviour_section(entry.get("behaviour"))
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2),
                             gridspec_kw={"width_ratios": [3.2, 1.2, 1.2]})
    sides = [("fixed", FIXED_COLOR, p["fixed"])]
    if has_legacy:
        sides.append(("legacy", LEGACY_COLOR, p["legacy"]))
    variant_of = {"fixed": entry.get("fixed_variant") or "default",
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
    drawn_minor_ticks_only(ax.yaxis)
    ax.set_xticks(range(len(kinds)))
    ax.set_xticklabels(kinds, rotation=30, ha="right")
    ax.set_ylabel("calls (log scale)")
    ratios = ", ".join(f"{k} {cmp['syscalls'][k]['ratio_text']}" for k in kinds
                       if (k in WRITE_KINDS or k == "epoll_ctl.mod") and has_legacy)
    set_title(ax, "Syscalls by kind" + (f"\nlegacy/fixed: {ratios}" if ratios else ""))
    ax.legend(loc="upper left", fontsize=8, frameon=False)

    def pair(ax, r: dict, title: str, unit_kind: str = "bytes"):
        vals = [r[side] for side, _, _ in sides]
        colors = [c for _, c, _ in sides]
        labels = [side for side, _, _ in sides]
        heights = [v or 0 for v in vals]
        if unit_kind == "bytes":
            div, unit = byte_unit(max(heights + [1]))
        else:
            div, unit = 1, unit_kind
        ax.bar(range(len(vals)), [h / div for h in heights], 0.6, color=colors)
        top = max(heights + [1]) / div
        for x, v in enumerate(vals):
            text = "n/a" if v is None else f"{fmt_int(v)} B" if unit_kind == "bytes" else fmt_int(v)
            ax.annotate(text, (x, (v or 0) / div),
                        xytext=(0, 3), textcoords="offset points", ha="center",
                        va="bottom", fontsize=8)
        ax.set_ylim(0, top * 1.25)
        if not any(heights):  # nothing to scale: no fractional byte ticks
            ax.set_yticks([0])
        elif unit_kind != "bytes":  # counts: whole-number ticks
            from matplotlib.ticker import MaxNLocator
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xticks(range(len(vals)))
        ax.set_xticklabels(labels)
        ax.set_ylabel(unit)
        if not has_legacy:
            sub = "no legacy variant declared"
        elif r["ratio"] == "inf":
            sub = "legacy/fixed: inf (fixed is 0)"
        elif r["ratio"] is None:
            sub = "legacy/fixed: - (both 0)" if r["fixed"] == 0 else "legacy/fixed: -"
        else:
            sub = f"legacy/fixed: {r['ratio_text']}"
        set_title(ax, f"{title}\n{sub}")

    pair(axes[1], key_comparison(p, section.KEY_FIELD), section.PLOT_TITLE, section.KEY_UNIT)
    pair(axes[2], cmp["bytes_delivered"], "Bytes delivered to the peer")
    prof = p["id"] or "no matrix"
    exits = [exit_short(summary) for _, _, summary in sides]
    ended = ("" if all(e == "0" for e in exits) else
             "; subject ended: " + ", ".join(f"{side} {e}" for (side, _, _), e in zip(sides, exits)))
    fig.suptitle(f"{Path(entry['path']).with_suffix('')}  [{prof}]: "
                 f"fixed vs legacy, one run each{ended}", fontsize=11, x=0.01, ha="left")
    # Legends inside their axes: tight_layout places everything, so the
    # save need not crop (the report's most numerous plot).
    fig.tight_layout()
    _save(fig, path, extra_formats, tight=False)
    plt.close(fig)


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


def plot_batching(bt: dict, path: Path, extra_formats=()) -> None:
    """bench/batching, N x write(128 B): sends and time per round against N,
    batch=off (twice) and batch=on, log-log."""
    plt = _plt()
    from matplotlib.ticker import FixedLocator, NullLocator, FuncFormatter, LogLocator
    series = batching_series(bt)
    rows, cb = series["rows"], series["callback"]
    ns = [r["writes"] for r in rows]
    fig, axes = plt.subplots(1, 2, figsize=(12.5, 5))
    configs = (("off", "batch=off (legacy)", LEGACY_COLOR, "o-"),
               ("off2", "batch=off again (noise)", "#e6ab02", "^:"),
               ("on", "batch=on (fixed)", FIXED_COLOR, "s-"))
    for ax, what in zip(axes, ("sends", "time")):
        for key, label, color, style in configs:
            if what == "sends" and key == "off2":
                continue  # the same code as off: the same sends
            ys = [r["configs"][key]["sends"]["mean"] if what == "sends"
                  else r["configs"][key]["median_us"] for r in rows]
            ax.plot(ns, ys, style, color=color, lw=1.6, ms=5, label=label)
            for r in cb:
                y = (r["configs"][key]["sends"]["mean"] if what == "sends"
                     else r["configs"][key]["median_us"])
                ax.plot([r["writes"]], [y], "D", mfc="none", mec=color, ms=10 + 3 * (key == "on"),
                        mew=1.4)
        if what == "sends":
            for n, r in zip(ns, rows):
                on = r["configs"]["on"]["sends"]["mean"]
                ax.annotate(fmt_int(on), (n, on), xytext=(0, -12), textcoords="offset points",
                            ha="center", fontsize=8, color=FIXED_COLOR)
            ax.set_ylabel("sends per round (log scale)")
            ax.set_title("Sends per round: one per write (off), at most 2 (on)", loc="left")
        else:
            for n, r in zip(ns, rows):
                ax.annotate(f"{r['ratio_off_on']:.2f}x", (n, r["configs"]["off"]["median_us"]),
                            xytext=(-7, 3), textcoords="offset points", ha="right",
                            va="bottom", fontsize=8, color=LEGACY_COLOR)
            ax.set_ylabel("time per round, µs (median, log scale)")
            ax.set_title("Time per round, off/on beside each point", loc="left")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
        ax.xaxis.set_major_locator(FixedLocator(ns))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
        ax.set_xlim(min(ns) / 1.5, max(ns) * 1.5)
        ax.set_xlabel("N writes of 128 B in one task (log scale)")
        ax.grid(True, which="major", alpha=0.3)
        if cb:
            ax.plot([], [], "D", mfc="none", mec="0.3", ms=9,
                    label=", ".join(r["label"] for r in cb) + " (hollow, per configuration)")
        ax.legend(loc="upper left", fontsize=8, frameon=False)
    axes[0].set_ylim(0.5, max(r["configs"]["off"]["sends"]["max"] for r in rows + cb) * 3)
    fig.suptitle(f"Write batching (bench/batching, {bt.get('transport')}): "
                 f"{bt.get('blocks')} blocks of {bt.get('rounds_per_block')} rounds per row "
                 f"and configuration", fontsize=10.5, x=0.01, ha="left")
    fig.tight_layout()
    _save(fig, path, extra_formats)
    plt.close(fig)


SENDER_COLORS = {"cursor": FIXED_COLOR, "memmove": LEGACY_COLOR, "floor": "0.4",
                 "copy": "0.7"}
SENDER_LABELS = {"cursor": "cursor (fixed)", "memmove": "memmove (legacy)",
                 "floor": "floor (plain send loop)",
                 "copy": "copy alone (the queue's copy of P, no socket)"}


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


class PlotError(RuntimeError):
    """Plots that failed to draw; the message names each file and gives its
    traceback."""


def _plot_name(job: tuple) -> str:
    """The file a job writes: every plot function takes its output path."""
    _func, args = job
    return next(a.name for a in args if isinstance(a, Path))


def _draw(job: tuple) -> str | None:
    """Draws one plot, (function, arguments); returns None, or the
    traceback of what went wrong (a worker's exception would reach the
    parent without the plot it came from)."""
    func, args = job
    try:
        func(*args)
    except Exception:  # noqa: BLE001 - reported with the plot's name
        return traceback.format_exc()
    return None


class Plotter:
    """Draws plots as they are handed in, in a pool of forked worker
    processes, one per CPU (about 0.2 to 0.4 s of CPU a plot, hundreds of
    them in a report), or in this process with workers=1. The workers are
    forks of a process that has imported matplotlib, so none imports it or
    reads the font cache again. Each plot is its own file, so the files do
    not depend on the number of workers or the order they finish in. A
    file handed in a second time is drawn once: the report hands in the
    plots that depend on nothing it collects before it collects, then all
    of them. Use it as a context manager; wait() raises PlotError naming
    every plot that failed."""

    def __init__(self, workers: int | None = None, log=lambda m: None):
        self.workers = max(1, workers or os.cpu_count() or 1)
        if "fork" not in multiprocessing.get_all_start_methods():
            self.workers = 1
        self._log = log
        self._pool = None
        self._pending: list[tuple[str, object]] = []
        self._names: set[str] = set()

    def __enter__(self) -> "Plotter":
        return self

    def __exit__(self, *exc) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None

    def submit(self, jobs: list[tuple]) -> None:
        for job in jobs:
            name = _plot_name(job)
            if name in self._names:
                continue
            self._names.add(name)
            if self.workers == 1:
                self._pending.append((name, _draw(job)))
                continue
            if self._pool is None:
                self._pool = multiprocessing.get_context("fork").Pool(self.workers)
            self._pending.append((name, self._pool.apply_async(_draw, (job,))))

    def wait(self) -> None:
        """Returns when every plot handed in is drawn."""
        self._log(f"plots: {len(self._pending)} in {self.workers} "
                  f"process{'es' if self.workers > 1 else ''}")
        failed = []
        for name, result in self._pending:
            error = result.get() if hasattr(result, "get") else result
            if error is not None:
                failed.append(f"{name}:\n{error}")
        self._pending = []
        if failed:
            raise PlotError(f"{len(failed)} plot(s) failed:\n" + "\n".join(failed))


def run_plots(jobs: list[tuple], log, workers: int | None = None) -> None:
    """Draws the plots of jobs (plot_jobs), one worker per CPU unless
    workers says otherwise; PlotError names those that failed."""
    with Plotter(workers, log) as plotter:
        plotter.submit(jobs)
        plotter.wait()


def _plot_view(p: dict) -> dict:
    """A profile without its traces (what plot_profile reads), to send to a
    worker."""
    view = {k: v for k, v in p.items() if k not in ("fixed", "legacy")}
    for side in ("fixed", "legacy"):
        view[side] = None if p[side] is None else {k: v for k, v in p[side].items() if k != "trace"}
    return view


def plot_jobs(report: dict, out: Path, extra: Sequence[str]) -> tuple[list[tuple], list[str]]:
    """The plots of a report: (jobs for run_plots, the file names, in
    report.json's order). Sets each profile's `plot` to its file's name."""
    files: list[str] = []
    jobs: list[tuple] = []
    for s in report["scenarios"]:
        entry = {k: v for k, v in s.items() if k != "profiles"}
        entry["fixed_variant"] = s.get("fixed_variant") or fixed_variant_label(s)
        for p in s["profiles"]:
            p["plot"] = None
            if not p["fixed"] and not p["legacy"]:
                continue
            suffix = "." + p["id"].replace("::", ".") if p["id"] else ""
            name = safe_name(f"{s['stem']}{suffix}") + ".svg"
            jobs.append((plot_profile, (entry, _plot_view(p), out / name, extra)))
            p["plot"] = name
            files.append(name)
    if report["scaling"]["bytes_moved"]:
        jobs.append((plot_bytes_moved_scaling, (report["scaling"]["bytes_moved"],
                                                out / "scaling-bytes-moved.svg", extra)))
        files.append("scaling-bytes-moved.svg")
    if report["scaling"]["sender_cpu"]:
        jobs.append((plot_cpu_scaling, (report["scaling"]["sender_cpu"],
                                        report["bench"]["sender_cpu"],
                                        out / "scaling-sender-cpu.svg", extra)))
        files.append("scaling-sender-cpu.svg")
    if (batching_series(report["bench"].get("batching")) or {}).get("rows"):
        jobs.append((plot_batching, (report["bench"]["batching"], out / "batching.svg", extra)))
        files.append("batching.svg")
    # Chunked responses (sections/bench_chunked.py draws it).
    if bench_chunked.has_plot(report):
        jobs.append((bench_chunked.plot, (report["bench"][bench_chunked.NAME],
                                          out / bench_chunked.PLOT, extra)))
        files.append(bench_chunked.PLOT)
    # The fault sweep's plots, one per scenario (sections/sweep.py).
    sweep_jobs, sweep_files = sweep_section.plot_jobs(report, out, extra)
    jobs += sweep_jobs
    files += sweep_files
    # The WebSocket servers (sections/bench_ws.py draws it).
    if bench_ws._cpu_rows(report["bench"].get("ws") or {}):
        jobs.append((bench_ws.plot_ws, (report["bench"]["ws"], out / bench_ws.PLOT, extra)))
        files.append(bench_ws.PLOT)
    return jobs, files
