"""Tests of `python3 -m wirecheck.report` (python/wirecheck/report.py).

Most tests share one report, made once per module by the real entry point on
two real scenarios (end-large, whose matrix has 4 clamps, and epipe-prefix),
with the benchmarks' figures taken from a small fake bench file
(--bench-json) so that the run takes seconds. One test runs the real
benchmarks at their smallest sizes.
"""
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

pytest.importorskip("matplotlib", reason="python3-matplotlib is not installed")

from wirecheck import report as rpt  # noqa: E402
from wirecheck import runner  # noqa: E402

SCENARIOS = ["scenarios/queue/end-large.wcs", "scenarios/queue/epipe-prefix.wcs"]
MIB, KIB = 1 << 20, 1 << 10


def wirecheck_bin():
    return Path(os.environ.get("WIRECHECK_BIN") or REPO / "build" / "bin" / "wirecheck")


needs_wirecheck = pytest.mark.skipif(
    not (wirecheck_bin().is_file() and os.access(wirecheck_bin(), os.X_OK)),
    reason=f"wirecheck binary not found at {wirecheck_bin()}: build it "
           "(scripts/setup.sh --no-run) or set WIRECHECK_BIN")


def moved(p, c):
    n = p // c
    return c * (n - 1) * (n - 2) // 2


def seed_moved(p, c):
    n = p // c
    return c * (n - 2) * (n - 3) // 2


SEED_TABLE = {(4 * MIB, 16 * KIB): 526_434_304, (4 * MIB, 4 * KIB): 2_137_010_176,
              (32 * MIB, 4 * KIB): 137_355_079_680}


