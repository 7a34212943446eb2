"""The behaviours the explorer has generators for, by their names in the
suite's registry (wirecheck.behaviours), and the short names the command
line takes too. Kept apart from the generators so that the pytest plugin can
name them in its options without importing hypothesis, which only
`--wirecheck-explore` and `wirecheck explore` need."""
from __future__ import annotations

BEHAVIOURS = ("queue", "batching", "half_open", "chunked", "websocket")
ALIASES = {"half-open": "half_open", "ws": "websocket"}
# What the explorer imports that the rest of the package does not.
NEEDS = {"hypothesis": "python3-hypothesis", "h11": "python3-h11",
         "wsproto": "python3-wsproto", "websockets": "python3-websockets"}


def canonical(name: str) -> str:
    """The registry's name of a behaviour given by either name; ValueError
    for one with no generator."""
    name = ALIASES.get(name, name)
    if name not in BEHAVIOURS:
        raise ValueError(f"unknown behaviour {name!r}: one of {', '.join(BEHAVIOURS)} "
                         f"(or {', '.join(ALIASES)}), or all")
    return name


def missing_modules() -> list[str]:
    """The Debian packages of the explorer's imports that fail to import
    (the explorer imports them next anyway)."""
    import importlib
    missing = []
    for mod, pkg in NEEDS.items():
        try:
            importlib.import_module(mod)
        except ImportError:
            missing.append(pkg)
    return missing
