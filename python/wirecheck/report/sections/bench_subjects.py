"""Foreign subjects (bench/subjects.py, issue 13): node:net and libuv on
every queue, batching and half-open scenario against the reference goldens,
one table per behaviour, and the writing calls of N x write(128 B) in one
task on each stack (docs/subjects.md)."""
from __future__ import annotations

from ..fmt import bench_command, md_table, not_run_text

NAME = "subjects"


def _yes(v) -> str:
    return "yes" if v else "**no**"


def summary(report: dict) -> list[str]:
    sub = report["bench"].get(NAME)
    if not sub:
        return []
    parts = []
    for s, t in sub["totals"].items():
        parts.append(f"{s} bytes equal {t['bytes_equal']}/{t['runs']}, events equal "
                     f"{t['events_equal']}/{t['runs']}, {t['unexplained']} unexplained")
    sends = {r["writes"]: r for r in sub.get("sends", [])}
    line = "- Foreign subjects against the reference goldens (`subjects`): " + "; ".join(parts)
    if 16 in sends:
        r = sends[16]
        line += "; writing calls for 16 x write(128 B): " + ", ".join(
            f"{s} {r[s]['writing_calls']}" for s in ["refstack", *sub["subjects"]] if s in r)
    return [line + "."]


def markdown(report: dict) -> list[str]:
    sub = report["bench"].get(NAME)
    L = ["", "## Foreign subjects: node:net and libuv against the reference goldens", ""]
    if not sub:
        return L + [not_run_text(report, NAME)]
    cmd = bench_command(report, NAME)
    L += [f"`{' '.join(cmd or ['bench/subjects.py'])}`: each scenario profile run on each "
          "subject (`wirecheck run --subject NAME`, the gate preloaded) and compared with the "
          "reference stack's golden. Bytes: the peer's streams (length and sha256); reads: "
          "what the peer read at its points; every difference has its reason in "
          "`scenarios/subjects/NAME.differences` (docs/subjects.md). Writing calls: send, "
          "sendto, sendmsg, write and writev on the socket, golden / subject.", ""]
    if sub.get("missing"):
        L += [f"Not built, left out: {', '.join(sub['missing'])}.", ""]
    rows = [[s, str(t["runs"]), f"{t['bytes_equal']}/{t['runs']}",
             f"{t['reads_equal']}/{t['runs']}", f"{t['events_equal']}/{t['runs']}",
             str(t["skipped"]), str(t["unexplained"])] for s, t in sub["totals"].items()]
    L += md_table(["subject", "runs", "bytes equal", "reads equal", "events equal",
                   "skipped (unsupported)", "unexplained fields"], rows, "lrrrrrr")
    by_behaviour: dict = {}
    for r in sub["rows"]:
        by_behaviour.setdefault(r.get("behaviour") or "-", []).append(r)
    for behaviour, rs in by_behaviour.items():
        L += ["", f"### `{behaviour}` on the foreign subjects", ""]
        table = []
        for r in rs:
            if r["skipped"]:
                table.append([f"`{r['scenario']}`", r["subject"], "-", "-", "-", "-", "-",
                              f"skipped: {r['skipped']}"])
                continue
            why = "; ".join(f"{f}: {r['reasons'].get(f, 'UNEXPLAINED')}" for f in r["differs"]
                            if f not in ("syscalls", "queue"))
            table.append([f"`{r['scenario']}`", r["subject"], _yes(r["bytes_equal"]),
                          _yes(r["reads_equal"]), _yes(r["events_equal"]),
                          f"{r['golden_writes']} / {r['writes']}",
                          f"{r['golden_syscalls']} / {r['syscalls']}",
                          why.replace("|", "\\|") or "-"])
        L += md_table(["scenario", "subject", "bytes", "reads", "events", "writing calls",
                       "syscalls", "differences and their reasons (syscalls and queue: every "
                       "scenario, see the file)"], table, "lllllrrl")
    if sub.get("sends"):
        names = ["refstack", *sub["subjects"]]
        L += ["", "### Writing calls for N x write(128 B) in one task", ""]
        rows = [[str(r["writes"])] + [f"{r[s]['writing_calls']} ("
                                      + ", ".join(f"{k} {v}" for k, v in r[s]["by_kind"].items())
                                      + ")" for s in names] for r in sub["sends"]]
        L += md_table(["N", *names], rows, "r" * (1 + len(names)))
    return L
