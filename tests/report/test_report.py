"""Tests of `python3 -m wirecheck.report` (python/wirecheck/report/).

Most tests share one report, made once per module by the real entry point on
two real scenarios (end-large, whose matrix has 4 clamps, and epipe-prefix),
with the benchmarks' figures taken from a small fake bench file
(--bench-json) so that the run takes seconds. A second shared report runs
the real write-batching benchmarks (batching and chat, --quick), the real
half-open per-connection count, and batching and half-open scenarios, two of
which end their process on purpose. One test runs the real bytes_moved and
sender_cpu benchmarks at their smallest sizes.
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
from wirecheck.report import pr as rpt_pr  # noqa: E402

SCENARIOS = ["scenarios/queue/end-large.wcs", "scenarios/queue/epipe-prefix.wcs"]
# Batching and half-open scenarios; end-abort ends by SIGABRT and
# signal-external by SIGTERM, on purpose.
NEW_SCENARIOS = ["scenarios/batching/several-writes.wcs", "scenarios/batching/end-abort.wcs",
                 "scenarios/batching/signal-external.wcs",
                 "scenarios/half-open/per-connection.wcs"]
MIB, KIB = 1 << 20, 1 << 10

# The rows of the seed's table (oven-sh/bun#45246, "Numbers"), in its order.
SEED_BATCHING_ROWS = [
    "2 x write(262144 B)", "16 x write(49152 B)", "16 x write(32768 B)",
    "16 x write(16384 B)", "16 x write(1024 B)", "1 x write(128 B)", "2 x write(128 B)",
    "16 x write(128 B)", "64 x write(128 B)", "256 x write(128 B)",
    "64 x write(128 B, callback)",
]
# The rows of the seed's per-connection figures (oven-sh/bun "usockets: dispatch on_end before the poll change"), in the
# issue's order.
PER_CONNECTION_ROWS = ["epoll_ctl MOD", "epoll_ctl ADD", "epoll_ctl DEL", "send", "recv",
                       "shutdown"]


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


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """One report of batching and half-open scenarios with the real
    batching and chat benchmarks (--quick) and the real per-connection
    count."""
    out = tmp_path_factory.mktemp("report-real") / "out"
    proc = run_report("--out", str(out), "--paths", *NEW_SCENARIOS, "--benches", "batching,chat",
                      "--wirecheck-bin", str(wirecheck_bin()))
    assert proc.returncode == 0, proc.stderr
    return {"out": out, "proc": proc, "json": json.loads((out / "report.json").read_text()),
            "md": (out / "report.md").read_text()}


def profile(rep, name, pid):
    for s in rep["scenarios"]:
        if s["name"] == name:
            for p in s["profiles"]:
                if p["id"] == pid:
                    return p
    raise AssertionError(f"no profile {name} {pid!r} in report.json")


def md_section_table(md, heading, with_header=False):
    """The rows (lists of cells) of the first table after a heading (## or
    ###); with_header, (header, rows)."""
    lines = md.split(f" {heading}\n", 1)[1].splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("|"))

    def cells(line):
        return [c.strip() for c in line.strip().strip("|").split("|")]
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append(cells(line))
    return (cells(lines[start]), rows) if with_header else rows


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
    expected = {"report.md", "summary.md", "report.json", "queue-end-large.clamp=1.svg",
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
            "bench", "scaling", "seed_table", "per_connection", "files", "seconds"} <= set(rep)
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
        assert p["fixed"]["variant"] == {"batch": "on", "chunked": "fixed", "halfopen": "end-first",
                                         "queue": "cursor", "ws": "by-option"}
        assert p["legacy"]["variant"] == {"batch": "on", "chunked": "fixed", "halfopen": "end-first",
                                          "queue": "memmove", "ws": "by-option"}
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
    assert {p.name for p in out.iterdir()} == {"report.md", "summary.md", "report.json",
                                               "queue-epipe-prefix.svg", "mine.svg"}
    rep = json.loads((out / "report.json").read_text())
    assert rep["bench"]["ran"] is False
    assert "Not run (--no-bench)." in (out / "report.md").read_text()


MD_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


