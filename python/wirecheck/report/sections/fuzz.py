"""Fuzzing (tests/fuzz, docs/fuzzing.md): the figures of the last
libFuzzer run of each target, as bench/fuzz.sh wrote them
(build-fuzz/results/TARGET.json: runs, exec/s, coverage, crashes, the load
average during the run). The report does not fuzz: a run takes minutes per
target; it reads what bench/fuzz.sh left (load), and says so when nothing."""
from __future__ import annotations

import json
from pathlib import Path

from ...runner import REPO
from ..fmt import fmt_int, fmt_load, md_table, rel

RESULTS = REPO / "build-fuzz" / "results"
# What a result file must hold, and each field's type.
FIELDS = {"target": str, "seconds": int, "runs": int, "exec_per_s": int, "cov": int,
          "ft": int, "crashes": list, "load1_mean": (int, float), "load1_max": (int, float),
          "started": str, "command": str}


def _check(path: Path, d) -> str | None:
    """Why a result file is no result, or None."""
    if not isinstance(d, dict):
        return f"{rel(path)}: not a JSON object"
    for k, t in FIELDS.items():
        if k not in d:
            return f"{rel(path)}: no field '{k}'"
        if isinstance(d[k], bool) or not isinstance(d[k], t):
            return f"{rel(path)}: field '{k}' is {type(d[k]).__name__}"
    if not all(isinstance(c, str) for c in d["crashes"]):
        return f"{rel(path)}: field 'crashes' holds other than file names"
    if d["target"] != path.stem:
        return f"{rel(path)}: target '{d['target']}' in a file named for '{path.stem}'"
    return None


def load(results: Path = RESULTS) -> dict:
    """{dir, targets (sorted by name), errors}: every *.json in results; a
    file that is not a result is an error naming it, not a row."""
    out: dict = {"dir": rel(results), "targets": [], "errors": []}
    if not results.is_dir():
        return out
    for path in sorted(results.glob("*.json")):
        try:
            d = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            out["errors"].append(f"{rel(path)}: {e}")
            continue
        why = _check(path, d)
        if why:
            out["errors"].append(why)
        else:
            out["targets"].append({k: d[k] for k in FIELDS})
    return out


def summary(report: dict) -> list[str]:
    fz = report.get("fuzz")
    if not fz or not fz["targets"]:
        return []
    ts = fz["targets"]
    crashed = [t["target"] for t in ts if t["crashes"]]
    secs = sorted({t["seconds"] for t in ts})
    line = (f"- Fuzzing (`bench/fuzz.sh`): {len(ts)} targets, "
            + "/".join(str(s) for s in secs) + " s each, "
            + fmt_int(sum(t["runs"] for t in ts)) + " inputs in all; "
            + (f"crashes in {', '.join(crashed)}" if crashed else "0 crashes"))
    return [line + "."]


def markdown(report: dict) -> list[str]:
    fz = report.get("fuzz")
    L = ["", "## Fuzzing: libFuzzer runs of the parsers and codecs", ""]
    if fz is None:
        return L + ["Not collected (a report made before the fuzz section)."]
    if not fz["targets"] and not fz["errors"]:
        return L + [f"No results in `{fz['dir']}`: run `bench/fuzz.sh all SECONDS 1` "
                    "(docs/fuzzing.md)."]
    L += [f"The last run of each target by `bench/fuzz.sh` (results in `{fz['dir']}`), "
          "built with the `fuzz` preset (libFuzzer, ASan, UBSan). Coverage: libFuzzer's "
          "edges (cov) and features (ft). Load: the 1-minute load average during the "
          "run, sampled every 5 s, on a machine whose cores other work shares.", ""]
    rows = [[f"`{t['target']}`", str(t["seconds"]), fmt_int(t["runs"]),
             fmt_int(t["exec_per_s"]), str(t["cov"]), str(t["ft"]),
             ", ".join(f"`{c}`" for c in t["crashes"]) or "0",
             f"{fmt_load(t['load1_mean'])} (max {fmt_load(t['load1_max'])})",
             t["started"], f"`{t['command']}`"] for t in fz["targets"]]
    L += md_table(["target", "seconds", "runs", "exec/s", "cov", "ft", "crashes",
                   "load", "started (UTC)", "command"], rows, "lrrrrrllll")
    if fz["errors"]:
        L += ["", "Not read: " + "; ".join(fz["errors"]) + "."]
    return L
