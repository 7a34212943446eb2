"""Real peers as judges: what an independent client makes of the bytes.

HTTP: h11 (strict RFC 9112 framing) and Python's http.client decode the
response; WebSocket: wsproto and python3-websockets' frame parser decode
the frames. Each runs in this process on the bytes the peer received (the
trace holds them for streams up to 4 KiB), and on the model's own bytes,
so the model is checked against the real peers too.
"""
from __future__ import annotations

import http.client
import io
from typing import Optional

import h11

try:
    from wsproto import ConnectionType
    from wsproto.connection import Connection as WsConnection
    from wsproto import events as wsev
except ImportError:  # pragma: no cover - a Debian dependency (scripts/setup.sh)
    WsConnection = None


def _h11(data: bytes, n: int = 1) -> tuple[Optional[int], list, Optional[str]]:
    """Decodes n responses to n requests on one connection (the last one
    asks to close): the first status, [(body, ended, chunk sizes)], error."""
    c = h11.Connection(h11.CLIENT)
    status, out = None, []
    try:
        for i in range(n):
            if i:
                c.start_next_cycle()
            headers = [("Host", "x")] + ([("Connection", "close")] if i == n - 1 else [])
            c.send(h11.Request(method="GET", target="/r", headers=headers))
            c.send(h11.EndOfMessage())
            if i == 0:
                c.receive_data(data)
                c.receive_data(b"")
            body, ended, chunks = bytearray(), False, []
            while True:
                ev = c.next_event()
                if ev is h11.NEED_DATA or ev is h11.PAUSED:
                    break
                if isinstance(ev, h11.Response):
                    status = ev.status_code if status is None else status
                    if ev.status_code != 200:
                        status = ev.status_code
                elif isinstance(ev, h11.Data):
                    if ev.chunk_start or not chunks:
                        chunks.append(0)
                    chunks[-1] += len(ev.data)
                    body += ev.data
                elif isinstance(ev, h11.EndOfMessage):
                    ended = True
                    break
                elif isinstance(ev, h11.ConnectionClosed):
                    break
            out.append((bytes(body), ended, chunks))
            if not ended:
                break
    except h11.ProtocolError as e:
        return status, out, f"h11: {e}"
    return status, out, None


class _Stream(io.BytesIO):
    """The connection's bytes, read response after response: a response
    closes its file once read (http.client), which must not end the rest."""

    def close(self):
        pass


class _Sock:
    def __init__(self, data: bytes):
        self.f = _Stream(data)

    def makefile(self, *a, **k):
        return self.f


def _http_client(data: bytes, n: int = 1) -> tuple[list, Optional[str]]:
    """http.client's bodies of n responses read one after the other from
    the same stream."""
    sock, out = _Sock(data), []
    try:
        for _ in range(n):
            r = http.client.HTTPResponse(sock, method="GET")
            r.begin()
            out.append(r.read())
        return out, None
    except (http.client.HTTPException, ValueError) as e:
        return out, f"http.client: {type(e).__name__}: {e}"


def judge_http(data: bytes, responses, model: bool = False) -> list[str]:
    """responses: [(body, ended)] of each request's response, in order."""
    who = "the model's bytes" if model else "the peer's bytes"
    probs = []
    n = len(responses)
    status, got, err = _h11(data, n)
    if err:
        probs.append(f"{who}: {err}")
    elif status != 200:
        probs.append(f"{who}: h11 read status {status}, not 200")
    else:
        for i, (body, ended) in enumerate(responses):
            g_body, g_ended, _ = got[i] if i < len(got) else (b"", False, [])
            if g_body != body:
                probs.append(f"{who}: h11 decoded {len(g_body)} body bytes of response "
                             f"{i + 1}, the calls accepted {len(body)}")
            elif g_ended != ended:
                probs.append(f"{who}: h11 says response {i + 1} "
                             f"{'ended' if g_ended else 'did not end'}, the calls say it "
                             f"{'ended' if ended else 'did not'}")
    if all(ended for _, ended in responses):
        bodies, err = _http_client(data, n)
        if err:
            probs.append(f"{who}: {err}")
        elif bodies != [body for body, _ in responses]:
            probs.append(f"{who}: http.client decoded bodies of "
                         f"{[len(b) for b in bodies]} bytes, the calls accepted "
                         f"{[len(b) for b, _ in responses]}")
    return probs


