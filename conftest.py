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

# An installed wirecheck (pip, the .deb) registers the plugin through its
# pytest11 entry point before this file is read, and would be what these
# tests test. The entry point is named wirecheck.plugin, so the line below
# does not register it twice; but the code would not be this checkout's.
_LOADED = sys.modules.get("wirecheck")
if _LOADED is not None and not str(Path(_LOADED.__file__).resolve()).startswith(_PYTHON + "/"):
    raise RuntimeError(
        f"this checkout's tests would run the installed wirecheck package "
        f"({Path(_LOADED.__file__).parent}), which pytest loaded by its pytest11 entry "
        f"point, instead of {_PYTHON}/wirecheck: run them with a python3 that does not "
        f"have it installed (uninstall it, or leave the venv)")

# pytester is for tests/plugin. It is declared here and not in
# tests/plugin/conftest.py because pytest refuses `pytest_plugins` in a
# conftest below the rootdir whenever that conftest is loaded late (as it is
# for `pytest tests` or a bare `pytest`).
pytest_plugins = ["wirecheck.plugin", "pytester"]

# The end-to-end tests' own scenarios are inputs of tests/e2e/test_run.py,
# not suite scenarios: they have no goldens and some crash on purpose. The
# explorer's reproducers (reports/explore, explore-out) are not suite
# scenarios either: `wirecheck explore --check` judges them.
collect_ignore_glob = ["tests/e2e/scenarios/*", "build-*", "reports/*", "explore-out/*"]
