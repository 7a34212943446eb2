"""The fault sweep (docs/sweeps.md): what `wirecheck sweep --output FILE`
wrote, read from reports/sweep/sweep.json (or --sweep-json): its size and
time, the invariants it found broken (each with the command that
reproduces it), and one plot per scenario of the outcome of every cell,
fault by where it landed (call k, byte N of connection C, or a clamp over
the whole run), fixed and legacy side by side."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Optional

from ...runner import REPO
from ..fmt import fmt_int, md_table, plural, safe_name

NAME = "sweep"
DEFAULT_JSON = REPO / "reports" / "sweep" / "sweep.json"

# The faults in the plots' rows, in this order; others (a newer sweep's)
# after them.
FAULT_ORDER = ("EAGAIN", "EINTR", "ENOBUFS", "short1", "signal", "EPIPE", "ECONNRESET",
               "death", "zero", "clamp")
OK_COLOR, BROKEN_COLOR, NONE_COLOR = "#4daf4a", "#e41a1c", "#eeeeee"
# A cell that passed by its scenario's declaration (docs/sweeps.md).
DECLARED_COLOR = "#377eb8"

_CELL = re.compile(r"^(?P<fault>[^@]+)@(?:(?P<k>\d+)|c(?P<conn>\d+)\.b(?P<byte>\d+))$")


def load(path: Optional[str | Path] = None) -> Optional[dict]:
    """The sweep's result file, with the paths in its commands relative to
    the repository (they are the sweeping machine's); None when there is
    none. A file that is not a sweep result raises ValueError."""
    p = Path(path) if path else DEFAULT_JSON
    if not p.is_file():
        if path:
            raise ValueError(f"{p}: no such sweep result")
        return None
    data = json.loads(p.read_text())
    if not isinstance(data, dict) or "scenarios" not in data or "cells" not in data:
        raise ValueError(f"{p}: not the result of wirecheck sweep --output")
    root = str(REPO) + "/"
    if isinstance(data.get("command"), str):
        data["command"] = data["command"].replace(root, "")
    for s in data["scenarios"]:
        for f in s.get("failures", []):
            f["command"] = f["command"].replace(root, "")
    data["file"] = str(p.relative_to(REPO)) if p.resolve().is_relative_to(REPO) else str(p)
    return data


def column(cell_id: str) -> tuple:
    """Where a cell landed, as a plot's column key: (0, k) for call k,
    (1, conn, byte) for a byte, (2, n) for a clamp over the whole run."""
    if cell_id.startswith("clamp="):
        return (2, int(cell_id.split("=", 1)[1]))
    m = _CELL.match(cell_id)
    if not m:
        return (3, cell_id)
    if m.group("k"):
        return (0, int(m.group("k")))
    return (1, int(m.group("conn")), int(m.group("byte")))


def column_label(col: tuple) -> str:
    return {0: lambda c: f"call {c[1]}", 1: lambda c: f"c{c[1]} byte {c[2]}",
            2: lambda c: f"clamp {c[1]}"}.get(col[0], lambda c: str(c[1]))(col)


def fault_of(cell_id: str) -> str:
    return "clamp" if cell_id.startswith("clamp=") else cell_id.split("@", 1)[0]


def grid(sweeps: list[dict]) -> tuple[list[str], list[tuple], dict]:
    """The rows (faults), columns (where) and outcomes of a scenario's
    sweeps: {(sweep index, fault, column): (outcome, exit)}."""
    faults: set = set()
    cols: set = set()
    cells: dict = {}
    for i, s in enumerate(sweeps):
        for cid, outcome in s.get("outcomes", {}).items():
            f, c = fault_of(cid), column(cid)
            faults.add(f)
            cols.add(c)
            cells[(i, f, c)] = (outcome, (s.get("exits") or {}).get(cid, ""))
    order = [f for f in FAULT_ORDER if f in faults] + sorted(faults - set(FAULT_ORDER))
    return order, sorted(cols, key=lambda c: (c[0], c[1:])), cells


def by_scenario(data: dict) -> list[tuple[str, list[dict]]]:
    """The sweeps of each scenario (fixed first), in the file's order."""
    out: dict = {}
    for s in data["scenarios"]:
        out.setdefault(s["path"], []).append(s)
    return list(out.items())


def strategy(s: dict) -> str:
    return "legacy " + " ".join(s["variants"]) if s.get("variants") else "fixed"


def _exit_mark(text: str) -> str:
    """What a cell shows of an exit other than a clean 0."""
    if not text or text == "exit 0":
        return ""
    if text.startswith("signal SIG"):
        return text[len("signal SIG"):]
    return "t/o" if text == "timed out" else text.replace("exit ", "")


def plot_scenario(path: str, sweeps: list[dict], out: Path, extra_formats=()) -> None:
    """One scenario: a panel per strategy, a row per fault, a column per
    place (call k, byte N of connection C, clamp N); green when the run
    kept every invariant, blue when it kept them but for the bytes its
    scenario declares (docs/sweeps.md), red when it broke one, grey when the strategy
    had no such cell; a label when the subject did not exit 0 (TERM: it
    died of the sweep's SIGTERM, t/o: the run's timeout)."""
    from ..figure import pyplot as _plt, save as _save, set_title
    plt = _plt()
    from matplotlib.patches import Patch
    faults, cols, cells = grid(sweeps)
    n = len(sweeps)
    fig, axes = plt.subplots(1, n, figsize=(max(4.0, 0.42 * len(cols) + 1.6) * n,
                                             0.34 * len(faults) + 1.9),
                             squeeze=False)
    for i, (ax, s) in enumerate(zip(axes[0], sweeps)):
        broken = 0
        for y, f in enumerate(faults):
            for x, c in enumerate(cols):
                outcome, ex = cells.get((i, f, c), (None, ""))
                color = NONE_COLOR if outcome is None else {
                    "ok": OK_COLOR, "declared": DECLARED_COLOR}.get(outcome, BROKEN_COLOR)
                broken += outcome == "broken"
                # add_artist, not add_patch: the limits are set below, so
                # the data limits that add_patch works out for each of the
                # hundreds of cells (about 15% of the plot's CPU) go unused.
                # Out of the layout: a cell lies inside its axes, which
                # tight_layout and the crop take whole, so measuring each
                # (a fifth of the plot's CPU) changes no byte.
                ax.add_artist(plt.Rectangle((x, y), 0.94, 0.9, color=color, lw=0,
                                            in_layout=False))
                mark = _exit_mark(ex)
                if mark:
                    ax.text(x + 0.47, y + 0.45, mark, ha="center", va="center", fontsize=5.5)
        ax.set_xlim(0, len(cols))
        ax.set_ylim(len(faults), 0)
        ax.set_xticks([x + 0.47 for x in range(len(cols))])
        ax.set_xticklabels([column_label(c) for c in cols], rotation=90, fontsize=7)
        ax.set_yticks([y + 0.45 for y in range(len(faults))])
        ax.set_yticklabels(faults, fontsize=8)
        ax.tick_params(length=0)
        for side in ("left", "bottom"):
            ax.spines[side].set_visible(False)
        set_title(ax, f"{strategy(s)}: {s.get('cells', 0)} runs, {broken} broken", fontsize=9)
    fig.suptitle(f"{path}: outcome by fault and place", fontsize=10)
    handles = [Patch(color=OK_COLOR, label="invariants kept")]
    if any(o == "declared" for o, _ in cells.values()):
        handles.append(Patch(color=DECLARED_COLOR, label="kept, but for declared bytes"))
    handles += [Patch(color=BROKEN_COLOR, label="an invariant broken"),
                Patch(color=NONE_COLOR, label="no such cell")]
    fig.legend(handles=handles,
               loc="lower center", ncol=len(handles), fontsize=7, frameon=False,
               bbox_to_anchor=(0.5, -0.02))
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    _save(fig, out, extra_formats)
    plt.close(fig)


def plot_name(path: str) -> str:
    return safe_name("sweep-" + str(Path(path).with_suffix("")).replace("scenarios/", "", 1)
                     .replace("/", "-")) + ".svg"


def plot_jobs(report: dict, out: Path, extra) -> tuple[list[tuple], list[str]]:
    """The sweep's plots, one per scenario (plots.plot_jobs adds them)."""
    data = report.get(NAME)
    if not data:
        return [], []
    jobs, files = [], []
    for path, sweeps in by_scenario(data):
        name = plot_name(path)
        jobs.append((plot_scenario, (path, sweeps, out / name, extra)))
        files.append(name)
    return jobs, files


def broken_rows(data: dict) -> list[list[str]]:
    return [[f"`{s['path']}`", strategy(s), f"`{f['cell']}`", f["kind"],
             "; ".join(f["broken"]), f"`{f['command']}`"]
            for s in data["scenarios"] for f in s.get("failures", [])]


def declared_rows(data: dict) -> list[list[str]]:
    """A row per sweep whose cells passed by its scenario's declaration."""
    rows = []
    for s in data["scenarios"]:
        d = s.get("declared") or {}
        if d.get("cells"):
            rows.append([f"`{s['path']}`", strategy(s), d.get("reason", ""),
                         ", ".join(f"`{c}`" for c in d["cells"])])
    return rows


def size_text(data: dict) -> str:
    scen = len({s["path"] for s in data["scenarios"]})
    cores = data.get("cores")
    load = data.get("loadavg") or []
    text = (f"{fmt_int(data['cells'])} runs over {plural(len(data['scenarios']), 'sweep')} "
            f"of {plural(scen, 'scenario')} in {fmt_int(round(data['seconds']))} s, "
            f"{data.get('jobs')} at once")
    if cores:
        text += f" on {cores} cores"
    if len(load) == 2 and all(load):
        text += f" (load average {load[0].split()[0]} at the start, {load[1].split()[0]} at the end)"
    return text


def summary(report: dict) -> list[str]:
    data = report.get(NAME)
    if not data:
        return []
    return [f"- Fault sweep (`{data.get('file', 'sweep.json')}`): {size_text(data)}; "
            f"{data['failing']} broke an invariant"
            + (f", {data['declared']} passed by a scenario's declaration"
               if data.get("declared") else "") + "."]


def markdown(report: dict) -> list[str]:
    data = report.get(NAME)
    L = ["", "## Fault sweep", ""]
    if not data:
        return L + [f"No sweep result (`{DEFAULT_JSON.relative_to(REPO)}`, or "
                    "--sweep-json FILE): `wirecheck sweep --output FILE` writes one "
                    "(docs/sweeps.md)."]
    by_kind: dict = {}
    for s in data["scenarios"]:
        for cid, outcome in s.get("outcomes", {}).items():
            k = by_kind.setdefault(fault_of(cid), [0, 0, 0])
            k[0] += 1
            k[1] += outcome == "broken"
            k[2] += outcome == "declared"
    settings = [f"calls 1..{data['k_max']}" if data.get("k_max") else "every writing call",
                f"{data.get('n_bytes', 0)} bytes of each of the first 2 connections"]
    L += [f"`{data.get('file', 'sweep.json')}`: {size_text(data)}; "
          f"{', '.join(settings)}. Each run is judged by invariants against the "
          "scenario's clean run (docs/sweeps.md); the byte cells of a legacy sweep aim at "
          "the bytes of the fixed one, so that both strategies meet each fault at the same "
          "byte.", ""]
    if data.get("command"):
        cmd = data["command"]
        L += [f"Command: `{cmd if len(cmd) < 300 else cmd[:300] + ' ...'}`", ""]
    L += md_table(["fault", "runs", "broke an invariant", "passed by a declaration"],
                  ([f, fmt_int(v[0]), fmt_int(v[1]), fmt_int(v[2])] for f, v in
                   sorted(by_kind.items(), key=lambda kv: (FAULT_ORDER.index(kv[0])
                                                           if kv[0] in FAULT_ORDER else 99))),
                  "lrrr")
    rows = broken_rows(data)
    L += ["", f"### Invariants broken: {len(rows)}", ""]
    if rows:
        L += md_table(["scenario", "strategy", "cell", "kind", "broken", "reproduce"], rows,
                      "llllll")
    else:
        L += ["None: every run kept every invariant."]
    decl = declared_rows(data)
    L += ["", f"### Declared by design: {len(decl)}", ""]
    if decl:
        L += ["Cells that kept every invariant but for bytes their scenario declares "
              "(their `sweep-declare` line, docs/sweeps.md): each passes "
              "only because of the reason given; the same outcome in a scenario "
              "without the declaration is broken.", ""]
        L += md_table(["scenario", "strategy", "declaration", "cells"], decl, "llll")
    else:
        L += ["None."]
    L += ["", "### Per scenario", ""]
    table = []
    for path, sweeps in by_scenario(data):
        per = "; ".join(f"{strategy(s)}: the clean run hung, not swept"
                        if s.get("clean_exit") == "timed out" else
                        f"{strategy(s)} {s.get('cells', 0)} runs, "
                        f"{len(s.get('failures', []))} broken"
                        + (f", {len((s.get('declared') or {}).get('cells') or {})} by declaration"
                           if s.get("declared") else "") for s in sweeps)
        plot = plot_name(path)
        link = f"[plot]({plot})" if plot in report.get("files", []) else "-"
        table.append([f"`{path}`", per, link])
    L += md_table(["scenario", "runs", "plot"], table, "lll")
    return L



def body(report: dict) -> list[str]:
    """The section without its heading (wirecheck.sweep_report)."""
    return markdown(report)[3:]
