"""wirecheck explore BEHAVIOUR... : generated scenarios judged by a model
and by real peers, each failure shrunk to a scenario file (docs/explore.md).

    wirecheck explore chunked --examples 500 --seed 1
    wirecheck explore all --budget 600 -j 2 --subject node
    wirecheck explore --check explore-out/chunked-1.wcs
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import sys
import time
from pathlib import Path

from .names import missing_modules

_MISSING = missing_modules()
if _MISSING:  # before the imports that would fail with a traceback
    sys.exit("wirecheck explore: needs " + ", ".join(_MISSING)
             + f" (apt-get install {' '.join(_MISSING)})")

from .. import runner  # noqa: E402
from . import engine, gen, model  # noqa: E402
from .case import parse  # noqa: E402


def _args(argv):
    p = argparse.ArgumentParser(
        prog="wirecheck explore",
        description="Draw operation sequences of each BEHAVIOUR under random faults, "
                    "run each, judge it by a model of what the peer must receive and by "
                    "real peers (h11, http.client, wsproto, python3-websockets), and "
                    "shrink each failure to a scenario file (docs/explore.md).")
    p.add_argument("behaviours", nargs="*", metavar="BEHAVIOUR",
                   help=f"{', '.join(gen.BEHAVIOURS)} (or {', '.join(gen.ALIASES)}), or all")
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--examples", type=int, metavar="N",
                        help="examples per behaviour (default 400 without --budget)")
    budget.add_argument("--budget", type=float, metavar="SECONDS",
                        help="explore each behaviour until its batches took this long in all "
                             "(whole batches; with -j N, N at a time)")
    p.add_argument("--seed", type=int, default=0, metavar="S",
                   help="the first batch's hypothesis seed; batch i uses S+i (default 0)")
    p.add_argument("--per-batch", type=int, default=100, metavar="N",
                   help="examples per batch, one hypothesis search each (default 100)")
    p.add_argument("-j", "--jobs", type=int, default=1, metavar="N",
                   help="batches run at once (default 1)")
    p.add_argument("--fixed-only", action="store_true",
                   help="only the fixed strategies (default: fixed and legacy drawn alike)")
    p.add_argument("--subject", metavar="NAME|PATH", help="as for wirecheck run")
    p.add_argument("--subject-preload", action="store_true", help="as for wirecheck run")
    p.add_argument("--out", default="explore-out", metavar="DIR",
                   help="where the shrunk reproducers go (default explore-out)")
    p.add_argument("--report", metavar="FILE", help="write the run's figures as JSON")
    p.add_argument("--check", metavar="FILE",
                   help="run one scenario file the explorer wrote and judge it by the model")
    p.add_argument("--wirecheck-bin", metavar="PATH", help="the wirecheck binary")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    a = p.parse_args(argv)
    if a.check:
        if a.behaviours:
            p.error("--check FILE takes no BEHAVIOUR")
        return a
    if not a.behaviours:
        p.error("name at least one BEHAVIOUR (or all)")
    if a.behaviours == ["all"]:
        a.behaviours = list(gen.BEHAVIOURS)
    try:
        a.behaviours = list(dict.fromkeys(gen.canonical(b) for b in a.behaviours))
    except ValueError as e:
        p.error(str(e))
    for name in ("examples", "per_batch", "jobs"):
        v = getattr(a, name)
        if v is not None and v < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1, not {v}")
    if a.budget is not None and a.budget <= 0:
        p.error(f"--budget must be more than 0 seconds, not {a.budget:g}")
    if a.examples is None and a.budget is None:
        a.examples = 400
    return a


def _check(a) -> int:
    path = a.check
    try:
        with open(path, encoding="utf-8") as f:
            case = parse(f.read(), path)
    except OSError as e:
        print(f"wirecheck explore: {path}: {e.strerror}", file=sys.stderr)
        return 2
    except ValueError as e:
        print(f"wirecheck explore: {e}", file=sys.stderr)
        return 2
    rn = engine.Runner(a.wirecheck_bin, a.subject, a.subject_preload)
    try:
        trace = rn.run_file(os.path.abspath(path), case)
    except runner.WirecheckError as e:
        print(f"wirecheck explore: {e.stderr.strip() or e}", file=sys.stderr)
        return 2
    problems = model.judge(case, trace, a.subject)
    for p in problems:
        print(f"{path}: {p}")
    print(f"{path}: {'FAIL' if problems else 'ok'} ({len(problems)} problems)")
    return 1 if problems else 0


def _batches(a, behaviour: str) -> int:
    if a.examples is not None:
        return -(-a.examples // a.per_batch)
    return 1 << 30   # until the budget is spent


def main(argv=None) -> int:
    a = _args(sys.argv[1:] if argv is None else argv)
    if a.check:
        return _check(a)
    rn = engine.Runner(a.wirecheck_bin, a.subject, a.subject_preload)
    try:
        runner.find_binary(a.wirecheck_bin)
    except FileNotFoundError as e:
        print(f"wirecheck explore: {e}", file=sys.stderr)
        return 2
    out = Path(a.out)
    start = time.monotonic()
    stats = {b: {"examples": 0, "batches": 0, "seconds": 0.0, "failures": [],
                 "seeds": [], "unsupported": 0} for b in a.behaviours}
    seen: dict = {}
    pending: dict = {}
    next_batch = {b: 0 for b in a.behaviours}

    def more(b):
        if next_batch[b] >= _batches(a, b):
            return False
        return a.budget is None or stats[b]["seconds"] < a.budget

    def examples_of(i: int) -> int:
        if a.examples is None:
            return a.per_batch
        return min(a.per_batch, a.examples - i * a.per_batch)

    with concurrent.futures.ProcessPoolExecutor(max_workers=a.jobs) as pool:

        def submit():
            # The behaviour with the fewest batches begun goes next, so that
            # with -j N each gets its share of the jobs. A budget counts a
            # behaviour's finished batches' own time: --budget 1200 -j 2 of
            # five behaviours takes about 5 x 1200 / 2 s.
            while len(pending) < a.jobs * 2:
                ready = [b for b in a.behaviours if more(b)]
                if not ready:
                    return
                b = min(ready, key=lambda k: next_batch[k])
                i = next_batch[b]
                next_batch[b] += 1
                f = pool.submit(engine.run_batch, b, a.seed + i, examples_of(i), rn,
                                not a.fixed_only)
                pending[f] = (b, a.seed + i)

        submit()
        while pending:
            done, _ = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
            for f in done:
                b, s = pending.pop(f)
                r = f.result()
                st = stats[b]
                st["examples"] += r.examples
                st["unsupported"] += r.unsupported
                st["batches"] += 1
                st["seconds"] += r.seconds
                st["seeds"].append(s)
                if r.failure:
                    sig = (b, r.failure.signature)
                    if sig not in seen:
                        out.mkdir(parents=True, exist_ok=True)
                        path = out / f"{b}-{len(seen) + 1}.wcs"
                        path.write_text(engine.reproducer(r.failure, rn, str(path)))
                        seen[sig] = str(path)
                        st["failures"].append({
                            "file": str(path), "seed": s, "operations": r.failure.case.size(),
                            "flags": r.failure.case.flags(), "problems": r.failure.problems,
                            "examples": r.failure.examples})
                        if not a.quiet:
                            print(f"explore: {b}: FAILURE (seed {s}), shrunk to "
                                  f"{r.failure.case.size()} operations: {path}\n  "
                                  + "\n  ".join(r.failure.problems[:3]), file=sys.stderr)
                if not a.quiet:
                    print(f"explore: {b}: batch seed {s}: {r.examples} examples, "
                          f"{'a failure' if r.failure else 'ok'} ({r.seconds:.0f} s); "
                          f"{st['examples']} examples, {len(st['failures'])} distinct "
                          f"failures so far", file=sys.stderr)
            submit()
    total = time.monotonic() - start
    for b, st in stats.items():
        st["seeds"].sort()
        print(f"{b}: {st['examples']} examples in {st['batches']} batches (seeds "
              f"{_ranges(st['seeds'])}), {len(st['failures'])} failures"
              + (f", {st['unsupported']} drawn with an operation the subject does not support"
                 if st["unsupported"] else "")
              + "".join(f"\n  {f['file']} ({f['operations']} operations): {f['problems'][0]}"
                        for f in st["failures"]))
    report = {"seed": a.seed, "per_batch": a.per_batch, "budget": a.budget,
              "examples_requested": a.examples, "subject": a.subject or "refstack",
              "legacy": not a.fixed_only, "seconds": round(total, 1),
              "behaviours": stats}
    if a.report:
        Path(a.report).write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    return 1 if any(st["failures"] for st in stats.values()) else 0


def _ranges(seeds) -> str:
    if not seeds:
        return "none"
    out, lo, prev = [], seeds[0], seeds[0]
    for s in seeds[1:] + [None]:
        if s is not None and s == prev + 1:
            prev = s
            continue
        out.append(str(lo) if lo == prev else f"{lo}..{prev}")
        if s is not None:
            lo = prev = s
    return ",".join(out)


if __name__ == "__main__":
    sys.exit(main())
