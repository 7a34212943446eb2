"""Collecting the report's data by running subprocesses: the scenarios
(fixed and legacy, through wirecheck.runner), the benchmarks, the half-open
per-connection count, the environment. What it returns goes into
report.json; derive computes the figures from it."""
from __future__ import annotations

import concurrent.futures
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterable, Sequence

from .. import record
from ..runner import REPO, WirecheckError, check, profiles, run
from .derive import (PER_CONNECTION_SIDES, derive_profiles,
                     per_connection_rows, scenario_stem, summarize_trace)
from .fmt import rel

# sender_cpu's sizes (MiB). --quick keeps the bench's 3 rounds but adds 2 MiB
# to its 4,8 so that every line has two doublings; --full runs 7 rounds from
# 4 to 64 MiB (memmove at the 4 KiB clamp is skipped by the bench itself past
# its 2e10-byte prediction limit, i.e. from 16 MiB on).
CPU_SIZES_QUICK = "2,4,8"
CPU_SIZES_FULL = "4,8,16,32,64"

# The benchmarks, in the order they run; --benches picks some. chunked is
# bench/chunked.py (wrk against the reference, node and Bun); ws is
# bench/ws_echo (the WebSocket servers against node + npm ws and Bun) and
# ws_syscalls their syscalls per message (bench/ws_syscalls.py).
BENCHES = ("bytes_moved", "sender_cpu", "gate_cost", "batching", "chat",
           "sender_instr", "subjects", "sender_subjects", "chunked", "ws", "ws_syscalls")

# Syscalls per connection, (count at TO - count at FROM) / (TO - FROM),
# fixed (on_end before the poll change) against poll-first.
PER_CONNECTION_SCENARIO = REPO / "scenarios" / "half-open" / "per-connection.wcs"
PER_CONNECTION_FROM, PER_CONNECTION_TO = 100, 300


def find_scenarios(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """Every *.wcs under each path (a file is taken as it is), sorted, once."""
    found: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            found += sorted(p.rglob("*.wcs"))
        elif p.is_file():
            found.append(p)
        else:
            raise FileNotFoundError(f"no such scenario file or folder: {p}")
    seen, out = set(), []
    for f in found:
        key = f.resolve()
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def run_scenarios(paths: Sequence[Path], binary: Path, log,
                  from_record: Path | None = None) -> list[dict]:
    """Checks every scenario, then runs each profile fixed and legacy, or
    takes the run from from_record (wirecheck.record: the runs of a pytest
    session with --wirecheck-record) when it has it."""
    scenarios: list[dict] = []
    jobs: list[tuple[dict, dict, str, Path]] = []
    stems: set = set()
    for path in paths:
        stem = scenario_stem(path)
        n = 2
        while stem in stems:  # two folders' a.wcs outside the repository
            stem = f"{scenario_stem(path)}-{n}"
            n += 1
        stems.add(stem)
        entry: dict = {"path": rel(path), "name": path.stem, "stem": stem,
                       "behaviour": None, "legacy": None, "profiles": [], "error": None}
        scenarios.append(entry)
        try:
            meta = check(path, binary)
        except (WirecheckError, OSError, ValueError) as e:
            entry["error"] = f"check failed: {e}"
            log(f"[check] {rel(path)}: {entry['error']}")
            continue
        entry["name"] = meta.get("name", path.stem)
        entry["behaviour"] = meta.get("behaviour")
        entry["legacy"] = meta.get("legacy")
        for prof in profiles(meta):
            p = {"id": prof.id, "values": [list(v) for v in prof.values], "flags": prof.flags,
                 "plot": None, "fixed": None, "legacy": None, "errors": {}}
            entry["profiles"].append(p)
            jobs.append((entry, p, "fixed", path))
            if entry["legacy"]:
                jobs.append((entry, p, "legacy", path))
    total = len(jobs)

    def one(i: int, entry: dict, p: dict, side: str, path: Path) -> None:
        label = f"{Path(entry['path']).with_suffix('')} {p['id'] or '(no matrix)'} {side}"
        log(f"[{i}/{total}] {label}")
        variants = [entry["legacy"]["variant"]] if side == "legacy" else []
        try:
            recorded = (record.read(from_record, path, p["id"], side, p["flags"])
                        if from_record else None)
        except ValueError as e:
            log(f"[{i}/{total}] {label}: {e}; running it")
            recorded = None
        if recorded is not None:
            p[side] = summarize_trace(recorded[1], recorded[0])
            return
        start = time.monotonic()
        try:
            # The path as given (relative to the working folder), not the
            # shown one, which may be relative to the repository.
            trace = run(path, p["flags"], variants=variants, binary=binary)
        except (WirecheckError, OSError, ValueError, subprocess.TimeoutExpired) as e:
            p["errors"][side] = str(e)
            log(f"[{i}/{total}] {label}: FAILED: {e}")
            return
        p[side] = summarize_trace(trace, time.monotonic() - start)

    # One run per core at a time (each is a wirecheck process that waits on
    # its subject): the suite's runs took most of set-up's report. Each
    # writes only its own profile's side, so the result does not depend on
    # the order they end in.
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        for f in [pool.submit(one, i, *job) for i, job in enumerate(jobs, 1)]:
            f.result()
    derive_profiles(scenarios)
    return scenarios


# The folder that holds the wirecheck package, for a benchmark that is one
# of its modules (python3 -m wirecheck.subjects_tool) run by /usr/bin/python3.
PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])


