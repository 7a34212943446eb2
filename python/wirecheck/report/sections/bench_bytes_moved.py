"""The bytes_moved benchmark (bench/bytes_moved): the seed's "Bytes moved"
table (oven-sh/bun "socket: drain node:net's pending-write queue with a cursor") and the scaling of the legacy queue's bytes moved
with the payload."""
from __future__ import annotations

from ..fmt import fmt_int, iec, md_table, not_run_text

NAME = "bytes_moved"


def summary(report: dict) -> list[str]:
    out: list[str] = []
    bms = report["scaling"]["bytes_moved"]
    if bms:
        parts = []
        for s in bms:
            pds = [d for d in s["legacy_per_doubling"] if d]
            parts.append(f"clamp {iec(s['clamp'])}: legacy x{min(pds):.2f} to x{max(pds):.2f} "
                         f"per doubling (log-log slope {s['legacy_slope']:.2f})" if pds else
                         f"clamp {iec(s['clamp'])}: one size")
        zero = all(s["fixed_all_zero"] for s in bms)
        out.append("- Bytes moved by end(P), 4 to 32 MiB (`bytes_moved`): " + "; ".join(parts)
                   + ("; fixed 0 bytes at every size." if zero else "; fixed moved bytes."))
    return out


def markdown(report: dict) -> list[str]:
    L: list[str] = []
    seed = report["seed_table"]
    bm = report["bench"].get("bytes_moved")
    L += ["", "## Bytes moved: end(P) at clamp C", ""]
    if seed:
        L += ["The seed's \"Bytes moved\" table (oven-sh/bun, \"socket: drain node:net's pending-write queue with a cursor\"), from `bytes_moved`: "
              "the call sends C, P - C is queued once, each writable event sends C "
              "(n = P / C, n - 1 flushes). Legacy moves C(n-1)(n-2)/2 bytes; "
              "fixed moves none.", ""]
        L += md_table(["Payload, clamp", "legacy: flushes", "legacy: bytes moved",
                       "fixed: bytes moved"],
                      ([f"{iec(r['payload'])}, {iec(r['clamp'])}", fmt_int(r["flushes"]),
                        fmt_int(r["legacy_bytes_moved"]), fmt_int(r["fixed_bytes_moved"])]
                       for r in seed), "lrrr")
        given = [r for r in seed if r["seed_table"] is not None]
        if given:
            L += ["", "The seed's own rows (its end() sent twice in the call, so one flush "
                  "fewer: C(n-2)(n-3)/2): " + "; ".join(
                      f"{iec(r['payload'])}, {iec(r['clamp'])}: {fmt_int(r['seed_flushes'])} "
                      f"flushes, {fmt_int(r['seed_table'])} bytes" for r in given) + "."]
        checks = [k for k in ("memmove_equals_closed_form", "cursor_moves_nothing", "intact",
                              "seed_closed_form_equals_seed_table") if bm and k in bm]
        if checks:
            L += ["", "Bench checks: " + ", ".join(f"{k} {'yes' if bm[k] else 'NO'}"
                                                  for k in checks) + "."]
        timed = [r for r in bm.get("rows", []) if "memmove_cpu_ms" in r] if bm else []
        if timed:  # bytes_moved --time
            L += ["", "CPU time of each replay (`--time`; it varies from run to run, the "
                  "byte counts do not):", ""]
            L += md_table(["Payload, clamp", "legacy: CPU ms", "fixed: CPU ms"],
                          ([f"{iec(r['payload'])}, {iec(r['clamp'])}",
                            f"{r['memmove_cpu_ms']:.1f}", f"{r['cursor_cpu_ms']:.1f}"]
                           for r in timed), "lrr")
        L += ["", "![Bytes moved against payload, log-log](scaling-bytes-moved.svg)"]
    else:
        L += [not_run_text(report, "bytes_moved")]

    return L
