"""The report's fault-sweep section (python/wirecheck/report/sections/sweep.py):
the result of `wirecheck sweep --output` read back, its size and time, the
broken invariants with their commands, and one plot per scenario."""
import copy
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

pytest.importorskip("matplotlib", reason="python3-matplotlib is not installed")

from wirecheck.report import cli, markdown, plots, sections  # noqa: E402
from wirecheck.report.sections import sweep as sec  # noqa: E402

WC = f"{REPO}/build/bin/wirecheck"


def result():
    """A sweep result as wirecheck.sweep writes it: several-writes on both
    strategies, one broken cell in the legacy one."""
    outcomes = {"EAGAIN@1": "ok", "EPIPE@1": "ok", "death@2": "ok", "zero@1": "ok",
                "EPIPE@c0.b0": "ok", "EPIPE@c0.b18": "ok", "clamp=7": "ok"}
    exits = {c: "exit 0" for c in outcomes}
    exits["death@2"] = "signal SIGTERM"
    legacy = dict(outcomes, **{"EPIPE@c0.b18": "broken"})
    failure = {"cell": "EPIPE@c0.b18", "fault": "EPIPE", "k": 0, "conn": 0, "byte": 18,
               "kind": "fatal", "exit": "exit 0",
               "broken": ["connection 0: the peer got 20 bytes, more than the clean run's 19"],
               "command": f"{WC} run scenarios/batching/several-writes.wcs "
                          "--fault write:errno=EPIPE,conn=0,byte=18 --variant batch=off"}
    base = {"path": "scenarios/batching/several-writes.wcs", "writing_calls": 2,
            "reading_calls": 1, "conn_bytes": [19], "syscalls": {}}
    return {"cells": 14, "failing": 1, "seconds": 12.3, "jobs": 2, "cores": 2, "k_max": 2,
            "n_bytes": 2, "loadavg": ["3.10 2.00 1.00", "4.20 3.00 2.00"],
            "command": "wirecheck sweep scenarios/batching/several-writes.wcs --legacy",
            "scenarios": [
                dict(base, variants=[], cells=7, outcomes=outcomes, exits=exits, failures=[]),
                dict(base, variants=["batch=off"], cells=7, outcomes=legacy, exits=exits,
                     failures=[failure])]}


@pytest.fixture
def saved(tmp_path):
    p = tmp_path / "sweep.json"
    p.write_text(json.dumps(result()))
    return p


def test_load_makes_the_commands_relative_and_refuses_what_is_no_sweep(saved, tmp_path):
    data = sec.load(saved)
    (f,) = data["scenarios"][1]["failures"]
    assert f["command"].startswith("build/bin/wirecheck run scenarios/batching/")
    assert data["file"] == str(saved)
    other = tmp_path / "other.json"
    other.write_text('{"bench": 1}')
    with pytest.raises(ValueError, match="not the result of wirecheck sweep"):
        sec.load(other)
    with pytest.raises(ValueError, match="no such sweep result"):
        sec.load(tmp_path / "missing.json")


def test_cells_are_placed_by_fault_and_where_they_landed():
    assert sec.column("EPIPE@3") == (0, 3)
    assert sec.column("EPIPE@c1.b4096") == (1, 1, 4096)
    assert sec.column("clamp=64") == (2, 64)
    assert [sec.column_label(c) for c in [(0, 3), (1, 1, 4096), (2, 64)]] == \
        ["call 3", "c1 byte 4096", "clamp 64"]
    assert sec.fault_of("death@c0.b9") == "death" and sec.fault_of("clamp=7") == "clamp"
    faults, cols, cells = sec.grid(result()["scenarios"])
    assert faults == ["EAGAIN", "EPIPE", "death", "zero", "clamp"]
    assert cols == [(0, 1), (0, 2), (1, 0, 0), (1, 0, 18), (2, 7)]
    assert cells[(1, "EPIPE", (1, 0, 18))] == ("broken", "exit 0")
    assert cells[(0, "death", (0, 2))] == ("ok", "signal SIGTERM")


def test_the_section_gives_size_time_and_each_broken_invariant_with_its_command(saved):
    report = {"sweep": sec.load(saved), "files": [sec.plot_name(
        "scenarios/batching/several-writes.wcs")]}
    text = "\n".join(sec.markdown(report))
    assert "14 runs over 2 sweeps of 1 scenario in 12 s, 2 at once on 2 cores" in text
    assert "load average 3.10 at the start, 4.20 at the end" in text
    assert "### Invariants broken: 1" in text
    assert ("| `scenarios/batching/several-writes.wcs` | legacy batch=off | `EPIPE@c0.b18` | "
            "fatal | connection 0: the peer got 20 bytes, more than the clean run's 19 | "
            "`build/bin/wirecheck run scenarios/batching/several-writes.wcs --fault "
            "write:errno=EPIPE,conn=0,byte=18 --variant batch=off` |") in text
    assert "[plot](sweep-batching-several-writes.svg)" in text
    assert "| EPIPE | 6 | 1 | 0 |" in text
    assert "### Declared by design: 0" in text
    (line,) = sec.summary(report)
    assert line.startswith("- Fault sweep (") and line.endswith("; 1 broke an invariant.")


