"""Two builds side by side: the same scenarios run with a
base build's wirecheck (e.g. the pull request's base) and the head's, each
profile with the fixed code (no --variant), and a table per scenario of
what a reviewer weighs: sends, syscalls, bytes moved and bytes copied by the
queue, bytes delivered, base -> head with the difference, and whether the
peer's bytes, the events and the exit are equal.

`python3 -m wirecheck.report --base-bin BASE/build/bin/wirecheck` adds it to
report.md and summary.md (the head is --wirecheck-bin, default the build of
this tree). run_compare() runs (subprocesses, through wirecheck.runner);
the rest is pure: the report section (markdown, summary) and summary.md's
short form (pr_lines), from report["compare"]."""
from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path
from typing import Callable, Sequence

from .. import golden as G
from ..runner import WirecheckError, check, profiles, run
from .derive import COMPARED_FIELDS, scenario_stem, summarize_trace
from .fmt import exit_short, fmt_int, md_table, rel

# The figures compared, in the tables' order: (key, column title).
FIGURES = (("writing_syscalls", "sends"), ("syscalls_total", "syscalls"),
           ("bytes_moved", "bytes moved"), ("bytes_copied", "bytes copied"),
           ("bytes_delivered", "bytes delivered"))
# summary.md lists at most this many differing profiles (the rest: report.md).
PR_ROWS = 40


def summarize(trace: dict) -> dict:
    """The figures of one run, without its trace: derive's, with the queue's
    bytes copied, and the golden's sections to compare the two runs by."""
    s = summarize_trace(trace, 0.0)
    s.pop("seconds", None)
    s["bytes_copied"] = (trace.get("queue") or {}).get("bytes_copied")
    return s


def delta(base, head) -> dict:
    """{base, head, delta}: delta is head - base, None when a side is missing."""
    d = None if base is None or head is None else head - base
    return {"base": base, "head": head, "delta": d}


def compare_profile(base: dict | None, head: dict | None) -> dict:
    """What differs between the two runs of one profile: each figure's delta,
    the golden sections that differ (as the pytest plugin compares a run
    with its golden), and the three equalities a reviewer reads first."""
    out: dict = {"figures": {k: delta((base or {}).get(k), (head or {}).get(k))
                             for k, _ in FIGURES}}
    if not base or not head:
        out.update(differs=None, bytes_equal=None, events_equal=None, exit_equal=None)
        return out
    diffs = G.compare(G.from_trace(base["trace"]), G.from_trace(head["trace"]))
    found = {d.field.split()[0] for d in diffs}
    out["differs"] = [k for k in COMPARED_FIELDS if k in found]
    out["bytes_equal"] = base["peer_sha256"] == head["peer_sha256"]
    out["events_equal"] = "events" not in found
    out["exit_equal"] = exit_short(base) == exit_short(head)
    return out


