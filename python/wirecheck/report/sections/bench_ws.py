"""The WebSocket benchmark (bench/ws_echo): echo and chat servers,
the reference stack against node 20 + npm ws 8.18.3 and, where it ran, Bun's
Bun.serve in the same run; the servers' syscalls per message
(bench/ws_syscalls.py, the preload gate); and the callgrind instructions of
the reference server's small send and echo; its section, its summary line
and its plot (plot_ws)."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ..fmt import bench_start, fmt_load, md_table, targets_text

NAME = "ws"
PLOT = "ws-bench.svg"

# The target for one 16-byte text send, and the seed's figures
# (the oven-sh/bun pull request "ws: take the frame type of send() from
# options.binary"): with its PR, and on its base.
SEND_TARGET = 150
SEED_SEND = {"PR": 488, "base": 2508}


def in_flight(window) -> str:
    """How many echo messages ws_echo's client keeps in flight: its
    --window, or by default 64 KiB of messages, at most 32."""
    if window:
        return f"at most {window} message{'s' if window != 1 else ''}"
    return "at most 32 messages (64 KiB of messages at the most)"


def _ws(report: dict) -> dict | None:
    return (report.get("bench") or {}).get(NAME)


def _has_bun(ws: dict) -> bool:
    """Bun's column ran (older JSON has none)."""
    return any(r.get("bun") for r in ws.get("rows", []))


def _ahead(r: dict, key: str, side: str | None = None) -> str:
    """The medians' ratio; with the rounds' own ratios (each
    round runs every side, so a round's ratio pairs runs seconds apart)
    their median, its 95% sign-test interval and the rounds won."""
    v = r.get(key)
    if v is None:
        return "-"
    text = f"{v:.2f}x"
    p = (r.get("paired") or {}).get(side) if side else None
    if p:
        iv = p.get("interval")
        text += (f"; rounds {p['median']:.2f}x"
                 + (f" [{iv[0]:.2f}, {iv[1]:.2f}]" if iv else "")
                 + f", won {p['won']} of {p['rounds']}")
    return text


def _cpu_rows(ws: dict) -> list[dict]:
    """The rows of server CPU per message (lower is better)."""
    return [r for r in ws.get("rows", []) if not r.get("higher_is_better")]


def summary(report: dict) -> list[str]:
    ws = _ws(report)
    if not ws:
        return []
    ahead = [r["ref_ahead_by"] for r in ws.get("rows", []) if r.get("ref_ahead_by") is not None]
    bun = [r["ref_ahead_of_bun"] for r in ws.get("rows", [])
           if r.get("ref_ahead_of_bun") is not None]
    line = (f"- WebSocket bench (`ws_echo`): {targets_text(ws)} (ahead of node + ws"
            + (" and of Bun" if bun else "") + "); "
            f"the reference server ahead of node by {min(ahead):.2f}x to {max(ahead):.2f}x"
            + (f", of Bun {ws.get('bun_version') or ''} by {min(bun):.2f}x to {max(bun):.2f}x"
               if bun else "")
            + " (medians)" if ahead else "- WebSocket bench (`ws_echo`): no rows")
    ins = ws.get("instructions")
    if ins:
        line += (f"; {ins['send_16_text']:.1f} instructions per 16-byte send "
                 f"(target {SEND_TARGET}), {ins['echo_16_text']:.1f} per echo")
    return [line + "."]


