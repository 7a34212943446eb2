"""`python3 -m wirecheck.report`: the command line. It collects (collect.py)
into a report dict, derives its figures (derive.py), and writes report.json,
the plots (plots.py) and report.md (markdown.py) into --out; --from-json
re-renders from a report.json alone, which is the seam between collecting
and rendering."""
from __future__ import annotations

import argparse
import datetime
import fcntl
import json
import sys
import time
from pathlib import Path
from typing import Sequence

from ..runner import REPO, find_binary
from .collect import (BENCHES, CPU_SIZES_FULL, CPU_SIZES_QUICK, PER_CONNECTION_SCENARIO,
                      empty_bench, environment, find_scenarios, run_benches,
                      run_per_connection, run_scenarios)
from .compare_builds import run_compare
from .derive import bytes_moved_scaling, sender_cpu_scaling, seed_table
from .fmt import rel
from .markdown import render_markdown
from .pr import render_summary
from .sections import fuzz as fuzz_section
from .figure import pyplot as _plt
from .plots import Plotter, plot_jobs
from .sections import explore as explore_section
from .sections import sweep as sweep_section

SCHEMA = 1
# In the checkout, the bundled suite and reports/out beside it; installed
# (the package under lib/python3/...), the folder it is run in and
# reports/out there: never a folder of the installation.
IN_CHECKOUT = all((REPO / p).exists() for p in ("CMakeLists.txt", "scenarios", "python/wirecheck"))
DEFAULT_OUT = (REPO if IN_CHECKOUT else Path(".")) / "reports" / "out"
DEFAULT_PATHS = [REPO / "scenarios"] if IN_CHECKOUT else [Path(".")]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="python3 -m wirecheck.report",
        description="Run the scenario suite (fixed and legacy) and the benchmarks; "
                    "write report.md, report.json and SVG plots.")
    ap.add_argument("--out", default=str(DEFAULT_OUT),
                    help="output folder (default: reports/out, in the checkout when run "
                         "from one, else in the current folder)")
    ap.add_argument("--paths", nargs="+", default=[str(p) for p in DEFAULT_PATHS],
                    metavar="PATH", help="scenario files or folders (default: the checkout's "
                                         "scenarios/ when run from one, else the current folder)")
    speed = ap.add_mutually_exclusive_group()
    speed.add_argument("--quick", action="store_true",
                       help="sender_cpu --quick, sizes 2,4,8 MiB (the default)")
    speed.add_argument("--full", action="store_true",
                       help="sender_cpu with 7 rounds, sizes 4..64 MiB (about a minute)")
    ap.add_argument("--cpu-sizes", metavar="MIB,MIB,...",
                    help="sender_cpu --sizes (default 2,4,8; 4,8,16,32,64 with --full)")
    ap.add_argument("--no-bench", action="store_true", help="run no benchmark")
    ap.add_argument("--benches", metavar="NAME,...",
                    help="run only these benchmarks, from " + ",".join(BENCHES) + " (default: all)")
    ap.add_argument("--no-gate-cost", action="store_true", help="skip gate_cost (about 12 s)")
    ap.add_argument("--bench-json", metavar="FILE",
                    help="take the benchmarks' figures from FILE (a JSON object with keys "
                         "among " + ", ".join(BENCHES) + ", as in report.json's bench) "
                         "instead of running them")
    ap.add_argument("--no-per-connection", action="store_true",
                    help="skip the half-open syscalls per connection (wirecheck per-connection, "
                         "under a second)")
    ap.add_argument("--wirecheck-bin", metavar="PATH",
                    help="the wirecheck binary (default: $WIRECHECK_BIN, else build/bin/wirecheck)")
    ap.add_argument("--base-bin", metavar="PATH",
                    help="also run the scenarios with this other build's wirecheck (the base "
                         "of a pull request) and the head's (--wirecheck-bin), and put their "
                         "counts side by side in report.md and summary.md")
    ap.add_argument("--bench-dir", metavar="DIR",
                    help="where bytes_moved, sender_cpu, gate_cost are (default: beside wirecheck)")
    ap.add_argument("--png", action="store_true",
                    help="also write a PNG next to each SVG (for looking at them)")
    ap.add_argument("--link-base", metavar="URL", default="",
                    help="summary.md's links to the plots and the full report start with URL "
                         "(the output folder as published, e.g. a raw GitHub URL), so that "
                         "they render when summary.md is pasted into a pull request "
                         "(default: relative to the output folder)")
    ap.add_argument("--from-record", metavar="DIR",
                    help="take each scenario run from DIR, the record of a pytest run "
                         "with --wirecheck-record DIR (scripts/setup.sh does so), and run "
                         "only what it lacks")
    ap.add_argument("--record-lock", metavar="FILE",
                    help="with --from-record: draw the plots that depend on nothing the "
                         "report collects, then wait until no process holds an exclusive "
                         "flock on FILE before reading the record (scripts/setup.sh holds "
                         "it while the suite runs)")
    ap.add_argument("--from-json", metavar="REPORT_JSON",
                    help="run nothing: re-render report.md and the plots from a report.json")
    ap.add_argument("--sweep-json", metavar="FILE",
                    help="the fault sweep's result (wirecheck sweep --output; default: "
                         "reports/sweep/sweep.json when it exists and --paths is the default)")
    ap.add_argument("--explore-json", metavar="FILE",
                    help="the explorer's report (wirecheck explore --report; default: "
                         "reports/explore/explore.json when it exists and --paths is the "
                         "default)")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    return ap.parse_args(argv)


