"""Foreign subjects (docs/subjects.md): node:net and libuv speak the subject
protocol, run with the gate preloaded (faultinject/preload.c with
WIRECHECK_SHM_FD), and are compared with the reference goldens through their
reviewed differences files (scenarios/subjects/NAME.differences).

What is asserted, and why it can fail:
- a few bundled scenarios pass on each subject through the plugin, with the
  reviewed differences (a difference the file does not list fails);
- a difference the file does not explain fails the item, and so does one
  whose value changed (its fingerprint) and an entry the run no longer shows;
- the syscalls section comes from the gate in the subject: N writes of node
  are N write(2) calls on the socket, and the subject's own pipes are not
  counted (before WIRECHECK_SHM_FD the section was all zeros);
- a clamp on the write group reaches the socket only (node's eventfd and
  event pipe writes would break under it);
- an operation a subject cannot perform is skipped with its reason.
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

# Not imported from conftest: with tests/plugin in the same session, the
# module named conftest may be that folder's.
REPO = pathlib.Path(__file__).resolve().parents[2]
SAFETY_TIMEOUT = 180


def wirecheck_path():
    return pathlib.Path(os.environ.get("WIRECHECK_BIN") or REPO / "build" / "bin" / "wirecheck")

PYTHON = "/usr/bin/python3"
SUBJECTS = ["node", "libuv"]
NODE = shutil.which("node")


def subject_path(name):
    return wirecheck_path().parent / f"{name}-subject"


@pytest.fixture(params=SUBJECTS)
def subject(request, wirecheck):
    name = request.param
    if name == "node" and NODE is None:
        pytest.skip("node is not installed (scripts/setup.sh installs nodejs)")
    if not subject_path(name).exists():
        pytest.skip(f"{subject_path(name)} is not built (libuv1-dev missing at configure time?)")
    return name


@pytest.fixture
def node(wirecheck):
    if NODE is None:
        pytest.skip("node is not installed (scripts/setup.sh installs nodejs)")
    return "node"


def run_trace(wc, *args):
    proc = wc("run", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def pytest_run(tmp_path, *args):
    """`python3 -m pytest ARGS` with the repository's plugin, in tmp_path."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"),
               WIRECHECK_BIN=str(wirecheck_path()))
    # These runs write goldens and differences in their own tmp_path, which
    # --update-goldens refuses under a CI runner's CI=true.
    env.pop("CI", None)
    return subprocess.run([PYTHON, "-m", "pytest", "-p", "wirecheck.plugin", "-q",
                           "-p", "no:cacheprovider", "-p", "no:xdist", *map(str, args)],
                          cwd=tmp_path, capture_output=True, text=True, env=env,
                          timeout=SAFETY_TIMEOUT)


# ---------------------------------------------------------------- the suite

BUNDLED = ["scenarios/batching/several-writes.wcs", "scenarios/queue/epipe-prefix.wcs",
           "scenarios/half-open/request-fin-no-half-open-on-end.wcs",
           "scenarios/queue/end-large.wcs"]


def test_bundled_scenarios_pass_with_the_reviewed_differences(subject, tmp_path):
    proc = pytest_run(tmp_path, "--rootdir", REPO, f"--wirecheck-subject={subject}",
                      *[REPO / s for s in BUNDLED])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # end-large has 4 profiles: 7 fixed items pass; the legacy items are skipped
    assert "7 passed" in proc.stdout, proc.stdout


# A scenario of our own, in a folder of our own: its golden comes from the
# reference stack (--update-goldens), its differences file is written here.
OWN = """behaviour batching
peer read at checkpoint 1
task
  write "first\\n"
  write "second\\n"
  checkpoint
  end
"""


def own_suite(tmp_path):
    d = tmp_path / "suite"
    (d / "subjects").mkdir(parents=True)
    (d / "writes.wcs").write_text(OWN)
    proc = pytest_run(tmp_path, d / "writes.wcs", "--update-goldens")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return d


def write_differences(path, text):
    """A differences file whose entries give the reason named 'why'."""
    path.write_text("reason why written by the test\n" + text)


def unexplained_lines(output):
    return [l.strip() for l in output.splitlines() if l.strip().endswith(" REASON")]


