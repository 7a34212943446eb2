"""The chunk encoder's output, decoded by decoders that are not ours.

build/bin/chunk_dump runs reference/chunk.c through a list of write calls
under a model kernel that takes at most CLAMP bytes per send (resuming from
the body offset, as try_write's caller does) and prints the response. h11
(strict framing) and the standard library's http.client must each decode
the body the calls wrote, byte for byte, for random call lists and clamps.
"""
import http.client
import io
import os
import pathlib
import random
import subprocess

import h11
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]

DUMP = REPO / "build" / "bin" / "chunk_dump"

pytestmark = pytest.mark.skipif(not os.access(DUMP, os.X_OK),
                                reason=f"{DUMP} is not built")


def body_byte(i):
    # cd_body_byte in tests/unit/chunk_driver.h
    return ((i * 131 + 7) >> 1) & 0xFF


def expected_body(calls):
    total = sum(n for n, _ in calls)
    return bytes(body_byte(i) for i in range(total))


def dump(clamp, calls):
    args = [str(DUMP), str(clamp)] + [f"{n}{'f' if final else ''}" for n, final in calls]
    return subprocess.run(args, check=True, capture_output=True, timeout=60).stdout


def decode_h11(raw):
    client = h11.Connection(h11.CLIENT)
    client.send(h11.Request(method="GET", target="/", headers=[("Host", "x")]))
    client.send(h11.EndOfMessage())
    client.receive_data(raw)
    client.receive_data(b"")
    body = bytearray()
    while True:
        ev = client.next_event()
        if isinstance(ev, h11.Response):
            assert ev.status_code == 200
        elif isinstance(ev, h11.Data):
            body += ev.data
        elif isinstance(ev, h11.EndOfMessage):
            return bytes(body)
        else:
            raise AssertionError(f"h11 event {ev!r} before the end of the message")


class _Sock:
    def __init__(self, raw):
        self.raw = raw

    def makefile(self, mode, *args, **kwargs):
        return io.BytesIO(self.raw)


def decode_http_client(raw):
    resp = http.client.HTTPResponse(_Sock(raw), method="GET")
    resp.begin()
    assert resp.status == 200 and resp.chunked
    return resp.read()


def random_calls(rng):
    n = rng.randint(1, 8)
    calls = [(rng.choice([0, 1, 2, 15, 16, 17, rng.randint(0, 5000)]), False)
             for _ in range(n)]
    calls.append((rng.choice([0, rng.randint(0, 3000)]), True))
    return calls


CASES = [(seed, clamp) for seed in range(25) for clamp in (0, 1, 7, 4096)]


@pytest.mark.parametrize("seed,clamp", CASES)
def test_independent_decoders_get_the_body(seed, clamp):
    rng = random.Random(seed)
    calls = random_calls(rng)
    raw = dump(clamp, calls)
    want = expected_body(calls)
    assert decode_h11(raw) == want
    assert decode_http_client(raw) == want


def test_clamp_does_not_change_the_wire():
    rng = random.Random(99)
    calls = random_calls(rng)
    assert dump(1, calls) == dump(0, calls) == dump(7, calls)


def test_a_broken_stream_is_refused_by_h11():
    """The check can fail: a stream cut before its terminator is not a
    complete message for h11."""
    raw = dump(0, [(10, False), (0, True)])
    with pytest.raises(h11.RemoteProtocolError):
        decode_h11(raw[:-3])
