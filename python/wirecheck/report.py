"""`python3 -m wirecheck.report`: one run of the scenario suite and the
benchmarks, turned into reports/out/ (report.md, report.json, SVG plots).

What it runs (docs/reports.md):

- every scenario under --paths (default: scenarios/), for every profile of
  its matrix, once with the fixed queue (the default, `queue=cursor`) and,
  when the scenario declares `legacy`, once with its legacy variant
  (`queue=memmove`), through wirecheck.runner.run;
- the benchmarks beside the wirecheck binary: `bytes_moved --json`,
  `sender_cpu --json` (small sizes and few rounds unless --full),
  `gate_cost` (text; --no-gate-cost skips it), and for write batching
  (issue 4) `batching --json` and `chat --json` (--quick unless --full).
  --no-bench skips them all, --benches picks some;
- the half-open syscalls per connection (issue 5): `wirecheck
  per-connection scenarios/half-open/per-connection.wcs --from 100 --to 300`
  with `--variant halfopen=end-first` (fixed) and `halfopen=poll-first`.

What it writes in --out (default reports/out): report.md, report.json (the
same figures, plus the raw traces and bench output), one SVG per scenario
profile (fixed vs legacy: syscalls by kind, the behaviour's main figure,
bytes delivered), the scaling plots (bytes moved and sender CPU against
payload size, log-log) and batching.svg (sends and time per round against
the number of writes in a task).

A subject that ends by a signal or an exit code other than 0 is data (some
scenarios do it on purpose), not a failure of the report.

Exit status: 0 when everything ran; 1 when the report was written but a
scenario or a benchmark failed to run (the report says which); 2 on bad
usage or when nothing could be run (no wirecheck binary, no scenario).
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import multiprocessing
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

from . import golden as G
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
# The sections of a trace that the goldens compare (wirecheck.golden), in
# its order: where the fixed and legacy runs differ, as the pytest plugin
# would say it.
COMPARED_FIELDS = ("exit", "faults", "peer", "events", "syscalls", "queue")

# Per behaviour (the scenario's `behaviour` line): its title in report.md and
# the figure that its legacy variant is about, shown first in its table and
# in the middle panel of its plots: (label, comparison field, unit).
BEHAVIOUR_TITLES = {"queue": "Pending-write queue", "batching": "Write batching",
                    "half_open": "Half-open EOF order"}
KEY_METRICS = {
    "queue": ("bytes moved", "bytes_moved", "bytes"),
    "batching": ("sends", "writing_syscalls", "calls"),
    "half_open": ("epoll_ctl MOD", "syscalls:epoll_ctl.mod", "calls"),
}
DEFAULT_KEY_METRIC = ("sends", "writing_syscalls", "calls")

# The benchmarks, in the order they run; --benches picks some.
BENCHES = ("bytes_moved", "sender_cpu", "gate_cost", "batching", "chat")

# reference-prs/000, "Numbers": off/on of each row of its table (main against
# the branch, node + Bun on a 12-core machine), for comparison only.
SEED_BATCHING_RATIO = {
    "2 x write(262144 B)": 1.01, "16 x write(49152 B)": 1.00, "16 x write(32768 B)": 1.00,
    "16 x write(16384 B)": 1.11, "16 x write(1024 B)": 3.61, "1 x write(128 B)": 0.99,
    "2 x write(128 B)": 1.00, "16 x write(128 B)": 4.33, "64 x write(128 B)": 12.15,
    "256 x write(128 B)": 24.63, "64 x write(128 B, callback)": 1.00,
}

# Issue 5: syscalls per connection, (count at TO - count at FROM) / (TO - FROM),
# fixed (on_end before the poll change) against poll-first.
PER_CONNECTION_SCENARIO = REPO / "scenarios" / "half-open" / "per-connection.wcs"
PER_CONNECTION_FROM, PER_CONNECTION_TO = 100, 300
PER_CONNECTION_SIDES = (("fixed", "halfopen=end-first"), ("poll_first", "halfopen=poll-first"))
# The rows of the table, as reference-prs/001 names them.
PER_CONNECTION_ROWS = (("epoll_ctl.mod", "epoll_ctl MOD"), ("epoll_ctl.add", "epoll_ctl ADD"),
                       ("epoll_ctl.del", "epoll_ctl DEL"), ("send", "send"), ("recv", "recv"),
                       ("shutdown", "shutdown"))

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


def exit_short(summary: dict | None) -> str:
    """How a subject ended, for a table cell: '0', '1', 'SIGABRT',
    'timed out', '-' (no run). A data point, not a failure of the report."""
    if not summary:
        return "-"
    ex = summary.get("exit") or {}
    if ex.get("timed_out"):
        return "timed out"
    if "signal" in ex:
        return str(ex["signal"]) + (" (core)" if ex.get("core") else "")
    text = str(ex.get("code"))
    if "error" in ex:
        text += f" ({ex['error']})"
    return text


def key_metric(behaviour: str | None) -> tuple[str, str, str]:
    """(label, comparison field, unit) of a behaviour's main figure."""
    return KEY_METRICS.get(behaviour or "", DEFAULT_KEY_METRIC)


def key_comparison(p: dict, behaviour: str | None) -> dict:
    """The comparison (fixed, legacy, ratio) of the behaviour's main figure."""
    field = key_metric(behaviour)[1]
    c = p.get("comparison") or {}
    if field.startswith("syscalls:"):
        got = (c.get("syscalls") or {}).get(field.split(":", 1)[1])
    else:
        got = c.get(field)
    return got or compare(None, None)


def fixed_variant_label(entry: dict) -> str:
    """The fixed runs' value of the key that the legacy variant sets, from
    the fixed trace's `variant` (e.g. 'batch=on' against 'batch=off');
    'default' without a legacy variant or a fixed run."""
    leg = (entry.get("legacy") or {}).get("variant") or ""
    key = leg.split("=", 1)[0] if "=" in leg else None
    for p in entry.get("profiles", []):
        var = (p.get("fixed") or {}).get("variant") or {}
        if key and key in var:
            return f"{key}={var[key]}"
    return "default"


