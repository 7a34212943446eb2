"""Foreign subjects (python3 -m wirecheck.subjects_tool): node:net, libuv
and Bun (and node and Bun on handed-off sockets, `NAME-upgrade`) on every
queue, batching and half-open scenario against the reference goldens, side
by side per behaviour and one table per behaviour, the writing calls of
N x write(128 B) in one task on each stack, and what the traces say of the
seeds' two claims on the installed Bun (docs/subjects.md)."""
from __future__ import annotations

from ..fmt import bench_start, cell_text, md_table

NAME = "subjects"


def _yes(v) -> str:
    return "yes" if v else "**no**"


def _claims_lines(sub: dict) -> list[str]:
    """The seeds' two claims on the installed Bun, each with the scenario
    and the figures that show it."""
    c = sub.get("claims")
    if not c:
        return []
    bun = (sub.get("runtimes") or {}).get("bun", "?")
    out = []
    b = c["batching"]["subjects"].get("bun-upgrade")
    if b:
        golden = c["batching"]["golden_reads"]
        out.append(
            f"- Batching of a task's writes on a handed-off socket (oven-sh/bun#45246): the "
            f"installed Bun {bun} **{'batches' if b['batches'] else 'does not batch'}** them. "
            f"`{c['batching']['scenario']}` with `--subject bun-upgrade`: at the checkpoint "
            f"inside the task the peer reads {b['reads'][0] if b['reads'] else '-'} of 19 bytes "
            f"(reads {b['reads']}; the reference stack, which batches, {golden}), and the "
            f"socket took {b['writing_calls']} writing calls, one of them the 101.")
    h = c["half_open"]["subjects"].get("bun")
    if h:
        o = h["order"]
        order = " -> ".join(o["calls"]) if "calls" in o else o.get("error", "-")
        first = o.get("end_first")
        verdict = ("dispatches end before the poll change" if first else
                   "changes the poll before it dispatches end" if first is False else "unknown")
        ref = c["half_open"]["subjects"].get("refstack", {})
        legacy = c["half_open"]["subjects"].get("refstack poll-first", {})
        out.append(
            f"- End before the poll change on a half-open connection (the oven-sh/bun pull "
            f"request 'usockets: dispatch on_end before the poll change in the half-open EOF "
            f"arm'): the "
            f"installed Bun {bun} **{verdict}**. `{c['half_open']['scenario']}` with "
            f"`--subject bun`: {h['mod_per_connection']} epoll_ctl(MOD) per connection "
            f"(the reference stack {ref.get('mod_per_connection', '-')}, its poll-first legacy "
            f"order {legacy.get('mod_per_connection', '-')}), and after the read that returned "
            f"the peer's FIN its calls on the socket were `{order}` (strace -f).")
    return out


def _side_by_side(rows: list[dict], names: list[str]) -> list[str]:
    """One row per scenario, one column per subject: writing calls, and
    whether the peer's bytes and the events equal the golden's."""
    by: dict = {}
    for r in rows:
        by.setdefault(r["scenario"], {})[r["subject"]] = r
    table = []
    for scenario, cells in by.items():
        first = next(iter(cells.values()))
        line = [f"`{scenario}`", str(first["golden_writes"])]
        line += [cell_text(cells.get(n), lambda r: (
                     f"{r['writes']}, bytes {'=' if r['bytes_equal'] else '**≠**'}, "
                     f"events {'=' if r['events_equal'] else '≠'}")) for n in names]
        table.append(line)
    return md_table(["scenario", "refstack (golden)", *names], table, "lr" + "l" * len(names))


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
    return [line + "."] + _claims_lines(sub)


def markdown(report: dict) -> list[str]:
    sub, L, cmd = bench_start(
        report, NAME, "## Foreign subjects: node:net, libuv and Bun against the reference goldens",
        ["python3", "-m", "wirecheck.subjects_tool"])
    if sub is None:
        return L
    L += [f"{cmd}: each scenario profile run on each "
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
    if sub.get("runtimes"):
        L += ["", "Runtimes: " + ", ".join(f"{k} {v}" for k, v in sub["runtimes"].items())
              + ". `NAME-upgrade`: the same program, every connection the socket a node:http "
              "server hands to its 'upgrade' listener (the peer sends an Upgrade request; the "
              "101 is not part of the compared bytes, its send is counted)."]
    claims = _claims_lines(sub)
    if claims:
        L += ["", "### The seeds' claims on the installed Bun, from the traces", ""] + claims
    by_behaviour: dict = {}
    for r in sub["rows"]:
        by_behaviour.setdefault(r.get("behaviour") or "-", []).append(r)
    for behaviour, rs in by_behaviour.items():
        L += ["", f"### `{behaviour}` side by side: writing calls, bytes and events against "
              "the golden", ""]
        L += _side_by_side(rs, list(sub["subjects"]))
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
        if any(n.endswith("-upgrade") for n in names):
            L += ["", "On `NAME-upgrade` one of the writing calls is the 101, sent in a task "
                  "of its own before the scenario's."]
    return L
