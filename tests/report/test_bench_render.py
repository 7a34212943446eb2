"""python3 -m wirecheck.report.render: a benchmark's JSON (the only thing a
bench in bench/ writes) shown through its report section, the one renderer
of its figures."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))
BIN = Path(os.environ.get("WIRECHECK_BIN", REPO / "build" / "bin" / "wirecheck")).parent

from wirecheck.report.render import render  # noqa: E402


def render_cli(kind: str, data) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wirecheck.report.render", kind, "-"],
                          input=data if isinstance(data, str) else json.dumps(data),
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO / "python")})


@pytest.mark.skipif(not (BIN / "bytes_moved").exists(), reason="build/bin/bytes_moved missing")
def test_bytes_moved_json_renders_as_the_seed_table():
    proc = subprocess.run([str(BIN / "bytes_moved"), "--max-mib", "8"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["memmove_equals_closed_form"] is True
    out = render_cli("bytes_moved", proc.stdout)
    assert out.returncode == 0, out.stderr
    assert out.stdout == render("bytes_moved", data)
    assert "| 4 MiB, 4 KiB | 1,023 | 2,141,196,288 | 0 |" in out.stdout


def test_gate_cost_json_renders_its_table():
    data = {"setup": "gate_cost: 3 rounds x 1024 sends of 1 byte per variant",
            "rows": [{"variant": "direct", "median_ns": 1500.0, "median_diff_ns": 0.0},
                     {"variant": "disarmed", "median_ns": 1504.5, "median_diff_ns": 4.5}]}
    out = render_cli("gate_cost", data)
    assert out.returncode == 0, out.stderr
    assert "| disarmed | 1504.5 | +4.5 |" in out.stdout


def test_bad_input_is_a_usage_error():
    out = render_cli("bytes_moved", "not json")
    assert out.returncode == 2 and "wirecheck.report.render" in out.stderr
    out = render_cli("no_such_kind", "{}")
    assert out.returncode == 2
