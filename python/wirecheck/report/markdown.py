"""report.md from a report (the dict that report.json holds): the header,
the summary, one table per behaviour of the scenarios' fixed and legacy
runs, the benchmarks' sections (sections/bench_*.py, in BENCH_SECTIONS'
order), the per-profile details and the list of files. Pure: a string from a
dict."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from .. import behaviours
from .derive import key_comparison, legacy_rule_text
from .fmt import exit_short, exit_text, fmt_int, md_table, plural
from .sections import BENCH_SECTIONS, behaviour_section


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
    title = behaviours.title(behaviour)
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
    key = behaviour_section(behaviour).KEY_LABEL
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
        field = behaviour_section(s.get("behaviour")).KEY_FIELD
        for p in s["profiles"]:
            c = p["comparison"]
            k = key_comparison(p, field)
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
        head = (f"- {behaviours.title(behaviour) if behaviour else 'No behaviour'} "
                f"({plural(len(with_both), 'profile')}, legacy "
                + ", ".join(sorted({f'`{s["legacy"]["variant"]}`' for s, _ in with_both})) + "): ")
        line = behaviour_section(behaviour).summary(head, with_both)
        if line is not None:
            out.append(line)

    with_both = [(s, p) for s, p in profs if p["fixed"] and p["legacy"]]
    if with_both:
        same = sum(1 for _, p in with_both if p["same_bytes_delivered"])
        diff = [f"`{run_label(s, p)}` fixed {fmt_int(p['fixed']['bytes_delivered'])} B, legacy "
                f"{fmt_int(p['legacy']['bytes_delivered'])} B"
                for s, p in with_both if not p["same_bytes_delivered"]]
        out.append(f"- Bytes delivered: fixed and legacy delivered the same stream (byte count "
                   f"and sha256) in {same} of {len(with_both)} profiles"
                   + (f"; not in: {'; '.join(diff)}" if diff else "") + ".")

    for section in BENCH_SECTIONS:
        out += section.summary(report)
    pc = report.get("per_connection")
    errs = report["bench"].get("errors", []) + ((pc or {}).get("errors") or [])
    if errs:
        out.append("- Failures to run: " + "; ".join(errs) + ".")
    return out


def header_line(report: dict) -> str:
    """Commit, wirecheck version, CPUs, time, command, duration."""
    env = report["environment"]
    git = env.get("git") or {}
    commit = git.get("commit", "unknown")[:12]
    dirty = " (with uncommitted changes)" if git.get("dirty") else ""
    return (f"Commit `{commit}`{dirty} · {env.get('wirecheck_version', 'wirecheck')} · "
            f"{env.get('cpus')} CPUs · {report['generated']} · "
            f"`{' '.join(report['command'])}` · {report['seconds']:.0f} s")


def render_markdown(report: dict) -> str:
    L: list[str] = []
    L += ["# wirecheck report", "", header_line(report), "", "## Summary", ""]
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

    for section in BENCH_SECTIONS:
        L += section.markdown(report)

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
          *(["- `summary.md`: the summary, the targets and the benchmarks' plots, short "
             "enough to paste into a pull request."] if "summary.md" in report["files"] else []),
          *[f"- `{f}`" for f in report["files"] if f.endswith(".svg")], ""]
    return "\n".join(L)