def test_a_new_difference_fails_until_it_is_explained(node, tmp_path):
    d = own_suite(tmp_path)
    # No differences file: every difference is new, and the failure prints
    # the lines to add (scenario, field, fingerprint).
    proc = pytest_run(tmp_path, d / "writes.wcs", f"--wirecheck-subject={node}")
    assert proc.returncode == 1, proc.stdout
    assert "does not explain" in proc.stdout
    lines = unexplained_lines(proc.stdout)
    fields = sorted(l.split()[1] for l in lines)
    # node sends each write at once (peer reads 13 at the checkpoint, not 6),
    # closes a task later (events), makes its own calls, reports no queue
    assert fields == ["events", "peer", "queue", "syscalls"], proc.stdout
    # Explained: the item passes, and says which fields differ.
    write_differences(d / "subjects" / "node.differences", "".join(l.replace(" REASON", " why") + "\n" for l in lines))
    proc = pytest_run(tmp_path, d / "writes.wcs", f"--wirecheck-subject={node}", "-rA")
    assert proc.returncode == 0, proc.stdout
    assert "1 passed" in proc.stdout
    # All but one explained: exactly that one fails.
    keep = [l for l in lines if " peer " not in l]
    write_differences(d / "subjects" / "node.differences", "".join(l.replace(" REASON", " why") + "\n" for l in keep))
    proc = pytest_run(tmp_path, d / "writes.wcs", f"--wirecheck-subject={node}")
    assert proc.returncode == 1
    assert [l.split()[1] for l in unexplained_lines(proc.stdout)] == ["peer"], proc.stdout


def test_a_changed_difference_and_a_stale_entry_fail(node, tmp_path):
    d = own_suite(tmp_path)
    proc = pytest_run(tmp_path, d / "writes.wcs", f"--wirecheck-subject={node}")
    lines = [l.replace(" REASON", " why") for l in unexplained_lines(proc.stdout)]
    # The peer's value is pinned by its fingerprint: another value is a new
    # difference.
    changed = [l if " peer " not in l else " ".join(l.split()[:2] + ["0" * 12, "why"])
               for l in lines]
    write_differences(d / "subjects" / "node.differences", "\n".join(changed) + "\n")
    proc = pytest_run(tmp_path, d / "writes.wcs", f"--wirecheck-subject={node}")
    assert proc.returncode == 1
    assert "does not explain" in proc.stdout and "no longer shows" in proc.stdout, proc.stdout
    # An entry for a field that does not differ is stale.
    write_differences(d / "subjects" / "node.differences", "\n".join(lines + ["writes exit 000000000000 why"]) + "\n")
    proc = pytest_run(tmp_path, d / "writes.wcs", f"--wirecheck-subject={node}")
    assert proc.returncode == 1
    assert "no longer shows" in proc.stdout and "writes exit 000000000000" in proc.stdout


def test_an_entry_marked_sometimes_may_be_absent_but_still_pins_its_value(node, tmp_path):
    # bun-upgrade's broadcast: its ready order is the golden's in some runs
    # and c2 first in others; an entry marked ? accepts both and nothing else.
    d = own_suite(tmp_path)
    proc = pytest_run(tmp_path, d / "writes.wcs", f"--wirecheck-subject={node}")
    lines = [l.replace(" REASON", " why") for l in unexplained_lines(proc.stdout)]
    diff_file = d / "subjects" / "node.differences"
    # A field that does not differ in this run: not stale when marked ?.
    write_differences(diff_file, "\n".join(lines + ["writes exit 000000000000? why"]) + "\n")
    proc = pytest_run(tmp_path, d / "writes.wcs", f"--wirecheck-subject={node}")
    assert proc.returncode == 0, proc.stdout
    # A difference the run does show, marked ?: still explained by its value...
    marked = [" ".join(l.split()[:2] + [l.split()[2] + "?", "why"]) for l in lines]
    write_differences(diff_file, "\n".join(marked) + "\n")
    proc = pytest_run(tmp_path, d / "writes.wcs", f"--wirecheck-subject={node}")
    assert proc.returncode == 0, proc.stdout
    # ...and only by its value: another fingerprint marked ? explains nothing.
    changed = [l if " peer " not in l else " ".join(l.split()[:2] + ["0" * 12 + "?", "why"])
               for l in marked]
    write_differences(diff_file, "\n".join(changed) + "\n")
    proc = pytest_run(tmp_path, d / "writes.wcs", f"--wirecheck-subject={node}")
    assert proc.returncode == 1
    assert "does not explain" in proc.stdout and "no longer shows" not in proc.stdout, proc.stdout
    # A ? anywhere but after the fingerprint is a malformed line.
    diff_file.write_text("writes exit 0000?0000000 why\n")
    proc = pytest_run(tmp_path, d / "writes.wcs", f"--wirecheck-subject={node}")
    assert proc.returncode == 1
    assert "node.differences:1: fingerprint '0000?0000000'" in proc.stdout, proc.stdout


