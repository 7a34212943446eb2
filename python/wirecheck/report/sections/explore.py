"""The explorer (docs/explore.md): what `wirecheck explore --report FILE`
wrote, read from reports/explore/explore.json (or --explore-json): per
behaviour, the examples tried, the seeds, the time, and each failure with
its shrunk size and the file that reproduces it."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from ...runner import REPO
from ..fmt import fmt_int, md_table

NAME = "explore"
DEFAULT_JSON = REPO / "reports" / "explore" / "explore.json"
FIELDS = {"seed": int, "per_batch": int, "subject": str, "seconds": (int, float),
          "behaviours": dict}
BEHAVIOUR_FIELDS = {"examples": int, "batches": int, "seconds": (int, float),
                    "failures": list, "seeds": list}


def load(path: Optional[str | Path] = None) -> Optional[dict]:
    """The explorer's report; None when there is none. A file that is not
    one raises ValueError naming the file and the field."""
    p = Path(path) if path else DEFAULT_JSON
    if not p.is_file():
        if path:
            raise ValueError(f"{p}: no such explore report")
        return None
    data = json.loads(p.read_text())
    for k, t in FIELDS.items():
        if not isinstance(data.get(k), t) or isinstance(data.get(k), bool):
            raise ValueError(f"{p}: field '{k}' missing or not {t}")
    for b, st in data["behaviours"].items():
        for k, t in BEHAVIOUR_FIELDS.items():
            if not isinstance(st.get(k), t) or isinstance(st.get(k), bool):
                raise ValueError(f"{p}: behaviour '{b}': field '{k}' missing or not {t}")
    data["file"] = str(p.relative_to(REPO)) if p.is_relative_to(REPO) else str(p)
    return data


def _seeds(seeds: list) -> str:
    if not seeds:
        return "none"
    return f"{min(seeds)}..{max(seeds)}" if len(seeds) > 1 else str(seeds[0])


def summary(report: dict) -> list[str]:
    ex = report.get("explore")
    if not ex:
        return []
    bs = ex["behaviours"]
    fails = sum(len(st["failures"]) for st in bs.values())
    return [f"- Exploration (`wirecheck explore`, {ex['subject']}): "
            f"{fmt_int(sum(st['examples'] for st in bs.values()))} generated cases over "
            f"{len(bs)} behaviours, {fails} failures."]


def markdown(report: dict) -> list[str]:
    ex = report.get("explore")
    L = ["", "## Exploration: generated operations judged by a model and real peers", ""]
    if not ex:
        return L + ["No explore report: run `wirecheck explore all --budget SECONDS "
                    "--report reports/explore/explore.json` (docs/explore.md)."]
    L += [f"From `{ex['file']}`: subject {ex['subject']}, seeds from {ex['seed']}, "
          f"{ex['per_batch']} examples per batch (batch i uses seed {ex['seed']}+i), "
          f"{'fixed and legacy strategies' if ex.get('legacy', True) else 'fixed strategies'}"
          f", {ex['seconds']:.0f} s in all. An example is one generated scenario run and "
          "judged; the count includes the runs made while shrinking a failure.", ""]
    rows = []
    for b, st in ex["behaviours"].items():
        shrunk = ", ".join(str(f["operations"]) for f in st["failures"]) or "-"
        rows.append([b, fmt_int(st["examples"]), str(st["batches"]), _seeds(st["seeds"]),
                     f"{st['seconds']:.0f}", str(len(st["failures"])), shrunk])
    L += md_table(["behaviour", "examples", "batches", "seeds", "s (all jobs)", "failures",
                   "shrunk to (operations)"], rows, "lrrlrrl")
    for b, st in ex["behaviours"].items():
        for f in st["failures"]:
            L += ["", f"- {b}, seed {f['seed']}: `{f['file']}` ({f['operations']} "
                  f"operations): {f['problems'][0]}"]
    return L
