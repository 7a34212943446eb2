"""`python3 -m wirecheck.report.render KIND FILE`: one benchmark's JSON
(FILE, or - for stdin) as the report's Markdown for it, on stdout.

The benchmarks in bench/ write JSON only; this is how bench/run.sh (and a
person at a terminal) sees their tables, through the same section code that
writes report.md, so each figure has one renderer. KIND is the benchmark's
key in report.json's "bench" (bytes_moved, sender_cpu, ...) or
chunked_threshold, which the report does not run."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Callable, Sequence

from .collect import empty_bench
from .derive import bytes_moved_scaling, sender_cpu_scaling, seed_table
from .sections import (bench_batching, bench_bytes_moved, bench_chat, bench_chunked,
                       bench_chunked_threshold, bench_gate_cost, bench_sender_cpu,
                       bench_subjects, bench_ws)

# Each kind's renderer: a function of a report (the one report.md uses).
RENDERERS: dict[str, Callable[[dict], list[str]]] = {
    "bytes_moved": bench_bytes_moved.markdown,
    "gate_cost": bench_gate_cost.markdown,
    "batching": bench_batching.markdown,
    "chat": bench_chat.markdown,
    "sender_instr": bench_sender_cpu.instr_markdown,
    "sender_cpu": bench_sender_cpu.cpu_markdown,
    "sender_subjects": bench_sender_cpu.subjects_markdown,
    "subjects": bench_subjects.markdown,
    "chunked": bench_chunked.markdown,
    "ws": bench_ws.markdown,
    "ws_syscalls": bench_ws.syscalls_markdown,
    "chunked_threshold": bench_chunked_threshold.markdown,
}


def report_of(kind: str, data: dict) -> dict:
    """The smallest report that holds one benchmark's figures and the
    figures derived from them, as the report's own run would."""
    bench = empty_bench(True)
    bench[kind] = data
    bench["runs"][kind] = {"error": None}
    return {"bench": bench, "options": {},
            "scaling": {"bytes_moved": bytes_moved_scaling(bench.get("bytes_moved")),
                        "sender_cpu": sender_cpu_scaling(bench.get("sender_cpu"))},
            "seed_table": seed_table(bench.get("bytes_moved"))}


def render(kind: str, data: dict) -> str:
    # No plot is drawn here: the sections' links to theirs are left out.
    lines = [ln for ln in RENDERERS[kind](report_of(kind, data)) if not ln.startswith("![")]
    return "\n".join(lines).strip("\n") + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m wirecheck.report.render",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("kind", choices=sorted(RENDERERS))
    ap.add_argument("file", help="the benchmark's JSON output, or - for stdin")
    opts = ap.parse_args(argv)
    try:
        text = sys.stdin.read() if opts.file == "-" else open(opts.file).read()
        data = json.loads(text)
    except (OSError, ValueError) as e:
        print(f"wirecheck.report.render: {opts.file}: {e}", file=sys.stderr)
        return 2
    if not isinstance(data, dict):
        print(f"wirecheck.report.render: {opts.file}: not a JSON object", file=sys.stderr)
        return 2
    sys.stdout.write(render(opts.kind, data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
