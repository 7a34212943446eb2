"""Tests of the pytest plugin (wirecheck.plugin), the goldens
(wirecheck.golden) and the Python API (wirecheck.api).

Most tests build a small scenario suite in a pytester folder and run pytest
on it with `-p wirecheck.plugin`, against the real harness.

The gate proofs (test_gate_fails_on_*) each make the golden and the trace
differ in exactly one way (one syscall more, two events swapped, one byte
changed) and check that the item fails, and that the report points at that
difference and at nothing else.
"""
import hashlib
import json
import re
import shutil
import stat
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from wirecheck import golden as G
from wirecheck.api import Scenario, quote, scenario_bytes

# A small scenario whose golden has a hex dump: 10 bytes, two writes.
SMALL = """
    behaviour queue
    task
      write "hello" cb
      write "\\r\\nok\\n" cb
      end cb
"""


def outcomes(res):
    return res.parseoutcomes()


def swap_lines(text: str, a: str, b: str) -> str:
    lines = text.split("\n")
    i, j = lines.index(a), lines.index(b)
    lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


# ------------------------------------------------------------- collection


def test_collection_ids_follow_the_matrix_and_the_legacy_line(suite):
    suite.scenario("two-axes", """
        behaviour queue
        matrix clamp 1 4096
        matrix transport tcp unix
        legacy queue=memmove must-differ
        task
          end 8KiB cb
    """)
    suite.scenario("plain", """
        task
          end "x"
    """)
    suite.scenario("legacy-only", """
        legacy queue=memmove must-match
        task
          end "x"
    """)
    res = suite.run("--collect-only", "-q")
    ids = [l for l in res.stdout.lines if "::" in l]
    assert ids == [
        "s/legacy-only.wcs::variant=fixed",
        "s/legacy-only.wcs::variant=legacy",
        "s/plain.wcs::variant=fixed",
        "s/two-axes.wcs::clamp=1::transport=tcp::variant=fixed",
        "s/two-axes.wcs::clamp=1::transport=tcp::variant=legacy",
        "s/two-axes.wcs::clamp=1::transport=unix::variant=fixed",
        "s/two-axes.wcs::clamp=1::transport=unix::variant=legacy",
        "s/two-axes.wcs::clamp=4096::transport=tcp::variant=fixed",
        "s/two-axes.wcs::clamp=4096::transport=tcp::variant=legacy",
        "s/two-axes.wcs::clamp=4096::transport=unix::variant=fixed",
        "s/two-axes.wcs::clamp=4096::transport=unix::variant=legacy",
    ]


def test_a_node_id_on_the_command_line_selects_exactly_that_item(suite):
    suite.scenario("end-large", """
        matrix clamp 7 4096
        legacy queue=memmove must-differ
        task
          end 128KiB cb
    """)
    res = suite.run("--collect-only", "-q", "s/end-large.wcs::clamp=7::variant=fixed")
    assert [l for l in res.stdout.lines if "::" in l] == ["s/end-large.wcs::clamp=7::variant=fixed"]
    res = suite.run("--collect-only", "-q", "s/end-large.wcs::clamp=4096")
    assert [l for l in res.stdout.lines if "::" in l] == [
        "s/end-large.wcs::clamp=4096::variant=fixed", "s/end-large.wcs::clamp=4096::variant=legacy"]


def test_a_malformed_scenario_is_a_collection_error_naming_file_and_line(suite):
    suite.scenario("bad", """
        task
          writ 3
    """)
    suite.scenario("good", SMALL)
    res = suite.run("--collect-only", "-q")
    assert res.ret == pytest.ExitCode.INTERRUPTED
    out = res.stdout.str()
    assert "ERROR collecting s/bad.wcs" in out
    assert "wirecheck: s/bad.wcs:2: unknown operation 'writ'" in out
    assert "s/good.wcs::variant=fixed" in out


