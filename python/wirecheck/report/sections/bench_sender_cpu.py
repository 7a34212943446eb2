"""The sender benchmarks: bench/sender_instr (callgrind
instructions, syscalls and bytes copied of end(P), figures that do not move
between runs, and the targets judged on them) and bench/sender_cpu (CPU of
end(P) to its callback, the secondary figure, with node's and libuv's end(P)
beside it), and `sender_cpu --subjects`: the sender CPU of end(64 MiB)
across subjects (the reference stack, node, libuv, the plain send loop)."""
from __future__ import annotations

from ..fmt import MODE_TITLES, bench_start, cell_text, command_md, fmt_int, fmt_ms, iec, md_table, not_run_text

NAME = "sender_cpu"

# sender_instr's senders, in its table's order, with the labels it prints.
INSTR_SENDERS = {
    "floor": "floor (send loop, through the gate)",
    "floor_direct": "floor, direct send() (no gate)",
    "copy": "copy alone (no socket)",
    "copying": "copying queue (queue=cursor)",
    "owned": "owned queue (release callback)",
    "memmove": "legacy memmove (queue=memmove)",
}


def instr_figure(t: dict, places: int) -> str:
    """A target's figure: a ratio ('1.027x'), or instructions (the owned
    write's split, kind "instructions")."""
    if t.get("kind") == "instructions":
        return f"{t['figure']:.2f}"
    return f"{t['figure']:.{places}f}x"


def instr_payload(t: dict) -> str:
    """A target's payload, or its two payloads (the split)."""
    if "payload_from" in t:
        return f"{iec(t['payload_from'])} to {iec(t['payload'])}"
    return iec(t["payload"])


def instr_targets_text(si: dict) -> str:
    """'targets met M of N' and what is not built, for the summary."""
    built = [t for t in si.get("targets", []) if t.get("built")]
    met = sum(1 for t in built if t.get("pass"))
    text = f"targets met {met} of {len(built)}"
    failed = [f"{t['target']} ({t['mode']}, {instr_payload(t)}: {instr_figure(t, 3)})"
              for t in built if not t.get("pass")]
    if failed:
        text += " (FAIL: " + "; ".join(failed) + ")"
    if any(not t.get("built") for t in si.get("targets", [])):
        text += "; the owned queue is not built yet"
    return text


def summary(report: dict) -> list[str]:
    out: list[str] = []
    si = report["bench"].get("sender_instr")
    if si:
        out.append("- Sender instructions of end(P) (`sender_instr`, callgrind, spread "
                   f"{max((c.get('spread', 0.0) for c in si['cells'] if c.get('built')), default=0.0):.2%}"
                   f" between {si.get('repeat')} runs): " + instr_targets_text(si) + ".")
    cpu = [s for s in report["scaling"]["sender_cpu"]
           if s["mode"] == "clamp_4k" and s["sender"] in ("cursor", "memmove")]
    if cpu:
        parts = []
        for s in cpu:
            pds = [d for d in s["per_doubling"] if d]
            if pds:
                parts.append(f"{s['sender']} {s['transport']} "
                             + ", ".join(f"x{d:.1f}" for d in pds))
        if parts:
            out.append("- Sender CPU at the 4 KiB clamp, per doubling of the payload "
                       "(`sender_cpu`, noisy): " + "; ".join(parts) + ".")
    return out + subjects_summary(report)