@needs_wirecheck
def test_summary_is_short_and_its_links_resolve(made):
    """summary.md beside report.md, far below GitHub's
    65,536 characters, with the targets, the plots and the full report
    linked relative to the folder, so that they render where it is browsed."""
    out, md = made["out"], (made["out"] / "summary.md").read_text()
    assert len(md) < rpt_pr.SUMMARY_LIMIT < 65_536
    links = MD_LINK.findall(md)
    assert {"report.md", "report.json", "scaling-bytes-moved.svg",
            "scaling-sender-cpu.svg"} <= set(links)
    for target in links:
        assert (out / target).is_file(), target
    for line in md.split("## Summary\n", 1)[1].split("\n## ", 1)[0].strip().splitlines():
        assert line in made["md"]  # the summary is report.md's
    assert "<details>" not in md
    assert "summary.md" in made["json"]["files"]


@needs_wirecheck
def test_summary_links_start_with_link_base(made, tmp_path):
    base = "https://example.invalid/o/r/raw/main/reports/sample"
    proc = run_report("--from-json", str(made["out"] / "report.json"), "--out", str(tmp_path),
                      "--link-base", base + "/", "-q")
    assert proc.returncode == 0, proc.stderr
    links = MD_LINK.findall((tmp_path / "summary.md").read_text())
    assert links and all(link.startswith(base + "/") for link in links)
    assert base + "/batching.svg" not in links  # no batching bench in this report
    assert (tmp_path / "report.md").read_bytes() == (made["out"] / "report.md").read_bytes()


@needs_wirecheck
def test_paths_outside_the_repository(tmp_path):
    """--paths outside the repository, relative to the
    working folder or absolute, runs (it failed with `cannot open`), and no
    plot name starts with a dash (an absolute path gave '-tmp-...svg')."""
    mine = tmp_path / "my suite"
    mine.mkdir()
    (mine / "-dash.wcs").write_text((REPO / SCENARIOS[1]).read_text())
    other = tmp_path / "other" / "my suite"
    other.mkdir(parents=True)
    (other / "-dash.wcs").write_text((REPO / SCENARIOS[1]).read_text())
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    for args in (["my suite"], [str(mine), str(other)]):
        out = tmp_path / "out"
        proc = subprocess.run([sys.executable, "-m", "wirecheck.report", "--out", str(out),
                               "--paths", *args, "--no-bench", "--no-per-connection", "-q",
                               "--wirecheck-bin", str(wirecheck_bin())],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        rep = json.loads((out / "report.json").read_text())
        assert [p["errors"] for s in rep["scenarios"] for p in s["profiles"]] == \
            [{}] * len(args)
        svgs = [f for f in rep["files"] if f.endswith(".svg")]
        assert len(svgs) == len(args) and len(set(svgs)) == len(svgs)
        assert not any(f.startswith(("-", ".")) for f in svgs), svgs
        assert {p.name for p in out.iterdir()} >= set(svgs)


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
                      "--benches", "bytes_moved,sender_cpu", "--no-per-connection",
                      "--wirecheck-bin", str(wirecheck_bin()))
    assert proc.returncode == 0, proc.stderr
    rep = json.loads((tmp_path / "report.json").read_text())
    assert rep["bench"]["errors"] == []
    assert rep["bench"]["gate_cost"] is None
    assert rep["bench"]["batching"] is None and rep["bench"]["chat"] is None
    assert rep["per_connection"] is None
    seed = {(r["payload"], r["clamp"]): r for r in rep["seed_table"]}
    assert len(seed) == 8
    for key, figure in SEED_TABLE.items():
        assert seed[key]["seed_table"] == figure
        assert seed[key]["legacy_bytes_moved"] == moved(*key)
        assert seed[key]["fixed_bytes_moved"] == 0
    assert rep["bench"]["runs"]["sender_cpu"]["command"][-2:] == ["--sizes", "1,2"]
    cpu = rep["scaling"]["sender_cpu"]
    senders = {s["sender"] for s in cpu}
    # node's row is there when node ran (it is found on PATH or /usr/bin),
    # the owned write's once the stack has it.
    assert {"cursor", "memmove", "floor", "copy"} <= senders
    assert senders <= {"cursor", "memmove", "floor", "copy", "node", "owned", "libuv"}
    assert ("node" in senders) == bool(rep["bench"]["sender_cpu"]["node_version"])
    assert ("libuv" in senders) == bool(rep["bench"]["sender_cpu"]["libuv_version"])
    assert all(pt["payload"] in (MIB, 2 * MIB) for s in cpu for pt in s["points"])
    assert (tmp_path / "scaling-sender-cpu.svg").is_file()


