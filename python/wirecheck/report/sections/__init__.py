"""The report's sections: one module per behaviour (its figure, the title of
its plots' middle panel and its summary line; found through the behaviour
registry, wirecheck.behaviours, generic.py for a behaviour without one), and
one module per benchmark (bench_*.py: its Markdown section and its summary
lines, in BENCH_SECTIONS' order)."""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Optional

from ... import behaviours
from . import (bench_batching, bench_bytes_moved, bench_chat, bench_gate_cost,
               bench_per_connection, bench_sender_cpu, generic)
from . import bench_chunked, bench_subjects, fuzz, sweep
from .. import compare_builds
from . import bench_ws

# The benchmarks' sections, in the order report.md shows them and their
# summary lines: then the fault sweep, fuzzing and the comparison of two
# builds (--base-bin).
BENCH_SECTIONS = (bench_bytes_moved, bench_sender_cpu, bench_batching, bench_chat,
                  bench_per_connection, bench_gate_cost, bench_subjects, bench_chunked, bench_ws,
                  sweep, fuzz, compare_builds)


def behaviour_section(name: Optional[str]) -> ModuleType:
    """The section module of a behaviour: the registry's, else generic."""
    b = behaviours.get(name)
    if b is None or b.section is None:
        return generic
    return importlib.import_module(f"{__name__}.{b.section}")

# The mutation pass's last result, after the benchmarks, then
# the explorer's last report (docs/explore.md).
from . import mutants  # noqa: E402
from . import explore  # noqa: E402
BENCH_SECTIONS += (mutants, explore)
