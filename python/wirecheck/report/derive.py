"""Figures derived from what collect ran: comparisons of a fixed and a legacy
run, the scaling of the benchmarks' figures, the per-connection targets.
Pure: no subprocess, no file; what it returns is stored in report.json."""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Sequence

from .. import golden as G
from .fmt import exit_short, fmt_pc, ratio_text, rel, safe_name

# The syscall kinds that are parts of another (epoll_ctl by op).
SPLIT_KIND = re.compile(r"^[a-z_]+\.[a-z_]+$")
WRITE_KINDS = ("send", "sendto", "sendmsg", "write", "writev")
# The sections of a trace that the goldens compare (wirecheck.golden), in
# its order: where the fixed and legacy runs differ, as the pytest plugin
# would say it.
COMPARED_FIELDS = ("exit", "faults", "peer", "events", "syscalls", "queue")

# The rows of the per-connection table, as oven-sh/bun "usockets: dispatch on_end before the poll change" names
# them, and its two sides (fixed: on_end before the poll change).
PER_CONNECTION_SIDES = (("fixed", "halfopen=end-first"), ("poll_first", "halfopen=poll-first"))
PER_CONNECTION_ROWS = (("epoll_ctl.mod", "epoll_ctl MOD"), ("epoll_ctl.add", "epoll_ctl ADD"),
                       ("epoll_ctl.del", "epoll_ctl DEL"), ("send", "send"), ("recv", "recv"),
                       ("shutdown", "shutdown"))


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


def scenario_stem(path: Path) -> str:
    """scenarios/queue/end-large.wcs -> 'queue-end-large' (the plot name);
    a file outside the repository and the working folder is named by its
    folder and its name (/tmp/x/a.wcs -> 'x-a'), never with a leading dash."""
    r = Path(rel(path)).with_suffix("")
    parts = list(r.parts)
    if r.is_absolute():
        parts = parts[-2:]
    elif len(parts) > 1 and parts[0] == "scenarios":
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


def key_comparison(p: dict, field: str) -> dict:
    """The comparison (fixed, legacy, ratio) of a behaviour's main figure:
    field is a key of the profile's comparison, or `syscalls:KIND`."""
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


def derive_profiles(scenarios: list[dict]) -> None:
    """Adds to each scenario its fixed variant and to each profile the
    comparison of its fixed and legacy runs (in place)."""
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


def per_connection_rows(pc: dict) -> None:
    """Fills pc's rows, targets and their count from its sides' results (in
    place)."""
    per = {side: ((pc["sides"][side]["result"] or {}).get("per_connection") or {})
           for side, _ in PER_CONNECTION_SIDES}
    pc["rows"] = [{"kind": kind, "label": label, "fixed": per["fixed"].get(kind),
                   "poll_first": per["poll_first"].get(kind)}
                  for kind, label in PER_CONNECTION_ROWS]
    if per["fixed"] and per["poll_first"]:
        pc["targets"] = per_connection_targets(per["fixed"], per["poll_first"])
        pc["targets_met"] = sum(t["pass"] for t in pc["targets"])
        pc["targets_total"] = len(pc["targets"])


def per_connection_targets(fixed: dict, poll: dict) -> list[dict]:
    """The half-open targets: fixed 0.00 epoll_ctl(MOD) per peer-closed
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


def batching_series(bt: dict | None) -> dict | None:
    """The rows of N x write(128 B) without a callback, by N: what the
    batching plot draws."""
    if not bt:
        return None
    rows = sorted((r for r in bt.get("rows", []) if r.get("size") == 128 and not r.get("callback")),
                  key=lambda r: r["writes"])
    return {"rows": rows, "callback": [r for r in bt.get("rows", []) if r.get("callback")]}