def test_a_differences_file_kept_elsewhere_is_used_with_the_same_keys(node, tmp_path):
    """--wirecheck-differences FILE: a user runs a pinned checkout's
    scenarios on their stack and keeps the reviewed file in their own
    repository. Fails on the code before (an unknown option)."""
    d = own_suite(tmp_path)
    proc = pytest_run(tmp_path, d / "writes.wcs", f"--wirecheck-subject={node}")
    lines = [l.replace(" REASON", " why") for l in unexplained_lines(proc.stdout)]
    mine = tmp_path / "my-repo" / "node.differences"
    mine.parent.mkdir()
    write_differences(mine, "".join(l + "\n" for l in lines))
    proc = pytest_run(tmp_path, d / "writes.wcs", f"--wirecheck-subject={node}",
                      f"--wirecheck-differences={mine}")
    assert proc.returncode == 0, proc.stdout
    # Without the option the suite's own folder is read, and has no file.
    proc = pytest_run(tmp_path, d / "writes.wcs", f"--wirecheck-subject={node}")
    assert proc.returncode == 1 and "does not explain" in proc.stdout, proc.stdout
    # The given file is the one named in a failure, and its entries are
    # checked against the scenarios below the suite's folder.
    write_differences(mine, "".join(l + "\n" for l in lines) + "write events 000000000000 why\n")
    proc = pytest_run(tmp_path, d / "writes.wcs", f"--wirecheck-subject={node}",
                      f"--wirecheck-differences={mine}")
    assert proc.returncode == 1
    assert f"{mine}:{len(lines) + 2}: no scenario 'write'" in proc.stdout, proc.stdout
    # Bad uses are usage errors.
    proc = pytest_run(tmp_path, d / "writes.wcs", f"--wirecheck-differences={mine}")
    assert proc.returncode == 4 and "goes with --wirecheck-subject" in proc.stderr, proc.stderr
    proc = pytest_run(tmp_path, d / "writes.wcs", f"--wirecheck-subject={node}",
                      "--wirecheck-differences", tmp_path / "nowhere" / "x.differences")
    assert proc.returncode == 4 and "no directory" in proc.stderr, proc.stderr


def test_a_malformed_differences_file_is_reported_with_its_line(node, tmp_path):
    d = own_suite(tmp_path)
    (d / "subjects" / "node.differences").write_text("# ok\nwrites speed 123 why\n")
    proc = pytest_run(tmp_path, d / "writes.wcs", f"--wirecheck-subject={node}")
    assert proc.returncode == 1
    assert "node.differences:2: unknown field 'speed'" in proc.stdout, proc.stdout


UNSUPPORTED = {"node": ("end-execve", "unsupported execve"),
               "libuv": ("cork-later-task", "unsupported cork")}


def test_an_unsupported_operation_is_skipped_with_its_reason(subject, tmp_path):
    scenario, reason = UNSUPPORTED[subject]
    proc = pytest_run(tmp_path, "--rootdir", REPO, f"--wirecheck-subject={subject}", "-rs",
                      REPO / f"scenarios/batching/{scenario}.wcs")
    assert proc.returncode == 0, proc.stdout
    # the fixed item for the operation, the legacy item for being the
    # reference stack's strategy
    assert "2 skipped" in proc.stdout and reason in proc.stdout, proc.stdout


def test_faults_only_on_calls_the_stack_never_makes_are_declared(subject, wc, tmp_path):
    # node and libuv read with read(2): a recv rule can never fire, and the
    # scenario, which counts on it to end the connection, ran until the
    # harness killed the subject at its timeout (30 s, SIGKILL). The subject
    # now says so before it connects.
    p = tmp_path / "recv.wcs"
    p.write_text('fault recv:errno=ECONNRESET\npeer send "hello\\n" at start\n'
                 'task\n  write 10 cb\n')
    proc = wc("run", p, "--subject", subject, "--timeout", "10")
    assert proc.returncode == 4, proc.stderr  # the subject stopped with an error
    assert "unsupported fault recv" in proc.stderr, proc.stderr
    assert json.loads(proc.stdout)["exit"]["timed_out"] is False
    # a rule on a call the stack makes is armed as before
    p.write_text('fault write:short=3\ntask\n  write 10\n  end\n')
    t = run_trace(wc, p, "--subject", subject)
    assert t["exit"] == {"code": 0, "timed_out": False}
    assert t["fired"]["total"] == 1 and t["peer"]["bytes"] == 10


