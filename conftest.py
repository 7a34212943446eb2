"""Root conftest: makes the wirecheck package importable and loads its pytest
plugin, so that `python3 -m pytest scenarios` runs every scenario against its
goldens (docs/pytest-plugin.md).

Another project loads the plugin with `-p wirecheck.plugin` and
PYTHONPATH=<wirecheck>/python instead.
"""
import sys
from pathlib import Path

_PYTHON = str(Path(__file__).resolve().parent / "python")
if _PYTHON not in sys.path:
    sys.path.insert(0, _PYTHON)

# pytester is for tests/plugin. It is declared here and not in
# tests/plugin/conftest.py because pytest refuses `pytest_plugins` in a
# conftest below the rootdir whenever that conftest is loaded late (as it is
# for `pytest tests` or a bare `pytest`).
pytest_plugins = ["wirecheck.plugin", "pytester"]

# The end-to-end tests' own scenarios are inputs of tests/e2e/test_run.py,
# not suite scenarios: they have no goldens and some crash on purpose.
collect_ignore_glob = ["tests/e2e/scenarios/*", "build-*"]
