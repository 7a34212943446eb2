"""Chunked responses (bench/chunked.py): syscalls per response and
wrk's requests per second, fixed against separate (the legacy strategy)
against node 20's http server and Bun's Bun.serve, per payload;
fixed against separate and against Bun in paired runs; the bench's targets; and the
plot of both (chunked.svg). Reads report["bench"]["chunked"], the JSON that
`bench/chunked.py --json` writes. Pure, but for plot(), which draws."""
from __future__ import annotations

import statistics
from pathlib import Path
from typing import Sequence

from ..fmt import bench_start, fmt_load, iec, md_table, targets_text

NAME = "chunked"
PLOT = "chunked.svg"
SIDES = ("fixed", "separate", "node", "bun")
TITLES = {"fixed": "fixed", "separate": "separate (legacy)", "node": "node 20", "bun": "Bun"}
COLORS = {"fixed": "#1f77b4", "separate": "#d95f02", "node": "#66a61e", "bun": "#7570b3"}
FOREIGN = ("node", "bun")
WRITES = ("send", "sendto", "sendmsg", "write", "writev")


def _kinds(c: dict) -> str:
    """A foreign server's writing calls per response, by the kinds it used
    (node's JSON from before Bun's column has write and writev only)."""
    used = [k for k in WRITES if c.get(k)] or ["write"]
    return (f"{c['per_response']:.2f} ("
            + " + ".join(f"{c.get(k, 0):.2f} {k}" for k in used) + ")")


def _sizes(ch: dict) -> list[int]:
    return sorted(int(s) for s in (ch.get("syscalls") or {}) | (ch.get("rps") or {}))


def _sides(ch: dict) -> list[str]:
    return [s for s in SIDES if s in (ch.get("sides") or SIDES)]


def syscalls_rows(ch: dict) -> list[list[str]]:
    """One row per payload: syscalls per response of each side, with its
    kinds (send + sendmsg; node: write + writev)."""
    rows = []
    for size in _sizes(ch):
        row = (ch.get("syscalls") or {}).get(str(size))
        if not row:
            continue
        cells = [iec(size)]
        for side in _sides(ch):
            c = row.get(side)
            if not c:
                cells.append("-")
            elif side in FOREIGN:
                cells.append(_kinds(c))
            else:
                cells.append(f"{c['per_response']:.2f} ({c['send']:.2f} send + "
                             f"{c['sendmsg']:.2f} sendmsg)")
        rows.append(cells)
    return rows


def _ratio(row: dict, other: str, rounds: int) -> str:
    r = row.get(f"fixed_over_{other}")
    if r is None:
        return "-"
    text = f"{r:.2f}x"
    p = row.get(f"paired_{other}")
    if rounds > 1 and p:
        text += (f" (rounds {p['min']:.2f}-{p['max']:.2f}, ahead in {p['won']} of "
                 f"{len(p['ratios'])})")
    elif rounds > 1 and not row.get(f"clear_over_{other}"):
        # Bench JSON from before the rounds were paired.
        text += " (runs overlap)"
    return text


def network_text(ch: dict) -> str:
    """Where the bench's TCP ran: its own network namespace or the
    host's, and the congestion control; "" for JSON from before."""
    n = ch.get("network")
    if not n:
        return ""
    if n.get("namespace") == "private":
        return (f"TCP ran in a network namespace of the bench's own under "
                f"{n.get('congestion_control')} (the host's congestion control: "
                f"{n.get('host_congestion_control') or 'unknown'}). ")
    return (f"TCP ran in the host's network namespace ({n.get('why')}) under "
            f"{n.get('congestion_control') or 'an unknown congestion control'}. ")