def test_markers_by_behaviour_select_without_warnings(suite):
    suite.scenario("q", "behaviour queue\ntask\n  end \"q\"\n")
    suite.scenario("b", "behaviour batching\ntask\n  end \"b\"\n")
    suite.scenario("f", "behaviour frobnication\ntask\n  end \"f\"\n")
    suite.scenario("n", "task\n  end \"n\"\n")
    for marker, expect in [("queue", "s/q.wcs"), ("batching", "s/b.wcs"),
                           ("frobnication", "s/f.wcs")]:
        res = suite.run("--collect-only", "-q", "--strict-markers",
                        "-W", "error::pytest.PytestUnknownMarkWarning", "-m", marker)
        assert res.ret == 0, res.stdout.str()
        assert [l for l in res.stdout.lines if "::" in l] == [f"{expect}::variant=fixed"]
        assert "warning" not in res.stdout.str().lower()
    res = suite.run("--markers")
    for m in ("queue", "batching", "half_open", "chunked", "websocket"):
        res.stdout.fnmatch_lines([f"@pytest.mark.{m}: *"])


# ---------------------------------------------------------------- goldens


def test_update_then_pass_and_the_golden_holds_only_deterministic_fields(suite):
    suite.scenario("small", SMALL)
    suite.scenario("m", """
        matrix clamp 7 4096
        task
          end 100KiB cb
    """)
    res = suite.update()
    res.stdout.fnmatch_lines(["*3 golden(s) written:*", "*s/m.clamp=4096.golden",
                              "*s/m.clamp=7.golden", "*s/small.golden"])
    res = suite.run("-v")
    assert outcomes(res) == {"passed": 3}
    text = suite.golden("small").read_bytes().decode()
    assert text.startswith("# wirecheck golden of scenario small (s/small.wcs)")
    assert "/usr/bin/python3 -m pytest -p wirecheck.plugin s/small.wcs::variant=fixed --update-goldens" in text
    body = [l for l in text.splitlines() if not l.startswith("#")]
    assert body.pop(2) == "fired: total=0 refused=0"  # no rule: none fired
    assert body[:2] == ["exit: code=0 timed_out=false", "faults:"]
    assert body[2].startswith("peer: bytes=10 sha256=")
    assert body[2].endswith(" reads=[] reset=false")
    assert body[3:5] == ["peer hex:",
                         "  00000000  68 65 6c 6c 6f 0d 0a 6f  6b 0a                    |hello..ok.|"]
    assert body[5] == "events:" and "  t2 c0 write#1 5 -> true" in body
    assert "  send 2" in body and "syscalls:" in body
    assert body[-1] == "queue: bytes_moved=0 allocations=0 bytes_copied=0"
    for absent in ("valgrind", "core", "variant", "transport", "syscalls_timing", "epoll_wait",
                   "scenario:"):
        assert absent not in "\n".join(body)
    m = suite.golden("m.clamp=7").read_text()
    assert "faults:\n  write:short=7,repeat=forever\n" in m
    assert "peer hex:" not in m  # 100 KiB: length and sha256 only


def test_missing_golden_fails_with_the_command_that_makes_it(suite):
    suite.scenario("end-large", """
        matrix clamp 4096
        legacy queue=memmove must-differ
        task
          end 32KiB cb
    """)
    res = suite.run()
    assert outcomes(res) == {"failed": 2}
    # The suite is outside the repository: the command sets PYTHONPATH so
    # that it works as pasted (test_own_project.py checks it runs).
    cmd = (f"PYTHONPATH={Path(__file__).resolve().parents[2] / 'python'} "
           "/usr/bin/python3 -m pytest -p wirecheck.plugin "
           "s/end-large.wcs::clamp=4096::variant=fixed --update-goldens")
    res.stdout.fnmatch_lines([
        f"no golden: run {cmd}",
        "(expected s/end-large.clamp=4096.golden)",
    ])
    # the legacy item points at the fixed item, which writes the golden
    out = res.stdout.str()
    assert out.count(f"no golden: run {cmd}") == 2
    res = suite.run("s/end-large.wcs::clamp=4096::variant=fixed", "--update-goldens")
    assert outcomes(res) == {"passed": 1}
    assert outcomes(suite.run()) == {"passed": 2}


