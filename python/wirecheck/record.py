"""A record of a suite's runs, so that the report need not run them again.

`pytest scenarios --wirecheck-record DIR` writes one file per item run into
DIR: the scenario, its profile, the side (fixed or legacy), the seconds the
run took and its whole trace. `python3 -m wirecheck.report --from-record
DIR` takes each profile's runs from there and runs only what the record
lacks. A file per item, written whole under a temporary name and renamed:
pytest-xdist's workers write at once without sharing a file, and a run cut
short leaves no half-written record.

Only plain runs are recorded (the reference subject, no valgrind, no
repeat): those are the runs the report makes.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Optional, Sequence

SIDES = ("fixed", "legacy")


def key(scenario: str | os.PathLike, profile_id: Optional[str], side: str) -> str:
    """The record's file name for one run: the scenario by its resolved
    path, so that pytest's and the report's ways of naming it agree."""
    if side not in SIDES:
        raise ValueError(f"side must be one of {SIDES}, not {side!r}")
    text = "\0".join((str(Path(scenario).resolve()), profile_id or "", side))
    return hashlib.sha256(text.encode()).hexdigest()[:32] + ".json"


def write(folder: str | os.PathLike, scenario: str | os.PathLike, profile_id: Optional[str],
          side: str, flags: Sequence[str], seconds: float, trace: dict) -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / key(scenario, profile_id, side)
    entry = {"scenario": str(Path(scenario).resolve()), "profile": profile_id, "side": side,
             "flags": list(flags), "seconds": seconds, "trace": trace}
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".part-")
    try:
        with os.fdopen(fd, "w") as f:
            # dumps, not dump: the same text, from json's C encoder; dump
            # runs the Python one, with a write call per token.
            f.write(json.dumps(entry))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read(folder: str | os.PathLike, scenario: str | os.PathLike, profile_id: Optional[str],
         side: str, flags: Sequence[str]) -> Optional[tuple[float, dict]]:
    """(seconds, trace) of that run, or None when the record has none made
    with the same flags."""
    path = Path(folder) / key(scenario, profile_id, side)
    try:
        entry = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: not a wirecheck record: {e}") from None
    if entry.get("flags") != list(flags) or not isinstance(entry.get("trace"), dict):
        return None
    return float(entry["seconds"]), entry["trace"]


def clear(folder: str | os.PathLike) -> None:
    """Removes a previous record's files (only those: the folder may be
    shared with other things)."""
    folder = Path(folder)
    if not folder.is_dir():
        return
    for p in folder.iterdir():
        if p.suffix == ".json" and len(p.stem) == 32 or p.name.startswith(".part-"):
            p.unlink()