def test_libuv_a_write_after_end_fails_the_stream(wc):
    if not subject_path("libuv").exists():
        pytest.skip("libuv-subject is not built")
    # Before: UV_EPIPE changed nothing, and write#1, refused forever, was
    # retried on every writable event until the timeout (2.7 million
    # write(2) calls in 30 s). Now the stream fails as for an error in a
    # write callback, and the close cancels write#1 and the shutdown.
    t = run_trace(wc, REPO / "scenarios/rules/write-after-end.wcs", "--subject", "libuv",
                  "--timeout", "10")
    assert t["exit"] == {"code": 0, "timed_out": False}
    ev = [e.split(" ", 2)[2] for e in t["events"]]
    assert ev[3:] == ["write#2 5 -> EPIPE", "error EPIPE write", "write#1 cb ECANCELED",
                      "end cb ECANCELED", "close had_error=1 bytes_written=0"], ev
    assert t["syscalls"]["write"] < 10


def test_libuv_end_refused_in_its_call_fails_the_stream(wc, tmp_path):
    if not subject_path("libuv").exists():
        pytest.skip("libuv-subject is not built")
    # Found by `wirecheck explore queue --subject libuv --seed 0` (docs/
    # findings.md): end()'s byte refused with EPIPE by uv_try_write was
    # reported, but the stream stayed open and the run hung until the timeout.
    p = tmp_path / "end-epipe.wcs"
    p.write_text("behaviour queue\nfault write:errno=EPIPE,byte=0\ntask\n  end 1\n")
    t = run_trace(wc, p, "--subject", "libuv", "--timeout", "10")
    assert t["exit"] == {"code": 0, "timed_out": False}
    ev = [e.split(" ", 2)[2] for e in t["events"]]
    assert ev[1:] == ["end 1 -> EPIPE", "error EPIPE write",
                      "close had_error=1 bytes_written=0"], ev


def test_libuv_bytes_of_a_second_end_are_a_write_after_end(wc, tmp_path):
    if not subject_path("libuv").exists():
        pytest.skip("libuv-subject is not built")
    # Found by `wirecheck explore half_open --subject libuv --seed 0`: the
    # second end()'s byte was reported `-> ok` and never sent.
    p = tmp_path / "end-end.wcs"
    p.write_text("behaviour queue\ntask\n  end 1\n  end 1\n")
    t = run_trace(wc, p, "--subject", "libuv", "--timeout", "10")
    ev = [e.split(" ", 2)[2] for e in t["events"]]
    assert ev[1:4] == ["end 1 -> ok", "end 1 -> EPIPE", "error EPIPE write"], ev
    assert t["peer"]["bytes"] == 1


def test_node_bytes_refused_in_the_call_are_not_counted_taken(node, wc, tmp_path):
    # Found by `wirecheck explore queue --subject node --seed 0`: end()'s
    # byte, refused with EPIPE in its write(2), was counted as taken
    # (close ... bytes_written=1, the peer got 0): the sample at `end 1 ->
    # ok` came before node's error event, with the stream already errored.
    p = tmp_path / "end-epipe.wcs"
    p.write_text("behaviour queue\nfault write:errno=EPIPE,byte=0\ntask\n  end 1\n")
    t = run_trace(wc, p, "--subject", "node", "--timeout", "10")
    assert t["peer"]["bytes"] == 0
    assert t["events"][-1].endswith("close had_error=1 bytes_written=0"), t["events"]


def test_node_a_call_on_a_destroyed_socket_is_refused_as_closed(node, wc, tmp_path):
    # Found by `wirecheck explore half_open --subject bun --seed 0` (node
    # does the same): once both sides ended node:net destroys the socket,
    # and its 'close' comes a tick later; end(1 byte) in between was
    # reported `-> ok` and the byte never left (node passes
    # ERR_STREAM_DESTROYED to the callback alone).
    p = tmp_path / "end-after-both.wcs"
    p.write_text("behaviour half_open\nallow-half-open yes\npeer shutdown at start\n"
                 "task\ntask\n  end 1\non eof\n  end\n")
    t = run_trace(wc, p, "--subject", "node", "--timeout", "10")
    ev = [e.split(" ", 2)[2] for e in t["events"]]
    assert "end 1 -> EBADF (closed)" in ev, ev
    assert t["peer"]["bytes"] == 0