def test_a_clean_sweep_says_so_and_no_sweep_says_how_to_make_one(saved):
    data = sec.load(saved)
    data["failing"] = 0
    data["scenarios"][1]["failures"] = []
    data["scenarios"][1]["outcomes"]["EPIPE@c0.b18"] = "ok"
    text = "\n".join(sec.markdown({"sweep": data, "files": []}))
    assert "### Invariants broken: 0" in text and "None: every run kept every invariant." in text
    assert "[plot]" not in text  # not drawn: no link
    assert sec.summary({}) == [] and sec.summary({"sweep": None}) == []
    assert "wirecheck sweep --output FILE" in "\n".join(sec.markdown({}))


def test_the_plot_shows_every_fault_and_place_of_both_strategies(saved, tmp_path):
    report = {"sweep": sec.load(saved), "scaling": {"bytes_moved": [], "sender_cpu": []},
              "bench": {}, "scenarios": []}
    jobs, files = plots.plot_jobs(report, tmp_path, ())
    assert files == ["sweep-batching-several-writes.svg"]
    plots.run_plots(jobs, lambda m: None)
    svg = tmp_path / files[0]
    root = ET.parse(svg).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    text = svg.read_text()
    for word in ("EAGAIN", "EPIPE", "death", "zero", "clamp", "call 2", "c0 byte 18",
                 "clamp 7", "fixed: 7 runs, 0 broken", "legacy batch=off: 7 runs, 1 broken",
                 "TERM", "an invariant broken"):
        assert word in text, word
    # The same data, the same bytes (the report's plots are redrawn from JSON).
    first = svg.read_bytes()
    plots.run_plots(jobs, lambda m: None)
    assert svg.read_bytes() == first


def test_the_section_is_registered_and_rendered_after_the_benchmarks(saved):
    assert sec in sections.BENCH_SECTIONS
    data = sec.load(saved)
    report = {"sweep": data, "bench": {"ran": False, "runs": {}, "errors": []},
              "seed_table": [], "scaling": {"bytes_moved": [], "sender_cpu": []},
              "per_connection": None, "options": {"no_per_connection": True},
              "scenarios": [], "files": []}
    lines = markdown.summary_lines(copy.deepcopy(report))
    assert any(line.startswith("- Fault sweep") for line in lines)


def test_the_report_refuses_a_sweep_json_that_is_not_one(tmp_path, capsys):
    bad = tmp_path / "x.json"
    bad.write_text("[]")
    rc = cli.main(["--sweep-json", str(bad), "--paths", "scenarios/queue/epipe-prefix.wcs",
                   "--no-bench", "--no-per-connection", "--out", str(tmp_path / "out"), "-q"])
    assert rc == 2
    assert "--sweep-json" in capsys.readouterr().err


def test_the_section_alone_is_written_with_its_plots(saved, tmp_path):
    from wirecheck.sweep import report as sweep_report
    out = tmp_path / "out"
    assert sweep_report.main(["--json", str(saved), "--out", str(out)]) == 0
    text = (out / "sweep.md").read_text()
    assert text.startswith("# Fault sweep\n") and "### Invariants broken: 1" in text
    assert "[plot](sweep-batching-several-writes.svg)" in text
    assert (out / "sweep-batching-several-writes.svg").is_file()
    assert sweep_report.main(["--json", str(tmp_path / "none.json"), "--out", str(out)]) == 2


def test_a_sweep_whose_clean_run_hung_says_so(saved):
    data = sec.load(saved)
    data["scenarios"][1].update(cells=0, outcomes={}, failures=[], clean_exit="timed out")
    text = "\n".join(sec.markdown({"sweep": data, "files": []}))
    assert "legacy batch=off: the clean run hung, not swept" in text


def test_cells_passed_by_a_declaration_are_listed_with_the_reason_and_drawn_apart(saved, tmp_path):
    data = sec.load(saved)
    s = data["scenarios"][0]
    s["outcomes"]["EAGAIN@1"] = "declared"
    s["declared"] = {"reason": "connection 0, bytes 32..63: an owned write changed",
                     "cells": {"EAGAIN@1": ["connection 0: ... declared bytes only"]}}
    data["declared"] = 1
    text = "\n".join(sec.markdown({"sweep": data, "files": []}))
    assert "### Declared by design: 1" in text
    assert ("| `scenarios/batching/several-writes.wcs` | fixed | connection 0, bytes "
            "32..63: an owned write changed | `EAGAIN@1` |") in text
    assert "| EAGAIN | 2 | 0 | 1 |" in text
    assert "fixed 7 runs, 0 broken, 1 by declaration" in text
    (line,) = sec.summary({"sweep": data})
    assert line.endswith("1 broke an invariant, 1 passed by a scenario's declaration.")
    out = tmp_path / "p.svg"
    sec.plot_scenario(s["path"], data["scenarios"], out)
    svg = out.read_text()
    assert "kept, but for declared bytes" in svg
    assert sec.DECLARED_COLOR in svg or sec.DECLARED_COLOR.upper() in svg
