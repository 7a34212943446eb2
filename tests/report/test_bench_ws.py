"""The WebSocket benchmark's report section (sections/bench_ws.py):
its table, targets and plot from bench/ws_echo's JSON, and its registration
among the benches."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

pytest.importorskip("matplotlib", reason="python3-matplotlib is not installed")

from wirecheck.report import collect, markdown, plots, sections  # noqa: E402
from wirecheck.report.sections import bench_ws  # noqa: E402

WS_ECHO = REPO / "build" / "bin" / "ws_echo"


def side(med, lo, hi):
    return {"median": med, "min": lo, "max": hi}


def ws_json(send=163.0, node_cpu=10.0):
    """The shape bench/ws_echo --json prints (two of its rows)."""
    rows = [{"row": "echo 16 B text: server CPU", "unit": "us/msg", "higher_is_better": False,
             "ref": side(2.0, 1.9, 2.2), "node": side(node_cpu, 9.0, 12.0),
             "ref_ahead_by": node_cpu / 2.0},
            {"row": "chat, 32 clients: messages in", "unit": "msg/s", "higher_is_better": True,
             "ref": side(30000.0, 29000.0, 31000.0), "node": side(2000.0, 1900.0, 2100.0),
             "ref_ahead_by": 15.0}]
    met = sum(r["ref_ahead_by"] > 1 for r in rows)
    return {"command": ["build/bin/ws_echo", "--json"], "bench": "ws", "cpus": 2,
            "load_average_start": 3.5, "load_average_end": 3.7, "rounds": 9,
            "chat_clients": 32, "chat_messages_per_client": 8, "transport": "unix",
            "ws_version": "8.18.3",
            "instructions": {"send_16_text": send, "echo_16_text": 719.6},
            "rows": rows,
            "targets": [{"target": r["row"], "pass": r["ref_ahead_by"] > 1} for r in rows],
            "targets_met": met, "targets_total": len(rows), "all_targets_pass": met == len(rows)}


def report_with(ws):
    return {"bench": {"ran": True, "ws": ws, "runs": {}, "errors": []}}


def test_registered_as_a_bench_section_and_a_bench():
    assert bench_ws in sections.BENCH_SECTIONS
    assert "ws" in collect.BENCHES


def test_table_has_both_sides_and_how_far_ahead():
    md = "\n".join(bench_ws.markdown(report_with(ws_json())))
    assert "| echo 16 B text: server CPU | µs/msg | 2.00 (1.90-2.20) | 10.00 (9.00-12.00) | 5.00x |" in md
    assert "| chat, 32 clients: messages in | msg/s | 30,000.00" in md
    assert "load average 3.50 at the start, 3.70 at the end" in md
    assert "![WebSocket servers: server CPU per message](ws-bench.svg)" in md


def test_send_target_is_judged_on_the_instructions():
    over = "\n".join(bench_ws.markdown(report_with(ws_json(send=163.0))))
    under = "\n".join(bench_ws.markdown(report_with(ws_json(send=140.0))))
    assert "| one 16-byte text send, server socket | 163.0 | <= 150 | FAIL |" in over
    assert "| one 16-byte text send, server socket | 140.0 | <= 150 | PASS |" in under


def test_summary_counts_the_rows_where_the_reference_is_behind():
    ahead = bench_ws.summary(report_with(ws_json(node_cpu=10.0)))[0]
    behind = bench_ws.summary(report_with(ws_json(node_cpu=1.0)))[0]
    assert "2 of 2" in ahead or "all 2" in ahead
    assert "1 of 2" in behind


def test_not_run_says_so():
    md = "\n".join(bench_ws.markdown({"bench": {"ran": False, "ws": None}}))
    assert "## WebSocket" in md and "|" not in md


def test_plot_is_written_and_listed(tmp_path):
    ws = ws_json()
    bench_ws.plot_ws(ws, tmp_path / bench_ws.PLOT)
    assert (tmp_path / bench_ws.PLOT).read_text().lstrip().startswith("<?xml")
    rep = {"scenarios": [], "scaling": {"bytes_moved": None, "sender_cpu": None},
           "bench": {"ws": ws}}
    _, files = plots.plot_jobs(rep, tmp_path, [])
    assert files == [bench_ws.PLOT]


def test_the_report_shows_the_section():
    assert any(s is bench_ws for s in markdown.BENCH_SECTIONS)


@pytest.mark.skipif(not WS_ECHO.exists() or shutil.which("node") is None or
                    not (REPO / "third_party/node/node_modules/ws").is_dir(),
                    reason="build/bin/ws_echo, node or npm ws (scripts/setup.sh) missing")
def test_the_bench_output_renders():
    """bench/ws_echo's own JSON (one quick round) goes through the section."""
    out = subprocess.run([str(WS_ECHO), "--quick", "--rounds", "1", "--json"],
                         capture_output=True, text=True, timeout=600, check=True)
    ws = json.loads(out.stdout)
    # Two more chat rows, every side by a loop of sends.
    assert len(ws["rows"]) == 12
    if ws.get("bun_version"):
        # Bun's column: every row has a target against node and one
        # against Bun.
        assert ws["targets_total"] == 24
        assert all(r["bun"]["median"] > 0 for r in ws["rows"])
    else:
        assert ws["targets_total"] == 12
    assert all(r["ref"]["median"] > 0 for r in ws["rows"])
    assert all(r["node"]["median"] > 0 for r in ws["rows"] if r["node"])
    md = "\n".join(bench_ws.markdown(report_with(ws)))
    assert "echo 16 KiB non-ASCII text: server CPU" in md
    if ws.get("bun_version"):
        assert f"| Bun {ws['bun_version']} |" in md.replace("Reference ahead of node", "")


def test_bun_column_beside_nodes():
    """A row with Bun's figures renders Bun's column and how far the
    reference is ahead of it; a row node did not run shows "-"."""
    ws = ws_json()
    ws["bun_version"] = "1.4.5"
    ws["rows"][0]["bun"] = side(1.0, 0.9, 1.1)
    ws["rows"][0]["ref_ahead_of_bun"] = 0.5
    ws["rows"].append({"row": "chat, 32 clients, by a loop of sends: server CPU",
                       "unit": "us/msg in", "higher_is_better": False,
                       "ref": side(20.0, 19.0, 21.0), "node": None,
                       "bun": side(80.0, 70.0, 90.0), "ref_ahead_by": None,
                       "ref_ahead_of_bun": 4.0})
    md = "\n".join(bench_ws.markdown(report_with(ws)))
    assert ("| echo 16 B text: server CPU | µs/msg | 2.00 (1.90-2.20) | 10.00 (9.00-12.00) | "
            "1.00 (0.90-1.10) | 5.00x | 0.50x |") in md
    assert "| 20.00 (19.00-21.00) | - | 80.00 (70.00-90.00) | - | 4.00x |" in md
    assert "of Bun 1.4.5 by 0.50x to 4.00x" in bench_ws.summary(report_with(ws))[0]