def _digest(path: Path) -> str | None:
    """The first 12 hex digits of a file's sha256 (None when unreadable):
    two builds of the same version are told apart by their subject's."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    except OSError:
        return None


def _build(binary: Path) -> dict:
    try:
        version = subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                                 timeout=10).stdout.strip()
    except OSError:
        version = None
    return {"binary": rel(binary), "version": version,
            "subject_sha256": _digest(binary.parent / "refstack-subject")}


def run_compare(paths: Sequence[Path], base_bin: Path, head_bin: Path,
                log: Callable[[str], None] = lambda m: None) -> dict:
    """Runs every profile of every scenario in paths with both binaries
    (the profiles from the head's `check`; a scenario that one of them
    refuses is listed with its error). Returns report["compare"]."""
    cmp: dict = {"base": _build(base_bin), "head": _build(head_bin), "scenarios": [],
                 "errors": []}
    jobs = []
    for path in paths:
        entry: dict = {"path": rel(path), "stem": scenario_stem(path), "name": path.stem,
                       "behaviour": None, "error": None, "profiles": []}
        cmp["scenarios"].append(entry)
        try:
            meta = check(path, head_bin)
            check(path, base_bin)
        except (WirecheckError, OSError, ValueError) as e:
            entry["error"] = f"check failed: {e}"
            cmp["errors"].append(f"{rel(path)}: {entry['error']}")
            continue
        entry["name"] = meta.get("name", path.stem)
        entry["behaviour"] = meta.get("behaviour")
        for prof in profiles(meta):
            p = {"id": prof.id, "flags": prof.flags, "base": None, "head": None, "errors": {}}
            entry["profiles"].append(p)
            jobs.append((entry, p, path))
    for i, (entry, p, path) in enumerate(jobs, 1):
        for side, binary in (("base", base_bin), ("head", head_bin)):
            log(f"[compare {i}/{len(jobs)}] {entry['path']} {p['id'] or '(no matrix)'} {side}")
            try:
                p[side] = summarize(run(path, p["flags"], binary=binary))
            except (WirecheckError, OSError, ValueError, subprocess.TimeoutExpired) as e:
                p["errors"][side] = str(e)
                cmp["errors"].append(f"{entry['path']} {p['id'] or ''} {side}: {e}")
        p["comparison"] = compare_profile(p["base"], p["head"])
        for side in ("base", "head"):  # compared: report.json keeps the figures
            if p[side]:
                p[side].pop("trace", None)
    cmp["totals"] = totals(cmp)
    return cmp


def _profiles(cmp: dict):
    for s in cmp["scenarios"]:
        for p in s["profiles"]:
            yield s, p


def differs(p: dict) -> bool:
    """The two runs differ somewhere (a figure, a golden section, a failure)."""
    c = p.get("comparison") or {}
    return bool(p["errors"] or c.get("differs")
                or any(f["delta"] for f in c.get("figures", {}).values()))


def totals(cmp: dict) -> dict:
    """Counts over every profile: run on both, differing, with other bytes,
    other events; and each figure's sum on both sides."""
    both = [(s, p) for s, p in _profiles(cmp) if p["base"] and p["head"]]
    t = {"profiles": sum(1 for _ in _profiles(cmp)), "compared": len(both),
         "differ": sum(1 for _, p in _profiles(cmp) if differs(p)),
         "bytes_differ": sum(1 for _, p in both if not p["comparison"]["bytes_equal"]),
         "events_differ": sum(1 for _, p in both if not p["comparison"]["events_equal"]),
         "exit_differ": sum(1 for _, p in both if not p["comparison"]["exit_equal"])}
    for k, _ in FIGURES:
        vals = [(p["base"].get(k), p["head"].get(k)) for _, p in both]
        vals = [(b, h) for b, h in vals if b is not None and h is not None]
        t[k] = delta(sum(b for b, _ in vals), sum(h for _, h in vals))
    return t


def delta_text(d: dict) -> str:
    """'12 -> 9 (-3)', '12' when equal, '-' when a side is missing."""
    b, h = d["base"], d["head"]
    if b is None and h is None:
        return "-"
    if d["delta"] == 0:
        return fmt_int(b)
    sign = "" if d["delta"] is None else f" ({'+' if d['delta'] > 0 else '-'}{fmt_int(abs(d['delta']))})"
    return f"{fmt_int(b)} -> {fmt_int(h)}{sign}"


def _eq(v) -> str:
    return "-" if v is None else ("yes" if v else "**no**")


def profile_row(p: dict, first: Sequence[str] = ()) -> list[str]:
    c = p.get("comparison") or {"figures": {}}
    fig = [delta_text(c["figures"].get(k) or delta(None, None)) for k, _ in FIGURES]
    if p["errors"]:
        tail = "; ".join(f"{side} failed: {e}" for side, e in p["errors"].items())
        tail = tail.replace("|", "\\|").replace("\n", " ")[:200]
    else:
        tail = ", ".join(c.get("differs") or []) or "-"
    return [*first, f"`{p['id'] or '-'}`", *fig, _eq(c.get("bytes_equal")),
            _eq(c.get("events_equal")),
            "-" if not p["base"] or not p["head"] else
            (exit_short(p["head"]) if c.get("exit_equal")
             else f"{exit_short(p['base'])} -> {exit_short(p['head'])}"), tail]


