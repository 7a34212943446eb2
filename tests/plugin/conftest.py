"""Fixtures of the pytest plugin's tests (pytester runs of wirecheck.plugin).

pytester itself is enabled in the root conftest.py: pytest refuses
`pytest_plugins` in a conftest below the rootdir when that conftest is loaded
late, which is the case for `pytest tests` or a bare `pytest`.
"""
import os
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PYTHON = REPO / "python"


def wirecheck_path() -> Path:
    return Path(os.environ.get("WIRECHECK_BIN") or REPO / "build" / "bin" / "wirecheck")


class Suite:
    """A scenario suite in a pytester folder, and pytest runs of it with the
    plugin loaded (-p wirecheck.plugin)."""

    def __init__(self, pytester):
        self.pytester = pytester
        self.path = pytester.path

    def scenario(self, name: str, text: str, folder: str = "s") -> Path:
        d = self.path / folder
        d.mkdir(parents=True, exist_ok=True)
        p = d / f"{name}.wcs"
        p.write_text(textwrap.dedent(text).lstrip("\n"))
        return p

    def golden(self, name: str, folder: str = "s") -> Path:
        return self.path / folder / f"{name}.golden"

    def run(self, *args):
        """pytest in this process (fast); the plugin via -p, as another
        project would load it."""
        return self.pytester.runpytest("-p", "wirecheck.plugin", "-p", "no:cacheprovider", *args)

    def run_subprocess(self, *args, timeout=120):
        return self.pytester.runpytest_subprocess(
            "-p", "wirecheck.plugin", "-p", "no:cacheprovider", *args, timeout=timeout)

    def update(self, *args, check=True):
        res = self.run("--update-goldens", *args)
        if check:
            assert res.ret == 0, res.stdout.str()
        return res


@pytest.fixture
def suite(pytester, monkeypatch):
    wc = wirecheck_path()
    if not (wc.is_file() and os.access(wc, os.X_OK)):
        pytest.skip(f"wirecheck binary not found at {wc}: build it (scripts/setup.sh --no-run)")
    # The plugin must be importable both in this process (runpytest) and in
    # a child interpreter (runpytest_subprocess, xdist workers).
    pytester.syspathinsert(PYTHON)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        filter(None, [str(PYTHON), os.environ.get("PYTHONPATH", "")])))
    # A CI runner sets CI=true; these tests write goldens in their own folder.
    monkeypatch.delenv("CI", raising=False)
    return Suite(pytester)