def markdown(report: dict) -> list[str]:
    """bench/ws_echo --json (and --instructions)."""
    ws, L, cmd = bench_start(report, NAME,
                             "## WebSocket: echo and chat servers against node + npm ws", ["ws_echo"])
    if ws is None:
        return L
    L += [f"{cmd}: the reference stack's WebSocket server "
          f"(reference/ws.c) and node + npm ws {ws.get('ws_version')} "
          f"(bench/ws_server.js), over {ws.get('transport')} sockets, in "
          f"{ws.get('rounds')} interleaved rounds per row; medians, with min and max. "
          f"The echo client keeps {in_flight(ws.get('echo_window'))} in flight. "
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

    def cell(s: dict | None) -> str:
        return side(s) if s else "-"

    if _has_bun(ws):
        L += [f"Bun {ws.get('bun_version') or '(version unknown)'}: `Bun.serve` with a "
              "`websocket` handler (bench/ws_server_bun.js, uWebSockets inside), its "
              "defaults but the idle timeout, off as the other servers have none; echo by `ws.send(message)`; chat by Bun's pub/sub, every socket "
              "subscribed to one topic and each message one `server.publish(topic, "
              "message)`, as Bun's guide to a chat server does (`ws.publish` would leave "
              "the sender out). The reference's chat is its equivalent, one "
              "`rs_ws_publish` to a group of every client (reference/ws_group.c: the "
              "frame encoded once, each client's frames of a loop iteration in one "
              "write); npm ws has no publish, node's server is a loop of `ws.send`. The "
              "rows \"by a loop of sends\" are the same chat by a loop of sends on every "
              "side (node's rounds again). Every side runs in each round, the order "
              "rotated by one from round to round.", ""]
        L += md_table(["Row", "Unit", "Reference", "node + ws",
                       f"Bun {ws.get('bun_version') or ''}".strip(),
                       "Reference ahead of node", "Reference ahead of Bun"],
                      ([r["row"], r["unit"].replace("us", "µs"), side(r["ref"]),
                        cell(r.get("node")), cell(r.get("bun")),
                        _ahead(r, "ref_ahead_by", "node"),
                        _ahead(r, "ref_ahead_of_bun", "bun")] for r in ws.get("rows", [])),
                      "llrrrrr")
        L += ["", "A ratio is the medians' ratio, then the median of the rounds' own "
              "ratios with its 95% interval from the sign test (as bench/chunked.py's "
              "paired runs) and how many rounds the reference won. A row's target "
              "\"ahead\" is met when that interval's low end is above 1 (with too few "
              "rounds for an interval: both ratios above 1)."]
    else:
        L += md_table(["Row", "Unit", "Reference", "node + ws", "Reference ahead by"],
                      ([r["row"], r["unit"].replace("us", "µs"), side(r["ref"]),
                        cell(r.get("node")), _ahead(r, "ref_ahead_by")]
                       for r in ws.get("rows", [])), "llrrr")
    L += ["", f"Rows where the reference is ahead: {targets_text(ws)}."]
    L += syscalls_markdown(report)
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


def syscalls_markdown(report: dict) -> list[str]:
    """bench/ws_syscalls.py --json: writing and reading calls per message
    of each server, counted by the preload gate."""
    sc = (report.get("bench") or {}).get("ws_syscalls")
    if not sc or not sc.get("rows"):
        return []
    titles = {"ref": "reference", "ref_send": "reference, loop of rs_ws_send",
              "node": "node + ws", "bun": "Bun", "bun_send": "Bun, loop of ws.send"}
    sides = [k for k in titles if any(r.get(f"{k}_writes") for r in sc["rows"])]

    def cell(s: dict | None) -> str:
        return "-" if not s else f"{s['median']:.3f} ({s['min']:.3f}-{s['max']:.3f})"
    L = ["", "### Syscalls per message (bench/ws_syscalls.py, the preload gate)", "",
         f"Each server under `wirecheck exec`, its calls on its connected unix sockets: "
         f"writes (send, sendto, sendmsg, write, writev) and reads (recv, recvfrom, read). "
         f"Echo: a run of {3 * sc.get('count', 0):,} messages on one connection less a run of "
         f"none, per message, {in_flight(sc.get('window'))} in flight. "
         f"Chat: {sc.get('chat_clients', 32)} clients, a run of "
         f"{3 * sc.get('chat_rounds', 0)} rounds less a run of none, per message in (each "
         f"written to every client). {sc.get('rounds')} interleaved rounds, medians (min-max); "
         f"load average {fmt_load(sc.get('load_start'))} at the start, "
         f"{fmt_load(sc.get('load_end'))} at the end. How many messages a call carries "
         "depends on how the client's frames arrive, so these move a little with the load.",
         ""]
    L += md_table(["Row", *(f"{titles[k]}: writes" for k in sides),
                   *(f"{titles[k]}: reads" for k in sides)],
                  ([r["row"], *(cell(r.get(f"{k}_writes")) for k in sides),
                    *(cell(r.get(f"{k}_reads")) for k in sides)] for r in sc["rows"]),
                  "l" + "r" * (2 * len(sides)))
    return L


def plot_ws(ws: dict, path: Path, extra_formats: Sequence[str] = ()) -> None:
    """Server CPU per message, reference against node + ws, one pair of
    bars per row (median, with min-max whiskers), on a log scale."""
    from ..figure import pyplot as _plt, save as _save

    plt = _plt()
    rows = _cpu_rows(ws)
    fig, ax = plt.subplots(figsize=(10, 4.8))
    x = range(len(rows))
    sides = [("ref", "reference stack"), ("node", "node + npm ws")]
    if _has_bun(ws):
        sides.append(("bun", f"Bun {ws.get('bun_version') or ''}".strip()))
    width = 0.8 / len(sides)
    for k, (key, label) in enumerate(sides):
        dx = (k - (len(sides) - 1) / 2) * width
        pts = [(i, r[key]) for i, r in zip(x, rows) if r.get(key)]
        med = [s["median"] for _, s in pts]
        lo = [s["median"] - s["min"] for _, s in pts]
        hi = [s["max"] - s["median"] for _, s in pts]
        ax.bar([i + dx for i, _ in pts], med, width=width, yerr=[lo, hi], capsize=3,
               label=label, color=("tab:blue", "tab:orange", "tab:green")[k])
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
