"""The batching benchmark (bench/batching): the seed's "Numbers"
table (oven-sh/bun#45246) and the bench's targets."""
from __future__ import annotations

from ..fmt import bench_start, fmt_load, md_table, sends_text, targets_text

NAME = "batching"

# oven-sh/bun#45246, "Numbers": off/on of each row of its table (main against
# the branch, node + Bun on a 12-core machine), for comparison only.
SEED_BATCHING_RATIO = {
    "2 x write(262144 B)": 1.01, "16 x write(49152 B)": 1.00, "16 x write(32768 B)": 1.00,
    "16 x write(16384 B)": 1.11, "16 x write(1024 B)": 3.61, "1 x write(128 B)": 0.99,
    "2 x write(128 B)": 1.00, "16 x write(128 B)": 4.33, "64 x write(128 B)": 12.15,
    "256 x write(128 B)": 24.63, "64 x write(128 B, callback)": 1.00,
}


def summary(report: dict) -> list[str]:
    out: list[str] = []
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
    return out


def markdown(report: dict) -> list[str]:
    """The seed's table (oven-sh/bun#45246, "Numbers"), from
    bench/batching --json, and its targets."""
    bt, L, cmd = bench_start(report, "batching",
                             "## Write batching: N writes in one task, per round", ["batching"])
    if bt is None:
        return L
    transport = ("TCP on 127.0.0.1, TCP_NODELAY on both ends" if bt.get("transport") == "tcp"
                 else bt.get("transport"))
    L += [f"{cmd}: the seed's table (oven-sh/bun#45246, \"Numbers\"), "
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