def test_update_goldens_writes_only_the_items_that_ran(suite):
    suite.scenario("a", SMALL)
    suite.scenario("b", """
        matrix clamp 7 4096
        legacy queue=memmove must-differ
        task
          end 16KiB cb
    """)
    res = suite.update("-k", "b and 4096")
    res.stdout.fnmatch_lines(["*1 golden(s) written:*", "*s/b.clamp=4096.golden"])
    assert sorted(p.name for p in (suite.path / "s").glob("*.golden")) == ["b.clamp=4096.golden"]
    # legacy items never write, even when they run alone
    res = suite.update("-k", "legacy")
    assert sorted(p.name for p in (suite.path / "s").glob("*.golden")) == ["b.clamp=4096.golden"]
    res.stdout.fnmatch_lines(["*no golden written*"])
    # an up-to-date golden is left alone, byte for byte and untouched
    g = suite.golden("b.clamp=4096")
    before, mtime = g.read_bytes(), g.stat().st_mtime_ns
    suite.update("-k", "b and 4096")
    assert g.read_bytes() == before and g.stat().st_mtime_ns == mtime


def test_update_goldens_is_refused_under_ci(suite, monkeypatch):
    suite.scenario("a", SMALL)
    monkeypatch.setenv("CI", "true")
    res = suite.run("--update-goldens")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    err = res.stderr.str()
    assert "--update-goldens refuses to write goldens when CI=true" in err
    assert "Run --update-goldens locally and commit the golden diffs" in err
    assert not suite.golden("a").exists()
    # without the option CI=true is fine
    assert suite.run().ret == pytest.ExitCode.TESTS_FAILED  # no golden yet


def test_stale_goldens_are_reported(suite):
    suite.scenario("m", """
        matrix clamp 7 4096
        task
          end 16KiB cb
    """)
    suite.scenario("gone", SMALL)
    suite.scenario("other", SMALL, folder="t")
    suite.update()
    (suite.path / "s" / "gone.wcs").unlink()
    suite.scenario("m", """
        matrix clamp 4096
        task
          end 16KiB cb
    """)
    res = suite.run()
    assert outcomes(res) == {"passed": 2}
    res.stdout.fnmatch_lines(["*wirecheck: stale goldens*",
                              "*2 golden(s) that no scenario produces any more*",
                              "  stale golden: s/gone.golden",
                              "  stale golden: s/m.clamp=7.golden"])
    # selecting a few items (-k, a node id) does not make the others stale
    for args in (["-k", "other"], ["s/m.wcs::clamp=4096::variant=fixed"], ["t"]):
        out = suite.run(*args).stdout.str()
        assert "stale golden: t/" not in out
        assert "stale golden: s/m.clamp=4096" not in out


# ------------------------------------------------------ the gate's proofs


def _fail_text(res) -> str:
    assert res.ret == pytest.ExitCode.TESTS_FAILED, res.stdout.str()
    return res.stdout.str()


def test_gate_fails_on_one_added_syscall(suite):
    suite.scenario("small", SMALL)
    suite.update()
    g = suite.golden("small")
    text = g.read_text()
    assert "\n  send 2\n" in text
    g.write_text(text.replace("\n  send 2\n", "\n  send 1\n"))  # the stack now makes one more send
    out = _fail_text(suite.run())
    assert "the trace differs from the golden s/small.golden" in out
    assert "syscalls (golden | actual):" in out
    assert re.search(r"\n  send +1 +2   <-- differs\n", out)
    assert out.count("<-- differs") == 1
    # every kind is listed side by side
    assert re.search(r"\n  recv +1 +1\n", out) and re.search(r"\n  epoll_ctl.mod +\d+ +\d+\n", out)
    # and nothing else is reported as different
    assert "events: first difference" not in out and "peer bytes" not in out
    assert "FAILED s/small.wcs::variant=fixed - the trace differs from the golden" in out


