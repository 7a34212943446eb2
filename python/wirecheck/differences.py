"""A foreign subject's reviewed differences from the reference goldens.

A scenario's golden is the reference stack's trace. Another stack (node:net,
libuv, a user's own) runs the same scenario and is compared with that golden;
every difference must be listed, with its reason, in one reviewed file per
subject (docs/subjects.md):

    scenarios/subjects/node.differences

Its lines:

    # a comment
    reason NAME TEXT...                  a reason that entries name
    SCENARIO FIELD FINGERPRINT REASON    one expected difference

- SCENARIO is the scenario's path below the folder that holds `subjects/`,
  without `.wcs`, and its matrix profile after `::` when it has one
  (`queue/end-large::clamp=7`); `*` is every scenario. check_scenarios()
  says which entries name no scenario or profile (the plugin runs it).
- FIELD is a section of the golden: exit, faults, peer (peer.cK with
  several connections), events, syscalls, syscalls.fired (the calls a
  rule changed), queue.
- FINGERPRINT is the first 12 hex digits of the sha256 of the subject's own
  value of that field (fingerprint() below), so that a difference that
  changes is a new difference; `*` accepts any value (for a section that is
  the stack's own by nature, such as syscalls). A `?` after it (`0123456789ab?`,
  `*?`) marks a difference the subject shows in some runs only: in the others
  that field equals the golden (the order of the subject's loop varies), so
  a run without it is not a stale entry.
- REASON is the name of a `reason` line, several names joined by `+`, or
  the reason's text itself when it has a space: one word that names no
  `reason` line (a misspelt name) is an error, as is a `+` list with one.

A difference the file does not list fails the item, and so does an entry of
the item's scenario that the run no longer shows, unless it is marked `?`
(the file must say what the stack does, not what it once did).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional

from . import golden as G

FIELDS = ("exit", "faults", "peer", "events", "syscalls", "syscalls.fired", "queue")


class DifferencesError(Exception):
    """A differences file that cannot be read: "FILE:LINE: problem"."""


@dataclass(frozen=True)
class Entry:
    scenario: str
    field: str
    fingerprint: str
    reason: str
    line: int
    sometimes: bool = False   # FINGERPRINT? : a run may match the golden instead


@dataclass
class Differences:
    path: Path
    entries: list = field(default_factory=list)

    def match(self, key: str, fld: str, fp: str) -> Optional[Entry]:
        for e in self.entries:
            if e.scenario in (key, "*") and e.field == fld and e.fingerprint in (fp, "*"):
                return e
        return None

    def of_scenario(self, key: str) -> list:
        return [e for e in self.entries if e.scenario == key]


def _field_ok(fld: str) -> bool:
    if fld in FIELDS:
        return True
    return fld.startswith("peer.c") and fld[6:].isdigit()


def parse(text: str, path: Path) -> Differences:
    reasons: dict = {}
    out = Differences(path)
    pending = []
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        words = line.split(None, 3)
        if words[0] == "reason":
            if len(words) < 3:
                raise DifferencesError(f"{path}:{no}: 'reason NAME TEXT' needs a name and a text")
            if words[1] in reasons:
                raise DifferencesError(f"{path}:{no}: reason '{words[1]}' given twice")
            reasons[words[1]] = line.split(None, 2)[2]
            continue
        if len(words) < 4:
            raise DifferencesError(f"{path}:{no}: expected SCENARIO FIELD FINGERPRINT REASON")
        scen, fld, fp, reason = words
        written, sometimes = fp, fp.endswith("?")
        fp = fp[:-1] if sometimes else fp
        if not _field_ok(fld):
            raise DifferencesError(f"{path}:{no}: unknown field '{fld}' "
                                   f"(expected {', '.join(FIELDS)} or peer.cK)")
        if fp != "*" and (len(fp) != 12 or any(c not in "0123456789abcdef" for c in fp)):
            raise DifferencesError(f"{path}:{no}: fingerprint '{written}': expected 12 hex digits or *, "
                                   f"and ? after it for a difference some runs do not show")
        pending.append((scen, fld, fp, reason, no, sometimes))
    for scen, fld, fp, reason, no, sometimes in pending:
        if not any(c.isspace() for c in reason):
            # names, not a text: each must be a reason line's
            names = reason.split("+")
            unknown = [n for n in names if n not in reasons]
            if unknown:
                raise DifferencesError(
                    f"{path}:{no}: no reason named '{unknown[0]}' (a REASON of one word names "
                    f"a 'reason NAME TEXT' line; a text of its own has spaces)")
            reason = " Also: ".join(reasons[n] for n in names)
        out.entries.append(Entry(scen, fld, fp, reason, no, sometimes))
    return out


def load(path: Path) -> Differences:
    try:
        return parse(path.read_text(), path)
    except FileNotFoundError:
        return Differences(path)


def check_scenarios(table: Differences, profiles_of: Callable[[Path], Optional[list]],
                    root: Optional[Path] = None) -> None:
    """Raises DifferencesError ("FILE:LINE: no scenario ..." / "no profile
    ...") for the first entry whose SCENARIO names no SCENARIO.wcs below
    the folder that holds subjects/, or whose ::PROFILE is not one of that
    scenario's matrix profiles, or that names no profile of a scenario that
    has a matrix (its key never matches an item). profiles_of(wcs) gives a
    scenario's profile ids ("" alone without a matrix), or None when it
    cannot be read (its collection reports that): its profile is not
    checked then. `*` is every scenario, and is not checked. root is the
    folder the keys are below: by default the one that holds subjects/
    (plugin --wirecheck-differences gives the file elsewhere)."""
    root = table.path.parent.parent if root is None else root
    for e in table.entries:
        if e.scenario == "*":
            continue
        name, _, profile = e.scenario.partition("::")
        wcs = root / f"{name}.wcs"
        where = f"{table.path}:{e.line}"
        if not name or name.startswith("/") or not wcs.is_file():
            raise DifferencesError(f"{where}: no scenario '{name}' (no {name}.wcs below {root})")
        ids = profiles_of(wcs)
        if ids is None or profile in ids:
            continue
        shown = ", ".join(ids)
        if not profile:
            raise DifferencesError(f"{where}: no profile given for scenario '{name}', whose "
                                   f"matrix has the profiles {shown}: write {name}::PROFILE")
        if ids == [""]:
            raise DifferencesError(f"{where}: no profile '{profile}': scenario '{name}' has no "
                                   f"matrix (write {name} alone)")
        raise DifferencesError(f"{where}: no profile '{profile}' in scenario '{name}' "
                               f"(its profiles: {shown})")


def find_file(scenario: Path, subject: str) -> tuple[Path, str]:
    """The differences file of a subject for a scenario: subjects/NAME.differences
    in the scenario's folder or the nearest parent that has one; else (the
    file does not exist yet) in the nearest folder that has a subjects/
    folder, the other subjects' files' (else the scenario's own folder);
    and the scenario's key below that folder."""
    scenario = scenario.resolve()
    name = f"{subject}.differences"
    parents = scenario.parents
    parent = next((p for p in parents if (p / "subjects" / name).is_file()), None)
    if parent is None:
        parent = next((p for p in parents if (p / "subjects").is_dir()), scenario.parent)
    candidate = parent / "subjects" / name
    key = scenario.relative_to(parent).with_suffix("").as_posix()
    return candidate, key


def _canon(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def value_of(g: G.Golden, fld: str):
    """The subject's value of one field, as the fingerprint sees it."""
    if fld == "exit":
        return g.exit
    if fld == "faults":
        return g.faults
    if fld == "events":
        return g.events
    if fld == "syscalls":
        return g.syscalls
    if fld == "queue":
        return g.queue
    if fld == "syscalls.fired":
        return {"fired": g.fired, "calls": g.fired_calls}
    if fld == "peer" and not g.multi:
        return [list(p.key()) for p in g.peers]
    if fld == "peer":
        return [list(p.key()) for p in g.peers]
    i = int(fld[6:])
    return list(g.peers[i].key()) if i < len(g.peers) else None


def fingerprint(g: G.Golden, fld: str) -> str:
    return hashlib.sha256(_canon(value_of(g, fld)).encode()).hexdigest()[:12]


def field_name(diff: G.Difference) -> str:
    """The field of a golden.Difference as the file names it."""
    return diff.field.replace(" ", ".")


@dataclass
class Verdict:
    explained: list   # (Difference, Entry)
    unexplained: list  # (Difference, field, fingerprint)
    stale: list       # entries of this scenario the run did not show


def judge(diffs: Iterable[G.Difference], actual: G.Golden, table: Differences,
          key: str) -> Verdict:
    explained, unexplained, used = [], [], set()
    seen = set()
    for d in diffs:
        fld = field_name(d)
        fp = fingerprint(actual, fld)
        e = table.match(key, fld, fp)
        if e is None:
            unexplained.append((d, fld, fp))
        else:
            explained.append((d, e))
            used.add(e)
        seen.add(fld)
    stale = [e for e in table.of_scenario(key) if e not in used and not e.sometimes]
    return Verdict(explained, unexplained, stale)