def rps_rows(ch: dict) -> list[list[str]]:
    """One row per payload: the median requests per second of each side
    [min, max], the spread ((max - min) / median), the ratios of fixed's
    median to the others', the load average before and after."""
    rounds = (ch.get("wrk") or {}).get("rounds") or 0
    rows = []
    for size in _sizes(ch):
        row = (ch.get("rps") or {}).get(str(size))
        if not row:
            continue
        cells = [iec(size)]
        for side in _sides(ch):
            if side not in row["median"]:
                cells.append("-")
                continue
            sp = row["spread"].get(side)
            cells.append(f"{row['median'][side]:,.0f} [{row['min'][side]:,.0f}, "
                         f"{row['max'][side]:,.0f}]" + ("" if sp is None else f" ±{sp * 50:.0f}%"))
        cells.append(_ratio(row, "separate", rounds))
        for f in FOREIGN:
            if f in _sides(ch):
                cells.append(_ratio(row, f, rounds))
        load = row.get("load_average") or [None, None]
        cells.append(f"{fmt_load(load[0])} -> {fmt_load(load[1])}")
        rows.append(cells)
    return rows


def _settled(ch: dict, other: str = "separate") -> list[tuple[int, dict]]:
    """(payload, bench/chunked.py's paired_runs() result) of every payload
    with paired runs of fixed against other (none before they were)."""
    rps = ch.get("rps") or {}
    return [(size, rps[str(size)][f"settled_{other}"]) for size in _sizes(ch)
            if (rps.get(str(size)) or {}).get(f"settled_{other}")]


def settled_rows(ch: dict, other: str = "separate") -> list[list[str]]:
    """One row per payload with paired runs: each side's median requests
    per second in them, the median of the pairs' ratios, its interval, the
    pairs fixed won, the load average before and after; and, where the
    bench measured it, each side's server CPU µs per response
    in the same runs with the median of the pairs' ratios (other / fixed)."""
    rows = []
    for size, st in _settled(ch, other):
        iv, load = st.get("interval"), st.get("load_average") or [None, None]
        med = {k: statistics.median(v) for k, v in st["runs"].items()}
        cpu = st.get("cpu_us")
        rows.append([iec(size), f"{med['fixed']:,.0f}", f"{med[other]:,.0f}",
                     f"{st['median']:.3f}x",
                     f"[{iv[0]:.3f}, {iv[1]:.3f}]" if iv else "- (too few pairs)",
                     f"{st['won']} of {st['pairs']}"
                     + (f" ({st['timeouts']} wrk timeouts)" if st.get("timeouts") else "")]
                    + ([f"{statistics.median(cpu['fixed']):.1f} / "
                        f"{statistics.median(cpu[other]):.1f} (x{st['cpu_ratio_median']:.3f})"]
                       if other != "separate" else [])
                    + [f"{fmt_load(load[0])} -> {fmt_load(load[1])}"])
    return rows


def cpu_rows(ch: dict) -> list[list[str]]:
    """One row per payload: each side's server CPU µs per response in the
    wrk runs, median [min, max], and the others' medians over fixed's."""
    rows = []
    for size in _sizes(ch):
        c = ((ch.get("rps") or {}).get(str(size)) or {}).get("cpu_us")
        if not c:
            continue
        m = c["median"]
        cells = [iec(size)] + [f"{m[s]:.1f} [{c['min'][s]:.1f}, {c['max'][s]:.1f}]"
                               if s in m else "-" for s in _sides(ch)]
        cells += [f"{m[o] / m['fixed']:.2f}x" if o in m and m.get("fixed") else "-"
                  for o in _sides(ch) if o != "fixed"]
        rows.append(cells)
    return rows


def _shared(ch: dict) -> bool:
    w = ch.get("wrk") or {}
    return w.get("wrk_cpu") is not None and w.get("wrk_cpu") == w.get("server_cpu")


def limit_rows(ch: dict) -> list[list[str]]:
    """One row per payload: each side's CPU µs per response, server / wrk,
    with the share of a CPU each used while wrk ran; and, wrk on the
    server's CPU, the server's part of their sum, else which of the two
    needs more CPU per response (so saturates its CPU first)."""
    rows = []
    for size in _sizes(ch):
        row = (ch.get("rps") or {}).get(str(size)) or {}
        c, w, b = row.get("cpu_us"), row.get("wrk_cpu_us"), row.get("busy")
        if not (c and w and b):
            continue
        cells = [iec(size)]
        for s in _sides(ch):
            if s not in c["median"]:
                cells.append("-")
                continue
            cells.append(f"{c['median'][s]:.1f} / {w['median'][s]:.1f} "
                         f"({b['server']['median'][s]:.0%} / {b['wrk']['median'][s]:.0%})")
        lim = row.get("limit") or {}
        if _shared(ch):
            cm, wm = c["median"], w["median"]
            cells.append(", ".join(f"{TITLES[s].split()[0]}: {cm[s] / (cm[s] + wm[s]):.0%}"
                                   for s in _sides(ch) if s in cm and s in wm))
        else:
            cells.append(", ".join(f"{TITLES[s].split()[0]}: {lim[s]}" for s in _sides(ch)
                                   if s in lim))
        rows.append(cells)
    return rows