def clear_previous(out: Path) -> None:
    """Removes the files that a previous report.json in out lists (and only
    those), so that a scenario gone since leaves no stale plot."""
    out.mkdir(parents=True, exist_ok=True)
    old = out / "report.json"
    if old.is_file():
        try:
            previous = json.loads(old.read_text()).get("files", [])
        except (ValueError, OSError, AttributeError):
            previous = []
        for f in previous:
            target = out / Path(str(f)).name
            for t in (target, target.with_suffix(".png")):
                if t.suffix in (".svg", ".png", ".md", ".json") and t.is_file():
                    t.unlink()


def write_outputs(report: dict, out: Path, extra: Sequence[str] = (), log=lambda m: None,
                  before_render=None, link_base: str = "",
                  plotter: Plotter | None = None) -> list[str]:
    """Plots, report.md, summary.md and report.json into out; returns the
    files written. link_base: summary.md's links (pr.render_summary).
    Without a plotter, first clears out (clear_previous) and draws with a
    Plotter of its own; with one, out is the caller's to clear, and the
    plots already handed to it are not drawn again.
    before_render(report) runs after the plots, before report.md is written."""
    if plotter is None:
        clear_previous(out)
        with Plotter(log=log) as own:
            return write_outputs(report, out, extra, log, before_render, link_base, own)
    log("plots")
    jobs, files = plot_jobs(report, out, extra)
    plotter.submit(jobs)
    plotter.wait()
    report["files"] = ["report.md", "summary.md", "report.json", *files]
    if before_render:
        before_render(report)
    (out / "report.md").write_text(render_markdown(report))
    (out / "summary.md").write_text(render_summary(report, link_base))
    (out / "report.json").write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    return report["files"]


