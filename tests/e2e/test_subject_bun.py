"""Bun as a subject, and handed-off sockets (docs/subjects.md, "Bun" and
"Handed-off sockets").

`--subject bun` runs subjects/node/subject.js with the Bun binary that
scripts/setup.sh installs (third_party/bun) or $WIRECHECK_BUN; without one,
the Bun tests skip with that reason. `--subject node-upgrade|bun-upgrade`
(or `--subject-handoff upgrade`) makes every connection the socket a
node:http server hands to its 'upgrade' listener: the peer connects, sends an
Upgrade request, and leaves the subject's 101 out of what it received.

What is asserted, and why it can fail:
- Bun's gate commands reach the gate: `fault` lines fire (Bun's
  fs.writeSync bypasses libc, so before the ffi path the arm command landed
  in the counters' memfd and no rule fired);
- Bun's task numbers: the connect is task 1 and a script task's events are
  task 2 (Bun's async_hooks reports no macrotask, and before the quiet-hop
  rule every event was task 1);
- a missing Bun is a skip with its reason, never a pass;
- on a handed-off socket the peer's stream is the scenario's bytes alone
  (the 101 stripped), the connection was accepted by the subject, and the
  101 is neither clamped nor counted by the scenario's rules;
- a few bundled scenarios pass on bun, node-upgrade and bun-upgrade
  through the plugin with their reviewed differences.
"""
import json
import os
import pathlib
import shutil
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
PYTHON = "/usr/bin/python3"
SAFETY_TIMEOUT = 300
PINNED_BUN = REPO / "third_party/bun/node_modules/@oven/bun-linux-x64/bin/bun"


def wirecheck_path():
    return pathlib.Path(os.environ.get("WIRECHECK_BIN") or REPO / "build" / "bin" / "wirecheck")


def bun_binary():
    path = pathlib.Path(os.environ.get("WIRECHECK_BUN") or PINNED_BUN)
    return path if path.is_file() and os.access(path, os.X_OK) else None


@pytest.fixture
def bun(wirecheck):
    if bun_binary() is None:
        pytest.skip(f"bun is not installed ({PINNED_BUN}; scripts/setup.sh installs it, "
                    "or set WIRECHECK_BUN)")
    if not (wirecheck.parent / "bun-subject").exists():
        pytest.skip("bun-subject is not built beside wirecheck")
    return "bun"


@pytest.fixture(params=["node-upgrade", "bun-upgrade"])
def upgrade(request, wirecheck):
    if request.param == "bun-upgrade" and bun_binary() is None:
        pytest.skip(f"bun is not installed ({PINNED_BUN}; scripts/setup.sh installs it)")
    if request.param == "node-upgrade" and shutil.which("node") is None:
        pytest.skip("node is not installed (scripts/setup.sh installs nodejs)")
    return request.param


def run_trace(wc, *args):
    proc = wc("run", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def pytest_run(tmp_path, *args, env_extra=None):
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"),
               WIRECHECK_BIN=str(wirecheck_path()), **(env_extra or {}))
    env.pop("CI", None)
    return subprocess.run([PYTHON, "-m", "pytest", "-p", "wirecheck.plugin", "-q",
                           "-p", "no:cacheprovider", "-p", "no:xdist", *map(str, args)],
                          cwd=tmp_path, capture_output=True, text=True, env=env,
                          timeout=SAFETY_TIMEOUT)


# ------------------------------------------------------------------ Bun


def test_bun_faults_reach_the_preloaded_gate(bun, wc):
    t = run_trace(wc, REPO / "scenarios/queue/end-large.wcs", "--subject", bun,
                  "--clamp-send", "7")
    assert t["exit"] == {"code": 0, "timed_out": False}
    assert t["peer"]["bytes"] == 131072
    # every send but the last was clamped: ceil(131072 / 7) sends
    assert t["syscalls"]["send"] == 18725
    assert t["fired"]["total"] == 18724
    assert t["syscalls"]["sendto"] == 0 and t["syscalls"]["sendmsg"] == 0