def test_gate_fails_on_two_reordered_events(suite):
    suite.scenario("small", SMALL)
    suite.update()
    g = suite.golden("small")
    text = g.read_text()
    lines = text.split("\n")
    # the two write callbacks, reported in the other order
    g.write_text(swap_lines(text, "  t2 c0 write#1 cb ok", "  t2 c0 write#2 cb ok"))
    line_no = lines.index("  t2 c0 write#1 cb ok") + 1
    out = _fail_text(suite.run())
    assert f"events: first difference at event 5 (small.golden line {line_no}); " \
           "golden has 10 events, actual 10" in out
    golden_side = out[out.index("  golden:"):out.index("  actual:")]
    actual_side = out[out.index("  actual:"):]
    assert "  >  5  t2 c0 write#2 cb ok" in golden_side
    assert "  >  5  t2 c0 write#1 cb ok" in actual_side
    # 3 lines of context on each side of the first difference
    for side in (golden_side, actual_side):
        assert "     2  t2 c0 write#1 5 -> true" in side
        assert "     7  t2 c0 end cb ok" in side and "     8  t2 c0 finish" in side
        assert "     1  t1 c0 connect" not in side and "     9  " not in side
    assert "syscalls (golden | actual)" not in out and "peer bytes" not in out


def test_gate_fails_on_one_moved_byte(suite):
    """One byte of a short stream differs: the report gives its offset and a
    hex dump of both sides around it. First the golden edited (the trace is
    unchanged, so nothing else can differ), then the scenario edited."""
    suite.scenario("small", SMALL)
    suite.update()
    g = suite.golden("small")
    gold = G.load(g)
    data = bytearray(gold.peers[0].data)
    assert bytes(data) == b"hello\r\nok\n"
    data[6] = ord("X")  # the LF after the CR
    gold.peers[0].data = bytes(data)
    gold.peers[0].sha256 = hashlib.sha256(data).hexdigest()
    header = [l[2:] for l in g.read_text().splitlines() if l.startswith("# ")]
    g.write_bytes(G.render(gold, header=header).encode())
    out = _fail_text(suite.run())
    assert "peer bytes: first difference at offset 6 (0x6); golden 10 bytes, actual 10 bytes" in out
    assert "  > 00000000  68 65 6c 6c 6f 0d 58 6f  6b 0a                    |hello.Xok.|" in out
    assert "  > 00000000  68 65 6c 6c 6f 0d 0a 6f  6b 0a                    |hello..ok.|" in out
    assert "events: first difference" not in out and "syscalls (golden" not in out

    # the same through the scenario: one byte of the payload changed
    suite.update()
    suite.scenario("small", SMALL.replace("ok", "oK"))
    out = _fail_text(suite.run())
    assert "peer bytes: first difference at offset 8 (0x8)" in out
    assert "|hello..ok.|" in out and "|hello..oK.|" in out
    assert "events: first difference" not in out and "syscalls (golden" not in out


def test_a_subject_crash_fails_naming_the_signal(suite):
    suite.scenario("small", SMALL)
    suite.update()
    suite.scenario("small", SMALL.replace("      end cb", "      signal SIGSEGV\n      end cb"))
    out = _fail_text(suite.run())
    assert "exit: golden code=0 timed_out=false, actual signal=SIGSEGV timed_out=false" in out
    assert "t2 c0 signal SIGSEGV" in out


