"""A generated scenario: its settings, its blocks of operations and its
fault flags, written out as the scenario language (docs/scenario-language.md).

A Case is data only. The generator (gen.py) draws it, the model (model.py)
judges the trace of its run, and a failure is written as its .wcs file plus
the flags on the command line that reproduces it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from ..api import quote

# The HTTP request the chunked cases' peer sends: one request, then the
# connection closes once the response has ended.
HTTP_REQUEST = b"GET /r HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
# A request before it that keeps the connection alive (keep-alive cases).
HTTP_KEEP_ALIVE = b"GET /k HTTP/1.1\r\nHost: x\r\n\r\n"
# RFC 6455's example key; the peer's Upgrade request for the ws cases.
WS_REQUEST = (b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
              b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
              b"Sec-WebSocket-Version: 13\r\n\r\n")
# A masked close frame with code 1000 (mask key 0): the peer's answer once
# the script is done, so a ws connection ends.
WS_PEER_CLOSE = b"\x88\x82\x00\x00\x00\x00\x03\xe8"


@dataclass(frozen=True)
class Op:
    """One operation line: its keyword, a size or string payload, options."""
    name: str
    size: Optional[int] = None        # a byte count (the stream pattern)
    data: Optional[bytes] = None      # a string payload
    opts: tuple = ()                  # words after the payload: "cb", "final", ...
    microtask: bool = False

    def line(self) -> str:
        words = ["microtask"] if self.microtask else []
        words.append(self.name)
        if self.data is not None:
            words.append(quote(self.data))
        elif self.size is not None:
            words.append(str(self.size))
        words += list(self.opts)
        return " ".join(words)


@dataclass(frozen=True)
class Block:
    header: str                       # "task", "on request", "on eof", ...
    ops: tuple                        # of Op

    def lines(self) -> list[str]:
        return [self.header] + ["  " + op.line() for op in self.ops]


@dataclass(frozen=True)
class Faults:
    """The fault flags of a run (they apply to the subject's writing calls)."""
    clamp: Optional[int] = None                 # --clamp-send N
    refuse: Optional[str] = None                # --refuse-write SPEC
    fault: Optional[str] = None                 # --fault RULE

    def flags(self) -> list[str]:
        out: list[str] = []
        if self.clamp is not None:
            out += ["--clamp-send", str(self.clamp)]
        if self.refuse is not None:
            out += ["--refuse-write", self.refuse]
        if self.fault is not None:
            out += ["--fault", self.fault]
        return out

    def errno(self) -> Optional[str]:
        """The errno name a refusal fails calls with, or None."""
        if self.refuse:
            return self.refuse.split("@")[0]
        if self.fault and "errno=" in self.fault:
            return self.fault.split("errno=")[1].split(",")[0]
        return None

    def describe(self) -> str:
        return " ".join(self.flags()) or "no fault"


# A refusal that only delays bytes: the stack must retry and lose nothing.
TRANSIENT = ("EAGAIN", "ENOBUFS", "EINTR")


@dataclass(frozen=True)
class Case:
    behaviour: str
    settings: tuple                   # setting lines, in order
    blocks: tuple                     # of Block
    faults: Faults = field(default_factory=Faults)
    variant: Optional[str] = None     # "queue=memmove", ... (None: fixed)
    # A case read back from a file (parse()): its faults and variant are
    # settings of the file already, kept in `faults` and `variant` for the
    # model only.
    in_file: bool = False

    def text(self, comment: str = "") -> str:
        out = [f"# {line}" for line in comment.splitlines()]
        out.append(f"behaviour {self.behaviour}")
        out += list(self.settings)
        for b in self.blocks:
            out += b.lines()
        return "\n".join(out) + "\n"

    def flags(self) -> list[str]:
        if self.in_file:
            return []
        out = self.faults.flags()
        if self.variant:
            out += ["--variant", self.variant]
        return out

    def ops(self):
        for b in self.blocks:
            yield from b.ops

    def size(self) -> int:
        """How many operations: the figure a shrunk reproducer is judged by."""
        return sum(len(b.ops) for b in self.blocks)

    def setting(self, key: str) -> Optional[str]:
        for line in self.settings:
            words = line.split(None, 1)
            if words and words[0] == key:
                return words[1] if len(words) > 1 else ""
        return None


def peer_send(data: bytes, at: str = "start") -> str:
    return f"peer send {quote(data)} at {at}"


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def parse(text: str, name: str = "<case>") -> Case:
    """A case back from a file the explorer wrote (its reproducers, or
    one copied into scenarios/): the subset of the scenario language the
    generators use. Lines it does not know are kept as settings; the
    harness's own parser (wirecheck check) is the judge of the file."""
    behaviour = None
    settings: list[str] = []
    blocks: list[Block] = []
    header, ops = None, []
    clamp = refuse = fault = variant = None
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0] if '"' not in raw else raw
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line[0] in " \t":
            if header is None:
                raise ValueError(f"{name}:{no}: an operation outside a block")
            ops.append(_parse_op(line.strip(), name, no))
            continue
        if header is not None:
            blocks.append(Block(header, tuple(ops)))
            header, ops = None, []
        words = line.split()
        if words[0] in ("task", "on"):
            header = line.strip()
        elif words[0] == "behaviour":
            behaviour = words[1]
        else:
            if words[0] == "clamp-send":
                clamp = int(words[1])
            elif words[0] == "refuse-write":
                refuse = words[1]
            elif words[0] == "fault":
                fault = words[1]
            elif words[0] == "variant":
                variant = words[1]
            if words[0] not in ("matrix", "legacy", "name"):
                settings.append(line.rstrip())
    if header is not None:
        blocks.append(Block(header, tuple(ops)))
    if behaviour is None:
        raise ValueError(f"{name}: no 'behaviour' line: the model needs to know which")
    return Case(behaviour, tuple(settings), tuple(blocks), Faults(clamp, refuse, fault),
                variant, in_file=True)


def _parse_op(line: str, name: str, no: int) -> Op:
    from ..api import scenario_bytes
    data = None
    m = _STRING.search(line)
    if m:
        data = scenario_bytes(m.group(0))
        line = line[:m.start()] + " " + line[m.end():]
    words = line.split()
    micro = words[0] == "microtask"
    if micro:
        words = words[1:]
    if not words:
        raise ValueError(f"{name}:{no}: an empty operation")
    size = None
    rest = words[1:]
    if data is None and rest and rest[0].isdigit():
        size = int(rest[0])
        rest = rest[1:]
    return Op(words[0], size, data, tuple(rest), micro)