def legacy_rule_text(legacy: dict | None) -> str:
    """'must-differ', 'must-match', 'must-match except=syscalls,queue'."""
    if not legacy:
        return "no legacy declared"
    if legacy.get("must_differ"):
        return "must-differ"
    exc = legacy.get("except") or []
    return "must-match" + (f" except={','.join(exc)}" if exc else "")


def legacy_holds(legacy: dict | None, differs: list[str] | None) -> bool | None:
    """Whether the declaration holds against this fixed run (the plugin
    checks it against the golden): must-differ differs in some section,
    must-match differs only in its except= sections. None without both runs."""
    if not legacy or differs is None:
        return None
    if legacy.get("must_differ"):
        return bool(differs)
    return set(differs) <= set(legacy.get("except") or ())


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
    """The golden sections (COMPARED_FIELDS) in which the two traces differ,
    compared as wirecheck.golden compares a run with its golden."""
    if not fixed or not legacy:
        return None
    diffs = G.compare(G.from_trace(fixed["trace"]), G.from_trace(legacy["trace"]))
    found = {d.field.split()[0] for d in diffs}
    return [k for k in COMPARED_FIELDS if k in found]


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
        entry["fixed_variant"] = fixed_variant_label(entry)
        for p in entry["profiles"]:
            p["comparison"] = compare_runs(p["fixed"], p["legacy"])
            p["legacy_differs_in"] = differing_fields(p["fixed"], p["legacy"])
            p["legacy_holds"] = legacy_holds(entry["legacy"], p["legacy_differs_in"])
            p["same_bytes_delivered"] = (
                None if not p["fixed"] or not p["legacy"]
                else p["fixed"]["peer_sha256"] == p["legacy"]["peer_sha256"])
            p["same_exit"] = (None if not p["fixed"] or not p["legacy"]
                              else exit_short(p["fixed"]) == exit_short(p["legacy"]))
    return scenarios


# --------------------------------------------------------------- benchmarks

def run_bench(argv: Sequence[str], log, label: str, timeout: float = 3600,
              tag: str = "bench") -> dict:
    """Runs one benchmark; returns {command, seconds, returncode, stdout,
    stderr_tail, error}."""
    start = time.monotonic()
    log(f"[{tag}] {label}: "
        f"{' '.join(rel(Path(a)) if i == 0 or os.path.isabs(a) else a for i, a in enumerate(argv))}")
    res: dict = {"command": [rel(Path(argv[0]))] + list(argv[1:]), "error": None}
    try:
        proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        res.update(seconds=round(time.monotonic() - start, 3), returncode=None,
                   stdout="", stderr_tail="", error=str(e))
        log(f"[{tag}] {label}: FAILED: {e}")
        return res
    res.update(seconds=round(time.monotonic() - start, 3), returncode=proc.returncode,
               stdout=proc.stdout, stderr_tail="\n".join(proc.stderr.splitlines()[-5:]))
    if proc.returncode != 0:
        res["error"] = f"{label} exited {proc.returncode}: {res['stderr_tail'].strip()}"
        log(f"[{tag}] {label}: FAILED: {res['error']}")
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


def selected_benches(opts) -> list[str]:
    """The benchmarks to run, in BENCHES order: --benches (default all),
    without gate_cost under --no-gate-cost."""
    names = BENCHES if not opts.benches else [b.strip() for b in opts.benches.split(",") if b.strip()]
    return [b for b in BENCHES if b in names and not (b == "gate_cost" and opts.no_gate_cost)]


def run_benches(bench_dir: Path, opts, log) -> dict:
    bench = empty_bench(True)
    cpu_sizes = opts.cpu_sizes or (CPU_SIZES_FULL if opts.full else CPU_SIZES_QUICK)
    quick = [] if opts.full else ["--quick"]
    argvs = {
        "bytes_moved": [str(bench_dir / "bytes_moved"), "--json"],
        "sender_cpu": [str(bench_dir / "sender_cpu"), "--json", *quick, "--sizes", cpu_sizes],
        "gate_cost": [str(bench_dir / "gate_cost")],
        # Issue 4: the seed's table and its chat server; --quick unless --full.
        "batching": [str(bench_dir / "batching"), *quick, "--json"],
        "chat": [str(bench_dir / "chat"), *quick, "--json"],
    }
    plan = [(name, argvs[name]) for name in selected_benches(opts)]
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


# ------------------------------------------------- half-open, per connection

def fmt_pc(v: float | None) -> str:
    """A per-connection figure: 0.00, 1.00."""
    return "-" if v is None else f"{v:.2f}"


def run_per_connection(binary: Path, scenario: Path, log) -> dict:
    """Issue 5: `wirecheck per-connection SCENARIO --from 100 --to 300
    --variant V` for the fixed order (halfopen=end-first) and poll-first;
    the table's rows and the issue's targets."""
    pc: dict = {"scenario": rel(scenario), "from": PER_CONNECTION_FROM,
                "to": PER_CONNECTION_TO, "sides": {}, "rows": [], "targets": [],
                "targets_met": 0, "targets_total": 0, "errors": []}
    for i, (side, variant) in enumerate(PER_CONNECTION_SIDES, 1):
        argv = [str(binary), "per-connection", str(scenario), "--from", str(PER_CONNECTION_FROM),
                "--to", str(PER_CONNECTION_TO), "--variant", variant]
        res = run_bench(argv, log, f"{i}/{len(PER_CONNECTION_SIDES)} {variant}",
                        timeout=900, tag="per-connection")
        res["command"] = [rel(binary), "per-connection", rel(scenario), *argv[3:]]
        parsed = parse_json_bench(res)
        if parsed is not None and not isinstance(parsed.get("per_connection"), dict):
            res["error"] = (res.get("error") or "") + "no per_connection in its output"
            parsed = None
        if parsed is None and not res["error"]:
            res["error"] = f"per-connection {variant}: no figures in its output"
        if res["error"]:
            pc["errors"].append(res["error"])
        pc["sides"][side] = {"variant": variant, "result": parsed,
                             **{k: v for k, v in res.items() if k != "stdout"}}
    per = {side: ((pc["sides"][side]["result"] or {}).get("per_connection") or {})
           for side, _ in PER_CONNECTION_SIDES}
    pc["rows"] = [{"kind": kind, "label": label, "fixed": per["fixed"].get(kind),
                   "poll_first": per["poll_first"].get(kind)}
                  for kind, label in PER_CONNECTION_ROWS]
    if per["fixed"] and per["poll_first"]:
        pc["targets"] = per_connection_targets(per["fixed"], per["poll_first"])
        pc["targets_met"] = sum(t["pass"] for t in pc["targets"])
        pc["targets_total"] = len(pc["targets"])
    return pc


