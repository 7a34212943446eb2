"""bench/ws_syscalls.py and ws_echo's --serve-ref and --client modes, which
it runs under the preload gate: a quick run gives a count for every row
on every side (the chat row too), and the reference server, which batches the echoes of one
read, makes at most one writing call per message."""
import json
import pathlib
import shutil
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
WS_ECHO = REPO / "build" / "bin" / "ws_echo"

pytestmark = [
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
    pytest.mark.skipif(not (REPO / "third_party" / "node" / "node_modules" / "ws" /
                            "package.json").exists(), reason="npm ws is not installed"),
    pytest.mark.skipif(not WS_ECHO.exists(), reason=f"{WS_ECHO} is not built"),
]


def test_quick_run_counts_every_row():
    p = subprocess.run(["/usr/bin/python3", str(REPO / "bench" / "ws_syscalls.py"),
                        "--quick", "--json"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)
    assert [r["row"] for r in res["rows"]] == [
        "echo 16 B text", "echo 16 B binary", "echo 1 KiB non-ASCII text",
        "echo 16 KiB non-ASCII text", "chat, 32 clients (per message in)"]
    # Bun's column when Bun is installed; the chat row also
    # by a loop of sends on the reference and on Bun.
    sides = ["ref", "node"] + (["bun"] if res.get("bun_version") else [])
    for r in res["rows"]:
        chat = r["row"].startswith("chat")
        for side in sides + (["ref_send"] + (["bun_send"] if "bun" in sides else [])
                             if chat else []):
            for k in ("writes", "reads"):
                assert r[f"{side}_{k}"]["median"] > 0, (r["row"], side, k, r)
        if not chat:
            # How many messages a chat write carries depends on timing;
            # an echo write carries at least one.
            assert r["ref_writes"]["max"] <= 1.0, r


def test_client_refuses_a_bad_row():
    p = subprocess.run([str(WS_ECHO), "--client", "/nonexistent", "4", "10"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode != 0
    assert "ROW 0 to 3" in p.stderr, p.stderr


def test_window_of_one_makes_a_read_and_a_write_per_message():
    """ws_echo's client with one message in flight (--client ... WINDOW,
    ws_syscalls.py --window): no read can carry two frames, so the
    reference server makes one writing call and one read per echo. The
    figure is a run of 600 echoes less a run of none, whose ends (the
    client's !quit, its close) may take a read more or less depending on
    how they arrive: a margin of two calls in 600 (at the default window
    the reference makes about 0.34 writes and 0.17 reads per echo)."""
    import sys
    sys.path.insert(0, str(REPO / "bench"))
    import ws_syscalls
    got = ws_syscalls.per_message("ref", 0, 200, window=1)
    margin = 2 / 600
    assert abs(got["writes"] - 1.0) <= margin, got
    assert abs(got["reads"] - 1.0) <= margin, got


def test_client_refuses_a_bad_window():
    p = subprocess.run([str(WS_ECHO), "--client", "/nonexistent", "0", "10", "0"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode != 0
    assert "WINDOW 1 to 1024" in p.stderr, p.stderr
