"""The sweep's command line (docs/sweeps.md):

    python3 -m wirecheck.sweep FILE... [-k K] [-b B] [-j N] [--output FILE]
    wirecheck sweep FILE...              (the same, through the harness)
    wirecheck-sweep FILE...              (the console script)
"""
from __future__ import annotations

import argparse
import errno
import json
import os
import shlex
import stat
import sys
from pathlib import Path
from typing import Optional, Sequence

from .. import runner
from .catalog import BYTE_CONNS
from .engine import sweep_files

def output_problem(path: str) -> Optional[str]:
    """Why --output's path cannot be written, or None: the check of
    wirecheck's own output flags (harness/outpath.c; docs/cli.md, "Output
    files"), made before the sweep runs, with the same reasons. A copy,
    because `wirecheck` checks an output path only inside `run` and `exec`,
    which then run: it has no command that checks a path alone. It opens
    nothing, so that a result of an earlier sweep stays whole until the
    new one is written."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        pass
    except OSError as e:  # ENOTDIR, EACCES, ELOOP, ENAMETOOLONG
        return e.strerror
    else:
        if stat.S_ISDIR(st.st_mode):
            return os.strerror(errno.EISDIR)
        return None if os.access(path, os.W_OK) else os.strerror(errno.EACCES)
    if path == "":
        return os.strerror(errno.ENOENT)
    if path.endswith("/"):
        return os.strerror(errno.EISDIR)
    parent = os.path.dirname(path) or "."
    try:
        st = os.stat(parent)
    except OSError as e:
        return f"its directory {parent}: {e.strerror}"
    if not stat.S_ISDIR(st.st_mode):
        return f"its directory {parent}: {os.strerror(errno.ENOTDIR)}"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"its directory {parent}: {os.strerror(errno.EACCES)}"
    return None


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(
        prog="wirecheck sweep",
        description="Fail each writing call of a scenario with each fault in turn and "
                    "judge every run by invariants against the clean run (docs/sweeps.md).")
    ap.add_argument("files", nargs="+", metavar="FILE")
    ap.add_argument("-k", "--max-k", type=int, default=None, metavar="K",
                    help="sweep calls 1..K only (default: every writing call of the clean run)")
    ap.add_argument("-b", "--bytes", type=int, default=3, metavar="B",
                    help="byte cells: B bytes spread over each of the first "
                         f"{BYTE_CONNS} connections' clean streams, first and last "
                         "included (default 3; 0: none)")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="runs at once (default 2)")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=VALUE",
                    help="sweep with this variant (repeatable)")
    ap.add_argument("--legacy", action="store_true",
                    help="also sweep each scenario's legacy variant (its `legacy` line)")
    ap.add_argument("--valgrind", action="store_true", help="every run under valgrind memcheck")
    ap.add_argument("--wirecheck-bin", default=None, metavar="PATH",
                    help="the wirecheck binary (build-asan/bin/wirecheck: sanitizer findings fail a cell)")
    ap.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                    help="each run's timeout (wirecheck run --timeout)")
    ap.add_argument("--output", default=None, metavar="FILE", help="write the result (JSON) there")
    a = ap.parse_args(argv)
    if a.max_k is not None and a.max_k < 1:
        ap.error(f"--max-k {a.max_k}: expected a count from 1")
    if a.bytes < 0:
        ap.error(f"--bytes {a.bytes}: expected a count from 0")
    why = output_problem(a.output) if a.output is not None else None
    if why is not None:
        ap.error(f"--output '{a.output}': cannot write there: {why}")
    try:
        binary = runner.find_binary(a.wirecheck_bin)
    except FileNotFoundError as e:
        print(f"wirecheck sweep: {e}", file=sys.stderr)
        return 2
    per_file = []
    for f in a.files:
        try:
            meta = runner.check(f, binary)
        except runner.WirecheckError as e:
            print(f"wirecheck sweep: {e}", file=sys.stderr)
            return 2
        sets = [list(a.variant)]
        if a.legacy and meta.get("legacy"):
            sets.append(list(a.variant) + [meta["legacy"]["variant"]])
        per_file.append((f, sets, runner.profiles(meta)[0]))
    report = sweep_files([], plan=per_file, jobs=a.jobs, binary=binary,
                         valgrind=a.valgrind, timeout=a.timeout, k_max=a.max_k,
                         n_bytes=a.bytes)
    report["command"] = shlex.join(["wirecheck", "sweep", *(argv if argv is not None
                                                            else sys.argv[1:])])
    text = json.dumps(report, indent=2, sort_keys=True) + "\n"
    written = True
    if a.output is not None:
        try:
            Path(a.output).write_text(text)
        except OSError as e:  # checked before the sweep: a full disk, a change since
            print(f"wirecheck sweep: cannot write the result to {a.output}: {e.strerror}",
                  file=sys.stderr)
            written = False
    for s in report["scenarios"]:
        for fl in s["failures"]:
            print(f"FAIL {s['path']} {fl['cell']}: " + "; ".join(fl["broken"]), file=sys.stderr)
            print(f"  reproduce: {fl['command']}", file=sys.stderr)
    declared = 0
    for s in report["scenarios"]:
        d = s.get("declared") or {}
        if d.get("cells"):
            declared += len(d["cells"])
            print(f"DECLARED {s['path']}{' ' + ' '.join(s['variants']) if s['variants'] else ''} "
                  f"{' '.join(d['cells'])}: {d['reason']}", file=sys.stderr)
    print(f"wirecheck sweep: {report['cells']} runs over {len(report['scenarios'])} "
          f"sweep(s), {report['failing']} broke an invariant, {declared} passed by a "
          f"declaration, {report['seconds']}s", file=sys.stderr)
    if not written:
        return 3
    return 1 if report["failing"] else 0