def loaded_syscalls_rows(ch: dict) -> list[list[str]]:
    """One row per payload: the reference server's send + sendmsg per
    response in the wrk runs (keep-alive), fixed and separate, median [min,
    max]."""
    rows = []
    for size in _sizes(ch):
        k = ((ch.get("rps") or {}).get(str(size)) or {}).get("syscalls_under_wrk")
        if not k:
            continue
        rows.append([iec(size)] + [f"{k['median'][s]:.3f} [{k['min'][s]:.3f}, {k['max'][s]:.3f}]"
                                   if s in k["median"] else "-" for s in ("fixed", "separate")])
    return rows


def summary(report: dict) -> list[str]:
    ch = report["bench"].get(NAME)
    if not ch:
        return []
    line = f"- Chunked responses (`chunked`): {targets_text(ch)}"
    s128 = (ch.get("syscalls") or {}).get(str(128 * 1024))
    if s128:
        line += (f"; syscalls per 128 KiB response: fixed {s128['fixed']['per_response']:.2f}, "
                 f"separate {s128['separate']['per_response']:.2f}")
        if s128.get("node"):
            line += f", node {s128['node']['per_response']:.2f}"
        if s128.get("bun"):
            line += f", Bun {s128['bun']['per_response']:.2f}"
    return [line + "."]


