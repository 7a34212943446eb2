"""Scenarios built in Python, for matrices and property tests.

    from wirecheck.api import Scenario

    sc = Scenario("end-large").setting("clamp-send", 7)
    sc.task().end(128 * 1024, cb=True)
    trace = sc.run()                      # the parsed trace (a dict)
    assert trace["queue"]["bytes_moved"] == 0

    legacy = sc.run(variants=["queue=memmove"])

A Scenario is only a way of writing the scenario language
(docs/scenario-language.md): .text() is the file, .run() writes it to a
temporary file and runs `wirecheck run` on it (wirecheck.runner.run). Every
byte string round-trips: bytes outside printable ASCII are written \\xHH, and
`"` and `\\` are escaped.
"""
from __future__ import annotations

import os
import re
import tempfile
from typing import Iterable, Optional, Union

from . import runner

__all__ = ["Scenario", "Block", "quote", "scenario_bytes"]

Payload = Union[int, bytes, str, None]

_SIZE = re.compile(r"[0-9]+(K|KiB|M|MiB)?")


def quote(data: Union[bytes, str]) -> str:
    """A scenario-language string holding exactly these bytes (str is UTF-8)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    out = ['"']
    for b in data:
        if b == 0x22:
            out.append('\\"')
        elif b == 0x5C:
            out.append("\\\\")
        elif 0x20 <= b < 0x7F:
            out.append(chr(b))
        else:
            out.append(f"\\x{b:02x}")
    out.append('"')
    return "".join(out)


def scenario_bytes(text: str) -> bytes:
    """The bytes of a scenario-language string literal (with its quotes):
    the inverse of quote(), with every escape of the language."""
    if len(text) < 2 or text[0] != '"' or text[-1] != '"':
        raise ValueError(f"not a string literal: {text!r}")
    out = bytearray()
    body = text[1:-1]
    i = 0
    simple = {"r": b"\r", "n": b"\n", "t": b"\t", "0": b"\0", "\\": b"\\", '"': b'"'}
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
            continue
        e = body[i + 1:i + 2]
        if e in simple:
            out += simple[e]
            i += 2
        elif e == "x" and re.fullmatch(r"[0-9a-fA-F]{2}", body[i + 2:i + 4]):
            out.append(int(body[i + 2:i + 4], 16))
            i += 4
        else:
            raise ValueError(f"bad escape at {body[i:i + 4]!r}")
    return bytes(out)


def _word(value) -> str:
    """A setting's argument: as it is when it is one plain word, else quoted."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    s = str(value)
    if s and re.fullmatch(r"[!-~]+", s) and '"' not in s and "#" not in s:
        return s
    return quote(s)


def _payload(data: Payload, fill: Optional[str]) -> list[str]:
    if data is None:
        return []
    if isinstance(data, (bytes, bytearray, str)):
        return [quote(bytes(data) if not isinstance(data, str) else data)]
    if isinstance(data, bool) or not isinstance(data, int) or data < 0:
        raise ValueError(f"a payload is a byte count, bytes or str, not {data!r}")
    words = [str(data)]
    if fill is not None:
        if len(fill) != 1 or fill in " \t#" or not 0x21 <= ord(fill) < 0x7F:
            raise ValueError(f"fill={fill!r}: one printable character, not a space, a tab or '#'")
        words.append(f"fill={fill}")
    return words


class Block:
    """The operations of one `task` or `on EVENT` block. Each method adds one
    operation and returns the block, so they chain."""

    def __init__(self, scenario: "Scenario", header: str):
        self.scenario = scenario
        self.header = header
        self.ops: list[str] = []

    def _op(self, words: list[str], conn: Optional[int], microtask: bool) -> "Block":
        if conn is not None:
            words.append(f"conn={int(conn)}")
        if microtask:
            words.insert(0, "microtask")
        self.ops.append(" ".join(words))
        return self

    def write(self, data: Payload, cb: bool = False, *, fill: Optional[str] = None,
              conn: Optional[int] = None, microtask: bool = False) -> "Block":
        """write N (pattern bytes, or N times `fill`), or the given bytes."""
        if data is None:
            raise ValueError("write needs a payload")
        return self._op(["write", *_payload(data, fill), *(["cb"] if cb else [])], conn, microtask)

    def write_bytes(self, data: Union[bytes, str], cb: bool = False, *,
                    conn: Optional[int] = None, microtask: bool = False) -> "Block":
        """write "..." with exactly these bytes."""
        return self.write(data if isinstance(data, (bytes, str)) else bytes(data), cb,
                          conn=conn, microtask=microtask)

    def end(self, data: Payload = None, cb: bool = False, *, fill: Optional[str] = None,
            conn: Optional[int] = None, microtask: bool = False) -> "Block":
        """end() with no payload, N bytes, or the given bytes."""
        return self._op(["end", *_payload(data, fill), *(["cb"] if cb else [])], conn, microtask)

    def destroy(self, *, conn=None, microtask=False) -> "Block":
        return self._op(["destroy"], conn, microtask)

    def destroy_soon(self, *, conn=None, microtask=False) -> "Block":
        return self._op(["destroy-soon"], conn, microtask)

    def cork(self, *, conn=None, microtask=False) -> "Block":
        return self._op(["cork"], conn, microtask)

    def uncork(self, *, conn=None, microtask=False) -> "Block":
        return self._op(["uncork"], conn, microtask)

    def pause(self, *, conn=None, microtask=False) -> "Block":
        return self._op(["pause"], conn, microtask)

    def resume(self, *, conn=None, microtask=False) -> "Block":
        return self._op(["resume"], conn, microtask)

    def signal(self, sig: Union[str, int], external: bool = False, *, conn=None,
               microtask=False) -> "Block":
        return self._op(["signal", str(sig), *(["external"] if external else [])], conn, microtask)

    def disarm(self, *, conn=None, microtask=False) -> "Block":
        return self._op(["disarm"], conn, microtask)

    # -- fluent chaining back to the scenario

    def raw(self, line: str) -> "Block":
        """An operation line as written in the language ("write 4K cb")."""
        if "\n" in line or "\r" in line:
            raise ValueError("an operation is one line")
        self.ops.append(line.strip())
        return self

    def task(self, *ops: str, conn: Optional[int] = None) -> "Block":
        return self.scenario.task(*ops, conn=conn)

    def on(self, event: str, conn: Optional[int] = None) -> "Block":
        return self.scenario.on(event, conn)

    def text(self) -> str:
        return self.scenario.text()

    def run(self, *args, **kw) -> dict:
        return self.scenario.run(*args, **kw)

    def lines(self) -> list[str]:
        return [self.header] + [f"  {op}" for op in self.ops]