def fake_bench():
    """bytes_moved rows from the closed forms (as the real bench prints
    them), a small sender_cpu with one skipped cell, a gate_cost table."""
    rows = []
    for c in (4 * KIB, 16 * KIB):
        for p in (4 * MIB, 8 * MIB, 16 * MIB, 32 * MIB):
            rows.append({"payload": p, "clamp": c, "flushes": p // c - 1,
                         "memmove_bytes_moved": moved(p, c), "closed_form": moved(p, c),
                         "cursor_bytes_moved": 0,
                         "memmove_per_doubling": None if p == 4 * MIB else
                         round(moved(p, c) / moved(p // 2, c), 4),
                         "seed_flushes": p // c - 2, "seed_closed_form": seed_moved(p, c),
                         "seed_table": SEED_TABLE.get((p, c)), "intact": True})
    cells = []
    ms = {"cursor": [10.0, 20.0, 40.0], "memmove": [20.0, 80.0, None], "floor": [2.0, 4.0, 8.0]}
    for mode in ("clamp_4k", "unclamped"):
        for sender, vals in ms.items():
            for size, v in zip((1, 2, 4), vals):
                cell = {"transport": "unix", "mode": mode, "payload": size * MIB,
                        "sender": sender, "skipped": v is None,
                        "predicted_bytes_moved": moved(size * MIB, 4 * KIB)
                        if sender == "memmove" and mode == "clamp_4k" else None}
                if v is not None:
                    cell.update(median_cpu_ms=v, cpu_ms=[v], median_send_calls=1.0,
                                median_epoll_wait_calls=0.0,
                                median_bytes_moved=0.0 if sender != "floor" else None)
                cells.append(cell)
    return {
        "bytes_moved": {"rows": rows, "memmove_equals_closed_form": True,
                        "cursor_moves_nothing": True, "intact": True,
                        "seed_closed_form_equals_seed_table": True},
        "sender_cpu": {"command": ["sender_cpu", "--json"], "rounds": 1,
                       "sizes": [MIB, 2 * MIB, 4 * MIB], "cells": cells,
                       "load_average_start": 0.5, "load_average_end": 0.6},
        "gate_cost": {"setup": "gate_cost: 3 rounds", "rows": [
            {"variant": "direct", "median_ns": 1000.0, "median_diff_ns": 0.0},
            {"variant": "disarmed", "median_ns": 1001.0, "median_diff_ns": 1.0},
            {"variant": "armed", "median_ns": 1020.0, "median_diff_ns": 20.0}]},
    }


def run_report(*args, timeout=600):
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    return subprocess.run([sys.executable, "-m", "wirecheck.report", *args],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """One report of the two scenarios with the fake bench."""
    base = tmp_path_factory.mktemp("report")
    bench = base / "bench.json"
    bench.write_text(json.dumps(fake_bench()))
    out = base / "out"
    proc = run_report("--out", str(out), "--paths", *SCENARIOS, "--bench-json", str(bench),
                      "--wirecheck-bin", str(wirecheck_bin()))
    assert proc.returncode == 0, proc.stderr
    return {"out": out, "proc": proc, "json": json.loads((out / "report.json").read_text()),
            "md": (out / "report.md").read_text(), "bench": fake_bench()}


def profile(rep, name, pid):
    for s in rep["scenarios"]:
        if s["name"] == name:
            for p in s["profiles"]:
                if p["id"] == pid:
                    return p
    raise AssertionError(f"no profile {name} {pid!r} in report.json")


def md_section_table(md, heading):
    """The rows (lists of cells) of the first table after a heading."""
    lines = md.split(f"## {heading}\n", 1)[1].splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("|"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def num(cell):
    return None if cell == "-" else int(cell.replace(",", ""))


# ---------------------------------------------------------------- unit

def test_compare_says_inf_and_dash():
    assert rpt.compare(0, 5) == {"fixed": 0, "legacy": 5, "ratio": "inf", "ratio_text": "inf"}
    assert rpt.compare(0, 0)["ratio"] is None and rpt.compare(0, 0)["ratio_text"] == "-"
    assert rpt.compare(None, 3)["ratio_text"] == "-"
    assert rpt.compare(2, 5)["ratio"] == 2.5 and rpt.compare(2, 5)["ratio_text"] == "x2.50"
    assert rpt.compare(1, 1234)["ratio_text"] == "x1,234"


def test_scaling_of_the_closed_form_is_slope_2():
    series = rpt.bytes_moved_scaling(fake_bench()["bytes_moved"])
    assert [s["clamp"] for s in series] == [4 * KIB, 16 * KIB]
    for s in series:
        assert s["fixed_all_zero"] is True
        assert s["legacy_slope"] == pytest.approx(2.0, abs=0.02)
        # one factor per pair of neighbouring payloads: 4->8, 8->16, 16->32 MiB
        assert len(s["legacy_per_doubling"]) == 3
        assert all(4.0 < d < 4.03 for d in s["legacy_per_doubling"])


def test_cpu_scaling_leaves_skipped_cells_out_of_the_slope():
    series = rpt.sender_cpu_scaling(fake_bench()["sender_cpu"])
    mem = next(s for s in series if s["mode"] == "clamp_4k" and s["sender"] == "memmove")
    assert mem["skipped_payloads"] == [4 * MIB]
    assert mem["per_doubling"] == [4.0]  # 1 -> 2 MiB; 4 MiB was skipped
    assert mem["slope"] == pytest.approx(2.0)
    cur = next(s for s in series if s["mode"] == "clamp_4k" and s["sender"] == "cursor")
    assert cur["slope"] == pytest.approx(1.0)


# ------------------------------------------------------ the report itself

@needs_wirecheck
def test_files_are_produced(made):
    out, rep = made["out"], made["json"]
    expected = {"report.md", "report.json", "queue-end-large.clamp=1.svg",
                "queue-end-large.clamp=7.svg", "queue-end-large.clamp=4096.svg",
                "queue-end-large.clamp=16384.svg", "queue-epipe-prefix.svg",
                "scaling-bytes-moved.svg", "scaling-sender-cpu.svg"}
    assert set(rep["files"]) == expected
    assert {p.name for p in out.iterdir()} == expected


@needs_wirecheck
def test_progress_is_on_stderr(made):
    err = made["proc"].stderr
    assert "[1/10] scenarios/queue/end-large clamp=1 fixed" in err
    assert "[4/10] scenarios/queue/end-large clamp=7 legacy" in err
    assert "[10/10] scenarios/queue/epipe-prefix (no matrix) legacy" in err
    assert made["proc"].stdout == ""


@needs_wirecheck
def test_json_has_the_expected_keys(made):
    rep = made["json"]
    assert {"schema", "generated", "command", "options", "environment", "scenarios",
            "bench", "scaling", "seed_table", "files", "seconds"} <= set(rep)
    assert rep["schema"] == rpt.SCHEMA
    assert [s["name"] for s in rep["scenarios"]] == ["end-large", "epipe-prefix"]
    end_large = rep["scenarios"][0]
    assert end_large["legacy"] == {"except": [], "must_differ": True, "variant": "queue=memmove"}
    assert [p["id"] for p in end_large["profiles"]] == [
        "clamp=1", "clamp=7", "clamp=4096", "clamp=16384"]
    p = end_large["profiles"][2]
    assert p["flags"] == ["--clamp-send", "4096"]
    for side in ("fixed", "legacy"):
        assert {"variant", "exit", "syscalls", "syscalls_total", "bytes_moved",
                "allocations", "bytes_delivered", "peer_sha256", "trace"} <= set(p[side])
    assert {"bytes_moved", "bytes_delivered", "syscalls", "syscalls_total",
            "allocations"} <= set(p["comparison"])


@needs_wirecheck
def test_end_large_fixed_moves_nothing_legacy_moves(made):
    rep = made["json"]
    for pid in ("clamp=1", "clamp=7", "clamp=4096", "clamp=16384"):
        p = profile(rep, "end-large", pid)
        assert p["fixed"]["variant"] == {"batch": "on", "halfopen": "end-first", "queue": "cursor"}
        assert p["legacy"]["variant"] == {"batch": "on", "halfopen": "end-first", "queue": "memmove"}
        assert p["fixed"]["bytes_moved"] == 0
        assert p["legacy"]["bytes_moved"] > 0
        assert p["comparison"]["bytes_moved"]["ratio"] == "inf"
        assert p["fixed"]["bytes_delivered"] == p["legacy"]["bytes_delivered"] == 128 * KIB
        assert p["same_bytes_delivered"] is True
        assert p["legacy_differs_in"] == ["queue"]
    # 128 KiB at a 4 KiB clamp: n = 32, the model's C(n-1)(n-2)/2.
    assert profile(rep, "end-large", "clamp=4096")["legacy"]["bytes_moved"] == moved(128 * KIB, 4 * KIB)
    # Smaller clamps move more: the quadratic shows inside the matrix too.
    legacy = [profile(rep, "end-large", f"clamp={c}")["legacy"]["bytes_moved"]
              for c in (1, 7, 4096, 16384)]
    assert legacy == sorted(legacy, reverse=True)
    epipe = profile(rep, "epipe-prefix", "")
    assert epipe["comparison"]["bytes_moved"] == {"fixed": 0, "legacy": 0, "ratio": None,
                                                  "ratio_text": "-"}


@needs_wirecheck
def test_json_agrees_with_a_fresh_trace(made):
    """The report's figures are the traces': run one profile again."""
    p = profile(made["json"], "end-large", "clamp=7")
    trace = runner.run(REPO / "scenarios/queue/end-large.wcs", ["--clamp-send", "7"],
                       variants=["queue=memmove"], binary=wirecheck_bin())
    assert p["legacy"]["bytes_moved"] == trace["queue"]["bytes_moved"]
    assert p["legacy"]["syscalls"] == trace["syscalls"]
    assert p["legacy"]["bytes_delivered"] == trace["peer"]["bytes"]
    assert p["legacy"]["trace"]["peer"]["sha256"] == trace["peer"]["sha256"]
    assert p["comparison"]["syscalls"]["send"]["legacy"] == trace["syscalls"]["send"]
    total = sum(v for k, v in trace["syscalls"].items() if "." not in k)
    assert p["legacy"]["syscalls_total"] == total


@needs_wirecheck
def test_markdown_scenario_rows_match_the_json(made):
    rep, md = made["json"], made["md"]
    rows = md_section_table(md, "Scenarios: fixed vs legacy")
    profs = [(s, p) for s in rep["scenarios"] for p in s["profiles"]]
    assert len(rows) == len(profs) == 5
    for row, (s, p) in zip(rows, profs):
        assert row[0] == f"`{Path(s['path']).with_suffix('')}`"
        assert row[1] == (p["id"] or "-")
        c = p["comparison"]
        assert num(row[2]) == c["bytes_moved"]["fixed"]
        assert num(row[3]) == c["bytes_moved"]["legacy"]
        assert row[4] == c["bytes_moved"]["ratio_text"]
        assert num(row[5]) == c["syscalls_total"]["fixed"]
        assert num(row[6]) == c["syscalls_total"]["legacy"]
        assert row[7] == c["syscalls_total"]["ratio_text"]
        assert num(row[8]) == c["bytes_delivered"]["fixed"]
        assert num(row[9]) == c["bytes_delivered"]["legacy"]
        assert row[10] == c["bytes_delivered"]["ratio_text"]
    assert rows[0][:5] == ["`scenarios/queue/end-large`", "clamp=1", "0",
                           f"{profile(rep, 'end-large', 'clamp=1')['legacy']['bytes_moved']:,}",
                           "inf"]
    assert rows[4][2:5] == ["0", "0", "-"]


@needs_wirecheck
def test_markdown_bytes_moved_table_is_the_seeds_shape(made):
    rows = md_section_table(made["md"], "Bytes moved: end(P) at clamp C")
    header = made["md"].split("## Bytes moved: end(P) at clamp C\n", 1)[1]
    assert "| Payload, clamp | legacy: flushes | legacy: bytes moved | fixed: bytes moved |" in header
    bench = {(r["payload"], r["clamp"]): r for r in made["bench"]["bytes_moved"]["rows"]}
    assert len(rows) == len(bench) == 8
    units = {"KiB": KIB, "MiB": MIB}
    seen = []
    for payload, flushes, legacy, fixed in rows:
        m = re.fullmatch(r"(\d+) (MiB|KiB), (\d+) (MiB|KiB)", payload)
        assert m, payload
        key = (int(m[1]) * units[m[2]], int(m[3]) * units[m[4]])
        seen.append(key)
        assert num(flushes) == bench[key]["flushes"]
        assert num(legacy) == bench[key]["memmove_bytes_moved"] == moved(*key)
        assert num(fixed) == 0
    # The seed's order: payload ascending, the larger clamp first.
    assert seen[:2] == [(4 * MIB, 16 * KIB), (4 * MIB, 4 * KIB)]
    assert "137,355,079,680" in made["md"]  # the seed's own 32 MiB / 4 KiB row


@needs_wirecheck
def test_svgs_are_valid_and_say_what_they_show(made):
    out = made["out"]
    svgs = sorted(out.glob("*.svg"))
    assert len(svgs) == 7
    for f in svgs:
        root = ET.parse(f).getroot()
        assert root.tag == "{http://www.w3.org/2000/svg}svg", f.name
        assert float(root.get("width").rstrip("pt")) > 100
    text = (out / "queue-end-large.clamp=7.svg").read_text()
    legacy = profile(made["json"], "end-large", "clamp=7")["legacy"]["bytes_moved"]
    for words in ("Syscalls by kind", "Bytes moved by the queue", "legacy/fixed: inf (fixed is 0)",
                  "Bytes delivered to the peer", f"{legacy:,} B", "0 B"):
        assert words in text, words
    scaling = (out / "scaling-bytes-moved.svg").read_text()
    assert "0 bytes moved at every payload and clamp" in scaling
    assert "slope 2.00" in scaling
    cpu = (out / "scaling-sender-cpu.svg").read_text()
    assert "skipped at 4 MiB" in cpu  # the fake bench's skipped memmove cell


@needs_wirecheck
def test_rerender_from_json_is_identical(made, tmp_path):
    proc = run_report("--from-json", str(made["out"] / "report.json"), "--out", str(tmp_path), "-q")
    assert proc.returncode == 0, proc.stderr
    for name in made["json"]["files"]:
        assert (tmp_path / name).read_bytes() == (made["out"] / name).read_bytes(), name


@needs_wirecheck
def test_stale_plots_of_the_previous_report_go(made, tmp_path):
    out = tmp_path / "out"
    proc = run_report("--from-json", str(made["out"] / "report.json"), "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    (out / "mine.svg").write_text("<svg/>")  # not the report's: must stay
    proc = run_report("--out", str(out), "--paths", SCENARIOS[1], "--no-bench", "-q",
                      "--wirecheck-bin", str(wirecheck_bin()))
    assert proc.returncode == 0, proc.stderr
    assert {p.name for p in out.iterdir()} == {"report.md", "report.json",
                                               "queue-epipe-prefix.svg", "mine.svg"}
    rep = json.loads((out / "report.json").read_text())
    assert rep["bench"]["ran"] is False
    assert "Not run (--no-bench)." in (out / "report.md").read_text()


@needs_wirecheck
def test_bad_path_is_a_usage_error(tmp_path):
    proc = run_report("--out", str(tmp_path), "--paths", "no/such/dir", "--no-bench")
    assert proc.returncode == 2
    assert "no such scenario file or folder" in proc.stderr
    assert not (tmp_path / "report.json").exists()


# ------------------------------------------------------- real benchmarks

@needs_wirecheck
def test_real_benchmarks_at_small_sizes(tmp_path):
    bench_dir = wirecheck_bin().parent
    if not all((bench_dir / b).is_file() for b in ("bytes_moved", "sender_cpu")):
        pytest.skip(f"benchmarks not built in {bench_dir}")
    proc = run_report("--out", str(tmp_path), "--paths", SCENARIOS[1], "--cpu-sizes", "1,2",
                      "--no-gate-cost", "--wirecheck-bin", str(wirecheck_bin()))
    assert proc.returncode == 0, proc.stderr
    rep = json.loads((tmp_path / "report.json").read_text())
    assert rep["bench"]["errors"] == []
    assert rep["bench"]["gate_cost"] is None
    seed = {(r["payload"], r["clamp"]): r for r in rep["seed_table"]}
    assert len(seed) == 8
    for key, figure in SEED_TABLE.items():
        assert seed[key]["seed_table"] == figure
        assert seed[key]["legacy_bytes_moved"] == moved(*key)
        assert seed[key]["fixed_bytes_moved"] == 0
    assert rep["bench"]["runs"]["sender_cpu"]["command"][-2:] == ["--sizes", "1,2"]
    cpu = rep["scaling"]["sender_cpu"]
    assert {s["sender"] for s in cpu} == {"cursor", "memmove", "floor"}
    assert all(pt["payload"] in (MIB, 2 * MIB) for s in cpu for pt in s["points"])
    assert (tmp_path / "scaling-sender-cpu.svg").is_file()