def per_connection_targets(fixed: dict, poll: dict) -> list[dict]:
    """Issue 5's targets: fixed 0.00 epoll_ctl(MOD) per peer-closed
    connection, poll-first >= 1.00, every other count the same (epoll_ctl
    all ops together is left out: it holds MOD)."""
    mod_f, mod_p = fixed.get("epoll_ctl.mod"), poll.get("epoll_ctl.mod")
    others = sorted((set(fixed) | set(poll)) - {"epoll_ctl.mod", "epoll_ctl"})
    differ = [k for k in others
              if fixed.get(k) is None or poll.get(k) is None
              or abs(fixed[k] - poll[k]) > 1e-9]
    return [
        {"target": "fixed (halfopen=end-first): 0.00 epoll_ctl(MOD) per peer-closed connection",
         "measured": fmt_pc(mod_f), "pass": mod_f is not None and mod_f == 0},
        {"target": "poll-first (halfopen=poll-first): >= 1.00 epoll_ctl(MOD) per peer-closed "
                   "connection", "measured": fmt_pc(mod_p), "pass": mod_p is not None and mod_p >= 1.0},
        {"target": "every other count the same, fixed and poll-first",
         "measured": (f"{len(others)} kinds equal ({', '.join(others)})" if not differ else
                      "differ: " + ", ".join(f"{k} {fmt_pc(fixed.get(k))} vs {fmt_pc(poll.get(k))}"
                                             for k in differ)),
         "pass": not differ},
    ]


def run_exits_text(pc: dict) -> list[str]:
    """How the subject ended in each per-connection run that did not exit 0."""
    out = []
    for side, variant in PER_CONNECTION_SIDES:
        res = (pc["sides"].get(side) or {}).get("result") or {}
        for n, ex in sorted((res.get("exit") or {}).items()):
            if ex.get("code") != 0 or ex.get("timed_out") or "error" in ex:
                out.append(f"{variant} at {n}: {exit_short({'exit': ex})}")
    return out


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
    the behaviour's main figure (bytes moved for the queue, sends for
    batching, epoll_ctl MOD for half-open), bytes delivered."""
    plt = _plt()
    cmp = p["comparison"]
    has_legacy = p["legacy"] is not None
    key_label, _key_field, key_unit = key_metric(entry.get("behaviour"))
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
    ax.set_xticks(range(len(kinds)))
    ax.set_xticklabels(kinds, rotation=30, ha="right")
    ax.set_ylabel("calls (log scale)")
    ratios = ", ".join(f"{k} {cmp['syscalls'][k]['ratio_text']}" for k in kinds
                       if (k in WRITE_KINDS or k == "epoll_ctl.mod") and has_legacy)
    ax.set_title("Syscalls by kind" + (f"\nlegacy/fixed: {ratios}" if ratios else ""))
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
        ax.set_title(f"{title}\n{sub}")

    key_titles = {"bytes moved": "Bytes moved by the queue",
                  "sends": "Sends (send, sendto, sendmsg,\nwrite, writev)",
                  "epoll_ctl MOD": "epoll_ctl MOD"}
    pair(axes[1], key_comparison(p, entry.get("behaviour")),
         key_titles.get(key_label, key_label), key_unit)
    pair(axes[2], cmp["bytes_delivered"], "Bytes delivered to the peer")
    prof = p["id"] or "no matrix"
    exits = [exit_short(summary) for _, _, summary in sides]
    ended = ("" if all(e == "0" for e in exits) else
             "; subject ended: " + ", ".join(f"{side} {e}" for (side, _, _), e in zip(sides, exits)))
    fig.suptitle(f"{Path(entry['path']).with_suffix('')}  [{prof}]: "
                 f"fixed vs legacy, one run each{ended}", fontsize=11, x=0.01, ha="left")
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


def batching_series(bt: dict | None) -> dict | None:
    """The rows of N x write(128 B) without a callback, by N: what the
    batching plot draws."""
    if not bt:
        return None
    rows = sorted((r for r in bt.get("rows", []) if r.get("size") == 128 and not r.get("callback")),
                  key=lambda r: r["writes"])
    return {"rows": rows, "callback": [r for r in bt.get("rows", []) if r.get("callback")]}


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


def run_label(s: dict, p: dict, side: str | None = None) -> str:
    """'scenarios/batching/end-abort', with the profile and side when given."""
    parts = [str(Path(s["path"]).with_suffix(""))]
    if p.get("id"):
        parts.append(p["id"])
    if side:
        parts.append(side)
    return " ".join(parts)


def behaviour_groups(report: dict) -> list[tuple[str | None, list[dict]]]:
    """The scenarios by behaviour, in the order the behaviours first appear."""
    groups: dict = {}
    for s in report["scenarios"]:
        groups.setdefault(s.get("behaviour"), []).append(s)
    return list(groups.items())


def behaviour_title(behaviour: str | None, scenarios: Sequence[dict]) -> str:
    """'Write batching (`batching`): fixed `batch=on`, legacy `batch=off`'."""
    title = BEHAVIOUR_TITLES.get(behaviour or "", behaviour or "No behaviour declared")
    if behaviour:
        title += f" (`{behaviour}`)"
    fixed = sorted({s.get("fixed_variant") or "default" for s in scenarios if s.get("legacy")})
    legacy = sorted({s["legacy"]["variant"] for s in scenarios if s.get("legacy")})
    if legacy:
        title += (f": fixed {', '.join(f'`{v}`' for v in fixed)}, "
                  f"legacy {', '.join(f'`{v}`' for v in legacy)}")
    return title


def legacy_note(s: dict, p: dict) -> str:
    """The table's last cell: the declaration, where the runs differ, and
    whether the declaration holds against this fixed run."""
    if s.get("legacy") is None:
        note = "no legacy declared"
    else:
        rule = legacy_rule_text(s["legacy"])
        differs = p.get("legacy_differs_in")
        if differs is None:
            note = f"{rule}; run missing"
        else:
            holds = p.get("legacy_holds")
            note = (f"{rule}; differs in: {', '.join(differs) if differs else 'nothing'}"
                    + ("" if holds is None else "; holds" if holds else "; does NOT hold"))
    errs = "; ".join(f"{k} failed" for k in p["errors"])
    return note + (f"; {errs}" if errs else "")


def scenario_header(behaviour: str | None) -> list[str]:
    key = key_metric(behaviour)[0]
    return ["scenario", "profile", f"{key}: fixed", "legacy", "legacy/fixed",
            "syscalls: fixed", "legacy", "legacy/fixed",
            "bytes delivered: fixed", "legacy", "legacy/fixed", "exit: fixed / legacy",
            "legacy vs fixed"]


SCENARIO_ALIGN = "llrrrrrrrrrll"


def scenario_rows(report: dict, behaviour: Any = ...) -> list[list[str]]:
    """The rows of report.md's scenario table of one behaviour (all
    scenarios when behaviour is not given), in the columns of
    scenario_header: the behaviour's main figure first."""
    rows = []
    for s in report["scenarios"]:
        if behaviour is not ... and s.get("behaviour") != behaviour:
            continue
        if s["error"]:
            msg = s["error"].replace("|", "\\|").replace("\n", " ")
            rows.append([f"`{s['path']}`", "-"] + ["-"] * 10 + [msg])
            continue
        for p in s["profiles"]:
            c = p["comparison"]
            k = key_comparison(p, s.get("behaviour"))
            rows.append([
                f"`{Path(s['path']).with_suffix('')}`", profile_label(p),
                fmt_int(k["fixed"]), fmt_int(k["legacy"]), k["ratio_text"],
                fmt_int(c["syscalls_total"]["fixed"]), fmt_int(c["syscalls_total"]["legacy"]),
                c["syscalls_total"]["ratio_text"],
                fmt_int(c["bytes_delivered"]["fixed"]), fmt_int(c["bytes_delivered"]["legacy"]),
                c["bytes_delivered"]["ratio_text"],
                f"{exit_short(p['fixed'])} / {exit_short(p['legacy'])}",
                legacy_note(s, p),
            ])
    return rows