class Scenario:
    """A scenario in code. Settings and peer actions return the scenario;
    .task() and .on() return the new block."""

    def __init__(self, name: Optional[str] = None):
        self.settings: list[str] = []
        self.blocks: list[Block] = []
        if name is not None:
            self.setting("name", name)

    # -- settings

    def setting(self, key: str, *values) -> "Scenario":
        """Any setting line: .setting("clamp-send", 7), .setting("refuse-write",
        "EPIPE@2"), .setting("fault", "send:errno=ENOBUFS,after=1"),
        .setting("transport", "unix"), .setting("variant", "queue=memmove"),
        .setting("behaviour", "queue"), .setting("matrix", "clamp", 1, 7)."""
        if not re.fullmatch(r"[a-z][a-z-]*", key):
            raise ValueError(f"not a setting keyword: {key!r}")
        self.settings.append(" ".join([key, *(_word(v) for v in values)]))
        return self

    def clamp_send(self, n: int) -> "Scenario":
        return self.setting("clamp-send", int(n))

    def refuse_write(self, spec: str) -> "Scenario":
        return self.setting("refuse-write", spec)

    def fault(self, rule: str) -> "Scenario":
        return self.setting("fault", rule)

    def signal(self, spec: str) -> "Scenario":
        return self.setting("signal", spec)

    def transport(self, t: str) -> "Scenario":
        return self.setting("transport", t)

    def connections(self, n: int) -> "Scenario":
        return self.setting("connections", int(n))

    def variant(self, v: str) -> "Scenario":
        return self.setting("variant", v)

    # -- the peer

    def peer(self, action: str, at: str, data: Union[bytes, str, None] = None,
             conn: Optional[int] = None) -> "Scenario":
        """peer read|send|shutdown|reset at POINT (start, "task N", done)."""
        words = ["peer", action]
        if action == "send":
            if data is None:
                raise ValueError("peer send needs the bytes")
            words.append(quote(data))
        words += ["at", str(at)]
        if conn is not None:
            words.append(f"conn={int(conn)}")
        self.settings.append(" ".join(words))
        return self

    def peer_read_at_task(self, n: int, conn: Optional[int] = None) -> "Scenario":
        return self.peer("read", f"task {int(n)}", conn=conn)

    def peer_read_at_start(self, conn: Optional[int] = None) -> "Scenario":
        return self.peer("read", "start", conn=conn)

    def peer_send(self, data: Union[bytes, str], at: str = "start",
                  conn: Optional[int] = None) -> "Scenario":
        return self.peer("send", at, data, conn)

    def peer_rcvbuf(self, n: int) -> "Scenario":
        self.settings.append(f"peer rcvbuf {int(n)}")
        return self

    def peer_on_eof(self, what: str) -> "Scenario":
        self.settings.append(f"peer on-eof {what}")
        return self

    # -- blocks

    def task(self, *ops: str, conn: Optional[int] = None) -> Block:
        """A new task block; ops are optional operation lines ("end 128KiB cb")."""
        b = Block(self, "task" + (f" conn={int(conn)}" if conn is not None else ""))
        for op in ops:
            b.raw(op)
        self.blocks.append(b)
        return b

    def on(self, event: str, conn: Optional[int] = None) -> Block:
        b = Block(self, f"on {event}" + (f" conn={int(conn)}" if conn is not None else ""))
        self.blocks.append(b)
        return b

    # -- output

    def text(self) -> str:
        """The scenario in the scenario language."""
        lines = list(self.settings)
        for b in self.blocks:
            lines += b.lines()
        return "\n".join(lines) + "\n"

    def write_to(self, path: Union[str, os.PathLike]) -> str:
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(self.text())
        return os.fspath(path)

    def check(self, binary=None) -> dict:
        """`wirecheck check --json` of the scenario (raises WirecheckError)."""
        with tempfile.TemporaryDirectory(prefix="wirecheck-api.") as d:
            return runner.check(self.write_to(os.path.join(d, "scenario.wcs")), binary)

    def run(self, flags: Iterable[str] = (), variants: Iterable[str] = (), *,
            repeat: Optional[int] = None, valgrind: bool = False, binary=None,
            timeout: Optional[float] = 900) -> dict:
        """Runs the scenario (`wirecheck run`) and returns the parsed trace.
        The trace's scenario name is the `name` setting, else "scenario"."""
        with tempfile.TemporaryDirectory(prefix="wirecheck-api.") as d:
            path = self.write_to(os.path.join(d, "scenario.wcs"))
            return runner.run(path, list(flags), variants=list(variants), repeat=repeat,
                              valgrind=valgrind, binary=binary, timeout=timeout)