def test_legacy_must_differ_that_matches_fails_with_the_reason(suite):
    # Without a clamp every write is taken whole: the memmove queue moves
    # nothing, so its trace is the fixed one.
    suite.scenario("same", """
        legacy queue=memmove must-differ
        task
          write 1000 cb
          end cb
    """)
    suite.scenario("moves", """
        legacy queue=memmove must-differ
        clamp-send 4096
        task
          end 64KiB cb
    """)
    suite.scenario("keeps", """
        legacy queue=memmove must-match
        task
          write 1000 cb
          end cb
    """)
    suite.update(check=False)
    res = suite.run("-v", "-rA")
    assert outcomes(res) == {"passed": 5, "failed": 1}
    out = res.stdout.str()
    res.stdout.fnmatch_lines([
        "s/keeps.wcs::variant=legacy PASSED *",
        "s/moves.wcs::variant=legacy PASSED (legacy differs: queue) *",
        "s/same.wcs::variant=legacy FAILED *",
    ])
    assert ("the legacy strategy gives the same trace as the fixed one: the suite "
            "cannot tell them apart.") in out
    assert "The scenario declares 'legacy queue=memmove must-differ'" in out
    # the passing must-differ item shows what differed
    assert "legacy queue=memmove must-differ: the legacy run differs from the golden " \
           "s/moves.golden, as it must:" in out
    assert re.search(r"queue: golden bytes_moved=0 allocations=1 bytes_copied=[0-9]+, "
                     r"actual bytes_moved=[1-9]", out)


def test_legacy_must_match_that_differs_fails(suite):
    suite.scenario("wrong", """
        legacy queue=memmove must-match
        clamp-send 4096
        task
          end 64KiB cb
    """)
    suite.update(check=False)
    out = _fail_text(suite.run("-k", "legacy"))
    assert "the scenario declares 'legacy queue=memmove must-match', but the run with " \
           "--variant queue=memmove differs from the golden s/wrong.golden" in out
    assert "queue: golden bytes_moved=0" in out


# ------------------------------------------------------- CR/LF, bytes


def test_crlf_bytes_round_trip_exactly(suite):
    suite.scenario("crlf", """
        task
          end "a\\r\\nb\\r\\n" cb
    """)
    suite.update()
    raw = suite.golden("crlf").read_bytes()
    assert b"\r" not in raw  # the CR/LF bytes live in the hex dump
    assert b"\n  00000000  61 0d 0a 62 0d 0a                                 |a..b..|\n" in raw
    g = G.parse(raw, "crlf.golden")
    assert g.peers[0].data == b"a\r\nb\r\n"
    header = [l[2:].decode() for l in raw.split(b"\n") if l.startswith(b"# ")]
    assert G.render(g, header=header).encode() == raw  # byte for byte
    assert outcomes(suite.run()) == {"passed": 1}


def test_a_cr_in_a_comment_is_kept_and_a_crlf_golden_is_an_error(suite):
    """Decision: comment lines are split on LF only and never interpreted, so
    a CR in one (even followed by text that looks like a section) neither
    breaks the golden nor changes its line numbers; --update-goldens leaves
    an up-to-date golden byte for byte. A CR in a data line (a golden saved
    with CRLF line ends) is an error naming the file and line."""
    suite.scenario("crlf", 'task\n  end "a\\r\\nb\\r\\n" cb\n')
    suite.update()
    g = suite.golden("crlf")
    raw = g.read_bytes()
    edited = b"# reviewed\rexit: code=1 timed_out=true\n" + raw
    g.write_bytes(edited)
    assert outcomes(suite.run()) == {"passed": 1}
    suite.update()
    assert g.read_bytes() == edited
    # a golden saved with CRLF line ends
    g.write_bytes(raw.replace(b"\n", b"\r\n"))
    out = _fail_text(suite.run())
    first_data = next(i for i, l in enumerate(raw.split(b"\n"), 1) if not l.startswith(b"#"))
    assert f"the golden cannot be read: s/crlf.golden:{first_data}: a carriage return in a " \
           "data line" in out


def test_a_hand_broken_golden_is_an_error_naming_file_and_line(suite):
    suite.scenario("small", SMALL)
    suite.update()
    g = suite.golden("small")
    lines = g.read_text().split("\n")
    n = next(i for i, l in enumerate(lines) if l.startswith("  t2 c0 end"))
    lines.insert(n, "oops: what")
    g.write_text("\n".join(lines))
    out = _fail_text(suite.run())
    assert f"the golden cannot be read: s/small.golden:{n + 1}: expected a section" in out