def markdown(report: dict) -> list[str]:
    ch, L, cmd = bench_start(report, NAME, "## Chunked responses: syscalls and requests per second",
                             ["bench/chunked.py"])
    if ch is None:
        return L
    sides = _sides(ch)
    L += [f"{cmd}: each response is one "
          "`try_write(body, final)` of the payload by `build/bin/chunked_server` (fixed, and "
          "`--variant chunked=separate`, the legacy strategy: head, body and terminator in "
          "three sends), and `res.write(body)` + `res.end()` by node 20's http server "
          "(`bench/chunked_node.js`), chunked alike"
          + (f", and Bun {ch.get('bun_version')}'s `Bun.serve` (`bench/chunked_bun.js`, "
             "uWebSockets inside) answering a `Response` whose body is a direct "
             "`ReadableStream` that writes the payload and ends, chunked too"
             if "bun" in sides else "") + ". "
          f"{ch.get('cpus')} CPUs, load average {fmt_load(ch.get('load_average_start'))} at "
          f"the start, {fmt_load(ch.get('load_average_end'))} at the end.", "",
          "### Syscalls per response", "",
          "The reference server's own gate counts its send and sendmsg calls, node's"
          + (" and Bun's are" if "bun" in sides else " are")
          + " counted by the preload gate (`wirecheck exec`: every writing call on its "
          "accepted TCP sockets; node writes with write and writev, Bun with send and "
          "sendmsg), over the same number of requests (one connection each). Counts: "
          "they do not move with the load.", ""]
    L += md_table(["payload", *(TITLES[s] for s in sides)], syscalls_rows(ch),
                  "l" + "r" * len(sides))
    L += ["", "### Requests per second (wrk)", ""]
    w = ch.get("wrk")
    if not w:
        L += ["wrk did not run (`--no-wrk`, or wrk is not installed)."]
    else:
        L += [f"`wrk -t{w['threads']} -c{w['connections']} -d{w['seconds']}s` (keep-alive) on "
              f"CPU {w['wrk_cpu']}, each server pinned to CPU {w['server_cpu']} (taskset"
              + ("; one CPU for both, see below" if _shared(ch) else "") + "). "
              + (f"{w['rounds']} rounds, each running the servers once in an order rotated "
                 "from round to round" if w["rounds"] > 1 else
                 "One round (a quick run: no spread, the ratios say little)")
              + "; a cell is the median [min, max] ±half the spread as a "
              "percentage of the median; a ratio is fixed's median over the other's, "
              "then the range of the rounds' own ratios (fixed's run over the other's "
              "in the same round) and how many rounds fixed won: a lead that flips in "
              "some round is within the noise of this machine. "
              + network_text(ch) + "The load average is the "
              "1-minute one before and after the payload's rounds: on a shared 2-core "
              "machine a load above 2 means other work took CPU time from the servers and "
              "wrk, and the requests per second move with it; the syscalls above do not.", ""]
        foreign = [f for f in FOREIGN if f in sides]
        L += md_table(["payload", *(TITLES[s] for s in sides), "fixed/separate",
                       *(f"fixed/{f}" for f in foreign), "load average"],
                      rps_rows(ch), "l" + "r" * (len(sides) + 1 + len(foreign)) + "l")
    settled = settled_rows(ch)
    if settled:
        st = _settled(ch)[0][1]
        L += ["", "### Fixed against separate in paired runs", "",
              f"A lead of a few percent is smaller than the drift of a shared machine's "
              f"speed between the rounds above, so the bench settles fixed against separate "
              f"for each payload with a target (16 KiB and up) in {st['pairs']} pairs of wrk "
              f"runs of {st['seconds']} s: the two servers stay up throughout, a pair's two "
              "runs are back to back, and fixed goes first in every other pair. A ratio is "
              "fixed's run over separate's in the same pair; the table gives the median of "
              f"the ratios and the {st['level']:.0%} interval the sign test gives that median "
              "(order statistics of the ratios: it assumes nothing of the noise's shape). "
              "The target of fixed ahead of separate is judged on it: met when its low end "
              "is above 1.", ""]
        L += md_table(["payload", "fixed (median req/s)", "separate (median req/s)",
                       "median ratio", "interval", "pairs fixed won", "load average"],
                      settled, "lrrrrrl")
    vs_bun = settled_rows(ch, "bun")
    if vs_bun:
        st = _settled(ch, "bun")[0][1]
        L += ["", "### Fixed against Bun in paired runs", "",
              f"The same paired runs, fixed against Bun, at every payload (the two are close "
              f"at every size): {st['pairs']} pairs of wrk runs of {st['seconds']} s, both "
              "servers up throughout, fixed first in every other pair; the median of the "
              f"pairs' ratios (fixed's requests per second over Bun's) with its "
              f"{st['level']:.0%} sign-test interval, on which the target \"fixed ahead of "
              "Bun\" is judged; and each side's server CPU µs per response in the same runs "
              "(medians) with the median of the pairs' ratios, Bun's over fixed's: above 1, "
              "Bun spends more CPU per response.", ""]
        L += md_table(["payload", "fixed (median req/s)", "Bun (median req/s)",
                       "median ratio", "interval", "pairs fixed won",
                       "server µs/response fixed / Bun (ratio)", "load average"],
                      vs_bun, "lrrrrrrl")
    late = [f"{iec(int(size))} {side} {n}" for size, row in sorted(
        (ch.get("rps") or {}).items(), key=lambda kv: int(kv[0]))
        for side, n in (row.get("timeouts") or {}).items() if n]
    if late:
        L += ["", "Requests wrk gave up on (no answer within its timeout of "
              f"{(ch.get('wrk') or {}).get('timeout')} s; not in the requests per second): "
              + ", ".join(late) + "."]
    cpu = cpu_rows(ch)
    if cpu:
        L += ["", "### Server CPU per response (the same wrk runs)", "",
              "The server's CPU time while wrk ran (every thread's time on a CPU, user and "
              "kernel, from /proc/PID/task/*/schedstat) over the requests wrk completed, in "
              "µs: the time the server waited for a CPU is not in it, so the load moves it "
              "less than the requests per second, though not to nothing (caches, the other "
              "side's share of the CPU).", ""]
        others = [s for s in sides if s != "fixed"]
        L += md_table(["payload", *(TITLES[s] for s in sides),
                       *(f"{TITLES[o]}/fixed" for o in others)], cpu,
                      "l" + "r" * (len(sides) + len(others)))
    lim = limit_rows(ch)
    if lim:
        L += ["", "### Who limits the requests per second (the same wrk runs)", ""]
        if _shared(ch):
            L += ["Server and wrk share one CPU, so each response costs it the server's CPU "
                  "time plus wrk's, and the requests per second are bounded by that sum: "
                  "what a server saves shows in them, diluted by wrk's part. (On a CPU of "
                  "its own, `--wrk-cpu 1`, wrk needs more CPU per response than the "
                  "server and saturates first, so the requests per second are wrk's "
                  "ceiling whatever the server saves.)"]
        else:
            L += ["Server and wrk each have a CPU of their own, so the one that needs more "
                  "CPU per response saturates its CPU first and bounds the requests per "
                  "second; what the other saves then does not show in them."]
        L[-1] += (" A cell is the server's CPU µs per response / wrk's (its user and kernel "
                  "time over the same requests), and in brackets the share of a CPU each "
                  "used while wrk ran (CPU time over wall time); medians of the runs. "
                  + ("Shares that add up to well below 100%" if _shared(ch) else
                     "Shares well below 100% on both sides")
                  + " mean other work on the machine took the CPU.")
        L += [""]
        L += md_table(["payload", *(f"{TITLES[s]}: server / wrk" for s in sides),
                       "the server's part" if _shared(ch) else "costlier per response"],
                      lim, "l" + "r" * len(sides) + "l")
    loaded = loaded_syscalls_rows(ch)
    if loaded:
        L += ["", "Syscalls per response in the same wrk runs (the reference server's send + "
              "sendmsg, from its /stats before and after each run, over wrk's requests; "
              "keep-alive): the counts above hold under load, with no partial write to "
              "resume.", ""]
        L += md_table(["payload", TITLES["fixed"], TITLES["separate"]], loaded, "lrr")
    if ch.get("targets"):
        L += ["", "### Targets (bench/chunked.py)", ""]
        L += md_table(["Target", "Measured", "Result"],
                      ([t["target"], t["measured"], "PASS" if t["pass"] else "FAIL"]
                       for t in ch["targets"]), "lll")
        L += ["", f"Targets met: {ch.get('targets_met')} of {ch.get('targets_total')}."]
    L += ["", f"![Chunked responses: requests per second and syscalls per response]({PLOT})"]
    return L


