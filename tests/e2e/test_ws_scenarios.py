"""WebSocket runs whose events or syscall counts depend on the kernel's
buffers or the peer's speed, so they cannot have goldens: what they must
show is checked here instead, against frames built in this file from RFC
6455 5.2 (not by the stack's own encoder).
"""
import base64
import hashlib
import json
import pathlib

# The repository, from this file (not `from conftest import`: with several
# test folders in one run, "conftest" may be another folder's).
REPO = pathlib.Path(__file__).resolve().parents[2]

SCENARIOS = REPO / "tests" / "e2e" / "scenarios"
KEY = b"dGhlIHNhbXBsZSBub25jZQ=="


def frame(opcode, payload, fin=True):
    """A server's frame (unmasked), by RFC 6455 5.2."""
    n = len(payload)
    head = bytes([(0x80 if fin else 0) | opcode])
    if n <= 125:
        head += bytes([n])
    elif n <= 0xffff:
        head += bytes([126]) + n.to_bytes(2, "big")
    else:
        head += bytes([127]) + n.to_bytes(8, "big")
    return head + payload


def answer_101():
    accept = base64.b64encode(hashlib.sha1(KEY + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
    return (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
            b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept + b"\r\n\r\n")


def pattern(n, start=0):
    """wc_pattern (protocol/protocol.h): the generated stream's bytes."""
    return bytes(0x21 + ((((start + i) * 2654435761) & 0xffffffff) >> 16) % 94
                 for i in range(n))


def test_late_reader_every_message_arrives(wc):
    """The first message (8 MiB) is more than the kernel takes while the
    peer does not read, so the three sends behind it wait in the queue; the
    peer then gets every message whole and in order, then the close."""
    res = wc("run", SCENARIOS / "ws-late-reader.wcs")
    assert res.returncode == 0, res.stderr
    t = json.loads(res.stdout)
    events = [e.split(" ", 2)[2] for e in t["events"]]
    assert events[:7] == ["accept", "ws-open", "ws-send#1 8388608 bytes -> sent",
                          "ws-send#2 65536 text -> queued",
                          "ws-send#3 65536 bytes -> queued",
                          "ws-send#4 3 text -> queued", "ws-close 1000 -> ok"]
    assert events[7:] == ["ws-peer-close 1000 reason=-",
                          f"ws-closed code=1000 dropped=0 bytes_written={t['peer']['bytes']}"]
    want = (answer_101() + frame(2, pattern(8 << 20)) + frame(1, b"t" * 65536) +
            frame(2, b"b" * 65536) + frame(1, b"END") + frame(8, (1000).to_bytes(2, "big")))
    assert t["peer"]["bytes"] == len(want)
    assert t["peer"]["sha256"] == hashlib.sha256(want).hexdigest()


def test_frames_in_the_same_read_as_a_large_head(wc, tmp_path):
    """A peer that sends its Upgrade request and 1,200 frames (8,400 bytes,
    more than the 8 KiB the head may take) in one send: every frame behind
    the head is read. The first version copied the read into the head
    buffer cut at the limit, and lost the frames past it (366 of 1,200
    messages arrived; found by bench/ws_send.c's echo)."""
    request = ("GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").encode()
    one = bytes([0x81, 0x81, 0, 0, 0, 0, ord("x")])  # masked "x", key 0
    close = bytes([0x88, 0x82, 0, 0, 0, 0, 0x03, 0xe8])
    data = request + one * 1200

    def esc(b):
        return "".join(f"\\x{c:02x}" for c in b)
    scenario = tmp_path / "big-read.wcs"
    scenario.write_text("role server\nwebsocket yes\n"
                        f'peer send "{esc(data)}" at start\n'
                        f'peer send "{esc(close)}" at done\n'
                        'task\n  ws-send "ok" text\n')
    res = wc("run", scenario)
    assert res.returncode == 0, res.stderr
    events = json.loads(res.stdout)["events"]
    assert sum(" ws-message " in e for e in events) == 1200
