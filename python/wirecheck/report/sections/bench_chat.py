"""The chat benchmark (bench/chat): the seed's broadcast chat
server, batch=off against batch=on, and the bench's targets."""
from __future__ import annotations

from ..fmt import bench_start, fmt_load, md_table, targets_text

NAME = "chat"


def summary(report: dict) -> list[str]:
    out: list[str] = []
    ch = report["bench"].get("chat")
    if ch:
        off, on = ch["configs"]["off"], ch["configs"]["on"]
        out.append(f"- Chat server bench (`chat`): {targets_text(ch)}; server sends per round "
                   f"{off['sends_per_round']:.2f} off, {on['sends_per_round']:.2f} on; mean round "
                   f"{off['mean_round_us']:.1f} µs off, {on['mean_round_us']:.1f} µs on "
                   f"({ch['ratio_mean_round_off_on']:.2f}x).")
    return out


def markdown(report: dict) -> list[str]:
    """The broadcast chat server of oven-sh/bun#45246, from
    bench/chat --json, and its targets."""
    ch, L, cmd = bench_start(report, "chat",
                             "## Chat server: every message broadcast to every client", ["chat"])
    if ch is None:
        return L
    off, on = ch["configs"]["off"], ch["configs"]["on"]
    L += [f"{cmd}: the seed's application (oven-sh/bun#45246) on the "
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
    L += ["", "The bound on the sends is the design's: min(frames, 2) per client "
          "per task that writes to it, since the first write of a task goes to the kernel "
          "in the call and the later ones in one batch at the end of the task; the "
          "batches' own bound is one per client per task."]
    return L
