"""The plugin loads where only its Debian dependencies are: pytest loads it
for every run once the package is installed (its pytest11 entry point), so
an import of what only the explorer or the report needs would break every
pytest run on the machine. Found by tests/install/deb-fresh.sh: on a fresh
Debian the .deb's plugin failed on `import hypothesis`."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PYTHON = Path(__file__).resolve().parents[2] / "python"

# Modules blocked the way a missing one fails: import raises ImportError.
BLOCK = """
import sys
class Missing:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {names!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}")
sys.meta_path.insert(0, Missing())
"""


def _python(code: str, blocked: set) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCK.format(names=blocked) + code],
                          capture_output=True, text=True, cwd=PYTHON)


OPTIONAL = {"hypothesis", "h11", "wsproto", "websockets", "matplotlib", "xdist"}


def test_the_plugin_and_its_options_load_without_the_optional_modules():
    proc = _python("import pytest, wirecheck.plugin\n"
                   "pytest.main(['--help', '-p', 'wirecheck.plugin', '-p', 'no:xdist'])",
                   OPTIONAL)
    assert proc.returncode == 0, proc.stderr
    assert "--wirecheck-explore" in proc.stdout


def test_wirecheck_explore_names_the_missing_package():
    proc = _python("import sys; sys.argv = ['wirecheck explore', 'queue']\n"
                   "import runpy; runpy.run_module('wirecheck.explore', run_name='__main__')",
                   {"hypothesis"})
    assert proc.returncode == 1
    assert "needs python3-hypothesis (apt-get install python3-hypothesis)" in proc.stderr
    assert "Traceback" not in proc.stderr
