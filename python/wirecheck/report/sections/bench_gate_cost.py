"""The gate_cost benchmark (bench/gate_cost): ns per send through the fault
gate, direct, disarmed and armed."""
from __future__ import annotations

from ..fmt import md_table

NAME = "gate_cost"


def summary(report: dict) -> list[str]:
    return []


def markdown(report: dict) -> list[str]:
    L: list[str] = []
    gc = report["bench"].get("gate_cost")
    if gc:
        L += ["", "## Fault gate cost per send", "", f"`{gc['setup']}`.", ""]
        L += md_table(["variant", "median ns", "median diff to direct, ns"],
                      ([r["variant"], f"{r['median_ns']:.1f}", f"{r['median_diff_ns']:+.1f}"]
                       for r in gc["rows"]), "lrr")

    return L