def run_bench(argv: Sequence[str], log, label: str, timeout: float = 3600,
              tag: str = "bench") -> dict:
    """Runs one benchmark; returns {command, seconds, returncode, stdout,
    stderr_tail, error}. Its PYTHONPATH starts with this package's folder."""
    start = time.monotonic()
    log(f"[{tag}] {label}: "
        f"{' '.join(rel(Path(a)) if i == 0 or os.path.isabs(a) else a for i, a in enumerate(argv))}")
    res: dict = {"command": [rel(Path(argv[0]))] + list(argv[1:]), "error": None}
    try:
        path = os.pathsep.join(p for p in (PACKAGE_PARENT, os.environ.get("PYTHONPATH")) if p)
        proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, "PYTHONPATH": path})
    except (OSError, subprocess.TimeoutExpired) as e:
        res.update(seconds=round(time.monotonic() - start, 3), returncode=None,
                   stdout="", stderr_tail="", error=str(e))
        log(f"[{tag}] {label}: FAILED: {e}")
        return res
    res.update(seconds=round(time.monotonic() - start, 3), returncode=proc.returncode,
               stdout=proc.stdout, stderr_tail="\n".join(proc.stderr.splitlines()[-5:]))
    if proc.returncode != 0:
        res["error"] = f"{label} exited {proc.returncode}: {res['stderr_tail'].strip()}"
        log(f"[{tag}] {label}: FAILED: {res['error']}")
    return res


def parse_json_bench(res: dict) -> dict | None:
    try:
        return json.loads(res["stdout"]) if res.get("stdout") else None
    except ValueError as e:
        res["error"] = (res.get("error") or "") + f" (output is not JSON: {e})"
        return None


def selected_benches(opts) -> list[str]:
    """The benchmarks to run, in BENCHES order: --benches (default all),
    without gate_cost under --no-gate-cost."""
    names = BENCHES if not opts.benches else [b.strip() for b in opts.benches.split(",") if b.strip()]
    return [b for b in BENCHES if b in names and not (b == "gate_cost" and opts.no_gate_cost)]


def empty_bench(ran: bool) -> dict:
    return {"ran": ran, **{name: None for name in BENCHES}, "runs": {}, "errors": []}


