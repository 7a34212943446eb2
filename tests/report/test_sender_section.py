"""The sender section of the report (issue 9): the instructions table with
its targets, PASS/FAIL and spread, beside the CPU table with node's row."""
from __future__ import annotations

from wirecheck.report.sections import bench_sender_cpu as section

MIB = 1024 * 1024


def instr_cell(sender, mode, ir, *, built=True, spread=0.0, copied=0, equal=True):
    if not built:
        return {"mode": mode, "payload": MIB, "sender": sender, "built": False}
    return {"mode": mode, "payload": MIB, "sender": sender, "built": True,
            "instructions": [ir, ir], "spread": spread, "counts_equal": equal,
            "counts": {"sends": 9, "eagain": 4, "epoll_wait": 4, "syscalls": 14,
                       "bytes_in_call": 0, "bytes_copied": copied, "bytes_moved": 0,
                       "syncs": 4}}


def report_with(instr: dict | None) -> dict:
    cpu_cells = [{"transport": "unix", "mode": "unclamped", "payload": MIB, "sender": s,
                  "skipped": False, "median_cpu_ms": ms, "min_cpu_ms": ms / 2}
                 for s, ms in (("floor", 2.0), ("node", 2.2))]
    runs = {"sender_instr": {"command": ["sender_instr", "--json"]}} if instr else {}
    return {"bench": {"ran": True, "runs": runs,
                      "errors": [], "sender_instr": instr,
                      "sender_cpu": {"rounds": 7, "sender_cpu": 0, "reader_cpu": 1,
                                     "node_version": "v20.20.2", "cells": cpu_cells,
                                     "load_average_start": 1.0, "load_average_end": 1.0}},
            "scaling": {"sender_cpu": [
                {"mode": "unclamped", "transport": "unix", "sender": s, "per_doubling": [None],
                 "points": [{"payload": MIB, "skipped": False, "median_cpu_ms": ms}]}
                for s, ms in (("floor", 2.0), ("node", 2.2))]}}


INSTR = {
    "repeat": 2, "targets_met": 1, "targets_total": 2,
    "cells": [instr_cell("floor", "unclamped", 1000),
              instr_cell("copy", "unclamped", 50000, copied=800000),
              instr_cell("copying", "unclamped", 52000, copied=800000),
              instr_cell("owned", "unclamped", 0, built=False)],
    "targets": [
        {"target": "copying: instructions <= (floor + copy) x limit", "mode": "unclamped",
         "payload": MIB, "limit": 1.05, "built": True, "figure": 1.0196, "spread": 0.0,
         "pass": True},
        {"target": "copying: instructions <= (floor + copy) x limit", "mode": "clamp_4k",
         "payload": MIB, "limit": 1.10, "built": True, "figure": 1.1281, "spread": 0.0,
         "pass": False},
        {"target": "owned: instructions <= floor x limit", "mode": "unclamped",
         "payload": MIB, "limit": 1.05, "built": False}],
}


def test_instructions_table_and_targets():
    text = "\n".join(section.markdown(report_with(INSTR)))
    assert "| unclamped | 1 MiB | copying queue (queue=cursor) | 52,000 | 0.0000% | 52.000x |" in text
    assert "| owned queue (release callback) | not built yet |" in text
    assert "| 1.0196x | 1.05x | 0.0000% | PASS |" in text
    assert "| 1.1281x | 1.10x | 0.0000% | FAIL |" in text
    assert "Targets met: 1 of 2." in text
    # The CPU table: median (min), node's row, the pinning.
    assert "| unclamped | unix | node | 2.2 (1.1) | - |" in text
    assert "pinned to CPU 0 and the reader to CPU 1" in text


def test_summary_names_the_failed_target_and_the_unbuilt_one():
    (line,) = section.summary(report_with(INSTR))
    assert "targets met 1 of 2" in line
    assert "FAIL: copying: instructions <= (floor + copy) x limit (clamp_4k, 1 MiB: 1.128x)" in line
    assert "the owned queue is not built yet" in line


def test_not_run_when_the_bench_did_not_run():
    text = "\n".join(section.markdown(report_with(None)))
    assert "### Instructions, syscalls and bytes copied (callgrind)" in text
    assert "Not run (not in --benches)." in text