def has_plot(report: dict) -> bool:
    ch = report["bench"].get(NAME)
    return bool(ch and (ch.get("syscalls") or ch.get("rps")))


def plot(ch: dict, path: Path, extra_formats: Sequence[str] = ()) -> None:
    """Two panels against payload (log 2): wrk's requests per second
    (median, min-max bars; log), and syscalls per response."""
    from ..figure import log2_payload_axis as _log2_payload_axis, pyplot as _plt, save as _save
    plt = _plt()
    sides = _sides(ch)
    sizes = _sizes(ch)
    settled = _settled(ch)
    if settled:
        fig, (ax_r, ax_s, ax_p) = plt.subplots(1, 3, figsize=(17, 4.4))
    else:
        fig, (ax_r, ax_s) = plt.subplots(1, 2, figsize=(12, 4.4))
    rps = ch.get("rps") or {}
    for i, side in enumerate(sides):
        pts = [(s, rps[str(s)]) for s in sizes if str(s) in rps and side in rps[str(s)]["median"]]
        if not pts:
            continue
        # Sides a little apart on x, so that their bars do not overlap.
        xs = [s * (1 + 0.06 * (i - 1)) for s, _ in pts]
        med = [r["median"][side] for _, r in pts]
        lo = [r["median"][side] - r["min"][side] for _, r in pts]
        hi = [r["max"][side] - r["median"][side] for _, r in pts]
        ax_r.errorbar(xs, med, yerr=[lo, hi], fmt="o-", color=COLORS[side], capsize=3,
                      lw=1.6, ms=5, label=TITLES[side])
    if rps:
        _log2_payload_axis(ax_r, sizes)
        ax_r.set_yscale("log")
        w = ch.get("wrk") or {}
        ax_r.set_title(f"Requests per second (wrk -c{w.get('connections')}, server on one "
                       f"core):\nmedian of {w.get('rounds')} interleaved rounds, bars min-max; "
                       f"load {fmt_load(ch.get('load_average_start'))} -> "
                       f"{fmt_load(ch.get('load_average_end'))}", loc="left")
        ax_r.set_xlabel("payload (log scale)")
        ax_r.set_ylabel("requests per second (log scale)")
        ax_r.grid(True, which="major", alpha=0.3)
        ax_r.legend(fontsize=8, frameon=False)
    else:
        ax_r.text(0.5, 0.5, "wrk did not run", ha="center", va="center",
                  transform=ax_r.transAxes)
        ax_r.set_axis_off()
    sc = ch.get("syscalls") or {}
    width = 0.8 / max(len(sides), 1)
    for i, side in enumerate(sides):
        ys = [(sc.get(str(s)) or {}).get(side) for s in sizes]
        xs = [k + (i - (len(sides) - 1) / 2) * width for k in range(len(sizes))]
        vals = [y["per_response"] if y else 0 for y in ys]
        bars = ax_s.bar(xs, vals, width, color=COLORS[side], label=TITLES[side])
        for b, v in zip(bars, vals):
            ax_s.annotate(f"{v:.2f}", (b.get_x() + b.get_width() / 2, v), xytext=(0, 2),
                          textcoords="offset points", ha="center", fontsize=7)
    ax_s.set_xticks(range(len(sizes)))
    ax_s.set_xticklabels([iec(s) for s in sizes])
    ax_s.set_xlabel("payload")
    ax_s.set_ylabel("writing syscalls per response")
    ax_s.set_title("Syscalls per response (counts: the load does not move them)\n"
                   "reference: send + sendmsg; node: write + writev", loc="left")
    ax_s.legend(fontsize=8, frameon=False, loc="upper left", ncol=len(sides))
    ax_s.set_ylim(0, max([4.0] + [((sc.get(str(s)) or {}).get(side) or {}).get("per_response", 0)
                                  * 1.2 for s in sizes for side in sides]))
    if settled:
        _plot_settled(ax_p, settled)
    fig.suptitle("Chunked responses (bench/chunked.py): fixed, separate (legacy), node 20",
                 x=0.01, ha="left", fontsize=11)
    fig.tight_layout()
    _save(fig, path, extra_formats)
    plt.close(fig)