def _fewer_same_more(pairs: Sequence[tuple[Any, Any]]) -> tuple[int, int, int]:
    fewer = sum(1 for f, l in pairs if f < l)
    same = sum(1 for f, l in pairs if f == l)
    return fewer, same, len(pairs) - fewer - same


def summary_lines(report: dict) -> list[str]:
    out = []
    profs = [(s, p) for s in report["scenarios"] for p in s["profiles"]]
    runs = sum(1 for _, p in profs for side in ("fixed", "legacy") if p[side])
    failed = [run_label(s, p, side) for s, p in profs for side in p["errors"]]
    bad_checks = [s["path"] for s in report["scenarios"] if s["error"]]
    legacies: dict = {}
    for s, p in profs:
        if s.get("legacy"):
            legacies[s["legacy"]["variant"]] = legacies.get(s["legacy"]["variant"], 0) + 1
    out.append(f"- {plural(runs, 'scenario run')}: {plural(len(profs), 'profile')} of "
               f"{plural(len(report['scenarios']), 'scenario')}, each with the fixed code (no "
               f"`--variant`) and with the scenario's legacy variant"
               + (" (" + ", ".join(f"`{v}`: {plural(n, 'profile')}"
                                   for v, n in sorted(legacies.items())) + ")" if legacies else "")
               + f"; {len(failed)} failed to run"
               + (f" ({'; '.join(failed)})" if failed else "")
               + (f"; {plural(len(bad_checks), 'scenario')} failed `wirecheck check` "
                  f"({', '.join(bad_checks)})" if bad_checks else "") + ".")

    # How the subjects ended: data (some scenarios end the process on purpose).
    ended = [(s, p, side) for s, p in profs for side in ("fixed", "legacy") if p[side]]
    zero = sum(1 for s, p, side in ended if exit_short(p[side]) == "0")
    if zero == len(ended):
        out.append("- Every subject exited 0.")
    else:
        by_exit: dict = {}
        for s, p, side in ended:
            e = exit_short(p[side])
            if e != "0":
                by_exit.setdefault(e, {}).setdefault(run_label(s, p), []).append(side)
        parts = [f"{'exit ' if e[:1].isdigit() else ''}{e}: " + ", ".join(
            f"`{name}` ({' and '.join(sides)})" for name, sides in runs_.items())
            for e, runs_ in sorted(by_exit.items())]
        both = [(s, p) for s, p in profs if p.get("same_exit") is not None]
        same = sum(1 for _, p in both if p["same_exit"])
        diff = [run_label(s, p) for s, p in both if not p["same_exit"]]
        out.append(f"- Subject exits (data from the traces, not failures: some scenarios end "
                   f"the process on purpose): exit 0 in {zero} of {plural(len(ended), 'run')}; "
                   + "; ".join(parts) + "."
                   + (f" Fixed and legacy ended the same way in {same} of {len(both)} profiles"
                      + (f" (not: {', '.join(diff)})" if diff else "") + "." if both else ""))

    judged = [(s, p) for s, p in profs if p.get("legacy_holds") is not None]
    if judged:
        nope = [run_label(s, p) for s, p in judged if not p["legacy_holds"]]
        out.append(f"- Legacy declarations (`must-differ`, `must-match [except=...]`) against "
                   f"this fixed run: hold in {len(judged) - len(nope)} of {len(judged)} profiles"
                   + (f"; do NOT hold in: {', '.join(nope)}" if nope else "")
                   + " (the pytest plugin checks them against the goldens).")

    for behaviour, scenarios in behaviour_groups(report):
        with_both = [(s, p) for s in scenarios for p in s["profiles"] if p["fixed"] and p["legacy"]]
        if not with_both:
            continue
        label, _field, unit = key_metric(behaviour)
        head = (f"- {BEHAVIOUR_TITLES.get(behaviour or '', behaviour or 'No behaviour')} "
                f"({plural(len(with_both), 'profile')}, legacy "
                + ", ".join(sorted({f'`{s["legacy"]["variant"]}`' for s, _ in with_both})) + "): ")
        if behaviour == "queue":
            fixed_zero = sum(1 for _, p in with_both if p["fixed"]["bytes_moved"] == 0)
            more = [(s, p) for s, p in with_both
                    if (p["legacy"]["bytes_moved"] or 0) > (p["fixed"]["bytes_moved"] or 0)]
            line = (head + f"queue bytes moved: fixed 0 in {fixed_zero} of {len(with_both)} "
                    f"profiles; legacy more than fixed in {len(more)} of {len(with_both)}")
            if more:
                s, p = max(more, key=lambda sp: sp[1]["legacy"]["bytes_moved"])
                line += (f", up to {fmt_int(p['legacy']['bytes_moved'])} bytes "
                         f"(`{Path(s['path']).with_suffix('')}` {profile_label(p)})")
            out.append(line + ".")
            continue
        pairs = [(k["fixed"], k["legacy"]) for k in
                 (key_comparison(p, behaviour) for _, p in with_both)
                 if k["fixed"] is not None and k["legacy"] is not None]
        if not pairs:
            continue
        fewer, same, more = _fewer_same_more(pairs)
        out.append(head + f"{label}: fixed fewer in {fewer}, the same in {same}, more in "
                   f"{more} of {plural(len(pairs), 'profile')}; "
                   f"{fmt_int(sum(f for f, _ in pairs))} fixed against "
                   f"{fmt_int(sum(l for _, l in pairs))} legacy in all.")

    with_both = [(s, p) for s, p in profs if p["fixed"] and p["legacy"]]
    if with_both:
        same = sum(1 for _, p in with_both if p["same_bytes_delivered"])
        diff = [f"`{run_label(s, p)}` fixed {fmt_int(p['fixed']['bytes_delivered'])} B, legacy "
                f"{fmt_int(p['legacy']['bytes_delivered'])} B"
                for s, p in with_both if not p["same_bytes_delivered"]]
        out.append(f"- Bytes delivered: fixed and legacy delivered the same stream (byte count "
                   f"and sha256) in {same} of {len(with_both)} profiles"
                   + (f"; not in: {'; '.join(diff)}" if diff else "") + ".")

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

    bt = report["bench"].get("batching")
    if bt:
        row = next((r for r in bt.get("rows", []) if r["label"] == "256 x write(128 B)"), None)
        line = f"- Write batching bench (`batching`): {targets_text(bt)}"
        if row:
            line += (f"; `256 x write(128 B)`: sends per round "
                     f"{sends_text(row['configs']['off']['sends'])} off, "
                     f"{sends_text(row['configs']['on']['sends'])} on, time off/on "
                     f"{row['ratio_off_on']:.2f}x (the seed's: 24.63x)")
        out.append(line + ".")
    ch = report["bench"].get("chat")
    if ch:
        off, on = ch["configs"]["off"], ch["configs"]["on"]
        out.append(f"- Chat server bench (`chat`): {targets_text(ch)}; server sends per round "
                   f"{off['sends_per_round']:.2f} off, {on['sends_per_round']:.2f} on; mean round "
                   f"{off['mean_round_us']:.1f} µs off, {on['mean_round_us']:.1f} µs on "
                   f"({ch['ratio_mean_round_off_on']:.2f}x).")
    pc = report.get("per_connection")
    if pc and pc.get("rows") and pc.get("targets"):
        mod = next(r for r in pc["rows"] if r["kind"] == "epoll_ctl.mod")
        out.append(f"- Half-open, syscalls per connection (`wirecheck per-connection`, "
                   f"N={pc['from']} to {pc['to']}): epoll_ctl MOD {fmt_pc(mod['fixed'])} fixed, "
                   f"{fmt_pc(mod['poll_first'])} poll-first; targets met {pc['targets_met']} of "
                   f"{pc['targets_total']}" + failed_targets_text(pc["targets"]) + ".")
    errs = report["bench"].get("errors", []) + ((pc or {}).get("errors") or [])
    if errs:
        out.append("- Failures to run: " + "; ".join(errs) + ".")
    return out


