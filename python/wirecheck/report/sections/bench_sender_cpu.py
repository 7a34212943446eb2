"""The sender_cpu benchmark (bench/sender_cpu): CPU of end(P) to its
callback against the payload, per queue, transport and clamp."""
from __future__ import annotations

from ..fmt import MODE_TITLES, bench_command, fmt_ms, iec, md_table, not_run_text

NAME = "sender_cpu"


def summary(report: dict) -> list[str]:
    out: list[str] = []
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

    return out


def markdown(report: dict) -> list[str]:
    L: list[str] = []
    sc = report["bench"].get("sender_cpu")
    cpu = report["scaling"]["sender_cpu"]
    L += ["", "## Sender CPU: end(P) to its callback", ""]
    if cpu:
        sizes = sorted({pt["payload"] for s in cpu for pt in s["points"]})
        cmd = bench_command(report, "sender_cpu")
        L += [f"`{' '.join(cmd or ['sender_cpu'])}`: CPU ms of the "
              f"sending thread, median of {sc.get('rounds')} rounds; floor is a plain "
              f"send loop. Load average {sc.get('load_average_start')} at the start, "
              f"{sc.get('load_average_end')} at the end. Timings are noisy on a shared "
              f"machine; the slope is the point.", ""]
        rows = []
        order = {"clamp_4k": 0, "unclamped": 1, "cursor": 0, "memmove": 1, "floor": 2, "copy": 3,
                 "unix": 0, "tcp": 1}
        for s in sorted(cpu, key=lambda s: (order.get(s["mode"], 9), order.get(s["transport"], 9),
                                            order.get(s["sender"], 9))):
            by = {pt["payload"]: pt for pt in s["points"]}
            cells = []
            for size in sizes:
                pt = by.get(size)
                cells.append("-" if pt is None else "skipped" if pt["skipped"]
                             else fmt_ms(pt["median_cpu_ms"]))
            pds = [d for d in s["per_doubling"] if d]
            rows.append([MODE_TITLES.get(s["mode"], s["mode"]), s["transport"], s["sender"],
                         *cells, ", ".join(f"x{d:.2f}" for d in pds) or "-"])
        L += md_table(["mode", "transport", "sender", *[f"{iec(x)} ms" for x in sizes],
                       "per doubling"], rows, "lll" + "r" * len(sizes) + "l")
        L += ["", "![Sender CPU against payload, log-log](scaling-sender-cpu.svg)"]
    else:
        L += [not_run_text(report, "sender_cpu")]

    return L
