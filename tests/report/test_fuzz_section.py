"""The report's fuzz section (python/wirecheck/report/sections/fuzz.py): it
reads the JSON files bench/fuzz.sh writes, and shows them; the files here are
written by the real bench/fuzz.sh where clang is there, else by hand in the
same form."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

pytest.importorskip("matplotlib", reason="python3-matplotlib is not installed")

from wirecheck.report import markdown, sections  # noqa: E402
from wirecheck.report.sections import fuzz  # noqa: E402


def result(target, **over):
    d = {"target": target, "seconds": 600, "parallel": 1, "started": "2026-12-01T11:29:37Z",
         "runs": 4853967, "exec_per_s": 8076, "cov": 797, "ft": 3036, "crashes": [],
         "load1_mean": 13.83, "load1_max": 23.41,
         "command": f"bench/fuzz.sh {target} 600 1"}
    d.update(over)
    return d


def write(dirpath: Path, name: str, d) -> None:
    (dirpath / f"{name}.json").write_text(d if isinstance(d, str) else json.dumps(d))


def report_with(fz):
    return {"bench": {"ran": False, "runs": {}, "errors": []}, "fuzz": fz}


def test_load_reads_every_result_and_names_the_bad_files(tmp_path):
    write(tmp_path, "fuzz_utf8", result("fuzz_utf8"))
    write(tmp_path, "fuzz_chunk", result("fuzz_chunk", crashes=["crash-1234"]))
    write(tmp_path, "fuzz_broken", "{not json")
    write(tmp_path, "fuzz_short", {"target": "fuzz_short"})
    write(tmp_path, "fuzz_other", result("fuzz_scenario"))
    write(tmp_path, "fuzz_bool", result("fuzz_bool", runs=True))
    fz = fuzz.load(tmp_path)
    assert [t["target"] for t in fz["targets"]] == ["fuzz_chunk", "fuzz_utf8"]
    errors = "\n".join(fz["errors"])
    assert len(fz["errors"]) == 4
    assert "fuzz_broken.json" in errors
    assert "fuzz_short.json: no field 'seconds'" in errors
    assert "target 'fuzz_scenario' in a file named for 'fuzz_other'" in errors
    assert "fuzz_bool.json: field 'runs' is bool" in errors


def test_load_without_a_results_folder(tmp_path):
    fz = fuzz.load(tmp_path / "absent")
    assert fz["targets"] == [] and fz["errors"] == []
    text = "\n".join(fuzz.markdown(report_with(fz)))
    assert "No results in" in text and "bench/fuzz.sh all" in text
    assert fuzz.summary(report_with(fz)) == []


def test_markdown_and_summary_show_the_figures(tmp_path):
    write(tmp_path, "fuzz_utf8", result("fuzz_utf8", runs=1000, exec_per_s=10))
    write(tmp_path, "fuzz_chunk", result("fuzz_chunk", runs=234, crashes=["crash-ab"]))
    report = report_with(fuzz.load(tmp_path))
    text = "\n".join(fuzz.markdown(report))
    row = next(line for line in text.splitlines() if line.startswith("| `fuzz_utf8`"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:8] == ["`fuzz_utf8`", "600", "1,000", "10", "797", "3036", "0",
                         "13.83 (max 23.41)"]
    assert "`crash-ab`" in text
    assert fuzz.summary(report) == [
        "- Fuzzing (`bench/fuzz.sh`): 2 targets, 600 s each, 1,234 inputs in all; "
        "crashes in fuzz_chunk."]


def test_the_section_is_in_the_report_after_the_benchmarks(tmp_path):
    assert sections.BENCH_SECTIONS[-1] is fuzz
    write(tmp_path, "fuzz_utf8", result("fuzz_utf8"))
    report = {"bench": {"ran": False, "runs": {}, "errors": []}, "seed_table": [],
              "scaling": {"bytes_moved": [], "sender_cpu": []}, "per_connection": None,
              "options": {"no_per_connection": True}, "fuzz": fuzz.load(tmp_path)}
    lines = markdown.summary_lines({**report, "scenarios": []})
    assert any(line.startswith("- Fuzzing (`bench/fuzz.sh`): 1 targets") for line in lines)


def test_a_report_made_before_the_section():
    assert "Not collected" in "\n".join(fuzz.markdown({"bench": {}}))
    assert fuzz.summary({"bench": {}}) == []


@pytest.mark.skipif(shutil.which("clang") is None, reason="clang is not installed")
def test_bench_fuzz_sh_writes_what_the_section_reads(tmp_path):
    """The real script, 1 s of fuzz_utf8, its JSON (written to tmp_path, not
    over the last real run's) read by load."""
    if not (REPO / "build-fuzz" / "fuzz" / "fuzz_utf8").exists():
        pytest.skip("the fuzz preset is not built (bench/fuzz.sh builds it: minutes)")
    proc = subprocess.run(["bash", str(REPO / "bench" / "fuzz.sh"), "fuzz_utf8", "1", "1"],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "CC": "clang",
                               "WIRECHECK_FUZZ_RESULTS": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    assert "fuzz_utf8" in proc.stdout and "load=" in proc.stdout
    fz = fuzz.load(tmp_path)
    assert fz["errors"] == []
    [t] = fz["targets"]
    assert t["seconds"] == 1 and t["runs"] > 0 and t["crashes"] == []
    assert t["command"] == "bench/fuzz.sh fuzz_utf8 1 1"