def test_bun_numbers_its_tasks(bun, wc):
    t = run_trace(wc, REPO / "scenarios/batching/several-writes.wcs", "--subject", bun)
    assert t["events"][:3] == ["t1 c0 connect", "t2 c0 write#1 6 -> true",
                               "t2 c0 write#2 7 -> true"]
    # the checkpoint and end() are the same script task, eof a later one
    assert "t2 c0 checkpoint 1" in t["events"] and "t3 c0 eof" in t["events"]
    # Bun 1.4.5 sends each write of a plain net socket in its call
    assert t["syscalls"]["send"] == 3
    assert t["peer"]["reads"] == [19, 0]


def test_bun_execve_runs_the_program(bun, wc):
    t = run_trace(wc, REPO / "scenarios/batching/end-execve.wcs", "--subject", bun)
    assert t["exit"] == {"code": 0, "timed_out": False}
    assert t["peer"]["bytes"] == 13


def test_a_missing_bun_is_a_skip_with_its_reason(wirecheck, wc, tmp_path):
    env = dict(os.environ, WIRECHECK_BUN=str(tmp_path / "no-bun"))
    proc = subprocess.run([str(wirecheck), "run", REPO / "scenarios/batching/several-writes.wcs",
                           "--subject", "bun"], capture_output=True, text=True, env=env,
                          timeout=SAFETY_TIMEOUT)
    assert proc.returncode == 4, proc.stderr
    err = json.loads(proc.stdout)["exit"]["error"]
    assert err.startswith("unsupported runtime: bun is not installed"), err
    proc = pytest_run(tmp_path, "--rootdir", REPO, "--wirecheck-subject", "bun", "-rs",
                      REPO / "scenarios/batching/several-writes.wcs",
                      env_extra={"WIRECHECK_BUN": str(tmp_path / "no-bun")})
    assert proc.returncode == 0, proc.stdout
    assert "2 skipped" in proc.stdout and "bun is not installed" in proc.stdout, proc.stdout


# ----------------------------------------------------- handed-off sockets


def test_upgrade_strips_the_101_and_accepts(upgrade, wc):
    t = run_trace(wc, REPO / "scenarios/batching/several-writes.wcs", "--subject", upgrade)
    assert t["exit"] == {"code": 0, "timed_out": False}
    # the scenario's bytes alone, read as the golden's points read them
    assert bytes.fromhex(t["peer"]["hex"]) == b"first\nsecond\nthird\n"
    # the scenario's role is client: the handed-off connection says so
    assert t["events"][0] == "t1 c0 connect"
    # but the subject accepted it (its HTTP server), and read the request
    assert t["syscalls"]["accept"] == 1 and t["syscalls"]["connect"] == 0


def test_upgrade_arms_the_faults_after_the_101(upgrade, wc, tmp_path):
    # Under a 7-byte clamp armed before the 101, the 101's 66 bytes would
    # take 10 clamped sends, at offsets up to 63; armed after it, only the
    # scenario's 20 bytes are clamped.
    p = tmp_path / "w20.wcs"
    p.write_text("task\n  write 20\n  end\n")
    t = run_trace(wc, p, "--subject", upgrade, "--clamp-send", "7")
    assert t["exit"] == {"code": 0, "timed_out": False}
    assert t["peer"]["bytes"] == 20
    assert 1 <= t["fired"]["total"] <= 3, t["fired"]
    assert all(c["offset"] < 20 for c in t["fired"]["calls"]), t["fired"]


def test_upgrade_runs_a_server_role_scenario(upgrade, wc):
    t = run_trace(wc, REPO / "scenarios/half-open/per-connection.wcs", "--subject", upgrade)
    assert t["exit"] == {"code": 0, "timed_out": False}
    assert t["events"][0] == "t1 c0 accept"


def test_a_bad_handoff_is_a_usage_error(wc):
    proc = wc("run", REPO / "scenarios/batching/several-writes.wcs", "--subject", "node",
              "--subject-handoff", "connect")
    assert proc.returncode == 2
    assert "--subject-handoff 'connect': expected upgrade" in proc.stderr


