"""The sender section of the report: the instructions table with
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


def subjects_report(load_end: float, *, libuv: bool = True) -> dict:
    """sender_cpu --subjects's JSON, as the bench prints it: unix cells at
    64 MiB for cursor, floor, node and libuv in both modes."""
    ms = {("cursor", "unclamped"): 40.0, ("floor", "unclamped"): 20.0,
          ("node", "unclamped"): 30.0, ("libuv", "unclamped"): 22.0,
          ("cursor", "clamp_4k"): 120.0, ("floor", "clamp_4k"): 60.0,
          ("node", "clamp_4k"): 180.0, ("libuv", "clamp_4k"): 150.0}
    cells = []
    for (s, m), v in ms.items():
        if s == "libuv" and not libuv:
            continue
        c = {"transport": "unix", "mode": m, "payload": 64 * MIB, "sender": s,
             "skipped": False, "median_cpu_ms": v, "min_cpu_ms": v - 1, "max_cpu_ms": v + 2}
        if s != "floor":
            c["ratio_to_floor"] = v / ms[("floor", m)]
        cells.append(c)
    ss = {"rounds": 7, "subjects": True, "node_version": "v20.20.2",
          "libuv_version": "libuv-1.44.2" if libuv else None,
          "children_clamped_by_preload": {"node": True, "libuv": libuv},
          "cpus": 2, "load_average_start": 1.0, "load_average_end": load_end,
          "under_load": load_end > 2, "cells": cells}
    report = report_with(None)
    report["bench"]["sender_subjects"] = ss
    report["bench"]["runs"]["sender_subjects"] = {
        "command": ["bench/sender_cpu", "--subjects", "--json"]}
    return report


def test_subjects_table_has_each_sender_with_its_spread_and_ratio():
    text = "\n".join(section.markdown(subjects_report(9.5)))
    assert "### Across subjects: end(64 MiB) over a unix socket" in text
    assert "`bench/sender_cpu --subjects --json`" in text
    assert "| reference stack (queue=cursor) | 40.0 (39.0-42.0) | 2.00x | 120.0 (119.0-122.0) | 2.00x |" in text
    assert "| libuv uv_write + uv_shutdown | 22.0 (21.0-24.0) | 1.10x | 150.0 (149.0-152.0) | 2.50x |" in text
    assert "| floor (send + epoll) | 20.0 (19.0-22.0) | 1.00x | 60.0 (59.0-62.0) | 1.00x |" in text
    # the load beside the figures, and what it means
    assert "Load average 1.0 at the start, 9.5 at the end, on 2 CPUs: the run was under load" in text
    summary = "\n".join(section.summary(subjects_report(9.5)))
    assert "cursor 2.00x / 2.00x; node 1.50x / 3.00x; libuv 1.10x / 2.50x" in summary
    assert "under load" in summary


def test_subjects_table_on_a_quiet_machine_and_without_libuv():
    text = "\n".join(section.markdown(subjects_report(0.5, libuv=False)))
    assert "on 2 CPUs." in text and "under load" not in text
    assert "| libuv uv_write + uv_shutdown | - | - | - | - |" in text
    assert "libuv did not run" in text and "not for every child" in text


def test_subjects_table_says_when_it_did_not_run():
    report = report_with(None)
    text = "\n".join(section.markdown(report))
    assert "### Across subjects" in text
    assert section.subjects_summary(report) == []
