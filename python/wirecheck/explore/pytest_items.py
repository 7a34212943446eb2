"""The explorer as pytest items (`--wirecheck-explore`, docs/explore.md):
one item per (behaviour, batch seed), made without running anything, so
that every xdist worker collects the same ones and -n spreads them. An item
fails with its shrunk reproducer, written to --wirecheck-explore-out."""
from __future__ import annotations

from pathlib import Path

import pytest

from . import names


def add_options(group) -> None:
    group.addoption("--wirecheck-explore", metavar="BEHAVIOURS", default=None,
                    help="instead of the scenarios, explore: generated cases of each "
                         f"behaviour ({', '.join(names.BEHAVIOURS)}; a comma list, or all) "
                         "judged by a model and real peers (docs/explore.md)")
    group.addoption("--wirecheck-explore-examples", metavar="N", type=int, default=200,
                    help="--wirecheck-explore: examples per behaviour (default 200)")
    group.addoption("--wirecheck-explore-per-batch", metavar="N", type=int, default=50,
                    help="--wirecheck-explore: examples per item (default 50)")
    group.addoption("--wirecheck-explore-seed", metavar="S", type=int, default=0,
                    help="--wirecheck-explore: the first item's seed (default 0)")
    group.addoption("--wirecheck-explore-out", metavar="DIR", default="explore-out",
                    help="--wirecheck-explore: where reproducers go (default explore-out)")


def behaviours(value: str) -> list[str]:
    wanted = list(names.BEHAVIOURS) if value == "all" else [v for v in value.split(",") if v]
    try:
        return list(dict.fromkeys(names.canonical(b) for b in wanted))
    except ValueError as e:
        raise pytest.UsageError(f"--wirecheck-explore: {e}") from None


class ExploreFailure(Exception):
    pass


class ExploreItem(pytest.Item):
    def __init__(self, *, behaviour: str, seed: int, examples: int, runner_: "engine.Runner",
                 out: str, **kw):
        super().__init__(**kw)
        self.behaviour, self.seed, self.examples = behaviour, seed, examples
        self.runner_, self.out = runner_, out
        self.add_marker(getattr(pytest.mark, behaviour))

    def runtest(self):
        from . import engine
        r = engine.run_batch(self.behaviour, self.seed, self.examples, self.runner_)
        self.user_properties.append(("examples", r.examples))
        if r.failure:
            out = Path(self.out)
            out.mkdir(parents=True, exist_ok=True)
            path = out / f"{self.behaviour}-seed{self.seed}.wcs"
            path.write_text(engine.reproducer(r.failure, self.runner_, str(path)))
            raise ExploreFailure(f"{self.behaviour}, seed {self.seed}: a failure shrunk to "
                                 f"{r.failure.case.size()} operations, written to {path}:\n"
                                 + path.read_text())

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, ExploreFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, f"explore {self.behaviour} seed {self.seed}"


def items(session, config, binary, subject, preload) -> list:
    missing = names.missing_modules()
    if missing:
        raise pytest.UsageError("--wirecheck-explore needs " + ", ".join(missing)
                                + f" (apt-get install {' '.join(missing)})")
    from . import engine
    wanted = behaviours(config.getoption("wirecheck_explore"))
    total = config.getoption("wirecheck_explore_examples")
    per = config.getoption("wirecheck_explore_per_batch")
    if total < 1 or per < 1:
        raise pytest.UsageError("--wirecheck-explore-examples and -per-batch must be at least 1")
    seed0 = config.getoption("wirecheck_explore_seed")
    rn = engine.Runner(binary, subject, preload)
    out = []
    for b in wanted:
        for i in range(-(-total // per)):
            n = min(per, total - i * per)
            out.append(ExploreItem.from_parent(
                session, name=f"explore[{b}-seed={seed0 + i}]", behaviour=b,
                seed=seed0 + i, examples=n, runner_=rn,
                out=config.getoption("wirecheck_explore_out")))
    return out
