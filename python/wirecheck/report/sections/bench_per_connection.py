"""The half-open per-connection count (`wirecheck per-connection`):
syscalls per connection, fixed against poll-first, as in oven-sh/bun "usockets: dispatch on_end before the poll change",
and the issue's targets."""
from __future__ import annotations

from ..derive import PER_CONNECTION_SIDES
from ..fmt import exit_short, failed_targets_text, fmt_pc, md_table

NAME = "per_connection"


def summary(report: dict) -> list[str]:
    out: list[str] = []
    pc = report.get("per_connection")
    if pc and pc.get("rows") and pc.get("targets"):
        mod = next(r for r in pc["rows"] if r["kind"] == "epoll_ctl.mod")
        out.append(f"- Half-open, syscalls per connection (`wirecheck per-connection`, "
                   f"N={pc['from']} to {pc['to']}): epoll_ctl MOD {fmt_pc(mod['fixed'])} fixed, "
                   f"{fmt_pc(mod['poll_first'])} poll-first; targets met {pc['targets_met']} of "
                   f"{pc['targets_total']}" + failed_targets_text(pc["targets"]) + ".")
    return out


def run_exits_text(pc: dict) -> list[str]:
    """How the subject ended in each per-connection run that did not exit 0."""
    out = []
    for side, variant in PER_CONNECTION_SIDES:
        res = (pc["sides"].get(side) or {}).get("result") or {}
        for n, ex in sorted((res.get("exit") or {}).items()):
            if ex.get("code") != 0 or ex.get("timed_out") or "error" in ex:
                out.append(f"{variant} at {n}: {exit_short({'exit': ex})}")
    return out


def markdown(report: dict) -> list[str]:
    """Syscalls per connection, fixed against poll-first, as in
    oven-sh/bun "usockets: dispatch on_end before the poll change", and the issue's targets."""
    pc = report.get("per_connection")
    L = ["", "## Half-open: syscalls per connection", ""]
    if not pc:
        return L + ["Not run" + (" (--no-per-connection)." if report.get("options", {})
                                 .get("no_per_connection") else ".")]
    cmds = [" ".join((pc["sides"].get(side) or {}).get("command") or []) for side, _ in
            PER_CONNECTION_SIDES]
    L += [f"`{cmds[0]}` and the same with `--variant {PER_CONNECTION_SIDES[1][1]}`: per "
          f"connection = (count at N={pc['to']} - count at N={pc['from']}) / "
          f"{pc['to'] - pc['from']}, as in the oven-sh/bun pull request \"usockets: dispatch on_end before the poll change\" (each peer sends its request, reads "
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
        L += ["", "### Targets (wirecheck per-connection)", ""]
        L += md_table(["Target", "Measured", "Result"],
                      ([t["target"], t["measured"], "PASS" if t["pass"] else "FAIL"]
                       for t in pc["targets"]), "lll")
        L += ["", f"Targets met: {pc['targets_met']} of {pc['targets_total']}."]
    return L
