"""wirecheck: run socket-stack scenarios, compare their traces with goldens.

The C harness (`wirecheck run`) does the work; this package finds it, runs it,
expands scenario matrices, keeps goldens, and is a pytest plugin
(`wirecheck.plugin`). See docs/pytest-plugin.md.
"""
from .runner import (ExecResult, Profile, WirecheckError, check, exec_program,
                     find_binary, profiles, run, run_capture)
from .golden import GoldenError
from .api import Scenario

__all__ = ["ExecResult", "Profile", "WirecheckError", "check", "exec_program",
           "find_binary", "profiles", "run", "run_capture", "GoldenError", "Scenario"]