def sends_text(st: dict) -> str:
    """Sends per round as the bench prints them: the count when every round
    had the same, else the mean."""
    return fmt_int(st["min"]) if st["min"] == st["max"] else f"{st['mean']:.1f}"


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


def batching_markdown(report: dict) -> list[str]:
    """Issue 4: the seed's table (reference-prs/000, "Numbers"), from
    bench/batching --json, and its targets."""
    bt = report["bench"].get("batching")
    L = ["", "## Write batching: N writes in one task, per round", ""]
    if not bt:
        return L + [not_run_text(report, "batching")]
    cmd = bench_command(report, "batching")
    transport = ("TCP on 127.0.0.1, TCP_NODELAY on both ends" if bt.get("transport") == "tcp"
                 else bt.get("transport"))
    L += [f"`{' '.join(cmd or ['batching'])}`: the seed's table (reference-prs/000, \"Numbers\"), "
          f"rows for rows, on the reference stack over {transport}. "
          f"A round is one posted task that makes the row's writes; it ends when the peer "
          f"(a forked process) has read every byte and its 1-byte reply is in. "
          f"{bt.get('blocks')} blocks of {bt.get('rounds_per_block')} measured rounds per row "
          f"and configuration (after {bt.get('warmup_rounds_per_block')} warm-up rounds); "
          f"time: the median over the rounds. batch=off twice (the same code) shows the noise. "
          f"Sends: send+sendto+sendmsg+write+writev per round (the count when every round had "
          f"the same, else the mean). The seed's off/on (main against its branch, node and "
          f"Bun on 12 cores) is for comparison. {bt.get('cpus')} CPUs, load average "
          f"{fmt_load(bt.get('load_average_start'))} at the start, {fmt_load(bt.get('load_average_end'))} at the end.",
          ""]
    rows = []
    for r in bt.get("rows", []):
        cfg = r["configs"]
        seed = SEED_BATCHING_RATIO.get(r["label"])
        rows.append([f"`{r['label']}`", *(sends_text(cfg[k]["sends"]) for k in ("off", "off2", "on")),
                     *(f"{cfg[k]['median_us']:.2f} µs" for k in ("off", "off2", "on")),
                     f"{r['ratio_off_on']:.2f}x", f"{r['ratio_off_off2']:.3f}x",
                     "-" if seed is None else f"{seed:.2f}x"])
    L += md_table(["Writes in one task", "sends: off", "off again", "on", "time: off",
                   "off again", "on", "off/on", "off/off again", "seed off/on"],
                  rows, "lrrrrrrrrr")
    L += ["", "### Targets (bench/batching)", ""]
    L += md_table(["Target", "Measured", "Result"],
                  ([t["target"], t["measured"], "PASS" if t["pass"] else "FAIL"]
                   for t in bt.get("targets", [])), "lll")
    L += ["", f"Targets met: {bt.get('targets_met')} of {bt.get('targets_total')}."]
    # The medians of each block, for the rows the targets name: a time
    # target that fails on a pooled median can be read against them.
    named = [r for r in bt.get("rows", [])
             if any(t["target"].startswith(r["label"] + ":") or
                    t["target"].startswith(r["label"] + ",") for t in bt.get("targets", []))]
    if named:
        L += ["", "Median per block, µs, for the rows the targets name (the time targets "
              "use the median over all blocks' rounds): " + "; ".join(
                  f"`{r['label']}`: " + ", ".join(
                      f"{name} " + " / ".join(f"{v:.2f}" for v in r["configs"][k]["block_median_us"])
                      for k, name in (("off", "off"), ("off2", "off again"), ("on", "on")))
                  for r in named) + "."]
    L += ["", "![Write batching: sends and time per round against N](batching.svg)"]
    return L