def instr_markdown(report: dict) -> list[str]:
    si, L, cmd = bench_start(report, "sender_instr",
                             "### Instructions, syscalls and bytes copied (callgrind)",
                             ["sender_instr"])
    if si is None:
        return L
    L += [f"{cmd}: user-space instructions of the sender "
          "from end() to its callback (the floor: first send to shutdown), over a unix "
          "socket whose peer reads in lockstep, so that every burst of sends starts on an "
          f"empty socket and the sends are the same in every run. Each cell ran "
          f"{si.get('repeat')} times: the spread is (max - min) / min of its instructions, "
          "and \"equal\" says whether the sends, syscalls and bytes were the same in every "
          "run. Syscalls are the calls through the fault gate; bytes copied, into the "
          "queue; bytes moved, memmove inside it.", ""]
    rows = []
    floors = {(c["mode"], c["payload"]): c["instructions"][0] for c in si["cells"]
              if c["sender"] == "floor" and c.get("built")}
    order = {name: i for i, name in enumerate(INSTR_SENDERS)}
    modes = {"unclamped": 0, "clamp_4k": 1}
    for c in sorted(si["cells"], key=lambda c: (modes.get(c["mode"], 9), c["payload"],
                                                  order.get(c["sender"], 9))):
        label = INSTR_SENDERS.get(c["sender"], c["sender"])
        head = [MODE_TITLES.get(c["mode"], c["mode"]), iec(c["payload"]), label]
        if not c.get("built"):
            rows.append(head + ["not built yet"] + ["-"] * 8)
            continue
        if c.get("run") is False:  # a payload of the owned write's split only
            continue
        k = c["counts"]
        ir = c["instructions"][0]
        fl = floors.get((c["mode"], c["payload"]))
        socket = c["sender"] != "copy"
        rows.append(head + [
            fmt_int(ir), f"{c['spread']:.4%}",
            f"{ir / fl:.3f}x" if fl else "-",
            f"{fmt_int(k['sends'])} ({fmt_int(k['eagain'])})" if socket else "-",
            fmt_int(k["syscalls"]) if socket else "0",
            fmt_int(k["bytes_copied"]), fmt_int(k["bytes_moved"]),
            "yes" if c["counts_equal"] else "NO"])
    L += md_table(["mode", "payload", "sender", "instructions", "spread", "/ floor",
                   "sends (EAGAIN)", "syscalls", "bytes copied", "bytes moved", "equal"],
                  rows, "lrl" + "r" * 7 + "l")
    L += ["", "Targets, judged on instructions; a target whose figures spread by "
          "more than its margin between the runs fails:", ""]
    trows = []
    for t in si.get("targets", []):
        limit = (f"{t['limit']:.0f}" if t.get("kind") == "instructions"
                 else f"{t['limit']:.2f}x")
        if not t.get("built"):
            trows.append([t["target"], t["mode"], instr_payload(t), "-",
                          limit, "-", "not built yet"])
            continue
        trows.append([t["target"], t["mode"], instr_payload(t), instr_figure(t, 4),
                      limit, f"{t['spread']:.4%}",
                      "PASS" if t["pass"] else "FAIL"])
    L += md_table(["target", "mode", "payload", "figure", "limit", "spread", "result"],
                  trows, "llrrrrl")
    L += ["", f"Targets met: {si.get('targets_met')} of {si.get('targets_total')}."]
    return L


def cpu_markdown(report: dict) -> list[str]:
    sc = report["bench"].get("sender_cpu")
    cpu = report["scaling"]["sender_cpu"]
    L = ["", "### CPU time (secondary)", ""]
    if not cpu:
        return L + [not_run_text(report, "sender_cpu")]
    sizes = sorted({pt["payload"] for s in cpu for pt in s["points"]})
    cmd = command_md(report, "sender_cpu", ["sender_cpu"])
    pin = sc.get("sender_cpu")
    pinned = (f"the senders pinned to CPU {pin} and the reader to CPU {sc.get('reader_cpu')}"
              if isinstance(pin, int) and pin >= 0 else "not pinned")
    node = (f"node {sc['node_version']}'s socket.end(buf) of the same bytes is the node row"
            if sc.get("node_version") else "node did not run")
    if sc.get("libuv_version"):
        node += f", {sc['libuv_version']}'s uv_write + uv_shutdown the libuv row"
    L += [f"{cmd}: CPU ms of the sending thread, median "
          f"(min) of {sc.get('rounds')} interleaved rounds, {pinned}; floor is a plain send "
          f"loop; {node}. Load average {sc.get('load_average_start')} at the start, "
          f"{sc.get('load_average_end')} at the end. Timings are noisy on a shared machine: "
          "the targets are judged on instructions, above.", ""]
    mins = {(c["mode"], c["transport"], c["sender"], c["payload"]): c.get("min_cpu_ms")
            for c in sc.get("cells", [])}
    rows = []
    order = {"clamp_4k": 0, "unclamped": 1, "cursor": 0, "owned": 1, "memmove": 2, "floor": 3,
             "copy": 4, "node": 5, "libuv": 6, "unix": 0, "tcp": 1}
    for s in sorted(cpu, key=lambda s: (order.get(s["mode"], 9), order.get(s["transport"], 9),
                                        order.get(s["sender"], 9))):
        by = {pt["payload"]: pt for pt in s["points"]}

        def median_min(pt: dict) -> str:
            lo = mins.get((s["mode"], s["transport"], s["sender"], pt["payload"]))
            return fmt_ms(pt["median_cpu_ms"]) + (f" ({fmt_ms(lo)})" if lo is not None else "")
        cells = [cell_text(by.get(size), median_min) for size in sizes]
        pds = [d for d in s["per_doubling"] if d]
        rows.append([MODE_TITLES.get(s["mode"], s["mode"]), s["transport"], s["sender"],
                     *cells, ", ".join(f"x{d:.2f}" for d in pds) or "-"])
    L += md_table(["mode", "transport", "sender", *[f"{iec(x)} ms" for x in sizes],
                   "per doubling"], rows, "lll" + "r" * len(sizes) + "l")
    L += ["", "![Sender CPU against payload, log-log](scaling-sender-cpu.svg)"]
    return L