def _read_json(path: str, option: str) -> dict | None:
    """The JSON object in path, or None once stderr says why not."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        print(f"wirecheck.report: {option}: {e}", file=sys.stderr)
        return None
    if not isinstance(data, dict):
        print(f"wirecheck.report: {option}: {path}: not a JSON object", file=sys.stderr)
        return None
    return data


def wait_for_lock(path: Path, log) -> None:
    """Returns once no process holds an exclusive flock on path (a missing
    file is free). scripts/setup.sh holds one on the record's lock while the
    suite runs, so that the report can draw meanwhile what does not depend
    on the suite, and reads the record only once it is whole."""
    log(f"waiting for {rel(path)} (the suite that writes the record)")
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_SH)
        fcntl.flock(f, fcntl.LOCK_UN)


def main(argv: Sequence[str] | None = None) -> int:
    opts = parse_args(argv)
    started = time.monotonic()
    argv_list = list(argv if argv is not None else sys.argv[1:])

    def log(msg: str) -> None:
        if not opts.quiet:
            print(f"report: {msg}", file=sys.stderr, flush=True)

    out = Path(opts.out)
    extra = ("png",) if opts.png else ()
    _plt()  # fail early when matplotlib is missing

    if opts.from_json:
        report = _read_json(opts.from_json, "--from-json")
        if report is None:
            return 2
        if report.get("schema") != SCHEMA:
            print(f"wirecheck.report: --from-json: schema {report.get('schema')}, "
                  f"expected {SCHEMA}", file=sys.stderr)
            return 2
        files = write_outputs(report, out, extra, log, link_base=opts.link_base)
        log(f"re-rendered {len(files)} files into {rel(out)}")
        return 0

    try:
        binary = find_binary(opts.wirecheck_bin)
        paths = find_scenarios(opts.paths)
    except FileNotFoundError as e:
        print(f"wirecheck.report: {e}", file=sys.stderr)
        return 2
    if not paths:
        print(f"wirecheck.report: no *.wcs under {' '.join(opts.paths)}", file=sys.stderr)
        return 2

    if opts.benches and not opts.no_bench and not opts.bench_json:
        unknown = [b for b in opts.benches.split(",") if b.strip() and b.strip() not in BENCHES]
        if unknown:
            print(f"wirecheck.report: --benches: unknown {', '.join(unknown)} "
                  f"(from {', '.join(BENCHES)})", file=sys.stderr)
            return 2

    base_bin = None
    if opts.base_bin:
        try:
            given = Path(opts.base_bin)
            # A build folder names its wirecheck: DIR/bin/wirecheck or DIR/wirecheck.
            for inside in (given / "bin" / "wirecheck", given / "wirecheck"):
                if given.is_dir() and inside.is_file():
                    given = inside
                    break
            base_bin = find_binary(given)
        except FileNotFoundError as e:
            print(f"wirecheck.report: --base-bin: {e}", file=sys.stderr)
            return 2
    # The committed sweep result is the bundled suite's: a report of other
    # scenarios takes one only when --sweep-json names it.
    default_suite = IN_CHECKOUT and opts.paths == [str(p) for p in DEFAULT_PATHS]
    try:
        sweep_data = (sweep_section.load(opts.sweep_json) if opts.sweep_json or default_suite
                      else None)
    except (OSError, ValueError) as e:
        print(f"wirecheck.report: --sweep-json: {e}", file=sys.stderr)
        return 2

    try:
        explore_data = (explore_section.load(opts.explore_json)
                        if opts.explore_json or default_suite else None)
    except (OSError, ValueError) as e:
        print(f"wirecheck.report: --explore-json: {e}", file=sys.stderr)
        return 2

    if opts.record_lock and not opts.from_record:
        print("wirecheck.report: --record-lock goes with --from-record", file=sys.stderr)
        return 2
    # The checkout's state before this report writes anything: an --out
    # inside the checkout (reports/sample) would read as uncommitted
    # changes once its first plot is drawn.
    env = environment(binary)
    clear_previous(out)
    with Plotter(log=log) as plotter:
        # The sweep's plots come from its committed result alone: drawn while
        # the rest is collected (and, with --record-lock, while the suite runs).
        plotter.submit(sweep_section.plot_jobs({sweep_section.NAME: sweep_data}, out, extra)[0])
        if opts.record_lock:
            wait_for_lock(Path(opts.record_lock), log)
        if opts.from_record and not Path(opts.from_record).is_dir():
            print(f"wirecheck.report: --from-record {opts.from_record}: no such folder "
                  "(pytest --wirecheck-record DIR makes it)", file=sys.stderr)
            return 2
        scenarios = run_scenarios(paths, binary, log,
                                  Path(opts.from_record) if opts.from_record else None)
        compared = run_compare(paths, base_bin, binary, log) if base_bin else None
        # The half-open figure is the bundled suite's (its per-connection.wcs):
        # a report of other scenarios runs it only from the checkout.
        per_connection = (None if opts.no_per_connection or not PER_CONNECTION_SCENARIO.is_file()
                          else run_per_connection(binary, PER_CONNECTION_SCENARIO, log))

        if opts.bench_json:
            given = _read_json(opts.bench_json, "--bench-json")
            if given is None:
                return 2
            bench = empty_bench(True)
            bench["from_file"] = rel(Path(opts.bench_json))
            bench.update({k: given.get(k) for k in BENCHES})
        elif opts.no_bench:
            bench = empty_bench(False)
        else:
            bench = run_benches(Path(opts.bench_dir) if opts.bench_dir else binary.parent,
                                opts, log)

        now = datetime.datetime.now(datetime.timezone.utc)
        report: dict = {
            "schema": SCHEMA,
            "generated": now.strftime("%Y-%m-%d %H:%M UTC"),
            "command": ["python3", "-m", "wirecheck.report", *argv_list],
            "options": {"paths": [rel(Path(p)) for p in opts.paths], "full": opts.full,
                        "no_bench": opts.no_bench, "no_gate_cost": opts.no_gate_cost,
                        "bench_json": opts.bench_json, "benches": opts.benches,
                        "no_per_connection": opts.no_per_connection,
                        "cpu_sizes": opts.cpu_sizes or (CPU_SIZES_FULL if opts.full
                                                        else CPU_SIZES_QUICK)},
            "environment": env,
            "scenarios": scenarios,
            "bench": bench,
            "scaling": {"bytes_moved": bytes_moved_scaling(bench.get("bytes_moved")),
                        "sender_cpu": sender_cpu_scaling(bench.get("sender_cpu"))},
            "seed_table": seed_table(bench.get("bytes_moved")),
            "per_connection": per_connection,
            "compare": compared,
            "fuzz": fuzz_section.load(),  # bench/fuzz.sh's last runs (sections/fuzz.py)
            "sweep": sweep_data,
            "explore": explore_data,
            "files": [],
            "seconds": None,
        }

        report["options"]["base_bin"] = rel(base_bin) if base_bin else None

        def finish(rep: dict) -> None:  # the run's time, plots included
            rep["seconds"] = round(time.monotonic() - started, 1)

        files = write_outputs(report, out, extra, log, before_render=finish,
                              link_base=opts.link_base, plotter=plotter)
        log(f"wrote {len(files)} files into {rel(out)} in {report['seconds']:.0f} s")

        failed = any(s["error"] or any(p["errors"] for p in s["profiles"]) for s in scenarios)
        return 1 if failed or bench.get("errors") or (per_connection or {}).get("errors") \
            or (compared or {}).get("errors") else 0
