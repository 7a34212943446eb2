"""Base against head: `python3 -m wirecheck.report
--base-bin OTHER` runs the same scenarios on two builds and puts their
counts side by side in report.md and summary.md.

The end-to-end test builds a second tree: a copy of this one whose fixed
strategy copies at most 64 bytes of a chunked response into one send
(RS_HTTP_COPY_MAX, reference/rs.h), so that a small response leaves in two
syscalls (framing with MSG_MORE, then the rest) instead of one. Same bytes
on the wire, other syscalls: the comparison must see exactly that."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

pytest.importorskip("matplotlib", reason="python3-matplotlib is not installed")

from wirecheck.report import compare_builds as C  # noqa: E402
from wirecheck.report import pr  # noqa: E402

HEAD = Path(os.environ.get("WIRECHECK_BIN", REPO / "build" / "bin" / "wirecheck"))
SCENARIOS = [REPO / "scenarios" / "chunked" / "empty-final-chunk.wcs",
             REPO / "scenarios" / "chunked" / "final-128k.wcs"]


def figures(**kw):
    base = {"writing_syscalls": 2, "syscalls_total": 10, "bytes_moved": 0, "bytes_copied": 0,
            "bytes_delivered": 81}
    return {**base, **kw}


def profile(pid, base, head, differs=(), errors=None):
    c = {"figures": {k: C.delta(base.get(k), head.get(k)) for k, _ in C.FIGURES},
         "differs": list(differs), "bytes_equal": True, "events_equal": "events" not in differs,
         "exit_equal": True}
    return {"id": pid, "flags": [], "base": {**base, "exit": {"code": 0}},
            "head": {**head, "exit": {"code": 0}}, "errors": errors or {}, "comparison": c}


def made(profiles):
    cmp = {"base": {"binary": "base/bin/wirecheck", "version": "wirecheck 0.1.0",
                    "subject_sha256": "aaaaaaaaaaaa"},
           "head": {"binary": "build/bin/wirecheck", "version": "wirecheck 0.1.0",
                    "subject_sha256": "bbbbbbbbbbbb"},
           "scenarios": [{"path": "scenarios/x/a.wcs", "stem": "x-a", "name": "a",
                          "behaviour": "chunked", "error": None, "profiles": profiles}],
           "errors": []}
    cmp["totals"] = C.totals(cmp)
    return {"compare": cmp}


def test_delta_text():
    assert C.delta_text(C.delta(12, 9)) == "12 -> 9 (-3)"
    assert C.delta_text(C.delta(1000, 1002)) == "1,000 -> 1,002 (+2)"
    assert C.delta_text(C.delta(5, 5)) == "5"
    assert C.delta_text(C.delta(None, None)) == "-"
    assert C.delta_text(C.delta(None, 3)) == "- -> 3"


def test_tables_and_totals():
    rep = made([profile("clamp=none", figures(), figures(writing_syscalls=3, syscalls_total=11),
                        differs=["syscalls"]),
                profile("clamp=1", figures(), figures())])
    text = "\n".join(C.markdown(rep))
    assert "| `clamp=none` | 2 -> 3 (+1) | 10 -> 11 (+1) | 0 | 0 | 81 | yes | yes | 0 | syscalls |" \
        in text
    assert "| `clamp=1` | 2 | 10 | 0 | 0 | 81 | yes | yes | 0 | - |" in text
    assert "1 of 2 profiles differ" in text and "sends 4 -> 5 (+1)" in text
    assert "subject sha256 aaaaaaaaaaaa" in text
    short = "\n".join(C.pr_lines(rep))
    # summary.md: only the profile that differs, with its scenario.
    assert "| `scenarios/x/a.wcs` | `clamp=none` | 2 -> 3 (+1) |" in short
    assert "`clamp=1`" not in short
    assert C.summary(rep) == [
        "- Base against head (`--base-bin base/bin/wirecheck`): 1 of 2 profiles differ "
        "(peer bytes in 0, events in 0); sends 4 -> 5 (+1), syscalls 20 -> 21 (+1)."]


def test_summary_md_lists_at_most_pr_rows():
    many = [profile(f"n={i}", figures(), figures(writing_syscalls=3)) for i in range(C.PR_ROWS + 5)]
    short = C.pr_lines(made(many))
    assert sum(1 for line in short if line.startswith("| `scenarios/")) == C.PR_ROWS
    assert short[-1] == "And 5 more profiles that differ: report.md."


def test_nothing_without_base_bin():
    from wirecheck.report import sections
    assert C in sections.BENCH_SECTIONS
    assert C.markdown({"compare": None}) == [] and C.pr_lines({}) == [] and C.summary({}) == []


def build_other_tree(dst: Path) -> Path:
    """A copy of the repository's sources with RS_HTTP_COPY_MAX 64, built
    (wirecheck and the reference subject only); its wirecheck."""
    src = dst / "src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(
        ".git", "build", "build-*", "reports", "__pycache__", "*.golden", "third_party",
        ".hypothesis", "explore-out"))
    rs_h = src / "reference" / "rs.h"
    text, n = re.subn(r"#define RS_HTTP_COPY_MAX \d+", "#define RS_HTTP_COPY_MAX 64",
                      rs_h.read_text())
    assert n == 1, "RS_HTTP_COPY_MAX is not in reference/rs.h any more"
    rs_h.write_text(text)
    build = dst / "build"
    for argv in (["cmake", "-S", str(src), "-B", str(build), "-DCMAKE_BUILD_TYPE=Debug",
                  "-DWIRECHECK_WERROR=OFF"],
                 ["cmake", "--build", str(build), "-j2", "--target", "wirecheck",
                  "refstack-subject"]):
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return build / "bin" / "wirecheck"


@pytest.mark.skipif(not HEAD.exists() or not shutil.which("cmake"),
                    reason="no build of this tree, or no cmake")
def test_two_real_builds_end_to_end(tmp_path):
    base = build_other_tree(tmp_path / "other")
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    proc = subprocess.run(
        ["/usr/bin/python3", "-m", "wirecheck.report", "--out", str(out), "--paths",
         *map(str, SCENARIOS), "--no-bench", "--no-per-connection", "-q",
         "--wirecheck-bin", str(HEAD), "--base-bin", str(base.parent.parent)],
        capture_output=True, text=True, timeout=900, env=env, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    rep = json.loads((out / "report.json").read_text())
    cmp = rep["compare"]
    assert rep["options"]["base_bin"].endswith("bin/wirecheck")
    assert cmp["base"]["subject_sha256"] != cmp["head"]["subject_sha256"]
    by = {(s["path"].rsplit("/", 1)[-1], p["id"]): p for s in cmp["scenarios"]
          for p in s["profiles"]}
    # "hello" and the terminator, unclamped: the head sends head, chunk and
    # body in one copied send, then the terminator (2 sends); the base's
    # 64-byte copy limit splits the first into framing with MSG_MORE and a
    # sendmsg of the body (3 sends).
    p = by[("empty-final-chunk.wcs", "clamp=none")]
    f = p["comparison"]["figures"]["writing_syscalls"]
    assert (f["base"], f["head"], f["delta"]) == (3, 2, -1)
    assert p["comparison"]["differs"] == ["syscalls"]
    # Every profile: the same bytes to the peer, the same events and exit.
    for p in by.values():
        assert p["comparison"]["bytes_equal"] and p["comparison"]["events_equal"]
        assert p["comparison"]["exit_equal"]
    # 128 KiB is over both limits: as many sends on both; only the framing's
    # kind changes (the base's 69 bytes of head and chunk header, over its
    # 64-byte buffer, go as a sendmsg of two iovecs, not a send of one copy).
    big = by[("final-128k.wcs", "")]["comparison"]
    assert big["figures"]["writing_syscalls"]["delta"] == 0
    assert big["differs"] == ["syscalls"]
    report_md = (out / "report.md").read_text()
    assert "## Base against head: the same scenarios on two builds" in report_md
    assert "| `clamp=none` | 3 -> 2 (-1) |" in report_md
    summary = (out / "summary.md").read_text()
    assert "## Base against head" in summary
    assert "| `scenarios/chunked/empty-final-chunk.wcs` | `clamp=none` | 3 -> 2 (-1) |" in summary
    assert len(summary) < pr.SUMMARY_LIMIT
