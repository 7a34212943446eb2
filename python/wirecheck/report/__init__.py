"""`python3 -m wirecheck.report`: one run of the scenario suite and the
benchmarks, turned into reports/out/ (report.md, report.json, SVG plots).
See docs/reports.md.

The package, by job:

- collect.py: runs the subprocesses (the scenarios fixed and legacy through
  wirecheck.runner, the benchmarks, `wirecheck per-connection`) and returns
  what they printed;
- derive.py (pure): the figures from that (comparisons of a fixed and a
  legacy run, scaling, targets), stored in report.json;
- plots.py: the SVG plots, from report.json's figures;
- markdown.py: report.md, from report.json's figures, with one module per
  behaviour and per benchmark in sections/ (the behaviours through the
  registry, wirecheck.behaviours);
- cli.py: the command line; report.json is the seam between collecting and
  rendering (--from-json re-renders from it alone).

Exit status: 0 when everything ran; 1 when the report was written but a
scenario or a benchmark failed to run (the report says which); 2 on bad
usage or when nothing could be run (no wirecheck binary, no scenario).
"""
from .cli import SCHEMA, main, write_outputs
from .derive import (WRITE_KINDS, bytes_moved_scaling, compare, legacy_holds,
                     legacy_rule_text, per_connection_targets, sender_cpu_scaling)
from .fmt import fmt_pc, ratio_text

__all__ = ["SCHEMA", "main", "write_outputs", "WRITE_KINDS", "bytes_moved_scaling", "compare",
           "legacy_holds", "legacy_rule_text", "per_connection_targets", "sender_cpu_scaling",
           "fmt_pc", "ratio_text"]
