"""The behaviours of the scenario suite, in one table.

A scenario names its behaviour on its `behaviour` line. This table is the one
place that says, per behaviour, its title, its legacy variant, its scenario
folder and its report section; the pytest plugin (its markers), the report
(its headings, its tables' first figure, its summary) and the docs (the table
in docs/pytest-plugin.md, printed by `python3 -m wirecheck.behaviours` and
checked against this table by tests/plugin) all read it. Adding a behaviour
is one entry here and, for its own figure in the report, one module in
wirecheck/report/sections/ (without one, the report uses the generic section:
sends).

A scenario may declare a behaviour that is not in the table: the plugin
registers its marker when it collects it, and the report titles it by its
name.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Behaviour:
    """One behaviour of the suite.

    name: the `behaviour` line's name, and the pytest marker.
    title: the heading in the report and the marker's description.
    legacy: the `--variant` the suite's scenarios of this behaviour compare
        the fixed code with (their `legacy` line), None when there is none yet.
    folder: the scenarios' folder under scenarios/.
    section: the module of wirecheck.report.sections that renders the
        behaviour's figure; None for the generic one (sends).
    """
    name: str
    title: str
    legacy: Optional[str]
    folder: str
    section: Optional[str]


BEHAVIOURS: tuple[Behaviour, ...] = (
    Behaviour("queue", "Pending-write queue", "queue=memmove", "queue", "queue"),
    Behaviour("batching", "Write batching", "batch=off", "batching", "batching"),
    Behaviour("half_open", "Half-open EOF order", "halfopen=poll-first", "half-open", "half_open"),
    Behaviour("chunked", "Chunked transfer encoding", None, "chunked", None),
    Behaviour("websocket", "WebSocket framing", None, "websocket", None),
    Behaviour("rules", "Rules the mutation pass pins", None, "rules", None),
)

BY_NAME = {b.name: b for b in BEHAVIOURS}


def get(name: Optional[str]) -> Optional[Behaviour]:
    """The registry's entry for a behaviour name; None when it has none."""
    return BY_NAME.get(name or "")


def title(name: Optional[str]) -> str:
    """A behaviour's title: the registry's, else the name itself, else
    'No behaviour declared' for a scenario without a `behaviour` line."""
    b = get(name)
    if b is not None:
        return b.title
    return name or "No behaviour declared"


def marker_line(b: Behaviour) -> str:
    """The pytest `markers` ini line of a behaviour."""
    return f"{b.name}: wirecheck scenarios of behaviour {b.name}: {b.title} (scenarios/{b.folder})"


def markdown_table() -> str:
    """The registry as the Markdown table of docs/pytest-plugin.md."""
    rows = ["| behaviour (marker) | title | legacy variant | scenarios | report section |",
            "|---|---|---|---|---|"]
    for b in BEHAVIOURS:
        rows.append(f"| `{b.name}` | {b.title} | "
                    f"{f'`{b.legacy}`' if b.legacy else 'none yet'} | `scenarios/{b.folder}/` | "
                    f"{f'`wirecheck/report/sections/{b.section}.py`' if b.section else 'generic (sends)'} |")
    return "\n".join(rows)


if __name__ == "__main__":
    sys.stdout.write(markdown_table() + "\n")
