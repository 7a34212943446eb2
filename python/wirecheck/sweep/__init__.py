"""Fault sweeps (docs/sweeps.md): fail the k-th writing call of a scenario
with each fault in turn, k = 1..K, and the call that carries byte N of
connection C for a few N spread over each stream, and judge every run by
invariants against a clean run, not by a golden (SQLite's
do_one_faultsim_test).

    python3 -m wirecheck.sweep FILE... [-k K] [-b B] [-j N] [--output FILE]
    wirecheck sweep FILE...              (the same, through the harness)

The rooms: catalog.py (the faults and the cells), invariants.py (the
invariants), engine.py (the runs), cli.py (the command line),
pytest_items.py (the cells as pytest items, --wirecheck-sweep) and
report.py (the report's sweep section alone). What a scenario declares
for the sweep (sweep-declare, allow-half-open) is read from `wirecheck
check --json`, never parsed here.
"""
from .. import runner
from .catalog import (BYTE_CONNS, CLAMPS, DEATH_SIGNAL, FAULTS, READ_FAULTS, READING,
                      WRITING, Cell, byte_positions, cells, reading_calls, writing_calls)
from .invariants import Declaration, declaration, judge
from .engine import EOF_HALF_OPEN_TIMEOUT, Result, Sweep, sweep_files
from .cli import main, output_problem

__all__ = ["BYTE_CONNS", "CLAMPS", "DEATH_SIGNAL", "FAULTS", "READ_FAULTS", "READING",
           "WRITING", "Cell", "byte_positions", "cells", "reading_calls", "writing_calls",
           "Declaration", "declaration", "judge", "EOF_HALF_OPEN_TIMEOUT", "Result", "Sweep",
           "sweep_files", "main", "output_problem", "runner"]