def _plot_settled(ax, settled: list[tuple[int, dict]]) -> None:
    """fixed over separate in the paired runs, per payload: the median of
    the pairs' ratios, bars its interval, and the line at 1 (no lead)."""
    ks = range(len(settled))
    med = [st["median"] for _, st in settled]
    ivs = [st.get("interval") or (st["median"], st["median"]) for _, st in settled]
    ax.errorbar(list(ks), med, yerr=[[m - iv[0] for m, iv in zip(med, ivs)],
                                     [iv[1] - m for m, iv in zip(med, ivs)]],
                fmt="o", color=COLORS["fixed"], capsize=4, lw=1.6, ms=6)
    for k, (m, (_, st)) in enumerate(zip(med, settled)):
        ax.annotate(f"{m:.3f} ({st['won']}/{st['pairs']})", (k, m), xytext=(8, 0),
                    textcoords="offset points", va="center", fontsize=7)
    ax.axhline(1.0, color=COLORS["separate"], lw=1.2, ls="--", label="separate (no lead)")
    ax.set_xticks(list(ks))
    ax.set_xticklabels([iec(size) for size, _ in settled])
    ax.set_xlim(-0.5, len(settled) - 0.3)
    ax.set_xlabel("payload")
    ax.set_ylabel("fixed's requests per second / separate's")
    st = settled[0][1]
    ax.set_title(f"fixed / separate in {st['pairs']} paired runs of {st['seconds']} s:\n"
                 f"median ratio (pairs won), bars its {st['level']:.0%} interval",
                 loc="left")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8, frameon=False, loc="upper right")
