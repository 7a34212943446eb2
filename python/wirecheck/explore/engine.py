"""The search: hypothesis draws cases, each runs under `wirecheck run`, the
model judges its trace, and hypothesis shrinks a failing case to the
smallest one that still fails. The work comes in batches: batch i of a
behaviour draws `per_batch` examples with hypothesis seed `seed + i`, so a
seed and an example count reproduce a run exactly, whatever -j is.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from hypothesis import HealthCheck, Phase, given, reject, seed as hseed, settings

from .. import runner
from . import gen, model
from .case import Case

RUN_TIMEOUT = 10      # seconds a generated case may run before it counts as hung


@dataclass
class Runner:
    """How a case is run: the wirecheck binary and the subject."""
    binary: Optional[str] = None
    subject: Optional[str] = None
    subject_preload: bool = False
    timeout: int = RUN_TIMEOUT

    def argv(self, path: str, case: Case) -> list[str]:
        argv = [str(runner.find_binary(self.binary)), "run", path, *case.flags(),
                "--timeout", str(self.timeout)]
        if self.subject:
            argv += ["--subject", self.subject]
            if self.subject_preload:
                argv.append("--subject-preload")
        return argv

    def command(self, path: str, case: Case) -> str:
        """The command line a user types to reproduce a case's run."""
        argv = ["wirecheck", "run", path, *case.flags()]
        if self.subject:
            argv += ["--subject", self.subject]
            if self.subject_preload:
                argv.append("--subject-preload")
        return shlex.join(argv)

    def run(self, case: Case) -> dict:
        with tempfile.TemporaryDirectory(prefix="wirecheck-explore-") as d:
            path = os.path.join(d, "case.wcs")
            with open(path, "w") as f:
                f.write(case.text())
            return self.run_file(path, case)

    def run_file(self, path: str, case: Case) -> dict:
        argv = self.argv(path, case)
        proc = subprocess.run(argv, capture_output=True, text=True, errors="replace",
                              timeout=self.timeout * 4 + 30)
        if proc.returncode not in (0, 4):
            raise runner.WirecheckError(proc.returncode, proc.stderr, argv)
        try:
            return json.loads(proc.stdout)
        except ValueError as e:
            raise runner.NotATrace(proc.stdout, proc.stderr, argv, e) from None


def signature(problems: list[str]) -> str:
    """A failure's kind, for counting distinct ones: its first problem with
    numbers and quoted events taken out."""
    p = problems[0] if problems else ""
    p = re.sub(r"`[^`]*`", "`…`", p)
    return re.sub(r"\d+", "N", p)[:120]


@dataclass
class Failure:
    behaviour: str
    case: Case
    problems: list
    seed: int
    examples: int              # examples of its batch tried before and while shrinking

    @property
    def signature(self) -> str:
        return signature(self.problems)


@dataclass
class BatchResult:
    behaviour: str
    seed: int
    examples: int = 0          # cases drawn and run (shrinking included)
    failure: Optional[Failure] = None
    seconds: float = 0.0
    unsupported: int = 0       # examples the subject declared unsupported


def run_batch(behaviour: str, batch_seed: int, per_batch: int, rn: Runner,
              legacy: bool = True) -> BatchResult:
    """One hypothesis search of per_batch examples with seed batch_seed:
    the first failing case, shrunk, or none."""
    res = BatchResult(behaviour, batch_seed)
    last: dict = {}
    t0 = time.monotonic()

    @hseed(batch_seed)
    @settings(max_examples=per_batch, database=None, deadline=None, derandomize=False,
              phases=(Phase.generate, Phase.shrink), report_multiple_bugs=False,
              suppress_health_check=list(HealthCheck), print_blob=False)
    @given(gen.case(behaviour, legacy))
    def probe(case):
        res.examples += 1
        try:
            trace = rn.run(case)
        except runner.WirecheckError as e:
            # Bad input is the generator's bug, a harness failure the
            # harness's: both are findings, shrunk like any other.
            problems = [f"wirecheck exited {e.returncode}: "
                        f"{(e.stderr or '').strip().splitlines()[-1:] or ['']}"]
        except subprocess.TimeoutExpired:
            problems = ["wirecheck itself did not return (a hung harness)"]
        else:
            error = (trace.get("exit") or {}).get("error") or ""
            if "unsupported" in error:
                # The subject declares an operation it has no equivalent
                # for (docs/subjects.md): not a finding, not an example.
                res.unsupported += 1
                reject()
            problems = model.judge(case, trace, rn.subject)
        if problems:
            last["case"], last["problems"] = case, problems
            raise AssertionError("\n".join(problems))

    try:
        probe()
    except AssertionError:
        res.failure = Failure(behaviour, last["case"], last["problems"], batch_seed,
                              res.examples)
    except Exception as e:   # hypothesis' Flaky and the like: report, do not hide
        if "case" in last:
            res.failure = Failure(behaviour, last["case"],
                                  last["problems"] + [f"(not reproduced when shrinking: "
                                                      f"{type(e).__name__})"],
                                  batch_seed, res.examples)
        else:
            raise
    res.seconds = time.monotonic() - t0
    return res


def reproducer(f: Failure, rn: Runner, path: str) -> str:
    """The failure as a scenario file whose fault flags are settings, so it
    can be copied into scenarios/ as it is, with a comment that says what
    the model saw and the command that reproduces it."""
    settings_ = list(f.case.settings)
    fl = f.case.faults
    if fl.clamp is not None:
        settings_.append(f"clamp-send {fl.clamp}")
    if fl.refuse is not None:
        settings_.append(f"refuse-write {fl.refuse}")
    if fl.fault is not None:
        settings_.append(f"fault {fl.fault}")
    if f.case.variant:
        settings_.append(f"variant {f.case.variant}")
    standalone = Case(f.case.behaviour, tuple(settings_), f.case.blocks)
    comment = (f"Found by `wirecheck explore {f.behaviour} --seed {f.seed}` "
               f"(batch seed {f.seed}, {f.examples} examples), shrunk to "
               f"{f.case.size()} operations.\nWhat the model saw:\n"
               + "\n".join(f"  {p}" for p in f.problems)
               + f"\nReproduce: {rn.command(path, standalone)}\n"
               f"Judge again: wirecheck explore --check {path}")
    return standalone.text(comment)