def test_a_64_mib_stream_compares_by_length_and_sha256(suite):
    # Over unix with a 32 KiB clamp every send is one skb, taken whole or
    # refused with EAGAIN: 2048 sends, whatever the timing (an unclamped
    # stream's send count depends on how fast the peer reads).
    suite.scenario("big", """
        transport unix
        clamp-send 32768
        task
          end 64MiB cb
    """)
    t0 = time.monotonic()
    suite.update()
    g = suite.golden("big")
    text = g.read_text()
    assert "peer: bytes=67108864 sha256=" in text and "peer hex:" not in text
    # (the fired: section adds up to 16 lines of its clamps)
    assert len(text) < 3500 and "  send 2048\n" in text and "fired: total=" in text
    assert outcomes(suite.run()) == {"passed": 1}
    # the same length, other bytes: events and syscalls are the same
    suite.scenario("big", """
        transport unix
        clamp-send 32768
        task
          end 64MiB fill=x cb
    """)
    out = _fail_text(suite.run())
    gold = G.load(g)
    want = hashlib.sha256(b"x" * (64 << 20)).hexdigest()
    assert f"peer bytes: golden 67108864 bytes sha256 {gold.peers[0].sha256}" in out
    assert f"actual 67108864 bytes sha256 {want}" in out
    assert "events: first difference" not in out
    assert time.monotonic() - t0 < 60  # three runs of 64 MiB; about 3 s


# ------------------------------------------------------------ options


def _fake_wirecheck(suite, body: str) -> Path:
    """A stand-in for the binary: `check` goes to the real one, `run` does
    what body says."""
    from wirecheck import runner
    real = runner.find_binary()
    p = suite.path / "fake-wirecheck"
    p.write_text(f"#!/bin/sh\nif [ \"$1\" != run ]; then exec {real} \"$@\"; fi\n{body}\n")
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return p


def test_wirecheck_repeat_passes_repeat_and_shows_the_harness_message(suite):
    suite.scenario("small", SMALL)
    suite.update()
    res = suite.run("--wirecheck-repeat", "3", "-v")
    assert outcomes(res) == {"passed": 1}
    assert "repeat=3" in res.stdout.str()  # the report header
    fake = _fake_wirecheck(suite, """
echo "wirecheck: small: run 1/3" >&2
echo "wirecheck: small: run 2/3" >&2
echo "wirecheck: s/small.wcs: run 2 differs from run 1 in 'syscalls'" >&2
echo '  run 1: {"send": 2}' >&2
echo '  run 2: {"send": 3}' >&2
exit 1""")
    out = _fail_text(suite.run("--wirecheck-repeat", "3", f"--wirecheck-bin={fake}"))
    assert "the runs differ (--wirecheck-repeat): the scenario is not deterministic" in out
    assert "wirecheck: s/small.wcs: run 2 differs from run 1 in 'syscalls'" in out
    assert '  run 2: {"send": 3}' in out
    assert "run 1/3" not in out
    assert "--repeat 3" in out  # the command


def test_valgrind_errors_fail_the_item(suite):
    suite.scenario("small", SMALL)
    suite.update()
    from wirecheck import runner
    trace = runner.run(suite.path / "s" / "small.wcs")
    trace["exit"]["valgrind"] = "errors"
    trace["exit"]["code"] = 97
    (suite.path / "trace.json").write_text(json.dumps(trace))
    fake = _fake_wirecheck(suite, f"""
case "$*" in *--valgrind*) ;; *) echo "no --valgrind" >&2; exit 3;; esac
echo "==42== Invalid read of size 4" >&2
cat {suite.path / 'trace.json'}""")
    out = _fail_text(suite.run("--valgrind", f"--wirecheck-bin={fake}"))
    assert "valgrind: memcheck found errors in the subject (exit.valgrind = 'errors')" in out
    assert "==42== Invalid read of size 4" in out


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_valgrind_clean_run_passes(suite):
    suite.scenario("small", SMALL)
    suite.update()
    res = suite.run("--valgrind", "-v")
    assert outcomes(res) == {"passed": 1}, res.stdout.str()