# ------------------------------------------------------------- the gate


def writes_scenario(tmp_path, n, extra=""):
    p = tmp_path / f"w{n}.wcs"
    p.write_text(extra + "task\n" + "  write 128\n" * n + "  end\n")
    return p


def test_counts_come_from_the_gate_in_the_shared_memory(subject, wc, tmp_path):
    t = run_trace(wc, writes_scenario(tmp_path, 16), "--subject", subject)
    assert t["exit"] == {"code": 0, "timed_out": False}
    assert t["peer"]["bytes"] == 16 * 128
    # node and libuv make one write(2) per write() (no batching), and
    # nothing else writes on the socket; the event lines on fd 4 are not
    # counted
    assert t["syscalls"]["write"] == 16
    assert t["syscalls"]["writev"] == 0 and t["syscalls"]["send"] == 0
    assert t["syscalls"]["connect"] == 1 and t["syscalls"]["shutdown"] == 1


def test_a_clamp_reaches_the_socket_only(subject, wc, tmp_path):
    # clamp-send 7 is write:short=7 on every writing call: on node's eventfd
    # (8-byte writes) or the event pipe it would break the run.
    t = run_trace(wc, writes_scenario(tmp_path, 4), "--subject", subject, "--clamp-send", "7")
    assert t["exit"] == {"code": 0, "timed_out": False}
    assert t["peer"]["bytes"] == 4 * 128
    assert t["faults"] == ["write:short=7,repeat=forever"]
    # every byte of the socket went 7 at a time: at least 512 / 7 calls
    assert t["syscalls"]["write"] + t["syscalls"]["writev"] >= 512 // 7


def test_disarm_reaches_the_preloaded_gate(subject, wc, tmp_path):
    p = tmp_path / "disarm.wcs"
    p.write_text('refuse-write EAGAIN\ntask\n  write "abc" cb\n  end cb\ntask\n  disarm\n')
    t = run_trace(wc, p, "--subject", subject)
    assert t["exit"] == {"code": 0, "timed_out": False}
    assert t["peer"]["bytes"] == 3
    assert any(e.endswith("disarm") for e in t["events"])
    assert any(e.endswith("write#1 cb ok") for e in t["events"])


def test_the_subject_names(wc, tmp_path):
    p = writes_scenario(tmp_path, 1)
    ref = run_trace(wc, p, "--subject", "refstack")
    assert ref["queue"] is not None  # the reference stack reports its queue
    proc = wc("run", p, "--subject", str(tmp_path / "nope"))
    assert proc.returncode == 2 and "not an executable" in proc.stderr


def test_libuv_execve_keeps_what_the_kernel_took(wc, tmp_path):
    if not subject_path("libuv").exists():
        pytest.skip("libuv-subject is not built")
    # libuv has nothing to flush before execve: each write went to the
    # kernel in its call (the reference stack sends its batch first)
    t = run_trace(wc, REPO / "scenarios/batching/end-execve.wcs", "--subject", "libuv")
    assert t["exit"] == {"code": 0, "timed_out": False}
    assert t["peer"]["bytes"] == 13


def test_the_report_section_shows_each_difference_with_its_reason():
    sys.path.insert(0, str(REPO / "python"))
    from wirecheck.report.sections import bench_subjects

    row = {"scenario": "batching/several-writes", "behaviour": "batching", "subject": "node",
           "skipped": None, "bytes_equal": True, "reads_equal": False, "events_equal": False,
           "golden_writes": 2, "writes": 3, "golden_syscalls": 9, "syscalls": 11,
           "differs": ["events", "peer", "syscalls"],
           "reasons": {"events": "close later", "peer": "send per write"}, "unexplained": []}
    sub = {"subjects": ["node"], "missing": [], "rows": [row],
           "totals": {"node": {"runs": 1, "bytes_equal": 1, "reads_equal": 0, "events_equal": 0,
                               "skipped": 0, "unexplained": 0}},
           "sends": [{"writes": 16, "bytes": 2048,
                      "refstack": {"writing_calls": 2, "by_kind": {"send": 2}, "peer_bytes": 2048},
                      "node": {"writing_calls": 16, "by_kind": {"write": 16}, "peer_bytes": 2048}}]}
    report = {"bench": {"ran": True, "runs": {}, "errors": [], "subjects": sub}}
    text = "\n".join(bench_subjects.markdown(report))
    assert "| `batching/several-writes` | node | yes | **no** | **no** | 2 / 3 | 9 / 11 | " \
           "events: close later; peer: send per write |" in text
    assert "| 16 | 2 (send 2) | 16 (write 16) |" in text
    assert bench_subjects.summary(report) == [
        "- Foreign subjects against the reference goldens (`subjects`): node bytes equal 1/1, "
        "events equal 0/1, 0 unexplained; writing calls for 16 x write(128 B): refstack 2, "
        "node 16."]


