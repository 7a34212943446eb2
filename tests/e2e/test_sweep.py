"""Fault sweeps (docs/sweeps.md): the judge on made-up traces (each
invariant can fail), `wirecheck sweep` end to end, and the pytest items
spread by xdist, locally (-n 2) and through execnet's remote path (--tx
popen//python=..., the path --tx ssh=... takes)."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

# Not imported from conftest: under a bare `pytest` the root conftest.py is
# the module of that name (as tests/e2e/test_chunked.py does).
REPO = pathlib.Path(__file__).resolve().parents[2]
SAFETY_TIMEOUT = 180  # a net against a hung harness, never a speed assertion

sys.path.insert(0, str(REPO / "python"))
from wirecheck import runner, sweep  # noqa: E402

SCENARIO = REPO / "scenarios" / "batching" / "several-writes.wcs"


def trace(*events, peer=(19, "aa"), exit=None, faults=(), fired=()):
    peers = [{"bytes": b, "sha256": s} for b, s in
             ([peer] if isinstance(peer, tuple) else peer)]
    return {"events": list(events), "peer": peers[0] if len(peers) == 1 else peers,
            "exit": exit or {"code": 0, "timed_out": False},
            "faults": list(faults), "queue": {"bytes_moved": 0},
            "fired": {"calls": [{"rule": r} for r in fired]}}


CLEAN = trace("t1 c0 connect", "t2 c0 write#1 6 -> true", "t3 c0 write#1 cb ok",
              "t3 c0 finish", "t4 c0 close had_error=0 bytes_written=19")
EAGAIN = sweep.Cell("EAGAIN", 2)
EPIPE = sweep.Cell("EPIPE", 2)
EPIPE_RULE = "write:errno=EPIPE,after=1"


def test_cells_cover_every_fault_at_every_call_and_the_clamps():
    cells = sweep.cells(3)
    assert len(cells) == 3 * len(sweep.FAULTS) + len(sweep.CLAMPS)
    assert sweep.Cell("short1", 3) in cells and sweep.Cell("clamp=4096") in cells
    assert sweep.cells(10, k_max=2) == sweep.cells(2)
    assert sweep.Cell("EPIPE", 3).flags() == ["--fault", "write:errno=EPIPE,after=2"]
    assert sweep.Cell("signal", 1).flags() == [
        "--fault", "write:signal=SIGURG,after=0", "--fault", "write:errno=EINTR,after=0"]
    assert sweep.Cell("clamp=7").flags() == ["--clamp-send", "7"]


def test_byte_cells_aim_at_a_connection_and_a_byte():
    assert sweep.byte_positions(19, 3) == [0, 9, 18]
    assert sweep.byte_positions(2, 3) == [0, 1]
    assert sweep.byte_positions(19, 1) == [0] and sweep.byte_positions(0, 3) == []
    cell = sweep.Cell("EPIPE", conn=1, byte=4096)
    assert cell.id == "EPIPE@c1.b4096" and cell.kind == "fatal"
    assert cell.flags() == ["--fault", "write:errno=EPIPE,conn=1,byte=4096"]
    assert sweep.Cell("signal", conn=0, byte=3).flags() == [
        "--fault", "write:signal=SIGURG,conn=0,byte=3",
        "--fault", "write:errno=EINTR,conn=0,byte=3"]
    assert sweep.Cell("death", 2).flags() == ["--fault", "write:signal=SIGTERM,after=1"]
    assert sweep.Cell("zero", 1).flags() == ["--fault", "read:zero,after=0"]
    assert sweep.Cell("zero", 1).kind == "eof"
    # Three connections: the first BYTE_CONNS get byte cells.
    got = sweep.cells(0, conn_bytes=[10, 20, 30], n_bytes=2, clamps=())
    assert {(c.conn, c.byte) for c in got} == {(0, 0), (0, 9), (1, 0), (1, 19)}
    assert len(got) == 4 * len(sweep.FAULTS)
    # Zero cells on the reading calls only.
    assert [c.id for c in sweep.cells(0, reads=2, clamps=())] == ["zero@1", "zero@2"]


def test_a_legacy_sweep_aims_at_the_bytes_of_the_fixed_run():
    fixed = sweep.Sweep(str(SCENARIO), binary=sys.executable)
    legacy = sweep.Sweep(str(SCENARIO), variants=["batch=off"], binary=sys.executable,
                         byte_source=fixed, n_bytes=3)
    fixed.clean = dict(CLEAN, peer={"bytes": 19, "sha256": "a"})
    legacy.clean = dict(CLEAN, peer={"bytes": 25, "sha256": "b"})
    assert legacy.conn_bytes() == [19]
    assert legacy.place(sweep.Cell("EPIPE", conn=0, pos=1), 3) == \
        sweep.Cell("EPIPE", conn=0, byte=9)
    assert legacy.place(sweep.Cell("EPIPE", conn=1, pos=0), 3) is None
    assert {c.byte for c in legacy.cells() if c.conn is not None} == {0, 9, 18}


def test_a_death_must_be_reported_as_the_signal_and_leave_a_prefix():
    death = sweep.Cell("death", 2)
    rule = "write:signal=SIGTERM,after=1"
    died = dict(trace("t1 c0 connect", peer=(6, "cc"), faults=[rule], fired=[rule]),
                exit={"signal": "SIGTERM", "core": False, "timed_out": False}, queue=None)
    assert sweep.judge(CLEAN, died, death) == []
    lived = dict(died, exit={"code": 0, "timed_out": False})
    assert any("did not die of SIGTERM" in b for b in sweep.judge(CLEAN, lived, death))
    hung = dict(died, exit={"code": None, "timed_out": True})
    assert any("hung" in b for b in sweep.judge(CLEAN, hung, death))
    more = dict(died, peer={"bytes": 20, "sha256": "dd"})
    assert any("more than the clean run" in b for b in sweep.judge(CLEAN, more, death))
    # Not fired (past the last call): the clean run's exit is owed.
    unfired = dict(died, fired={"calls": []})
    assert any("crashed: signal SIGTERM" in b for b in sweep.judge(CLEAN, unfired, death))


def test_an_early_end_of_stream_may_lose_queued_bytes_but_owes_no_error():
    zero = sweep.Cell("zero", 1)
    rule = "read:zero"
    cut = trace("t1 c0 connect", "t2 c0 eof", "t3 c0 close had_error=0 bytes_written=6",
                peer=(6, "cc"), faults=[rule], fired=[rule])
    assert sweep.judge(CLEAN, cut, zero) == []
    more = dict(cut, peer={"bytes": 20, "sha256": "dd"})
    assert any("more than the clean run" in b for b in sweep.judge(CLEAN, more, zero))
    crashed = dict(cut, exit={"signal": "SIGSEGV", "core": False, "timed_out": False})
    assert any("crashed" in b for b in sweep.judge(CLEAN, crashed, zero))


def test_writing_calls_add_every_writing_kind():
    assert sweep.writing_calls({"syscalls": {"send": 2, "sendmsg": 1, "writev": 3,
                                             "recv": 9, "write": 1}}) == 7


def test_a_transient_fault_that_keeps_bytes_and_completions_passes():
    # Task numbers move when a fault delays a write; completions do not.
    run = trace("t1 c0 connect", "t2 c0 write#1 6 -> false", "t4 c0 write#1 cb ok",
                "t4 c0 finish", "t5 c0 close had_error=0 bytes_written=19")
    assert sweep.judge(CLEAN, run, EAGAIN) == []


def test_a_transient_fault_that_loses_bytes_is_broken():
    run = trace(*CLEAN["events"][:-1], "t4 c0 close had_error=0 bytes_written=18",
                peer=(18, "bb"))
    broken = sweep.judge(CLEAN, run, EAGAIN)
    assert any("the peer got 18 bytes" in b for b in broken)


def test_a_transient_fault_that_reorders_completions_is_broken():
    run = trace("t1 c0 connect", "t3 c0 finish", "t3 c0 write#1 cb ok",
                "t4 c0 close had_error=0 bytes_written=19")
    assert any("completion events" in b for b in sweep.judge(CLEAN, run, EAGAIN))


def test_a_crash_a_hang_and_another_exit_are_broken():
    for ex, word in (({"signal": "SIGSEGV", "core": False, "timed_out": False}, "crashed"),
                     ({"code": None, "timed_out": True}, "hung"),
                     ({"code": 2, "timed_out": False, "error": "loop"}, "did not end")):
        run = dict(CLEAN, exit=ex)
        assert any(word in b for b in sweep.judge(CLEAN, run, EAGAIN)), ex


def test_a_fatal_fault_gives_a_prefix_and_one_error():
    run = trace("t1 c0 connect", "t2 c0 write#1 cb EPIPE", "t2 c0 error EPIPE send",
                "t3 c0 close had_error=1 bytes_written=6", peer=(6, "cc"),
                faults=[EPIPE_RULE], fired=[EPIPE_RULE])
    assert sweep.judge(CLEAN, run, EPIPE) == []


def test_a_fatal_fault_with_more_bytes_two_errors_or_an_ok_after_is_broken():
    more = trace("t2 c0 error EPIPE send", "t3 c0 close had_error=1 bytes_written=20",
                 peer=(20, "dd"), faults=[EPIPE_RULE], fired=[EPIPE_RULE])
    assert any("more than the clean run" in b for b in sweep.judge(CLEAN, more, EPIPE))
    two = trace("t2 c0 error EPIPE send", "t2 c0 error EPIPE sendmsg",
                "t3 c0 close had_error=1 bytes_written=6", peer=(6, "cc"),
                faults=[EPIPE_RULE], fired=[EPIPE_RULE])
    assert any("2 errors" in b for b in sweep.judge(CLEAN, two, EPIPE))
    ok_after = trace("t2 c0 error EPIPE send", "t3 c0 write#1 cb ok",
                     "t3 c0 close had_error=1 bytes_written=6", peer=(6, "cc"),
                     faults=[EPIPE_RULE], fired=[EPIPE_RULE])
    assert any("did not take" in b for b in sweep.judge(CLEAN, ok_after, EPIPE))
    silent = trace("t3 c0 close had_error=0 bytes_written=6", peer=(6, "cc"),
                   faults=[EPIPE_RULE], fired=[EPIPE_RULE])
    assert any("no connection reported an error" in b
               for b in sweep.judge(CLEAN, silent, EPIPE))


def test_a_fatal_fault_past_the_last_call_must_leave_the_clean_run():
    # Not fired: the run is judged as the clean run, so lost bytes break it.
    run = trace(*CLEAN["events"], peer=(18, "bb"), faults=[EPIPE_RULE])
    assert any("the peer got 18 bytes" in b for b in sweep.judge(CLEAN, run, EPIPE))


def test_wirecheck_sweep_runs_every_cell_and_writes_the_result(wc, tmp_path):
    out = tmp_path / "sweep.json"
    proc = wc("sweep", SCENARIO, "-k", "1", "-b", "2", "-j", "2", "--legacy", "--output", out)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(out.read_text())
    fixed, legacy = res["scenarios"]
    assert legacy["variants"] == ["batch=off"]
    # "first\n second\n third\n": both strategies aim at bytes 0 and 18.
    assert fixed["conn_bytes"] == legacy["conn_bytes"] == [19]
    for s in (fixed, legacy):
        want = sweep.cells(1, 1, reads=1, conn_bytes=[19], n_bytes=2)
        assert set(s["outcomes"]) == {c.id for c in want}
        assert {"zero@1", "death@1", "EPIPE@c0.b0", "EPIPE@c0.b18", "death@c0.b18",
                "clamp=7"} <= set(s["outcomes"])
        assert s["exits"]["death@c0.b18"] == "signal SIGTERM"
        assert s["failures"] == []
    assert res["cells"] == fixed["cells"] + legacy["cells"]
    assert res["failing"] == 0 and res["k_max"] == 1 and res["n_bytes"] == 2
    assert f"{res['cells']}/{res['cells']} runs, 0 failing" in proc.stderr


def test_wirecheck_sweep_names_a_bad_scenario(wc, tmp_path):
    bad = tmp_path / "bad.wcs"
    bad.write_text("task\n  write lots\n")
    proc = wc("sweep", bad)
    assert proc.returncode == 2
    assert "bad.wcs:2:" in proc.stderr


FAKE = """#!/usr/bin/python3
# wirecheck, but the peer of the run with EAGAIN at call 1 lost its bytes.
import json, subprocess, sys
p = subprocess.run([{real!r}, *sys.argv[1:]], capture_output=True, text=True)
out = p.stdout
if p.returncode == 0 and sys.argv[1] == "run" and "write:errno=EAGAIN,after=0" in sys.argv:
    t = json.loads(out)
    t["peer"]["sha256"] = "0" * 64
    out = json.dumps(t)