def test_handoff_needs_the_built_in_peer(wc, tmp_path):
    p = tmp_path / "exec.wcs"
    p.write_text("peer exec /bin/true\ntask\n  end\n")
    proc = wc("run", p, "--subject", "node-upgrade")
    assert proc.returncode == 3
    assert "needs the built-in peer" in proc.stderr


# ------------------------------------------------ the reviewed differences

BUNDLED = ["scenarios/batching/several-writes.wcs", "scenarios/batching/clamp7-end-same-task.wcs",
           "scenarios/half-open/request-fin-no-half-open-on-end.wcs",
           "scenarios/queue/epipe-prefix.wcs"]


@pytest.mark.parametrize("name", ["bun", "node-upgrade", "bun-upgrade"])
def test_bundled_scenarios_pass_with_the_reviewed_differences(name, wirecheck, tmp_path):
    if name.startswith("bun") and bun_binary() is None:
        pytest.skip(f"bun is not installed ({PINNED_BUN}; scripts/setup.sh installs it)")
    proc = pytest_run(tmp_path, "--rootdir", REPO, f"--wirecheck-subject={name}",
                      *[REPO / s for s in BUNDLED])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "4 passed" in proc.stdout, proc.stdout


# ----------------------------------------------------------- the report


def test_the_report_states_the_seeds_claims_with_their_scenarios():
    import sys
    sys.path.insert(0, str(REPO / "python"))
    from wirecheck.report.sections import bench_subjects

    row = {"scenario": "batching/several-writes", "behaviour": "batching", "subject": "bun",
           "skipped": None, "bytes_equal": True, "reads_equal": False, "events_equal": False,
           "golden_writes": 2, "writes": 3, "golden_syscalls": 9, "syscalls": 11,
           "differs": ["events", "peer"], "reasons": {}, "unexplained": []}
    claims = {
        "batching": {"scenario": "scenarios/batching/several-writes.wcs", "golden_reads": [6, 13],
                     "subjects": {"bun-upgrade": {"reads": [19, 0], "writing_calls": 4,
                                                  "handoff": True, "batches": False}}},
        "half_open": {"scenario": "scenarios/half-open/per-connection.wcs", "subjects": {
            "refstack": {"mod_per_connection": 0.0, "order": {"calls": ["shutdown"],
                                                              "end_first": True}},
            "refstack poll-first": {"mod_per_connection": 1.0, "order": {}},
            "bun": {"mod_per_connection": 2.0,
                    "order": {"calls": ["epoll_ctl MOD EPOLLOUT", "shutdown"],
                              "end_first": False}}}}}
    sub = {"subjects": ["bun"], "missing": [], "rows": [row], "runtimes": {"bun": "1.4.5"},
           "totals": {"bun": {"runs": 1, "bytes_equal": 1, "reads_equal": 0, "events_equal": 0,
                              "skipped": 0, "unexplained": 0}},
           "sends": [], "claims": claims}
    report = {"bench": {"ran": True, "runs": {}, "errors": [], "subjects": sub}}
    text = "\n".join(bench_subjects.markdown(report))
    assert "the installed Bun 1.4.5 **does not batch** them" in text
    assert "`scenarios/batching/several-writes.wcs` with `--subject bun-upgrade`" in text
    assert "**changes the poll before it dispatches end**" in text
    assert "`epoll_ctl MOD EPOLLOUT -> shutdown`" in text
    # the side-by-side table: one column per subject
    assert "| `batching/several-writes` | 2 | 3, bytes =, events ≠ |" in text
    claims["batching"]["subjects"]["bun-upgrade"].update(reads=[6, 13], batches=True)
    claims["half_open"]["subjects"]["bun"]["order"] = {"calls": ["shutdown"], "end_first": True}
    text = "\n".join(bench_subjects.markdown(report))
    assert "**batches** them" in text and "**dispatches end before the poll change**" in text