# Under the 7-byte clamp, what the kernel took in the write's call keeps the
# bytes of the call ('c'); the rest, sent after the overwrite, is 'd' when
# the stack holds the subject's buffer by reference (write-owned), as both
# node:net and libuv do. node's call writes twice (uv_try_write, then
# uv_write's first attempt): 14 bytes.
OWNED_PREFIX = {"node": 14, "libuv": 7}


def test_write_owned_is_held_by_reference(subject, wc):
    t = run_trace(wc, REPO / "scenarios/queue/owned-write-then-change.wcs", "--subject", subject)
    assert t["exit"] == {"code": 0, "timed_out": False}
    k = OWNED_PREFIX[subject]
    # write#1 is a copying write: its overwrite changes nothing sent ('a')
    assert bytes.fromhex(t["peer"]["hex"]) == b"a" * 32 + b"c" * k + b"d" * (32 - k)
    assert any(e.endswith("write#2 released ok") for e in t["events"])


def test_a_child_left_holding_the_event_pipe_does_not_hold_the_run(wc, tmp_path):
    """A wrapper subject that leaves a background child behind (which
    inherits fd 4, the event pipe) and exits: the run ends when the subject
    does, with its exit and its fatal line, not at the timeout (which it
    met before: the harness waited for the pipe's end of file)."""
    pidfile = tmp_path / "child.pid"
    script = tmp_path / "wrapper.sh"
    script.write_text("#!/bin/sh\n"
                      f"sleep 120 </dev/null >/dev/null 2>&1 & echo $! > {pidfile}\n"
                      "echo 'fatal unsupported: a wrapper that gives up' >&4\n"
                      "exit 2\n")
    script.chmod(0o755)
    try:
        proc = wc("run", writes_scenario(tmp_path, 1), "--subject", script,
                  "--timeout", "30")
        t = json.loads(proc.stdout)
        assert t["exit"]["timed_out"] is False, t["exit"]
        assert t["exit"]["code"] == 2
        assert "a wrapper that gives up" in t["exit"]["error"]
    finally:
        if pidfile.exists():
            try:
                os.kill(int(pidfile.read_text()), 9)
            except (ProcessLookupError, ValueError):
                pass


def bench_subjects():
    """The subjects tool (python3 -m wirecheck.subjects_tool)."""
    from wirecheck import subjects_tool
    return subjects_tool


def test_bench_propose_takes_a_subject_path_and_its_preload(node, monkeypatch, capsys):
    # A user's subject is a PATH (here node's program itself, run as a
    # program of one's own): --propose refused it ('invalid choice'), and
    # had no way to preload the gate, as --wirecheck-subject-preload does.
    bench = bench_subjects()
    monkeypatch.setattr(bench, "scenarios",
                        lambda root: [root / "batching" / "several-writes.wcs"])
    program = subject_path("node")

    def propose(*flags):
        monkeypatch.setattr(sys, "argv", ["subjects.py", "--propose", str(program), "-q",
                                          "--wirecheck-bin", str(wirecheck_path()), *flags])
        assert bench.main() == 0
        return {l.split()[1]: l.split() for l in capsys.readouterr().out.splitlines() if l}

    plain, preloaded = propose(), propose("--subject-preload")
    # keys below the folder that holds subjects/ (scenarios/), as the plugin's
    for lines in (plain, preloaded):
        assert {l[0] for l in lines.values()} == {"batching/several-writes"}, lines
        assert all(l[3] == "REASON" for l in lines.values())
    # node-subject.differences does not exist: the peer (19 bytes at the
    # checkpoint) is a difference in both; the syscalls are counted only with
    # the gate preloaded, so their values (fingerprints) differ.
    assert plain["peer"] == preloaded["peer"]
    assert plain["syscalls"][2] != preloaded["syscalls"][2], (plain, preloaded)
    monkeypatch.setattr(sys, "argv", ["subjects.py", "--propose", "no/such/subject"])
    with pytest.raises(SystemExit):
        bench.main()
    assert "no/such/subject: not a subject" in capsys.readouterr().err