def _split_head(data: bytes) -> tuple[bytes, bytes]:
    i = data.find(b"\r\n\r\n")
    return (data, b"") if i < 0 else (data[:i + 4], data[i + 4:])


def _wsproto(frames: bytes):
    c = WsConnection(ConnectionType.CLIENT)
    c.receive_data(frames)
    msgs, pings, close, cur = [], [], None, None
    for ev in c.events():
        if isinstance(ev, (wsev.TextMessage, wsev.BytesMessage)):
            typ = "text" if isinstance(ev, wsev.TextMessage) else "binary"
            data = ev.data.encode() if typ == "text" else bytes(ev.data)
            if cur is None:
                cur = [typ, bytearray()]
            cur[1] += data
            if ev.message_finished:
                msgs.append((cur[0], bytes(cur[1])))
                cur = None
        elif isinstance(ev, wsev.Ping):
            pings.append(bytes(ev.payload))
        elif isinstance(ev, wsev.CloseConnection):
            close = ev.code
            if close not in (1000,):
                break
    return msgs, pings, close


def _websockets(frames: bytes):
    """python3-websockets' own frame parser, fed the bytes as a stream."""
    from websockets.frames import Frame, Opcode
    from websockets.streams import StreamReader
    reader = StreamReader()
    reader.feed_data(frames)
    reader.feed_eof()
    msgs, pings, close, cur = [], [], None, None
    while True:
        gen = Frame.parse(reader.read_exact, mask=False)
        try:
            next(gen)
        except StopIteration as stop:
            f = stop.value
        except EOFError:
            break
        else:
            break
        if f.opcode in (Opcode.TEXT, Opcode.BINARY, Opcode.CONT):
            if f.opcode != Opcode.CONT:
                cur = ["text" if f.opcode == Opcode.TEXT else "binary", bytearray()]
            if cur is None:
                raise ValueError("a continuation frame with no message open")
            cur[1] += f.data
            if f.fin:
                msgs.append((cur[0], bytes(cur[1])))
                cur = None
        elif f.opcode == Opcode.PING:
            pings.append(bytes(f.data))
        elif f.opcode == Opcode.CLOSE:
            close = int.from_bytes(f.data[:2], "big") if len(f.data) >= 2 else 1005
            break
    return msgs, pings, close


def judge_ws(data: bytes, messages, pings, close_code: int) -> list[str]:
    head, frames = _split_head(data)
    probs = []
    if not head.startswith(b"HTTP/1.1 101"):
        probs.append(f"the peer's bytes: no 101 answer ({head[:40]!r})")
        return probs
    for name, decode in (("wsproto", _wsproto), ("websockets", _websockets)):
        try:
            msgs, got_pings, close = decode(frames)
        except Exception as e:   # a decode error of the peer is the finding
            probs.append(f"{name}: cannot decode the frames: {type(e).__name__}: {e}")
            continue
        if msgs != messages:
            probs.append(f"{name} decoded messages {_short(msgs)}, the calls sent "
                         f"{_short(messages)}")
        if sorted(got_pings) != sorted(pings):
            probs.append(f"{name} decoded {len(got_pings)} pings, the calls sent {len(pings)}")
        if close != close_code:
            probs.append(f"{name}: close code {close}, want {close_code}")
    return probs


def _short(msgs) -> str:
    return "[" + ", ".join(f"{t}:{len(d)}B" for t, d in msgs) + "]"