def chat_markdown(report: dict) -> list[str]:
    """Issue 4: the broadcast chat server of reference-prs/000, from
    bench/chat --json, and its targets."""
    ch = report["bench"].get("chat")
    L = ["", "## Chat server: every message broadcast to every client", ""]
    if not ch:
        return L + [not_run_text(report, "chat")]
    cmd = bench_command(report, "chat")
    off, on = ch["configs"]["off"], ch["configs"]["on"]
    L += [f"`{' '.join(cmd or ['chat'])}`: the seed's application (reference-prs/000) on the "
          f"reference stack over {ch.get('transport')}: {ch.get('clients')} clients, each "
          f"sends {ch.get('messages_per_client_per_round')} messages of "
          f"{ch.get('frame_bytes')} bytes per round, the server writes each to every client "
          f"({off['messages_per_round']:.0f} in, {off['frames_per_round']:.0f} frames out per "
          f"round). {ch.get('blocks_per_config')} blocks of {ch.get('rounds_per_block')} rounds "
          f"per configuration, alternating; {off['rounds']} rounds each. Round time in the "
          f"client process, first send to last frame. {ch.get('cpus')} CPUs, load average "
          f"{fmt_load(ch.get('load_average_start'))} at the start, {fmt_load(ch.get('load_average_end'))} at the end. "
          f"The seed's (ws over node:http, 2,568 frames per round): mean round 12.7 ms on "
          f"main, 5.8 ms on its branch; `sendto` per round 2,585 and 273.", ""]

    def ratio(a, b):
        return f"{a / b:.2f}x" if b else "-"

    rows = [["mean round", f"{off['mean_round_us']:.1f} µs", f"{on['mean_round_us']:.1f} µs",
             ratio(off["mean_round_us"], on["mean_round_us"])],
            ["median round", f"{off['median_round_us']:.1f} µs", f"{on['median_round_us']:.1f} µs",
             ratio(off["median_round_us"], on["median_round_us"])],
            ["mean of the 4 slowest rounds of a block", f"{off['mean_slowest4_per_block_us']:.1f} µs",
             f"{on['mean_slowest4_per_block_us']:.1f} µs",
             ratio(off["mean_slowest4_per_block_us"], on["mean_slowest4_per_block_us"])],
            ["first round of a block", f"{off['first_round_per_block_us']:.1f} µs",
             f"{on['first_round_per_block_us']:.1f} µs",
             ratio(off["first_round_per_block_us"], on["first_round_per_block_us"])],
            ["server CPU per round", f"{off['server_cpu_per_round_us']:.1f} µs",
             f"{on['server_cpu_per_round_us']:.1f} µs",
             ratio(off["server_cpu_per_round_us"], on["server_cpu_per_round_us"])],
            ["server sends per round", f"{off['sends_per_round']:.2f}", f"{on['sends_per_round']:.2f}",
             ratio(off["sends_per_round"], on["sends_per_round"])],
            ["- in the write calls", f"{off['sends_in_call_per_round']:.2f}",
             f"{on['sends_in_call_per_round']:.2f}", ""],
            ["- at the end of the task", f"{off['sends_at_end_of_task_per_round']:.2f}",
             f"{on['sends_at_end_of_task_per_round']:.2f}", ""],
            ["- other (writable events)", f"{off['sends_other_per_round']:.2f}",
             f"{on['sends_other_per_round']:.2f}", ""],
            ["tasks that broadcast, per round", f"{off['writing_tasks_per_round']:.2f}",
             f"{on['writing_tasks_per_round']:.2f}", ""]]
    L += md_table(["", "batch=off (legacy)", "batch=on (fixed)", "off/on"], rows, "lrrr")
    L += ["", "### Targets (bench/chat)", ""]
    L += md_table(["Target", "Bound per round", "Measured per round", "Result"],
                  ([t["target"], f"{t['bound']:.2f}", f"{t['measured']:.2f}",
                    "PASS" if t["pass"] else "FAIL"] for t in ch.get("targets", [])), "lrrl")
    L += ["", f"Targets met: {ch.get('targets_met')} of {ch.get('targets_total')}."]
    if any(not t["pass"] and "at most 1 per client per task" in t["target"]
           for t in ch.get("targets", [])):
        L += ["", "bench/chat.c on its bound of 1 send per client per task that writes: the "
              "design does not promise it (the first write of a task goes to the kernel in "
              "the call, the later ones in one send at the end of the task); "
              "min(frames, 2) is the design's bound."]
    return L


