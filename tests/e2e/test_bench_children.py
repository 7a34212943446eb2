"""A benchmark that dies takes its servers with it.

`ws_echo` forks its servers (the reference's, node's and Bun's) and quits
them at the end. When it died on the way (a connection closed under it,
tests/e2e/test_ws_bench_idle.py), every server it had started kept running,
reparented, holding a CPU and its socket into whatever ran next. bc_fork
(bench/bench_common.c) now keeps its children until they are reaped, and
any exit of the benchmark kills (SIGKILL) and reaps those still running.

The test gives ws_echo a `node` and a `bun` that only say "ready" and
sleep, recording their pids, so that its first connection to one fails
and it dies in about two seconds (its retries while a server starts);
then no server it started may be left: not the fake JavaScript servers
and not its own forks (the reference's servers, found by ws_echo's
command line). Before the change all of them were left running.
"""
import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
FAKE = """#!/bin/sh
case "$1" in --version) echo 0.0.0-fake; exit 0;; esac
echo $$ >> "$FAKE_PIDS"
echo ready
exec sleep 1000
"""


def bench_bin():
    wirecheck = pathlib.Path(os.environ.get("WIRECHECK_BIN") or REPO / "build" / "bin" / "wirecheck")
    return wirecheck.parent / "ws_echo"


def alive(pid):
    """Running, or a zombie nobody reaped: both mean ws_echo left it."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def pids_with_args(args):
    """Processes whose command line is exactly args (ws_echo's own forks)."""
    want = b"\0".join(a.encode() for a in args) + b"\0"
    found = []
    for d in pathlib.Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if (d / "cmdline").read_bytes() == want:
                    found.append(int(d.name))
            except OSError:
                pass
    return found


def test_ws_echo_that_dies_leaves_no_server(tmp_path):
    ws_echo = bench_bin()
    if not ws_echo.exists():
        pytest.skip(f"{ws_echo} is not built")
    fakes = tmp_path / "bin"
    fakes.mkdir()
    for name in ("node", "bun"):
        (fakes / name).write_text(FAKE)
        (fakes / name).chmod(0o755)
    pids = tmp_path / "pids"
    env = dict(os.environ, PATH=f"{fakes}:{os.environ['PATH']}",
               WIRECHECK_BUN=str(fakes / "bun"), FAKE_PIDS=str(pids))
    # A window nobody else uses marks this run's forks.
    args = [str(ws_echo), "--quick", "--window", "977"]
    left = []
    try:
        # Output to files: a server left running would hold a pipe open,
        # and the test would wait for it instead of saying so.
        with open(tmp_path / "out", "w") as out, open(tmp_path / "err", "w") as err:
            rc = subprocess.run(args, env=env, stdout=out, stderr=err, timeout=120).returncode
        stderr = (tmp_path / "err").read_text()
        assert rc == 1, (rc, stderr)
        assert "cannot connect to" in stderr and "node-echo" in stderr, stderr
        started = [int(p) for p in pids.read_text().split()]
        # node's echo and chat servers, Bun's echo, chat and chat-send.
        assert len(started) == 5, started
        left = [p for p in started if alive(p)] + pids_with_args(args)
        assert left == [], f"ws_echo died and left these servers running: {left}"
    finally:
        started = [int(p) for p in pids.read_text().split()] if pids.exists() else []
        for p in set(left + started + pids_with_args(args)):
            try:
                os.kill(p, 9)
            except ProcessLookupError:
                pass
