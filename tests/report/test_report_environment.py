"""The report's header names the checkout's commit and whether it had
uncommitted changes: read before the report writes anything, so that a
report written inside the checkout (reports/sample) does not count its own
files as changes."""
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

pytest.importorskip("matplotlib", reason="python3-matplotlib is not installed")

from wirecheck.report import cli  # noqa: E402


def test_git_state_is_read_before_the_output_is_written(monkeypatch, tmp_path):
    if not (REPO / "build" / "bin" / "wirecheck").is_file():
        pytest.skip("build/bin/wirecheck is not built")
    calls = []
    real_clear, real_env = cli.clear_previous, cli.environment

    def clear(out):
        calls.append("clear")
        return real_clear(out)

    def environment(binary):
        calls.append("environment")
        return real_env(binary)

    monkeypatch.setattr(cli, "clear_previous", clear)
    monkeypatch.setattr(cli, "environment", environment)
    rc = cli.main(["--no-bench", "--no-per-connection", "-q",
                   "--paths", str(REPO / "scenarios" / "queue" / "epipe-prefix.wcs"),
                   "--out", str(tmp_path / "out")])
    assert rc == 0
    assert calls == ["environment", "clear"]