def run_benches(bench_dir: Path, opts, log) -> dict:
    bench = empty_bench(True)
    cpu_sizes = opts.cpu_sizes or (CPU_SIZES_FULL if opts.full else CPU_SIZES_QUICK)
    quick = [] if opts.full else ["--quick"]
    argvs = {
        "bytes_moved": [str(bench_dir / "bytes_moved"), "--json"],
        "sender_cpu": [str(bench_dir / "sender_cpu"), "--json", *quick, "--sizes", cpu_sizes],
        "gate_cost": [str(bench_dir / "gate_cost")],
        # Batching: the seed's table and its chat server; --quick unless --full.
        "batching": [str(bench_dir / "batching"), *quick, "--json"],
        "chat": [str(bench_dir / "chat"), *quick, "--json"],
        # The sender: callgrind instructions of end(P), 1 MiB (--full: 1 and 4).
        "sender_instr": [str(bench_dir / "sender_instr"), *quick, "--json"],
        # Node and libuv against the reference goldens (docs/subjects.md).
        "subjects": ["/usr/bin/python3", "-m", "wirecheck.subjects_tool", "--json", "-q",
                     "--wirecheck-bin", str(bench_dir / "wirecheck")],
        # Chunked: syscalls per response and wrk's requests per second
        # (--quick: 1 round of 1 s and 20 pairs; --full: 5 rounds of 3 s
        # and 30 pairs).
        "chunked": ["/usr/bin/python3", str(REPO / "bench" / "chunked.py"), "--json", "-",
                    "--bin-dir", str(bench_dir), *quick],
        # Sender CPU of end(64 MiB), refstack, node, libuv, floor.
        "sender_subjects": [str(bench_dir / "sender_cpu"), "--subjects", "--json"],
        # WebSocket echo and chat, reference against node + npm ws,
        # with the callgrind figures of bench/ws_instructions.sh.
        "ws": [str(bench_dir / "ws_echo"), *quick, "--json",
               "--instructions", str(bench_dir / "ws_send")],
        # The WebSocket servers' syscalls per message (preload gate).
        "ws_syscalls": ["/usr/bin/python3", str(REPO / "bench" / "ws_syscalls.py"), "--json",
                        "--bin-dir", str(bench_dir), *quick],
    }
    plan = [(name, argvs[name]) for name in selected_benches(opts)]
    for i, (name, argv) in enumerate(plan, 1):
        res = run_bench(argv, log, f"{i}/{len(plan)} {name}")
        parsed = parse_json_bench(res)
        if parsed is None and not res["error"]:
            res["error"] = f"{name}: no figures in its output"
        if isinstance(parsed, dict) and isinstance(parsed.get("command"), list) \
                and parsed["command"]:
            # The bench prints its own argv: its path as the report shows paths.
            parsed["command"][0] = rel(Path(parsed["command"][0]))
        bench[name] = parsed
        bench["runs"][name] = {k: v for k, v in res.items() if k != "stdout"}
        if res["error"]:
            bench["errors"].append(res["error"])
    return bench


def run_per_connection(binary: Path, scenario: Path, log) -> dict:
    """Half-open: `wirecheck per-connection SCENARIO --from 100 --to 300
    --variant V` for the fixed order (halfopen=end-first) and poll-first;
    the table's rows and the half-open targets (derive.per_connection_targets)."""
    pc: dict = {"scenario": rel(scenario), "from": PER_CONNECTION_FROM,
                "to": PER_CONNECTION_TO, "sides": {}, "rows": [], "targets": [],
                "targets_met": 0, "targets_total": 0, "errors": []}
    for i, (side, variant) in enumerate(PER_CONNECTION_SIDES, 1):
        argv = [str(binary), "per-connection", str(scenario), "--from", str(PER_CONNECTION_FROM),
                "--to", str(PER_CONNECTION_TO), "--variant", variant]
        res = run_bench(argv, log, f"{i}/{len(PER_CONNECTION_SIDES)} {variant}",
                        timeout=900, tag="per-connection")
        res["command"] = [rel(binary), "per-connection", rel(scenario), *argv[3:]]
        parsed = parse_json_bench(res)
        if parsed is not None and not isinstance(parsed.get("per_connection"), dict):
            res["error"] = (res.get("error") or "") + "no per_connection in its output"
            parsed = None
        if parsed is None and not res["error"]:
            res["error"] = f"per-connection {variant}: no figures in its output"
        if res["error"]:
            pc["errors"].append(res["error"])
        pc["sides"][side] = {"variant": variant, "result": parsed,
                             **{k: v for k, v in res.items() if k != "stdout"}}
    per_connection_rows(pc)
    return pc


def environment(binary: Path | None) -> dict:
    env: dict = {"cpus": os.cpu_count(), "python": sys.version.split()[0],
                 "wirecheck": rel(binary) if binary else None}
    try:
        env["wirecheck_version"] = subprocess.run(
            [str(binary), "--version"], capture_output=True, text=True,
            timeout=10).stdout.strip() if binary else None
    except OSError:
        env["wirecheck_version"] = None
    try:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"],
                                capture_output=True, text=True, timeout=10)
        status = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain",
                                 "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10)
        if commit.returncode == 0:
            env["git"] = {"commit": commit.stdout.strip(), "dirty": bool(status.stdout.strip())}
    except OSError:
        pass
    return env