@needs_wirecheck
def test_real_sender_cpu_across_subjects(tmp_path):
    """sender_cpu --subjects: the unix transport only, cursor,
    floor, node and libuv, each clamped too when its sender runs (node's and
    libuv's under the preloaded gate), and the load beside the figures."""
    bench = wirecheck_bin().parent / "sender_cpu"
    if not bench.is_file():
        pytest.skip(f"{bench} is not built")
    proc = subprocess.run([str(bench), "--subjects", "--sizes", "1", "--rounds", "1", "--json"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    ss = json.loads(proc.stdout)
    assert ss["subjects"] is True
    assert {c["transport"] for c in ss["cells"]} == {"unix"}
    ran = {(c["sender"], c["mode"]) for c in ss["cells"] if c.get("median_cpu_ms") is not None}
    expect = {("cursor", m) for m in ("unclamped", "clamp_4k")} | \
             {("floor", m) for m in ("unclamped", "clamp_4k")}
    for child, version in (("node", ss["node_version"]), ("libuv", ss["libuv_version"])):
        if version:
            expect.add((child, "unclamped"))
            if ss["children_clamped_by_preload"][child]:
                expect.add((child, "clamp_4k"))
    assert ran == expect
    assert all(c["min_cpu_ms"] <= c["median_cpu_ms"] <= c["max_cpu_ms"] for c in ss["cells"])
    assert ss["under_load"] == (max(ss["load_average_start"], ss["load_average_end"])
                                > ss["cpus"])
    # The bench writes JSON only; its table is the report's section's.
    from wirecheck.report.render import render
    md = render("sender_subjects", ss)
    assert "| floor (send + epoll) |" in md and "Load average" in md


# ------------------------------------- write batching and half-open (issues 4, 5)

def test_per_connection_targets_can_fail():
    fixed = {"epoll_ctl": 2.0, "epoll_ctl.mod": 0.0, "recv": 2.0, "send": 1.0}
    poll = {"epoll_ctl": 3.0, "epoll_ctl.mod": 1.0, "recv": 2.0, "send": 1.0}
    assert [t["pass"] for t in rpt.per_connection_targets(fixed, poll)] == [True, True, True]
    worse = dict(fixed, **{"epoll_ctl.mod": 0.5, "recv": 3.0})
    got = rpt.per_connection_targets(worse, dict(poll, **{"epoll_ctl.mod": 0.99}))
    assert [t["pass"] for t in got] == [False, False, False]
    assert got[2]["measured"] == "differ: recv 3.00 vs 2.00"


def test_legacy_declaration_check():
    must_match = {"variant": "batch=off", "must_differ": False, "except": ["syscalls", "queue"]}
    assert rpt.legacy_holds(must_match, ["syscalls", "queue"]) is True
    assert rpt.legacy_holds(must_match, ["peer", "syscalls"]) is False
    must_differ = {"variant": "halfopen=poll-first", "must_differ": True, "except": []}
    assert rpt.legacy_holds(must_differ, []) is False
    assert rpt.legacy_holds(must_differ, ["syscalls"]) is True
    assert rpt.legacy_holds(must_differ, None) is None
    assert rpt.legacy_rule_text(must_match) == "must-match except=syscalls,queue"


def per_connection_now(variant):
    """The per-connection figures of the real command, run here."""
    proc = subprocess.run([str(wirecheck_bin()), "per-connection",
                           str(REPO / "scenarios/half-open/per-connection.wcs"),
                           "--from", "100", "--to", "300", "--variant", variant],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["per_connection"]


@needs_wirecheck
def test_per_connection_table_is_the_commands(real):
    header, rows = md_section_table(real["md"], "Half-open: syscalls per connection",
                                    with_header=True)
    assert header == ["per connection", "fixed (end-first)", "poll-first"]
    assert [r[0] for r in rows] == PER_CONNECTION_ROWS
    fixed, poll = per_connection_now("halfopen=end-first"), per_connection_now("halfopen=poll-first")
    kinds = {"epoll_ctl MOD": "epoll_ctl.mod", "epoll_ctl ADD": "epoll_ctl.add",
             "epoll_ctl DEL": "epoll_ctl.del", "send": "send", "recv": "recv",
             "shutdown": "shutdown"}
    for label, f, p in rows:
        assert f == f"{fixed[kinds[label]]:.2f}", label
        assert p == f"{poll[kinds[label]]:.2f}", label
    # The fix makes no poll change for a peer-closed connection;
    # poll-first makes one.
    mod = dict((r[0], r[1:]) for r in rows)["epoll_ctl MOD"]
    assert mod == ["0.00", "1.00"]
    # report.json holds the same figures.
    pc = real["json"]["per_connection"]
    assert [(r["label"], rpt.fmt_pc(r["fixed"]), rpt.fmt_pc(r["poll_first"]))
            for r in pc["rows"]] == [tuple(r) for r in rows]
    assert pc["sides"]["fixed"]["result"]["per_connection"] == fixed
    assert pc["sides"]["poll_first"]["result"]["per_connection"] == poll
    assert pc["errors"] == []


@needs_wirecheck
def test_per_connection_targets_in_the_report(real):
    rows = md_section_table(real["md"], "Targets (wirecheck per-connection)")
    pc = real["json"]["per_connection"]
    assert [[t["target"], t["measured"], "PASS" if t["pass"] else "FAIL"]
            for t in pc["targets"]] == rows
    fixed, poll = per_connection_now("halfopen=end-first"), per_connection_now("halfopen=poll-first")
    others = sorted((set(fixed) | set(poll)) - {"epoll_ctl", "epoll_ctl.mod"})
    expected = ["PASS" if fixed["epoll_ctl.mod"] == 0 else "FAIL",
                "PASS" if poll["epoll_ctl.mod"] >= 1 else "FAIL",
                "PASS" if all(fixed[k] == poll[k] for k in others) else "FAIL"]
    assert [r[2] for r in rows] == expected == ["PASS", "PASS", "PASS"]
    assert f"Targets met: {pc['targets_met']} of 3." in real["md"]


@needs_wirecheck
def test_batching_table_has_the_seeds_rows(real):
    header, rows = md_section_table(real["md"], "Write batching: N writes in one task, per round",
                                    with_header=True)
    assert header == ["Writes in one task", "sends: off", "off again", "on", "time: off",
                      "off again", "on", "off/on", "off/off again", "seed off/on"]
    assert [r[0] for r in rows] == [f"`{label}`" for label in SEED_BATCHING_ROWS]
    bt = real["json"]["bench"]["batching"]
    assert bt["command"][1:] == ["--quick", "--json"]
    assert len(bt["rows"]) == 11
    for row, r in zip(rows, bt["rows"]):
        cfg = r["configs"]
        for cell, key in zip(row[1:4], ("off", "off2", "on")):
            st = cfg[key]["sends"]
            assert cell == (f"{st['min']:,}" if st["min"] == st["max"] else f"{st['mean']:.1f}")
        for cell, key in zip(row[4:7], ("off", "off2", "on")):
            assert cell == f"{cfg[key]['median_us']:.2f} µs"
        assert row[7] == f"{r['ratio_off_on']:.2f}x"
        assert row[8] == f"{r['ratio_off_off2']:.3f}x"
    by = {r[0].strip("`"): r for r in rows}
    # Sends are counts, not timings: 128-byte writes make one send each
    # without batching, at most two (one in the call, one batch) with it,
    # and a write with a callback is not batched.
    for n in (1, 2, 16, 64, 256):
        off, off2, on = by[f"{n} x write(128 B)"][1:4]
        assert (num(off), num(off2), num(on)) == (n, n, min(n, 2)), n
    assert [num(c) for c in by["64 x write(128 B, callback)"][1:4]] == [64, 64, 64]
    assert by["256 x write(128 B)"][9] == "24.63x"  # the seed's own figure


@needs_wirecheck
def test_batching_and_chat_targets_as_the_benches_say(real):
    bench = real["json"]["bench"]
    rows = md_section_table(real["md"], "Targets (bench/batching)")
    assert rows == [[t["target"], t["measured"], "PASS" if t["pass"] else "FAIL"]
                    for t in bench["batching"]["targets"]]
    assert len(rows) == bench["batching"]["targets_total"] == 4
    rows = md_section_table(real["md"], "Targets (bench/chat)")
    assert rows == [[t["target"], f"{t['bound']:.2f}", f"{t['measured']:.2f}",
                     "PASS" if t["pass"] else "FAIL"] for t in bench["chat"]["targets"]]
    # The bound is min(frames, 2) sends per client per task that
    # writes; the literal "1 send per client per task" is no target, the
    # batches' own bound (1 per client per task) is. Sends are counts: every
    # target holds.
    assert [t["target"].split(" (")[0] for t in bench["chat"]["targets"]] == [
        "batch=on: sends per round at most min(frames, 2) per client per task that writes "
        "to it",
        "batch=on: end-of-task sends",
        "batch=off: 1 send per frame out"]
    assert all(t["pass"] for t in bench["chat"]["targets"])
    assert "FAIL" not in real["md"].split("(bench/chat)", 1)[1].split("\n## ", 1)[0]
    for name in ("batching", "chat"):
        b = bench[name]
        assert sum(t["pass"] for t in b["targets"]) == b["targets_met"]
        assert (f"Targets met: {b['targets_met']} of {b['targets_total']}."
                in real["md"].split(f"(bench/{name})", 1)[1])


@needs_wirecheck
def test_chat_table_matches_the_json(real):
    rows = md_section_table(real["md"], "Chat server: every message broadcast to every client")
    ch = real["json"]["bench"]["chat"]
    off, on = ch["configs"]["off"], ch["configs"]["on"]
    by = {r[0]: r[1:] for r in rows}
    assert by["mean round"][:2] == [f"{off['mean_round_us']:.1f} µs", f"{on['mean_round_us']:.1f} µs"]
    assert by["server sends per round"][:2] == [f"{off['sends_per_round']:.2f}",
                                                f"{on['sends_per_round']:.2f}"]
    # The counts behind the targets: off sends one per frame; on at most 2 per
    # client per task that writes.
    assert off["sends_per_round"] == off["frames_per_round"] == 256
    assert on["sends_per_round"] <= on["bound_design"]


@needs_wirecheck
def test_exits_by_signal_are_data_not_failures(real):
    rep = real["json"]
    rows = md_section_table(real["md"], "Scenarios: fixed vs legacy")  # batching first
    by = {r[0]: r for r in rows}
    assert by["`scenarios/batching/end-abort`"][11] == "SIGABRT / SIGABRT"
    assert by["`scenarios/batching/signal-external`"][11] == "SIGTERM / SIGTERM"
    assert by["`scenarios/batching/several-writes`"][11] == "0 / 0"
    assert all(not p["errors"] for s in rep["scenarios"] for p in s["profiles"])
    assert "0 failed to run" in real["md"]
    assert "SIGABRT: `scenarios/batching/end-abort` (fixed and legacy)" in real["md"]
    assert profile(rep, "end-abort", "")["fixed"]["exit"]["signal"] == "SIGABRT"


@needs_wirecheck
def test_batching_scenarios_compare_sends(real):
    header, rows = md_section_table(real["md"], "Scenarios: fixed vs legacy", with_header=True)
    assert header[2:5] == ["sends: fixed", "legacy", "legacy/fixed"]
    row = next(r for r in rows if r[0] == "`scenarios/batching/several-writes`")
    trace = {v: runner.run(REPO / "scenarios/batching/several-writes.wcs", variants=variants,
                           binary=wirecheck_bin())
             for v, variants in (("fixed", []), ("legacy", ["batch=off"]))}
    sends = {v: sum(t["syscalls"].get(k, 0) for k in rpt.WRITE_KINDS) for v, t in trace.items()}
    assert (num(row[2]), num(row[3])) == (sends["fixed"], sends["legacy"])
    assert sends["fixed"] < sends["legacy"]  # the batch: one send fewer
    assert row[4] == rpt.ratio_text(sends["legacy"] / sends["fixed"])
    assert row[12].startswith("must-differ; differs in: peer, syscalls")
    assert row[12].endswith("; holds")
    half = md_section_table(real["md"], "Half-open EOF order (`half_open`): fixed "
                            "`halfopen=end-first`, legacy `halfopen=poll-first`", with_header=True)
    assert half[0][2] == "epoll_ctl MOD: fixed"
    assert half[1][0][:5] == ["`scenarios/half-open/per-connection`", "-", "0", "1", "inf"]


@needs_wirecheck
def test_batching_plot_and_rerender(real, tmp_path):
    out = real["out"]
    assert {"batching.svg", "batching-end-abort.svg", "half-open-per-connection.svg"} \
        <= set(real["json"]["files"])
    root = ET.parse(out / "batching.svg").getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    text = (out / "batching.svg").read_text()
    for words in ("Sends per round", "Time per round", "batch=on (fixed)", "batch=off (legacy)"):
        assert words in text, words
    assert "subject ended: fixed SIGABRT, legacy SIGABRT" in \
        (out / "batching-end-abort.svg").read_text()
    proc = run_report("--from-json", str(out / "report.json"), "--out", str(tmp_path), "-q")
    assert proc.returncode == 0, proc.stderr
    for name in real["json"]["files"]:
        assert (tmp_path / name).read_bytes() == (out / name).read_bytes(), name