sys.stdout.write(out)
sys.stderr.write(p.stderr)
sys.exit(p.returncode)
"""


def test_a_broken_invariant_is_reported_with_the_command_that_reproduces_it(wirecheck, tmp_path):
    fake = tmp_path / "wirecheck"
    fake.write_text(FAKE.format(real=str(wirecheck)))
    fake.chmod(0o755)
    out = tmp_path / "sweep.json"
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    proc = subprocess.run(
        [sys.executable, "-m", "wirecheck.sweep", str(SCENARIO), "-k", "1",
         "--wirecheck-bin", str(fake), "--output", str(out)],
        capture_output=True, text=True, env=env, timeout=SAFETY_TIMEOUT)
    assert proc.returncode == 1, proc.stderr
    res = json.loads(out.read_text())
    assert res["failing"] == 1
    (f,) = res["scenarios"][0]["failures"]
    assert f["cell"] == "EAGAIN@1" and f["kind"] == "transient"
    assert "connection 0: the peer got" in f["broken"][0]
    assert f["command"] == f"{fake} run {SCENARIO} --fault write:errno=EAGAIN,after=0"
    assert f"FAIL {SCENARIO} EAGAIN@1" in proc.stderr
    assert f"reproduce: {f['command']}" in proc.stderr


def _pytest(tmp_path, wirecheck, *args):
    # A scenario of its own, without a legacy line (one variant), run by the
    # plugin as another project loads it (-p wirecheck.plugin).
    (tmp_path / "two-writes.wcs").write_text("task\n  write 6\n  write 7\n  end\n")
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-p", "wirecheck.plugin", f"--wirecheck-bin={wirecheck}",
         "two-writes.wcs", "--wirecheck-sweep", "--wirecheck-sweep-k", "1",
         "--wirecheck-sweep-bytes", "1", *args],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=SAFETY_TIMEOUT)


@pytest.mark.parametrize("spread", [["-n", "2"],
                                    ["-d", "--tx", "popen//python=/usr/bin/python3"]],
                         ids=["local-cores", "execnet-remote"])
def test_sweep_items_are_pytest_items_that_xdist_spreads(wirecheck, tmp_path, spread):
    proc = _pytest(tmp_path, wirecheck, *spread)
    # Every fault at call 1, zero at reading call 1, the clamps, and every
    # fault at byte 0 of connection 0; those of connection 1, which the
    # scenario does not have, are skipped.
    cells = len(sweep.cells(1, reads=1, conn_bytes=[13], n_bytes=1))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{cells} passed, {len(sweep.FAULTS)} skipped" in proc.stdout, proc.stdout


def test_a_subject_that_ends_itself_is_judged_on_the_common_part_of_the_streams():
    # end-exit-0 and the like: the clean run has no queue figures (the
    # subject exited inside its loop), and a fault leaves bytes queued at
    # the exit: fewer bytes are fine, different ones are not.
    clean = dict(CLEAN, queue=None, peer={"bytes": 4, "sha256": "a", "hex": "61626364"})
    fewer = dict(clean, peer={"bytes": 2, "sha256": "b", "hex": "6162"}, events=[])
    assert sweep.judge(clean, fewer, EAGAIN) == []
    other = dict(clean, peer={"bytes": 2, "sha256": "c", "hex": "6163"}, events=[])
    assert any("differ where both have bytes" in b for b in sweep.judge(clean, other, EAGAIN))
    crashed = dict(fewer, exit={"signal": "SIGSEGV", "timed_out": False})
    assert any("crashed" in b for b in sweep.judge(clean, crashed, EAGAIN))


def test_a_websocket_reports_a_failed_write_as_an_abnormal_close():
    # No `error` event on a WebSocket connection: ws-closed code=1006 is
    # its one failure report (ws/client-masked under EPIPE@1).
    run = trace("t1 c0 connect", "t1 c0 ws-closed code=1006 dropped=0 bytes_written=0",
                peer=(0, "ee"), faults=[EPIPE_RULE], fired=[EPIPE_RULE])
    assert sweep.judge(CLEAN, run, EPIPE) == []
    closed_ok = trace("t1 c0 connect", "t1 c0 ws-closed code=1000 dropped=0 bytes_written=0",
                      peer=(0, "ee"), faults=[EPIPE_RULE], fired=[EPIPE_RULE])
    assert any("no connection reported an error" in b
               for b in sweep.judge(CLEAN, closed_ok, EPIPE))


def test_a_failed_close_answer_keeps_the_peers_code_and_says_unclean():
    # ws/ff68-server under EPIPE at byte 144, the close frame answering the
    # peer's: the code stays the peer's (RFC 6455 7.1.5), and `unclean`
    # (npm ws: wasClean false) is the connection's one failure report.
    clean = trace("t1 c0 accept", "t4 c0 ws-peer-close 1000 reason=-",
                  "t5 c0 ws-closed code=1000 dropped=0 bytes_written=19")
    unclean = trace("t1 c0 accept", "t4 c0 ws-peer-close 1000 reason=-",
                    "t4 c0 ws-closed code=1000 unclean dropped=0 bytes_written=15",
                    peer=(15, "ee"), faults=[EPIPE_RULE], fired=[EPIPE_RULE])
    assert sweep.judge(clean, unclean, EPIPE) == []
    # A transient fault must leave the handshake clean, as the clean run's.
    eagain = dict(unclean, peer={"bytes": 19, "sha256": "aa"})
    assert any("completion events" in b for b in sweep.judge(clean, eagain, EAGAIN))


@pytest.mark.parametrize("variants", [[], ["ws=by-kind"]], ids=["fixed", "legacy"])
def test_the_stack_reports_a_close_answer_it_could_not_send(wirecheck, variants):
    # The real stack: the clean run's handshake is clean; with the answer's
    # write failed, ws-closed keeps code 1000 and says unclean, and the
    # sweep's cell passes (it broke "no connection reported an error").
    path = REPO / "scenarios" / "ws" / "ff68-server.wcs"
    s = sweep.Sweep(str(path), variants=variants, binary=wirecheck)
    closed = [e for e in s.run_clean()["events"] if " ws-closed " in e]
    assert closed and closed[0].split(" ", 2)[2].startswith("ws-closed code=1000 dropped=0")
    last = s.conn_bytes()[0] - 1
    for fault in ("EPIPE", "ECONNRESET"):
        cell = sweep.Cell(fault, conn=0, byte=last)
        trace_ = sweep.runner.run(str(path), cell.flags(), variants=variants,
                                  binary=wirecheck)
        # The close frame (88 02 03 e8) is the stream's last 4 bytes.
        assert any(e.endswith(f"ws-closed code=1000 unclean dropped=0 bytes_written={last - 3}")
                   for e in trace_["events"]), trace_["events"]
        assert s.run_cell(cell).broken == []


def test_an_early_end_of_stream_on_a_half_open_connection_may_wait_for_ever():
    # half-open/eof-with-queued-write: the application answers data it
    # never got, and half-open keeps the connection open for its answer.
    zero, rule = sweep.Cell("zero", 1), "read:zero"
    hung = dict(trace("t1 c0 accept", "t2 c0 eof", peer=(0, "ee"), faults=[rule],
                      fired=[rule]), exit={"code": None, "timed_out": True})
    assert sweep.judge(CLEAN, hung, zero, half_open=True) == []
    assert any("hung" in b for b in sweep.judge(CLEAN, hung, zero))
    assert any("hung" in b for b in sweep.judge(CLEAN, hung, EAGAIN, half_open=True))


def test_a_try_write_left_to_an_application_that_never_answers_writable():
    # chunked/final-128k under EAGAIN@1: try-write says false, the stack
    # says writable, the application (no resume, no `on writable`) writes
    # nothing more: its hang, judged on the peer's bytes.
    rule = "write:errno=EAGAIN"
    events = ["t1 c0 accept", "t2 c0 request GET /r body=0",
              "t2 c0 try-write#1 131072 final -> false offset=0"]
    hung = dict(trace(*events, "t3 c0 writable offset=0", peer=(0, "ee"), faults=[rule],
                      fired=[rule]), exit={"code": None, "timed_out": True})
    assert sweep.judge(CLEAN, hung, sweep.Cell("EAGAIN", 1)) == []
    # Without the stack's writable, the hang is the stack's.
    silent = dict(hung, events=events)
    assert any("hung" in b for b in sweep.judge(CLEAN, silent, sweep.Cell("EAGAIN", 1)))
    # A later try-write that went out whole: nothing left to the application.
    done = dict(hung, events=hung["events"] + ["t4 c0 try-write#2 5 -> true offset=5"])
    assert any("hung" in b for b in sweep.judge(CLEAN, done, sweep.Cell("EAGAIN", 1)))


def test_a_scenario_with_a_matrix_is_swept_as_its_first_profile():
    # chunked/try-rest-on-writable ends only when its refused first call
    # makes try-write false: without its profile the clean run hangs.
    path = REPO / "scenarios" / "chunked" / "try-rest-on-writable.wcs"
    meta = {"matrix": [{"key": "refuse", "values": ["EAGAIN@1", "ENOBUFS@1"]},
                       {"key": "clamp", "values": ["none", "7"]}]}
    first = sweep.runner.profiles(meta)[0]
    s = sweep.Sweep(str(path), binary=sys.executable, base_flags=first.flags)
    assert s.command(sweep.Cell("EPIPE", 2))[2:] == [
        str(path), "--refuse-write", "EAGAIN@1", "--fault", "write:errno=EPIPE,after=1"]
    assert s.command(None)[2:] == [str(path), "--refuse-write", "EAGAIN@1"]


def test_a_scenario_whose_clean_run_hangs_gets_no_cells():
    # ws/queue-probe's legacy strategy hangs by itself: every cell would be
    # judged against a timed-out run.
    s = sweep.Sweep(str(SCENARIO), binary=sys.executable, n_bytes=2)
    s.clean = dict(CLEAN, exit={"code": None, "timed_out": True})
    assert s.cells() == []
    s.clean = CLEAN
    assert s.cells() != []


def test_a_declared_scenario_may_change_its_declared_bytes_only():
    # queue/owned-write-then-change's declaration: bytes 32..63 of
    # connection 0 may differ (an owned write changed before its release).
    path = REPO / "scenarios" / "queue" / "owned-write-then-change.wcs"
    decl = sweep.declaration(runner.check(path))
    assert decl.reason and (decl.conn, decl.start, decl.end) == (0, 32, 64)
    a, c, d = "61" * 32, "63" * 7 + "64" * 25, "64" * 32
    clean = dict(CLEAN, peer={"bytes": 64, "sha256": "c", "hex": a + c})
    run = dict(clean, peer={"bytes": 64, "sha256": "d", "hex": a + d},
               faults=["write:errno=EAGAIN"], fired={"calls": [{"rule": "write:errno=EAGAIN"}]})
    waived: list = []
    assert sweep.judge(clean, run, EAGAIN, declared=decl, waived=waived) == []
    assert len(waived) == 1 and "declared bytes only" in waived[0]
    # Without the declaration the same run is broken.
    assert any("the peer got 64 bytes" in b for b in sweep.judge(clean, run, EAGAIN))
    # A byte changed outside the declared ones is broken all the same.
    outside = dict(run, peer={"bytes": 64, "sha256": "e", "hex": "62" + a[2:] + d})
    assert any("the peer got 64 bytes" in b
               for b in sweep.judge(clean, outside, EAGAIN, declared=decl))
    # Fewer bytes under a transient fault: broken too.
    short = dict(run, peer={"bytes": 63, "sha256": "f", "hex": a + d[:-2]})
    assert sweep.judge(clean, short, EAGAIN, declared=decl) != []


def test_the_declaration_is_honoured_and_an_undeclared_copy_is_broken(wirecheck, tmp_path):
    # The real scenario under EAGAIN at byte 63: the owned write's first
    # call is refused, so all of it goes out after the change ('d').
    path = REPO / "scenarios" / "queue" / "owned-write-then-change.wcs"
    cell = sweep.Cell("EAGAIN", conn=0, byte=63)
    declared = sweep.Sweep(str(path), binary=wirecheck).run_cell(cell)
    assert declared.outcome == "declared" and declared.broken == []
    assert "declared bytes only" in declared.waived[0]
    # The same scenario without its sweep-declare line: the same run is broken.
    copy_ = tmp_path / "owned-write-then-change.wcs"
    copy_.write_text("".join(line for line in path.read_text().splitlines(True)
                             if not line.startswith("sweep-declare ")))
    assert sweep.declaration(runner.check(copy_, wirecheck)) is None
    undeclared = sweep.Sweep(str(copy_), binary=wirecheck).run_cell(cell)
    assert undeclared.outcome == "broken"
    assert any("the peer got 64 bytes" in b for b in undeclared.broken)


def test_a_fault_past_the_traces_list_of_fired_calls_still_fired():
    # half-open/peer-closes-after-reply: its 16 KiB clamp fires at all 512
    # sends, the trace lists the first 256, and zero@2 lands on the last
    # recv. The counts say the zero came: a hang after it is by design.
    clamp = "write:short=16384,repeat=forever"
    listed = [{"rule": clamp}] * 256
    clean = dict(CLEAN, faults=[clamp], peer={"bytes": 8388608, "sha256": "cc"},
                 fired={"total": 512, "refused": {}, "calls": listed})
    zero, rule = sweep.Cell("zero", 2), "read:zero,after=1"
    hung = dict(trace("t1 c0 accept", "t2 c0 eof", peer=(0, "ee")),
                exit={"code": None, "timed_out": True}, faults=[clamp, rule],
                fired={"total": 513, "refused": {"recv": 1}, "calls": listed})
    assert sweep.judge(clean, hung, zero, half_open=True) == []
    # Killed before the zero (fewer changed calls, none refused): a hang.
    unfired = dict(hung, fired={"total": 300, "refused": {}, "calls": listed})
    assert any("hung" in b for b in sweep.judge(clean, unfired, zero, half_open=True))
    # A fatal fault past the list, in a run that ended: judged as fatal
    # (an error owed), not as a run that must be the clean one.
    epipe = sweep.Cell("EPIPE", conn=0, byte=8388607)
    failed = dict(trace("t1 c0 accept", "t3 c0 error EPIPE send",
                        "t3 c0 close had_error=1 bytes_written=4194304",
                        peer=(4194304, "ee")), faults=[clamp, "write:errno=EPIPE"],
                  fired={"total": 257, "refused": {"send": 1}, "calls": listed})
    assert sweep.judge(clean, failed, epipe) == []


def test_a_zero_cell_killed_before_its_zero_came_runs_again_with_the_full_timeout(
        monkeypatch):
    # The 5 s timeout of a zero cell on a half-open scenario is for the
    # hang after the zero. Under load the run may not reach the zero in 5 s
    # (the last full sweep, at a load of 30: zero@2 of
    # half-open/peer-closes-after-reply, 8 MiB before it): slow, not hung.
    path = str(REPO / "scenarios" / "half-open" / "peer-closes-after-reply.wcs")
    s = sweep.Sweep(path, binary=sys.executable, timeout=60)
    # Its allow-half-open line, as the harness's parser reads it.
    s._meta = runner.check(path)
    assert s.half_open
    s.clean = CLEAN
    zero = sweep.Cell("zero", 2)
    killed = dict(trace("t1 c0 accept"), exit={"code": None, "timed_out": True},
                  faults=["read:zero,after=1"], fired={"total": 0, "calls": []})
    calls = []

    def run(path_, flags, **kw):
        calls.append(list(flags))
        return killed if flags[-2:] == ["--timeout", "5"] else \
            dict(CLEAN, faults=["read:zero,after=1"])
    monkeypatch.setattr(sweep.runner, "run", run)
    res = s.run_cell(zero)
    assert [f[-2:] for f in calls] == [["--timeout", "5"], ["--timeout", "60"]]
    assert res.broken == [] and res.command[-2:] == ["--timeout", "60"]
    # A run that hangs with the full timeout too is a hang.
    calls.clear()
    monkeypatch.setattr(sweep.runner, "run", lambda p, f, **kw: calls.append(f) or killed)
    assert any("hung" in b for b in s.run_cell(zero).broken) and len(calls) == 2


def test_wirecheck_sweep_prints_and_records_the_declared_cells(wc, tmp_path):
    path = REPO / "scenarios" / "queue" / "owned-write-then-change.wcs"
    out = tmp_path / "sweep.json"
    proc = wc("sweep", path, "-k", "1", "-b", "2", "--output", out)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(out.read_text())
    (s,) = res["scenarios"]
    assert res["failing"] == 0 and res["declared"] == len(s["declared"]["cells"]) > 0
    assert s["declared"]["reason"].startswith("connection 0, bytes 32..63: ")
    assert {s["outcomes"][c] for c in s["declared"]["cells"]} == {"declared"}
    assert f"DECLARED {path} " in proc.stderr
    assert f"0 broke an invariant, {res['declared']} passed by a declaration" in proc.stderr


def test_a_peer_program_left_waiting_by_a_fatal_fault_is_not_the_subjects_hang():
    # ws/deflate-client under EPIPE@1: the Upgrade's write fails, the
    # subject reports 1006 and exits 0; python3-websockets, which waits for
    # a whole exchange, waits until the timeout. Its output ("close 1006",
    # "NOT INTACT") is its report, no prefix of the clean one.
    program = {"timed_out": True, "exit": {"signal": "SIGKILL"}}
    clean = dict(CLEAN, peer={"bytes": 90, "sha256": "c", "hex": "61" * 90,
                              "program": {"timed_out": False}})
    run = dict(trace("t1 c0 connect", "t1 c0 ws-closed code=1006 dropped=0 bytes_written=0"),
               peer={"bytes": 20, "sha256": "d", "hex": "62" * 20, "program": program},
               exit={"code": 0, "timed_out": True}, faults=[EPIPE_RULE],
               fired={"calls": [{"rule": EPIPE_RULE}]})
    assert sweep.judge(clean, run, EPIPE) == []
    # The subject itself killed at the timeout: a hang.
    killed = dict(run, exit={"signal": "SIGKILL", "timed_out": True})
    assert any("hung" in b for b in sweep.judge(clean, killed, EPIPE))
    # After a transient fault the program's wait is broken, and so is
    # another report than the clean run's.
    eagain = dict(run, events=CLEAN["events"])
    got = sweep.judge(clean, eagain, EAGAIN)
    assert any("hung" in b for b in got) and any("the peer got 20 bytes" in b for b in got)


def test_an_early_end_before_a_websocket_handshake_does_not_hold_the_tasks(wirecheck):
    # ws/deflate-errors under zero@1: connection 0 ends before its
    # handshake. The tasks used to wait for every handshake, so the other
    # three connections waited for ever; they start once every handshake is
    # done or its connection closed first.
    path = REPO / "scenarios" / "ws" / "deflate-errors.wcs"
    t = sweep.runner.run(str(path), ["--fault", "read:zero,after=0", "--timeout", "20"],
                         binary=wirecheck)
    assert t["exit"] == {"code": 0, "timed_out": False}, t["exit"]
    evs = [e.split(" ", 1)[1] for e in t["events"]]
    assert "c0 ws-closed code=1006 dropped=0 bytes_written=0" in evs
    assert "c0 ws-send (closed)" in evs and "c1 ws-send#1 5 text -> sent" in evs
    s = sweep.Sweep(str(path), binary=wirecheck, timeout=20)
    assert s.run_cell(sweep.Cell("zero", 1)).broken == []


def test_an_early_end_owes_no_error_where_the_clean_run_fails_by_its_own_rule():
    # chunked/try-epipe-then-end-rest: its own rule refuses the first send
    # with EPIPE; under zero@1 the request never comes and nothing is
    # written, so the rule never fires and no error comes.
    clean = dict(trace("t1 c0 accept", "t2 c0 error EPIPE send",
                       "t2 c0 close had_error=1 bytes_written=0", peer=(0, "ee")),
                 faults=["write:errno=EPIPE"], fired={"calls": [{"rule": "write:errno=EPIPE"}]})
    zero, rule = sweep.Cell("zero", 1), "read:zero"
    run = dict(trace("t1 c0 accept", "t2 c0 eof", "t2 c0 finish",
                     "t2 c0 close had_error=0 bytes_written=0", peer=(0, "ee")),
               faults=["write:errno=EPIPE", rule], fired={"calls": [{"rule": rule}]})
    assert sweep.judge(clean, run, zero) == []
    # A transient fault there still owes the clean run's error.
    eagain = dict(run, events=["t1 c0 accept", "t2 c0 finish"],
                  faults=["write:errno=EPIPE", "write:errno=EAGAIN"],
                  fired={"calls": [{"rule": "write:errno=EAGAIN"}]})
    assert any("no connection reported an error" in b
               for b in sweep.judge(clean, eagain, EAGAIN))