def test_a_missing_binary_is_reported(suite, monkeypatch):
    suite.scenario("small", SMALL)
    res = suite.run("--wirecheck-bin", "no/such/wirecheck")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    assert "--wirecheck-bin: wirecheck binary not found or not executable" in res.stderr.str()
    # without the option, each scenario says it at collection
    monkeypatch.setenv("WIRECHECK_BIN", str(suite.path / "nowhere"))
    res = suite.run("--collect-only")
    assert res.ret == pytest.ExitCode.INTERRUPTED
    res.stdout.fnmatch_lines(["*ERROR collecting s/small.wcs*",
                              "wirecheck: wirecheck binary not found or not executable: *nowhere"])


def test_xdist_and_junitxml(suite):
    suite.scenario("ok", SMALL)
    suite.scenario("m", """
        matrix clamp 7 4096
        legacy queue=memmove must-differ
        task
          end 16KiB cb
    """)
    suite.update()
    suite.golden("ok").write_text(suite.golden("ok").read_text().replace("\n  send 2\n", "\n  send 1\n"))
    (suite.path / "s" / "old.golden").write_text("stale\n")
    res = suite.run_subprocess("-n", "2", "-v", "--junitxml=out.xml")
    out = res.stdout.str()
    assert res.ret == pytest.ExitCode.TESTS_FAILED, out
    assert outcomes(res) == {"passed": 4, "failed": 1}
    assert "PASSED (legacy differs: queue)" in out
    assert "stale golden: s/old.golden" in out  # the controller knows the workers' folders
    cases = ET.parse(suite.path / "out.xml").getroot().iter("testcase")
    got = {(c.get("classname"), c.get("name")): c for c in cases}
    assert ("s.ok.wcs", "variant=fixed") in got
    assert ("s.m.wcs.clamp=7", "variant=legacy") in got
    failure = got[("s.ok.wcs", "variant=fixed")].find("failure")
    assert failure is not None
    assert failure.get("message").startswith("the trace differs from the golden s/ok.golden")
    assert "<-- differs" in failure.text


# ---------------------------------------------------------------- goldens


def _golden_text(**over):
    base = {
        "exit": "exit: code=0 timed_out=false",
        "peer": "peer: bytes=3 sha256=ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad "
                "reads=[] reset=false",
        "hex": "peer hex:\n  00000000  61 62 63" + " " * 40 + "  |abc|",
    }
    base.update(over)
    return (f"# c\n{base['exit']}\nfaults:\n{base['peer']}\n{base['hex']}\nevents:\n"
            f"  t1 c0 connect\nsyscalls:\n  send 1\nqueue: null\n")


@pytest.mark.parametrize("over, line, problem", [
    ({}, None, None),
    ({"exit": "exit: code=0"}, 2, "missing field timed_out"),
    ({"exit": "exit: code=0 timed_out=false colour=red"}, 2, "unknown field 'colour'"),
    ({"peer": "peer: bytes=3 sha256=xyz reads=[] reset=false"}, 4, "sha256: expected 64"),
    ({"hex": "peer hex:\n  00000000  61 62 64" + " " * 40 + "  |abc|"}, 6, "the line is not laid out"),
    ({"hex": "peer hex:\n  00000000  61 62 64" + " " * 40 + "  |abd|"}, 5,
     "the hex dump does not match the peer line's sha256"),
    ({"hex": "peer hex:\n  00000010  61 62 63" + " " * 40 + "  |abc|"}, 6, "offset 00000010, expected"),
    ({"hex": "events:"}, 6, "section 'events:' is already on line 5"),
])
def test_golden_parse_errors_name_the_line(over, line, problem):
    text = _golden_text(**over)
    if problem is None:
        g = G.parse(text, "x.golden")
        assert g.peers[0].data == b"abc" and G.render(g, header=["c"]) == text
        return
    with pytest.raises(G.GoldenError) as e:
        G.parse(text, "x.golden")
    assert str(e.value).startswith(f"x.golden:{line}: ")
    assert problem in str(e.value)