def per_connection_markdown(report: dict) -> list[str]:
    """Issue 5: syscalls per connection, fixed against poll-first, as in
    reference-prs/001, and the issue's targets."""
    pc = report.get("per_connection")
    L = ["", "## Half-open: syscalls per connection", ""]
    if not pc:
        return L + ["Not run" + (" (--no-per-connection)." if report.get("options", {})
                                 .get("no_per_connection") else ".")]
    cmds = [" ".join((pc["sides"].get(side) or {}).get("command") or []) for side, _ in
            PER_CONNECTION_SIDES]
    L += [f"`{cmds[0]}` and the same with `--variant {PER_CONNECTION_SIDES[1][1]}`: per "
          f"connection = (count at N={pc['to']} - count at N={pc['from']}) / "
          f"{pc['to'] - pc['from']}, as in reference-prs/001 (each peer sends its request, reads "
          f"the reply, then sends its FIN; the server ends from on_end). Fixed dispatches "
          f"on_end before the poll change; poll-first changes the poll first. The seed's: "
          f"epoll_ctl(MOD) 1 (Bun.serve) and 2 (node:net) per connection on main, 0.00 with "
          f"the fix; ADD 1, DEL 1, send 1, recv 2.", ""]
    if pc.get("errors"):
        L += ["Failed: " + "; ".join(pc["errors"]) + ".", ""]
    L += md_table(["per connection", "fixed (end-first)", "poll-first"],
                  ([r["label"], fmt_pc(r["fixed"]), fmt_pc(r["poll_first"])]
                   for r in pc["rows"]), "lrr")
    exits = run_exits_text(pc)
    L += ["", "Every run's subject exited 0." if not exits else
          "Subject exits other than 0 (data): " + "; ".join(exits) + "."]
    if pc.get("targets"):
        L += ["", "### Targets (issue 5)", ""]
        L += md_table(["Target", "Measured", "Result"],
                      ([t["target"], t["measured"], "PASS" if t["pass"] else "FAIL"]
                       for t in pc["targets"]), "lll")
        L += ["", f"Targets met: {pc['targets_met']} of {pc['targets_total']}."]
    return L


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
          "One run of each profile of each scenario's matrix with the fixed code (no "
          "`--variant`) and one with the scenario's legacy variant, one table per "
          "behaviour; its first figure is the one the legacy variant is about (bytes "
          "moved by the queue, sends, epoll_ctl MOD). legacy/fixed is legacy divided by "
          "fixed: `inf` when fixed is 0 and legacy is not, `-` when both are 0 or a run "
          "is missing (bytes moved is `-` when the subject did not exit cleanly: the "
          "trace has no queue then). Syscalls: every call the gate counted, minus those "
          "the kernel answered EAGAIN, without epoll_wait; sends: send, sendto, sendmsg, "
          "write, writev. Exit: how the subject ended (an exit code or a signal), data "
          "from the trace: some scenarios end the process on purpose. \"legacy vs "
          "fixed\": the scenario's declaration, the golden sections in which the two runs "
          "differ, and whether the declaration holds against this fixed run (the pytest "
          "plugin checks it against the goldens)."]
    for behaviour, scenarios in behaviour_groups(report):
        L += ["", f"### {behaviour_title(behaviour, scenarios)}", ""]
        L += md_table(scenario_header(behaviour), scenario_rows(report, behaviour),
                      SCENARIO_ALIGN)

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
        L += [not_run_text(report, "bytes_moved")]

    sc = report["bench"].get("sender_cpu")
    cpu = report["scaling"]["sender_cpu"]
    L += ["", "## Sender CPU: end(P) to its callback", ""]
    if cpu:
        sizes = sorted({pt["payload"] for s in cpu for pt in s["points"]})
        cmd = bench_command(report, "sender_cpu")
        L += [f"`{' '.join(cmd or ['sender_cpu'])}`: CPU ms of the "
              f"sending thread, median of {sc.get('rounds')} rounds; floor is a plain "
              f"send loop. Load average {sc.get('load_average_start')} at the start, "
              f"{sc.get('load_average_end')} at the end. Timings are noisy on a shared "
              f"machine; the slope is the point.", ""]
        rows = []
        order = {"clamp_4k": 0, "unclamped": 1, "cursor": 0, "memmove": 1, "floor": 2, "copy": 3,
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
        L += [not_run_text(report, "sender_cpu")]

    L += batching_markdown(report)
    L += chat_markdown(report)
    L += per_connection_markdown(report)

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
            fixed_v = s.get("fixed_variant") or "fixed"
            legacy_v = (s.get("legacy") or {}).get("variant") or "legacy"
            L += md_table(["kind", f"fixed ({fixed_v})", f"legacy ({legacy_v})", "legacy/fixed"],
                          rows, "lrrr")
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
    ap.add_argument("--benches", metavar="NAME,...",
                    help="run only these benchmarks, from " + ",".join(BENCHES) + " (default: all)")
    ap.add_argument("--no-gate-cost", action="store_true", help="skip gate_cost (about 12 s)")
    ap.add_argument("--bench-json", metavar="FILE",
                    help="take the benchmarks' figures from FILE (a JSON object with keys "
                         "among " + ", ".join(BENCHES) + ", as in report.json's bench) "
                         "instead of running them")
    ap.add_argument("--no-per-connection", action="store_true",
                    help="skip the half-open syscalls per connection (wirecheck per-connection, "
                         "under a second)")
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


def _run_plot(job: tuple) -> None:
    """One plot, by the name of its function (a worker of run_plots)."""
    name, args = job
    globals()[name](*args)


def run_plots(jobs: list[tuple], log) -> None:
    """Draws the plots, in worker processes (fork) when there are several
    CPUs: about 0.4 s each, 50 of them. Each plot is its own file, so the
    output does not depend on the number of workers."""
    workers = min(len(jobs), os.cpu_count() or 1)
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        for job in jobs:
            _run_plot(job)
        return
    log(f"plots: {len(jobs)} in {workers} processes")
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        pool.map(_run_plot, jobs, chunksize=1)


def _plot_view(p: dict) -> dict:
    """A profile without its traces (what plot_profile reads), to send to a
    worker."""
    view = {k: v for k, v in p.items() if k not in ("fixed", "legacy")}
    for side in ("fixed", "legacy"):
        view[side] = None if p[side] is None else {k: v for k, v in p[side].items() if k != "trace"}
    return view


def write_outputs(report: dict, out: Path, extra: Sequence[str] = (), log=lambda m: None,
                  before_render=None) -> list[str]:
    """Plots, report.md and report.json into out; returns the files written.
    Removes first the files that a previous report.json in out lists (and
    only those), so that a scenario gone since leaves no stale plot.
    before_render(report) runs after the plots, before report.md is written."""
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
    jobs: list[tuple] = []
    log("plots")
    for s in report["scenarios"]:
        entry = {k: v for k, v in s.items() if k != "profiles"}
        entry["fixed_variant"] = s.get("fixed_variant") or fixed_variant_label(s)
        for p in s["profiles"]:
            p["plot"] = None
            if not p["fixed"] and not p["legacy"]:
                continue
            suffix = "." + p["id"].replace("::", ".") if p["id"] else ""
            name = safe_name(f"{s['stem']}{suffix}") + ".svg"
            jobs.append(("plot_profile", (entry, _plot_view(p), out / name, extra)))
            p["plot"] = name
            files.append(name)
    if report["scaling"]["bytes_moved"]:
        jobs.append(("plot_bytes_moved_scaling", (report["scaling"]["bytes_moved"],
                                                  out / "scaling-bytes-moved.svg", extra)))
        files.append("scaling-bytes-moved.svg")
    if report["scaling"]["sender_cpu"]:
        jobs.append(("plot_cpu_scaling", (report["scaling"]["sender_cpu"],
                                          report["bench"]["sender_cpu"],
                                          out / "scaling-sender-cpu.svg", extra)))
        files.append("scaling-sender-cpu.svg")
    if (batching_series(report["bench"].get("batching")) or {}).get("rows"):
        jobs.append(("plot_batching", (report["bench"]["batching"], out / "batching.svg", extra)))
        files.append("batching.svg")
    run_plots(jobs, log)
    report["files"] = ["report.md", "report.json", *files]
    if before_render:
        before_render(report)
    (out / "report.md").write_text(render_markdown(report))
    (out / "report.json").write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    return report["files"]


def empty_bench(ran: bool) -> dict:
    return {"ran": ran, **{name: None for name in BENCHES}, "runs": {}, "errors": []}


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

    if opts.benches and not opts.no_bench and not opts.bench_json:
        unknown = [b for b in opts.benches.split(",") if b.strip() and b.strip() not in BENCHES]
        if unknown:
            print(f"wirecheck.report: --benches: unknown {', '.join(unknown)} "
                  f"(from {', '.join(BENCHES)})", file=sys.stderr)
            return 2

    scenarios = run_scenarios(paths, binary, log)
    per_connection = (None if opts.no_per_connection else
                      run_per_connection(binary, PER_CONNECTION_SCENARIO, log))

    if opts.bench_json:
        try:
            given = json.loads(Path(opts.bench_json).read_text())
        except (OSError, ValueError) as e:
            print(f"wirecheck.report: --bench-json: {e}", file=sys.stderr)
            return 2
        bench = empty_bench(True)
        bench["from_file"] = rel(Path(opts.bench_json))
        bench.update({k: given.get(k) for k in BENCHES})
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
                    "bench_json": opts.bench_json, "benches": opts.benches,
                    "no_per_connection": opts.no_per_connection,
                    "cpu_sizes": opts.cpu_sizes or (CPU_SIZES_FULL if opts.full else CPU_SIZES_QUICK)},
        "environment": environment(binary),
        "scenarios": scenarios,
        "bench": bench,
        "scaling": {"bytes_moved": bytes_moved_scaling(bench.get("bytes_moved")),
                    "sender_cpu": sender_cpu_scaling(bench.get("sender_cpu"))},
        "seed_table": seed_table(bench.get("bytes_moved")),
        "per_connection": per_connection,
        "files": [],
        "seconds": None,
    }

    def finish(rep: dict) -> None:  # the run's time, plots included
        rep["seconds"] = round(time.monotonic() - started, 1)

    files = write_outputs(report, out, extra, log, before_render=finish)
    log(f"wrote {len(files)} files into {rel(out)} in {report['seconds']:.0f} s")

    failed = any(s["error"] or any(p["errors"] for p in s["profiles"]) for s in scenarios)
    return 1 if failed or bench.get("errors") or (per_connection or {}).get("errors") else 0


if __name__ == "__main__":
    sys.exit(main())