HEADER = ["profile", *(t for _, t in FIGURES), "peer bytes equal", "events equal", "exit",
          "golden sections that differ"]
ALIGN = "l" + "r" * len(FIGURES) + "llll"


def intro(cmp: dict) -> list[str]:
    t = cmp["totals"]
    def build(side):
        b = cmp[side]
        return (f"`{b['binary']}` ({b.get('version') or '?'}, subject sha256 "
                f"{b.get('subject_sha256') or '?'})")
    return [f"Base {build('base')} against head {build('head')}: each "
            "profile of each scenario run once with each build, fixed code (no `--variant`). "
            "A cell is base -> head (head - base), one number when they are equal. Sends: "
            "send, sendto, sendmsg, write, writev; syscalls: every call the gate counted, "
            "minus EAGAIN answers, without epoll_wait; bytes moved and copied: the "
            "pending-write queue's (`-` when the subject did not exit cleanly); peer bytes: "
            "the sha256 of what the peer received; golden sections: where the two traces "
            "differ as the pytest plugin compares a run with its golden.", "",
            f"{t['differ']} of {t['profiles']} profiles differ; peer bytes differ in "
            f"{t['bytes_differ']}, events in {t['events_differ']}, exit in "
            f"{t['exit_differ']} of the {t['compared']} run on both. In all: sends "
            f"{delta_text(t['writing_syscalls'])}, syscalls {delta_text(t['syscalls_total'])}, "
            f"bytes moved {delta_text(t['bytes_moved'])}, bytes copied "
            f"{delta_text(t['bytes_copied'])}."]


def summary(report: dict) -> list[str]:
    """The report's summary line (report.md and summary.md)."""
    cmp = report.get("compare")
    if not cmp:
        return []
    t = cmp["totals"]
    return [f"- Base against head (`--base-bin {cmp['base']['binary']}`): {t['differ']} of "
            f"{t['profiles']} profiles differ (peer bytes in {t['bytes_differ']}, events in "
            f"{t['events_differ']}); sends {delta_text(t['writing_syscalls'])}, syscalls "
            f"{delta_text(t['syscalls_total'])}."]


def markdown(report: dict) -> list[str]:
    """report.md's section: a table per scenario (nothing without --base-bin)."""
    cmp = report.get("compare")
    if not cmp:
        return []
    L = ["", "## Base against head: the same scenarios on two builds", ""] + intro(cmp)
    for s in cmp["scenarios"]:
        L += ["", f"### `{s['path']}`" + (f" (`{s['behaviour']}`)" if s["behaviour"] else ""), ""]
        if s["error"]:
            L += [s["error"]]
            continue
        L += md_table(HEADER, (profile_row(p) for p in s["profiles"]), ALIGN)
    return L


def pr_lines(report: dict) -> list[str]:
    """summary.md's form: the totals and one table of the profiles that
    differ (at most PR_ROWS; report.md has every scenario's table)."""
    cmp = report.get("compare")
    if not cmp:
        return []
    L = ["", "## Base against head", ""] + intro(cmp)
    rows = [profile_row(p, [f"`{s['path']}`"]) for s, p in _profiles(cmp) if differs(p)]
    if rows:
        L += [""] + md_table(["scenario", *HEADER], rows[:PR_ROWS], "l" + ALIGN)
        if len(rows) > PR_ROWS:
            L += ["", f"And {len(rows) - PR_ROWS} more profiles that differ: report.md."]
    else:
        L += ["", "No profile differs."]
    return L