def test_golden_values_escape_to_one_line():
    g = G.Golden(exit={"code": None, "timed_out": True, "error": 'bad "x"\r\n\\ é'},
                 faults=["all:signal=SIGTERM"], peers=[], multi=False,
                 events=["t1 c0 odd\x00\r\n\\x41 é"], syscalls={"send": 1}, queue=None)
    text = G.render(g, header=["name \r\n x"])
    assert "\r" not in text and text.count("\n") == 9
    g2 = G.parse(text.encode(), "x")
    assert g2 == g and G.render(g2, header=["name \r\n x"]) == text


# -------------------------------------------------------------- the API


def test_api_builds_the_scenario_language_and_runs_it(suite):
    sc = Scenario("end-large").setting("clamp-send", 7)
    sc.task().end(128 * 1024, cb=True)
    assert sc.text() == "name end-large\nclamp-send 7\ntask\n  end 131072 cb\n"
    trace = sc.run()
    assert trace["scenario"] == "end-large"
    assert trace["peer"]["bytes"] == 131072 and trace["queue"]["bytes_moved"] == 0
    assert trace["events"][-3:] == ["t3 c0 finish", "t4 c0 eof",
                                    "t4 c0 close had_error=0 bytes_written=131072"]
    legacy = sc.run(variants=["queue=memmove"])
    assert legacy["variant"] == {"batch": "on", "chunked": "fixed", "halfopen": "end-first",
                                 "queue": "memmove", "ws": "by-option"}
    assert legacy["queue"]["bytes_moved"] > 0

    sc2 = (Scenario('a "name" with \\ and #').transport("unix").peer_read_at_task(1)
           .task().write(100, cb=True).write(10, fill="z").write_bytes(b"\r\n")
           .task().end("é", cb=True).destroy())
    assert sc2.text() == (
        'name "a \\"name\\" with \\\\ and #"\ntransport unix\npeer read at task 1\n'
        "task\n  write 100 cb\n  write 10 fill=z\n  write \"\\x0d\\x0a\"\n"
        "task\n  end \"\\xc3\\xa9\" cb\n  destroy\n")
    t = sc2.run()
    assert t["scenario"] == 'a "name" with \\ and #'
    assert t["peer"]["reads"] == [112] and t["peer"]["bytes"] == 114
    assert bytes.fromhex(t["peer"]["hex"])[100:] == b"zzzzzzzzzz\r\n\xc3\xa9"


def test_api_strings_round_trip_every_byte(suite):
    data = bytes(range(256)) + b'"\\"\\\\x41\\0\\n#' + bytes(range(255, -1, -1))
    assert scenario_bytes(quote(data)) == data
    assert scenario_bytes('"\\r\\n\\t\\0\\\\\\"\\x4A\\x4a"') == b'\r\n\t\0\\"JJ'
    t = Scenario().task().write_bytes(data, cb=True).end().run()
    assert bytes.fromhex(t["peer"]["hex"]) == data


def test_wirecheck_subject_runs_another_subject(suite):
    from wirecheck import runner
    real = runner.find_binary().parent / "refstack-subject"
    suite.scenario("small", SMALL)
    suite.update()
    wrapper = suite.path / "my-subject"
    wrapper.write_text(f"#!/bin/sh\ntouch {suite.path / 'ran'}\nexec {real} \"$@\"\n")
    wrapper.chmod(0o755)
    res = suite.run("--wirecheck-subject=my-subject")
    assert outcomes(res) == {"passed": 1}
    assert (suite.path / "ran").exists()
