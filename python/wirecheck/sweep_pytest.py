"""The sweep as pytest items (`--wirecheck-sweep`, docs/sweeps.md): one
item per (variant, call k, fault) and per clamp, so that pytest-xdist
spreads them over local cores (`-n 2`) or other machines (`--tx ssh=...`).

Items are made without running anything (k goes up to --wirecheck-sweep-k),
so that every xdist worker collects the same ones; each item runs the clean
run once per worker (cached) and is skipped when its k is past the clean
run's writing calls."""
from __future__ import annotations

import shlex
from typing import Optional

import pytest

from . import runner, sweep

_CLEAN: dict = {}


def _sweep_for(path: str, variants: tuple, binary, valgrind: bool) -> sweep.Sweep:
    key = (path, variants, str(binary), valgrind)
    if key not in _CLEAN:
        _CLEAN[key] = sweep.Sweep(path, variants=variants, binary=binary, valgrind=valgrind)
    return _CLEAN[key]


class SweepFailure(Exception):
    pass


class SweepItem(pytest.Item):
    def __init__(self, *, scenario: str, variants: tuple, cell: sweep.Cell,
                 binary, valgrind: bool, **kw):
        super().__init__(**kw)
        self.scenario = scenario
        self.variants = variants
        self.cell = cell
        self.binary = binary
        self.valgrind = valgrind

    def runtest(self):
        s = _sweep_for(self.scenario, self.variants, self.binary, self.valgrind)
        calls = sweep.writing_calls(s.run_clean())
        if self.cell.k > calls:
            pytest.skip(f"the clean run makes {calls} writing call(s)")
        res = s.run_cell(self.cell)
        if res.broken:
            raise SweepFailure("\n".join(
                [f"{self.cell.id} ({self.cell.kind}) broke {len(res.broken)} invariant(s):"]
                + [f"  - {b}" for b in res.broken]
                + [f"reproduce: {shlex.join(res.command)}"]))

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, SweepFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"sweep {self.scenario} {self.cell.id}"


def collect(parent, meta: dict, scenario: str, *, binary, valgrind: bool,
            k_max: int) -> list:
    """The sweep items of one scenario: the fixed variant, and the legacy
    one when the scenario names it."""
    sets = [("fixed", ())]
    legacy: Optional[dict] = meta.get("legacy")
    if legacy:
        sets.append(("legacy", (legacy["variant"],)))
    items = []
    for name, variants in sets:
        for cell in sweep.cells(k_max, k_max):
            items.append(SweepItem.from_parent(
                parent, name=f"sweep::variant={name}::{cell.id}", scenario=scenario,
                variants=variants, cell=cell, binary=binary, valgrind=valgrind))
    return items
