"""The report takes a suite's runs from a record (wirecheck.record,
`--from-record DIR`) instead of running them again, and runs what the
record lacks."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

pytest.importorskip("matplotlib", reason="python3-matplotlib is not installed")

from wirecheck import record, runner  # noqa: E402

SCENARIO = REPO / "scenarios" / "queue" / "epipe-prefix.wcs"


def wirecheck_bin() -> Path:
    return Path(os.environ.get("WIRECHECK_BIN", REPO / "build" / "bin" / "wirecheck"))


def counting_wirecheck(tmp_path: Path) -> tuple[Path, Path]:
    """A wirecheck that notes each `run` in a log, then runs the real one."""
    log = tmp_path / "runs.log"
    fake = tmp_path / "wirecheck"
    fake.write_text(f"#!/bin/sh\n[ \"$1\" = run ] && echo \"$*\" >> '{log}'\n"
                    f"exec '{wirecheck_bin()}' \"$@\"\n")
    fake.chmod(0o755)
    return fake, log


def report(tmp_path: Path, binary: Path, *extra: str) -> dict:
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    proc = subprocess.run([sys.executable, "-m", "wirecheck.report", "-q", "--no-bench",
                           "--no-per-connection", "--out", str(out), "--paths", str(SCENARIO),
                           "--wirecheck-bin", str(binary), *extra],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads((out / "report.json").read_text())


def test_recorded_runs_are_not_run_again_and_missing_ones_are(tmp_path):
    meta = runner.check(SCENARIO, wirecheck_bin())
    (prof,) = runner.profiles(meta)
    rec = tmp_path / "record"
    # The fixed run recorded, with a mark the real run would not have.
    trace = runner.run(SCENARIO, prof.flags, binary=wirecheck_bin())
    trace["recorded"] = "yes"
    record.write(rec, SCENARIO, prof.id, "fixed", prof.flags, 0.25, trace)
    fake, log = counting_wirecheck(tmp_path)
    rep = report(tmp_path, fake, "--from-record", str(rec))
    (p,) = rep["scenarios"][0]["profiles"]
    assert p["fixed"]["trace"]["recorded"] == "yes" and p["fixed"]["seconds"] == 0.25
    assert "recorded" not in p["legacy"]["trace"]
    # Only the legacy run was made.
    runs = log.read_text().splitlines()
    assert len(runs) == 1 and "--variant" in runs[0]


def test_a_record_made_with_other_flags_is_not_used(tmp_path):
    meta = runner.check(SCENARIO, wirecheck_bin())
    (prof,) = runner.profiles(meta)
    rec = tmp_path / "record"
    trace = runner.run(SCENARIO, prof.flags, binary=wirecheck_bin())
    record.write(rec, SCENARIO, prof.id, "fixed", [*prof.flags, "--clamp-send", "3"], 0.25, trace)
    fake, log = counting_wirecheck(tmp_path)
    report(tmp_path, fake, "--from-record", str(rec))
    assert len(log.read_text().splitlines()) == 2


def test_a_missing_record_folder_is_an_error(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    proc = subprocess.run([sys.executable, "-m", "wirecheck.report", "--no-bench",
                           "--out", str(tmp_path / "out"), "--paths", str(SCENARIO),
                           "--from-record", str(tmp_path / "nothing")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert f"--from-record {tmp_path / 'nothing'}: no such folder" in proc.stderr


def test_the_record_key_is_the_resolved_path(tmp_path):
    rel = os.path.relpath(SCENARIO, Path.cwd())
    assert record.key(rel, "clamp=7", "fixed") == record.key(SCENARIO, "clamp=7", "fixed")
    assert record.key(SCENARIO, "clamp=7", "fixed") != record.key(SCENARIO, "clamp=7", "legacy")
    with pytest.raises(ValueError):
        record.key(SCENARIO, None, "other")
