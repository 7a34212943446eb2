"""The WebSocket benchmark (bench/ws_echo, issue 11): echo and chat servers,
the reference stack against node 20 + npm ws 8.18.3 in the same run, and
the callgrind instructions of the reference server's small send and echo;
its section, its summary line and its plot (plot_ws)."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ..fmt import bench_command, fmt_load, md_table, not_run_text, targets_text

NAME = "ws"
PLOT = "ws-bench.svg"

# Issue 11's target for one 16-byte text send, and the seed's figures
# (the oven-sh/bun pull request "ws: take the frame type of send() from
# options.binary"): with its PR, and on its base.
SEND_TARGET = 150
SEED_SEND = {"PR": 488, "base": 2508}


def _ws(report: dict) -> dict | None:
    return (report.get("bench") or {}).get(NAME)


def _cpu_rows(ws: dict) -> list[dict]:
    """The rows of server CPU per message (lower is better)."""
    return [r for r in ws.get("rows", []) if not r.get("higher_is_better")]


def summary(report: dict) -> list[str]:
    ws = _ws(report)
    if not ws:
        return []
    ahead = [r["ref_ahead_by"] for r in ws.get("rows", [])]
    line = (f"- WebSocket bench (`ws_echo`): {targets_text(ws)} (ahead of node + ws); "
            f"the reference server ahead by {min(ahead):.2f}x to {max(ahead):.2f}x "
            f"(medians)" if ahead else "- WebSocket bench (`ws_echo`): no rows")
    ins = ws.get("instructions")
    if ins:
        line += (f"; {ins['send_16_text']:.1f} instructions per 16-byte send "
                 f"(target {SEND_TARGET}), {ins['echo_16_text']:.1f} per echo")
    return [line + "."]


def markdown(report: dict) -> list[str]:
    """Issue 11: bench/ws_echo --json (and --instructions)."""
    ws = _ws(report)
    L = ["", "## WebSocket: echo and chat servers against node + npm ws", ""]
    if not ws:
        return L + [not_run_text(report, NAME)]
    cmd = bench_command(report, NAME)
    L += [f"`{' '.join(cmd or ['ws_echo'])}`: the reference stack's WebSocket server "
          f"(reference/ws.c) and node + npm ws {ws.get('ws_version')} "
          f"(bench/ws_server.js), over {ws.get('transport')} sockets, in "
          f"{ws.get('rounds')} interleaved rounds per row; medians, with min and max. "
          f"Server CPU is user + system from the server's own getrusage "
          f"(node: process.cpuUsage()), read before and after each round. Chat: "
          f"{ws.get('chat_clients')} clients, each sends "
          f"{ws.get('chat_messages_per_client')} 16-byte text messages per round, the "
          f"server writes each to every client. {ws.get('cpus')} CPUs, load average "
          f"{fmt_load(ws.get('load_average_start'))} at the start, "
          f"{fmt_load(ws.get('load_average_end'))} at the end: the machine is shared, "
          f"so times move; the instructions below hold still.", ""]

    def side(s: dict) -> str:
        return f"{s['median']:,.2f} ({s['min']:,.2f}-{s['max']:,.2f})"

    L += md_table(["Row", "Unit", "Reference", "node + ws", "Reference ahead by"],
                  ([r["row"], r["unit"].replace("us", "µs"), side(r["ref"]), side(r["node"]),
                    f"{r['ref_ahead_by']:.2f}x"] for r in ws.get("rows", [])), "llrrr")
    L += ["", f"Rows where the reference is ahead: {targets_text(ws)}."]
    ins = ws.get("instructions")
    if ins:
        met = ins["send_16_text"] <= SEND_TARGET
        L += ["", "### Instructions (callgrind, bench/ws_instructions.sh)", ""]
        L += md_table(["Figure", "Instructions", "Target", "Result"],
                      [["one 16-byte text send, server socket", f"{ins['send_16_text']:.1f}",
                        f"<= {SEND_TARGET}", "PASS" if met else "FAIL"],
                       ["one 16-byte text echo (receive to send)", f"{ins['echo_16_text']:.1f}",
                        "-", "-"]], "lrrl")
        L += ["", f"The seed's figures for the send (Bun): {SEED_SEND['PR']:,} with its PR, "
              f"{SEED_SEND['base']:,} on its base."]
    if _cpu_rows(ws):
        L += ["", f"![WebSocket servers: server CPU per message]({PLOT})"]
    return L


def plot_ws(ws: dict, path: Path, extra_formats: Sequence[str] = ()) -> None:
    """Server CPU per message, reference against node + ws, one pair of
    bars per row (median, with min-max whiskers), on a log scale."""
    from ..plots import _plt, _save

    plt = _plt()
    rows = _cpu_rows(ws)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    x = range(len(rows))
    for k, (key, label, dx) in enumerate((("ref", "reference stack", -0.2),
                                          ("node", "node + npm ws", 0.2))):
        med = [r[key]["median"] for r in rows]
        lo = [r[key]["median"] - r[key]["min"] for r in rows]
        hi = [r[key]["max"] - r[key]["median"] for r in rows]
        ax.bar([i + dx for i in x], med, width=0.4, yerr=[lo, hi], capsize=3,
               label=label, color=("tab:blue", "tab:orange")[k])
    ax.set_xticks(list(x))
    ax.set_xticklabels([r["row"].replace(": server CPU", "") for r in rows],
                       rotation=15, ha="right", fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("server CPU per message (µs)")
    ax.set_title(f"WebSocket servers (bench/ws_echo): medians of {ws.get('rounds')} "
                 f"interleaved rounds, load {fmt_load(ws.get('load_average_start'))}")
    ax.legend()
    fig.tight_layout()
    _save(fig, path, extra_formats)
