"""The sweep as pytest items (`--wirecheck-sweep`, docs/sweeps.md): one
item per (variant, call k, fault) and per clamp, so that pytest-xdist
spreads them over local cores (`-n 2`) or other machines (`--tx ssh=...`).

Items are made without running anything (k goes up to --wirecheck-sweep-k,
a byte cell is the j-th of --wirecheck-sweep-bytes positions), so that every
xdist worker collects the same ones; each item runs the clean run once per
worker (cached) and is skipped when its k is past the clean run's writing
(or reading) calls, or its connection has no such byte. A byte cell takes
its byte from the fixed strategy's clean run, for the legacy items too."""
from __future__ import annotations

import shlex
from typing import Optional

import pytest

from .. import runner
from . import catalog
from .engine import Sweep

_CLEAN: dict = {}


def _sweep_for(path: str, variants: tuple, binary, valgrind: bool,
               base_flags: tuple = ()) -> Sweep:
    key = (path, variants, str(binary), valgrind, base_flags)
    if key not in _CLEAN:
        source = None if not variants else _sweep_for(path, (), binary, valgrind, base_flags)
        _CLEAN[key] = Sweep(path, variants=variants, binary=binary, valgrind=valgrind,
                            byte_source=source, base_flags=base_flags)
    return _CLEAN[key]


class SweepFailure(Exception):
    pass


class SweepItem(pytest.Item):
    def __init__(self, *, scenario: str, variants: tuple, cell: catalog.Cell,
                 binary, valgrind: bool, n_bytes: int = 0, base_flags: tuple = (), **kw):
        super().__init__(**kw)
        self.scenario = scenario
        self.variants = variants
        self.cell = cell
        self.binary = binary
        self.valgrind = valgrind
        self.n_bytes = n_bytes
        self.base_flags = base_flags

    def runtest(self):
        s = _sweep_for(self.scenario, self.variants, self.binary, self.valgrind,
                       self.base_flags)
        clean = s.run_clean()
        cell = self.cell
        if cell.conn is not None:
            cell = s.place(cell, self.n_bytes)
            if cell is None:
                pytest.skip(f"connection {self.cell.conn} of the clean run has no byte "
                            f"position {self.cell.pos} of {self.n_bytes}")
        elif cell.fault in catalog.READ_FAULTS:
            calls = catalog.reading_calls(clean)
            if cell.k > calls:
                pytest.skip(f"the clean run makes {calls} reading call(s)")
        else:
            calls = catalog.writing_calls(clean)
            if cell.k > calls:
                pytest.skip(f"the clean run makes {calls} writing call(s)")
        res = s.run_cell(cell)
        if res.broken:
            raise SweepFailure("\n".join(
                [f"{cell.id} ({cell.kind}) broke {len(res.broken)} invariant(s):"]
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
    n_bytes = parent.config.getoption("wirecheck_sweep_bytes", 3)
    # A scenario with a matrix is swept as its first profile (engine.Sweep).
    base_flags = tuple(runner.profiles(meta)[0].flags)
    items = []
    for name, variants in sets:
        todo = catalog.cells(k_max, k_max, reads=k_max)
        todo += [catalog.Cell(f, conn=c, pos=j) for c in range(catalog.BYTE_CONNS)
                 for j in range(n_bytes) for f in catalog.FAULTS]
        for cell in todo:
            items.append(SweepItem.from_parent(
                parent, name=f"sweep::variant={name}::{cell.id}", scenario=scenario,
                variants=variants, cell=cell, binary=binary, valgrind=valgrind,
                n_bytes=n_bytes, base_flags=base_flags))
    return items
