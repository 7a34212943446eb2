"""bench/ws_echo's Bun servers keep a connection that sits idle.

ws_echo opens every connection at its start and uses each only in its own
rows: the chat clients wait through every echo row, the echo clients
through the chat. A run of `ws_echo --window 1 --rounds 21` died after two
minutes with "write: Broken pipe": Bun's WebSocket server closes a
connection idle for its `idleTimeout` (120 s by default; with its pings,
which this client does not answer, it sends a ping at 104 s and closes at
120 s). bench/ws_server_bun.js turns the timeout off, as the reference's
and npm ws's servers have none; uWebSockets resets the timer on every
message whatever its value, so the figures do not change.

The test holds one connection to each of the script's three servers (echo,
chat, chat-send) idle past the ping, then asks each for its CPU ("!cpu")
and reads the answer. Before the fix, the ping (or the close) arrives at
about 104 s and the test fails naming it. It waits for an event that must
not come, 115 s of wall time and no CPU; it skips without Bun.
"""
import os
import pathlib
import select
import socket
import struct
import subprocess
import time

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "ws_server_bun.js"
PINNED_BUN = REPO / "third_party/bun/node_modules/@oven/bun-linux-x64/bin/bun"
# Past Bun's ping with its default idleTimeout of 120 s (uWebSockets pings
# 16 s before the timeout, on a timer of 4 s ticks) and short of the close.
IDLE = 115
UPGRADE = (b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")


def bun_binary():
    path = pathlib.Path(os.environ.get("WIRECHECK_BUN") or PINNED_BUN)
    return path if path.is_file() and os.access(path, os.X_OK) else None


def masked_text(payload):
    """A masked text frame with the zero key (masking is then the identity)."""
    assert len(payload) < 126
    return struct.pack("!BB", 0x81, 0x80 | len(payload)) + b"\0\0\0\0" + payload


def read_until(sock, done, what):
    data = b""
    while not done(data):
        ready, _, _ = select.select([sock], [], [], 30)
        assert ready, f"{what}: no answer in 30 s"
        chunk = sock.recv(4096)
        assert chunk, f"{what}: the server closed the connection"
        data += chunk
    return data


def test_bun_servers_keep_an_idle_connection(tmp_path):
    bun = bun_binary()
    if bun is None:
        pytest.skip(f"bun is not installed ({PINNED_BUN}; scripts/setup.sh installs it, "
                    "or set WIRECHECK_BUN)")
    servers, conns = [], {}
    try:
        for mode in ("echo", "chat", "chat-send"):
            path = str(tmp_path / mode)
            p = subprocess.Popen([str(bun), str(SCRIPT), mode, path],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            servers.append(p)
            assert p.stdout.readline() == b"ready\n", f"{mode}: the server did not start"
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(path)
            s.sendall(UPGRADE)
            head = read_until(s, lambda d: b"\r\n\r\n" in d, f"{mode}: the upgrade")
            assert head.startswith(b"HTTP/1.1 101"), head[:80]
            assert head.endswith(b"\r\n\r\n"), f"{mode}: bytes after the upgrade: {head!r}"
            conns[mode] = s
        # Idle: nothing may arrive, neither a ping nor the close.
        start = time.monotonic()
        while (left := IDLE - (time.monotonic() - start)) > 0:
            ready, _, _ = select.select(list(conns.values()), [], [], left)
            for mode, s in conns.items():
                if s in ready:
                    got = s.recv(64)
                    what = "a ping" if got[:1] == b"\x89" else "its close"
                    pytest.fail(f"{mode}: after {time.monotonic() - start:.0f} s idle the "
                                f"server sent {got!r} ({what})")
        for mode, s in conns.items():
            s.sendall(masked_text(b"!cpu"))
            frame = read_until(s, lambda d: len(d) >= 2 and len(d) >= 2 + (d[1] & 0x7f),
                               f"{mode}: !cpu after {IDLE} s idle")
            assert frame[0] == 0x81 and frame[2:].startswith(b"cpu "), (mode, frame)
    finally:
        for s in conns.values():
            s.close()
        for p in servers:
            p.kill()
            p.wait()
            p.stdout.close()
            p.stderr.close()