# sender_cpu --subjects: its rows, in its table's order.
SUBJECT_SENDERS = {
    "cursor": "reference stack (queue=cursor)",
    "node": "node socket.end(buf)",
    "libuv": "libuv uv_write + uv_shutdown",
    "floor": "floor (send + epoll)",
}
SUBJECT_MODES = ("unclamped", "clamp_4k")


def subjects_cells(ss: dict) -> dict:
    """(sender, mode) -> cell of the unix transport, at the largest payload."""
    cells = [c for c in ss.get("cells", []) if c.get("transport") == "unix"]
    size = max((c["payload"] for c in cells), default=None)
    return {(c["sender"], c["mode"]): c for c in cells if c["payload"] == size}


def load_text(ss: dict) -> str:
    start, end = ss.get("load_average_start"), ss.get("load_average_end")
    text = f"Load average {start} at the start, {end} at the end, on {ss.get('cpus')} CPUs"
    if ss.get("under_load"):
        return text + (": the run was under load (more runnable threads than CPUs), so the "
                       "senders shared their CPU and the spreads are wide; the ratios to the "
                       "floor, measured in the same rounds, are the figure to read.")
    return text + "."


def subjects_summary(report: dict) -> list[str]:
    ss = report["bench"].get("sender_subjects")
    if not ss:
        return []
    by = subjects_cells(ss)
    parts = []
    for s in ("cursor", "node", "libuv"):
        r = [by.get((s, m), {}).get("ratio_to_floor") for m in SUBJECT_MODES]
        if all(x is not None for x in r):
            parts.append(f"{s} {r[0]:.2f}x / {r[1]:.2f}x")
    if not parts:
        return []
    size = max((c["payload"] for c in by.values()), default=0)
    return [f"- Sender CPU of end({iec(size)}) over a unix socket, to the floor, unclamped / "
            "4 KiB clamp (`sender_cpu --subjects`" + (", under load" if ss.get("under_load")
                                                     else "") + "): " + "; ".join(parts) + "."]


def subjects_markdown(report: dict) -> list[str]:
    ss = report["bench"].get("sender_subjects")
    L = ["", "### Across subjects: end(64 MiB) over a unix socket", ""]
    if not ss:
        return L + [not_run_text(report, "sender_subjects")]
    by = subjects_cells(ss)
    size = max((c["payload"] for c in by.values()), default=0)
    cmd = command_md(report, "sender_subjects", ["sender_cpu", "--subjects"])
    clamped = ss.get("children_clamped_by_preload") or {}
    L += [f"{cmd}: CPU ms of the sender from "
          f"end({iec(size)}) (libuv: uv_write of the one buffer, then uv_shutdown) to its "
          f"callback, median (min-max) of {ss.get('rounds')} interleaved rounds; the ratio is "
          "median / the floor's median of the same mode. node "
          f"{ss.get('node_version') or 'did not run'}, {ss.get('libuv_version') or 'libuv did not run'}. "
          "Clamped: the gate's write:short=4096,repeat=forever, linked into the reference "
          "stack, preloaded into second node and libuv processes"
          + ("" if clamped.get("node") and clamped.get("libuv")
             else " (not for every child: no preload library)")
          + "; the floor clamps its own sends. " + load_text(ss), ""]
    rows = []
    for s, label in SUBJECT_SENDERS.items():
        row = [label]
        for m in SUBJECT_MODES:
            c = by.get((s, m))
            if not c or c.get("median_cpu_ms") is None:
                row += ["-", "-"]
                continue
            row.append(f"{fmt_ms(c['median_cpu_ms'])} ({fmt_ms(c.get('min_cpu_ms'))}-"
                       f"{fmt_ms(c.get('max_cpu_ms'))})")
            r = 1.0 if s == "floor" else c.get("ratio_to_floor")
            row.append("-" if r is None else f"{r:.2f}x")
        rows.append(row)
    L += md_table(["sender", "unclamped ms", "/ floor", "4 KiB clamp ms", "/ floor"],
                  rows, "lrrrr")
    return L


def markdown(report: dict) -> list[str]:
    L: list[str] = ["", "## Sender cost: end(P) to its callback", ""]
    if not report["bench"]["ran"]:
        return L + [not_run_text(report, "sender_cpu")]
    return L + instr_markdown(report) + cpu_markdown(report) + subjects_markdown(report)
