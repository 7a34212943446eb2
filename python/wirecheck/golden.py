"""Goldens: the deterministic part of a trace, as a small reviewable text file.

A golden holds, of a trace (docs/cli.md), only what does not depend on the
machine or on timing:

- ``exit``: ``code`` or ``signal``, ``timed_out``, and ``error`` when the
  subject reported one. Not ``valgrind`` (only present under --valgrind) and
  not ``core`` (whether the kernel wrote a core dump depends on ulimit -c and
  core_pattern of the machine, not on the stack).
- ``faults``: the armed rules, in canonical form.
- ``fired``: how many calls a rule changed and how many of them it refused
  (the kernel never saw them), then the first FIRED_SHOWN of them, one per
  line: ``send#2 offset=4096 errno=EPIPE refused by RULE`` (the call's
  kind and its number among the writing, reading or other calls on its fd,
  the bytes before it on the fd, the action; not the fd, whose number
  depends on the machine). A golden without the
  section (written before it existed) does not compare it.
- ``peer``: ``bytes``, ``sha256``, ``reads``, ``reset``, and the bytes as a
  hex dump when the trace has them (streams up to 4 KiB); with several
  connections one ``peer cK`` section per connection. With ``peer exec`` the
  bytes are what the program printed on stdout, and ``program_exit`` says
  how it ended: its code, its signal, or ``timeout``.
- ``events``: one per line.
- ``syscalls``: ``name count``, one per line (not ``syscalls_timing``).
- ``queue``: ``bytes_moved``, ``allocations`` and ``bytes_copied``, or
  ``null``.

Not the scenario's name, its transport or its variants: the file name and the
header comment say which scenario and profile the golden is for.

The format (docs/pytest-plugin.md)::

    # wirecheck golden: ...          comment lines, ignored when read
    exit: code=0 timed_out=false
    faults:
      write:short=7,repeat=forever
    fired: total=1 refused=0
      send#1 offset=0 short=7 by write:short=7,repeat=forever
    peer: bytes=6 sha256=... reads=[] reset=false
    peer hex:
      00000000  61 0d 0a 62 0d 0a                                 |a..b..|
    events:
      t1 c0 connect
    syscalls:
      accept 0
    queue: bytes_moved=0 allocations=1 bytes_copied=0

The file is bytes, written and read without newline translation: lines end
with LF only, a comment may hold any byte (a CR included: comment lines are
split on LF only and never interpreted), and a data line with a CR is an
error (a golden saved with CRLF line ends). Bytes that are not printable
ASCII in a value (an event, a rule, an error text) are written as \\xHH and
a backslash as \\\\, so that a line is always one line.
"""
from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

HEX_WIDTH = 16
FIRED_SHOWN = 16  # fired faults a golden lists; the trace has up to 256
CONTEXT = 3  # lines of context around the first differing event

__all__ = [
    "Golden", "Peer", "GoldenError", "from_trace", "render", "parse", "load",
    "write", "compare", "Difference", "report", "golden_path", "hexdump",
    "escape", "unescape",
]


class GoldenError(Exception):
    """A golden file that cannot be read; the message is "FILE:LINE: problem"."""

    def __init__(self, path, line: int | None, problem: str):
        self.path = str(path)
        self.line = line
        self.problem = problem
        where = f"{self.path}:{line}" if line else self.path
        super().__init__(f"{where}: {problem}")


# ---------------------------------------------------------------- the model


@dataclass
class Peer:
    """What the peer received on one connection."""
    bytes: int
    sha256: str
    reads: tuple = ()
    reset: bool = False
    data: bytes | None = None  # the stream itself, when the trace has it (<= 4 KiB)
    program_exit: int | str | None = None  # peer exec: code, signal or "timeout"

    def key(self):
        # program_exit only when there is one: the key of the harness's own
        # peer stays what it was (differences.py fingerprints it).
        k = (self.bytes, self.sha256, tuple(self.reads), self.reset)
        return k if self.program_exit is None else k + (self.program_exit,)


@dataclass
class Golden:
    """The deterministic fields of one trace."""
    exit: dict
    faults: list
    peers: list  # of Peer
    multi: bool  # the trace's peer was a list (several connections)
    events: list
    syscalls: dict
    queue: dict | None
    # {"total", "refused"} and the first FIRED_SHOWN fired calls as lines;
    # None: the golden has no fired: section, which is then not compared
    fired: dict | None = None
    fired_calls: list = field(default_factory=list)
    # where each event sits in the golden file (1-based), when parsed
    event_lines: list = field(default_factory=list, compare=False, repr=False)
    path: str | None = field(default=None, compare=False, repr=False)


EXIT_KEYS = ("code", "signal", "timed_out", "error")
FIRED_KEYS = ("total", "refused")


def fired_line(f: dict) -> str:
    """One fired call of a trace as a golden's line. Not its fd: the
    subject's fd numbers depend on what else holds fds (valgrind opens its
    own), and the kind, index and offset say which call it was."""
    rule = "(fiu-ctrl)" if f.get("rule") is None else str(f["rule"])
    refused = " refused" if f.get("refused") else ""
    return (f"{f['call']}#{f['index']} offset={f['offset']} "
            f"{f['action']}{refused} by {rule}")


QUEUE_KEYS = ("bytes_moved", "allocations", "bytes_copied")


def from_trace(trace: dict) -> Golden:
    """The golden of a parsed trace (what `wirecheck run` printed)."""
    ex = trace.get("exit") or {}
    exit_ = {k: ex[k] for k in EXIT_KEYS if k in ex}
    raw = trace.get("peer")
    multi = isinstance(raw, list)
    peers = []
    for p in (raw if multi else [raw] if raw is not None else []):
        data = bytes.fromhex(p["hex"]) if "hex" in p else None
        peers.append(Peer(int(p["bytes"]), str(p["sha256"]),
                          tuple(int(r) for r in p.get("reads", [])),
                          bool(p.get("reset", False)), data,
                          _program_exit(p.get("program"))))
    q = trace.get("queue")
    queue = None if q is None else {k: q[k] for k in QUEUE_KEYS if k in q}
    fr = trace.get("fired")
    fired = None if fr is None else {
        "total": int(fr.get("total", 0)),
        "refused": sum(int(v) for v in (fr.get("refused") or {}).values())}
    calls = [] if fr is None else [fired_line(f) for f in fr.get("calls", [])[:FIRED_SHOWN]]
    return Golden(exit=exit_, faults=[str(f) for f in trace.get("faults", [])],
                  peers=peers, multi=multi,
                  events=[str(e) for e in trace.get("events", [])],
                  syscalls={k: int(v) for k, v in sorted(trace.get("syscalls", {}).items())},
                  queue=queue, fired=fired, fired_calls=calls)


def _program_exit(program: dict | None) -> int | str | None:
    """How a `peer exec` program ended, in one value, or None without one."""
    if program is None:
        return None
    if program.get("timed_out"):
        return "timeout"
    ex = program.get("exit") or {}
    return ex["signal"] if "signal" in ex else ex.get("code")


def golden_path(scenario: str | os.PathLike, golden_suffix: str = "") -> Path:
    """`<stem><suffix>.golden` beside the scenario (end-large.clamp=7.golden)."""
    p = Path(scenario)
    return p.with_name(f"{p.stem}{golden_suffix}.golden")


# ------------------------------------------------------------------ escaping

_PRINTABLE = frozenset(range(0x20, 0x7F))


def escape(text: str) -> str:
    """One line of printable ASCII: backslash as \\\\, other bytes of the
    UTF-8 encoding outside 0x20..0x7e as \\xHH."""
    out = []
    for b in text.encode("utf-8", "surrogateescape"):
        if b == 0x5C:
            out.append("\\\\")
        elif b in _PRINTABLE:
            out.append(chr(b))
        else:
            out.append(f"\\x{b:02x}")
    return "".join(out)


_ESC = re.compile(r"\\(\\|x[0-9a-fA-F]{2})")


def unescape(text: str) -> str:
    """The inverse of escape(); raises ValueError on a bad escape."""
    out = bytearray()
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
            continue
        m = _ESC.match(text, i)
        if not m:
            raise ValueError(f"bad escape {text[i:i + 4]!r} (\\\\ or \\xHH)")
        out += b"\\" if m.group(1) == "\\" else bytes([int(m.group(1)[1:], 16)])
        i = m.end()
    return out.decode("utf-8", "surrogateescape")


def _quote(text: str) -> str:
    return '"' + escape(text).replace('"', "\\x22") + '"'


# ----------------------------------------------------------------- hex dumps


def _ascii(chunk: bytes) -> str:
    return "".join(chr(b) if b in _PRINTABLE else "." for b in chunk)


def hexline(offset: int, chunk: bytes) -> str:
    """One line of a classic hex dump: offset, 16 bytes in two groups of 8,
    |ascii| with non-printable bytes as '.'."""
    hx = " ".join(f"{b:02x}" for b in chunk[:8])
    if len(chunk) > 8:
        hx += "  " + " ".join(f"{b:02x}" for b in chunk[8:16])
    return f"{offset:08x}  {hx:<48}  |{_ascii(chunk)}|"


def hexdump(data: bytes, start: int = 0, end: int | None = None) -> list[str]:
    """Hex dump lines of data[start:end], start rounded down to a line."""
    end = len(data) if end is None else min(end, len(data))
    start -= start % HEX_WIDTH
    return [hexline(o, data[o:o + HEX_WIDTH]) for o in range(start, end, HEX_WIDTH)]


def _parse_hexline(line: str, expect_offset: int) -> bytes:
    if len(line) < 62 or line[8:10] != "  " or line[58:61] != "  |" or not line.endswith("|"):
        raise ValueError("not a hex dump line (OFFSET  16 bytes in hex  |ascii|)")
    try:
        offset = int(line[:8], 16)
    except ValueError:
        raise ValueError(f"bad offset {line[:8]!r}") from None
    if offset != expect_offset:
        raise ValueError(f"offset {offset:08x}, expected {expect_offset:08x}")
    tokens = line[10:58].split()
    if not 1 <= len(tokens) <= HEX_WIDTH or any(not re.fullmatch(r"[0-9a-f]{2}", t) for t in tokens):
        raise ValueError("expected 1 to 16 bytes as two lower-case hex digits each")
    chunk = bytes(int(t, 16) for t in tokens)
    if hexline(offset, chunk) != line:
        raise ValueError("the line is not laid out as written (spacing, or the "
                         "|ascii| column does not match the bytes)")
    return chunk


# ---------------------------------------------------------------- rendering


def _value(v: Any) -> str:
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return "null"
    if isinstance(v, int):
        return str(v)
    s = str(v)
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.+-]*", s) and s not in ("true", "false", "null"):
        return s
    return _quote(s)


def _exit_line(ex: dict) -> str:
    return " ".join(f"{k}={_value(ex[k])}" for k in EXIT_KEYS if k in ex)


def _peer_line(p: Peer) -> str:
    reads = "[" + ",".join(str(r) for r in p.reads) + "]"
    line = f"bytes={p.bytes} sha256={p.sha256} reads={reads} reset={_value(p.reset)}"
    if p.program_exit is not None:
        line += f" program_exit={_value(p.program_exit)}"
    return line


def _queue_line(q: dict | None) -> str:
    if q is None:
        return "null"
    return " ".join(f"{k}={_value(q[k])}" for k in QUEUE_KEYS if k in q)


def render(g: Golden, *, header: Sequence[str] = ()) -> str:
    """The golden file's text. header: comment lines (without '# ')."""
    out = [("# " + escape(h)).rstrip() for h in header]
    out.append(f"exit: {_exit_line(g.exit)}")
    out.append("faults:")
    out += [f"  {escape(f)}" for f in g.faults]
    if g.fired is not None:
        out.append("fired: " + " ".join(f"{k}={g.fired[k]}" for k in FIRED_KEYS))
        out += [f"  {escape(c)}" for c in g.fired_calls]
    for i, p in enumerate(g.peers):
        tag = f"peer c{i}" if g.multi else "peer"
        out.append(f"{tag}: {_peer_line(p)}")
        if p.data is not None:
            out.append(f"{tag} hex:")
            out += [f"  {l}" for l in hexdump(p.data)]
    out.append("events:")
    out += [f"  {escape(e)}" for e in g.events]
    out.append("syscalls:")
    out += [f"  {escape(k)} {v}" for k, v in g.syscalls.items()]
    out.append(f"queue: {_queue_line(g.queue)}")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------- parsing

_TOKEN = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|\S*)')


def _parse_value(raw: str) -> Any:
    if raw.startswith('"'):
        if len(raw) < 2 or not raw.endswith('"'):
            raise ValueError(f"unterminated string {raw!r}")
        return unescape(raw[1:-1])
    if raw in ("true", "false"):
        return raw == "true"
    if raw == "null":
        return None
    if re.fullmatch(r"-?[0-9]+", raw):
        return int(raw)
    if raw.startswith("[") and raw.endswith("]"):
        inner = raw[1:-1]
        if not inner:
            return []
        try:
            return [int(x) for x in inner.split(",")]
        except ValueError:
            raise ValueError(f"bad list {raw!r}: expected [N,N,...]") from None
    if not raw:
        raise ValueError("a key without a value")
    return raw


def _parse_fields(text: str, allowed: Sequence[str], required: Sequence[str],
                  raw_keys: Sequence[str] = ()) -> dict:
    out: dict = {}
    pos = 0
    text = text.rstrip(" ")
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ValueError(f"expected KEY=VALUE at {text[pos:].strip()!r}")
        key, raw = m.group(1), m.group(2)
        if key not in allowed:
            raise ValueError(f"unknown field {key!r} (expected {', '.join(allowed)})")
        if key in out:
            raise ValueError(f"field {key!r} given twice")
        out[key] = raw if key in raw_keys else _parse_value(raw)
        pos = m.end()
    missing = [k for k in required if k not in out]
    if missing:
        raise ValueError(f"missing field {', '.join(missing)}")
    return out


_SECTION = re.compile(r"(exit|faults|fired|events|syscalls|queue|peer(?: c([0-9]+))?(?: (hex))?):(?: (.*))?$")
_LIST_SECTIONS = ("faults", "fired", "events", "syscalls", "hex")


def parse(data: bytes | str, path: str | os.PathLike = "<golden>") -> Golden:
    """Reads a golden's bytes; raises GoldenError naming the file and line."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    path = str(path)
    exit_ = queue = None
    seen: dict[str, int] = {}
    faults: list = []
    events: list = []
    event_lines: list = []
    syscalls: dict = {}
    fired = None
    fired_calls: list = []
    peers: dict[int | None, dict] = {}  # index (None for a single peer) -> fields
    current = None  # (kind, peer index) of the open list section
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for n, raw in enumerate(lines, 1):
        def fail(problem):
            return GoldenError(path, n, problem)
        if raw.startswith(b"#"):
            continue  # a comment: any bytes, a CR included, never interpreted
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise fail("not UTF-8 text") from None
        if "\r" in line:
            raise fail("a carriage return in a data line: the file was saved with CRLF "
                       "line ends? Goldens are LF-only bytes (.gitattributes: *.golden -text)")
        if not line.strip():
            continue
        if line.startswith("  "):
            item = line[2:]
            if current is None:
                raise fail("an indented line outside faults:, fired:, events:, syscalls: or "
                           "peer hex:")
            kind, idx = current
            try:
                if kind == "faults":
                    faults.append(unescape(item))
                elif kind == "fired":
                    fired_calls.append(unescape(item))
                elif kind == "events":
                    events.append(unescape(item))
                    event_lines.append(n)
                elif kind == "syscalls":
                    m = re.fullmatch(r"(\S+) ([0-9]+)", item)
                    if not m:
                        raise ValueError("expected 'NAME COUNT'")
                    name = unescape(m.group(1))
                    if name in syscalls:
                        raise ValueError(f"syscall {name!r} listed twice")
                    syscalls[name] = int(m.group(2))
                else:  # hex
                    p = peers[idx]
                    p["data"] += _parse_hexline(item, len(p["data"]))
            except ValueError as e:
                raise fail(str(e)) from None
            continue
        m = _SECTION.match(line)
        if not m:
            raise fail(f"expected a section (exit:, faults:, fired:, peer:, peer hex:, "
                       f"events:, syscalls:, queue:), got {line[:40]!r}")
        name, conn, hexsec, rest = m.group(1), m.group(2), m.group(3), m.group(4)
        if name in seen:
            raise fail(f"section '{name}:' is already on line {seen[name]}")
        seen[name] = n
        current = None
        idx = int(conn) if conn is not None else None
        try:
            if name == "exit":
                exit_ = _parse_fields(rest or "", EXIT_KEYS, ("timed_out",))
            elif name == "fired":
                fired = _parse_fields(rest or "", FIRED_KEYS, FIRED_KEYS)
                if any(not isinstance(fired[k], int) or fired[k] < 0 for k in FIRED_KEYS):
                    raise ValueError("fired: expected total=N refused=N")
                current = ("fired", None)
            elif name == "queue":
                queue = None if (rest or "").strip() == "null" else \
                    _parse_fields(rest or "", QUEUE_KEYS, QUEUE_KEYS)
            elif name in ("faults", "events", "syscalls"):
                if rest:
                    raise ValueError(f"'{name}:' takes its items on the indented lines below it")
                current = (name, None)
            elif hexsec:
                if idx not in peers:
                    raise ValueError(f"'{name}:' before 'peer{'' if idx is None else f' c{idx}'}:'")
                if rest:
                    raise ValueError("the hex dump goes on the indented lines below it")
                peers[idx]["data"] = b""
                peers[idx]["hex_line"] = n
                current = ("hex", idx)
            else:  # a peer line
                if (idx is None and peers) or (idx is not None and None in peers):
                    raise ValueError("'peer:' and 'peer cK:' cannot both be used")
                if idx is not None and idx != len(peers):
                    raise ValueError(f"expected 'peer c{len(peers)}:' (connections in order, from 0)")
                f = _parse_fields(rest or "", ("bytes", "sha256", "reads", "reset", "program_exit"),
                                  ("bytes", "sha256", "reads", "reset"), raw_keys=("sha256",))
                if not isinstance(f["bytes"], int) or f["bytes"] < 0:
                    raise ValueError("bytes: expected a count")
                if not re.fullmatch(r"[0-9a-f]{64}", f["sha256"]):
                    raise ValueError("sha256: expected 64 lower-case hex digits")
                if not isinstance(f["reads"], list):
                    raise ValueError("reads: expected [N,N,...]")
                if not isinstance(f["reset"], bool):
                    raise ValueError("reset: expected true or false")
                f["line"] = n
                f["data"] = None
                peers[idx] = f
        except ValueError as e:
            raise fail(str(e)) from None
    end = len(lines) + 1
    for sec in ("exit", "faults", "events", "syscalls", "queue"):
        if sec not in seen:
            raise GoldenError(path, end, f"missing section '{sec}:'")
    out_peers = []
    for idx, f in peers.items():
        if f["data"] is not None:
            if len(f["data"]) != f["bytes"]:
                raise GoldenError(path, f["hex_line"], f"the hex dump holds {len(f['data'])} "
                                  f"bytes, the peer line says bytes={f['bytes']}")
            if hashlib.sha256(f["data"]).hexdigest() != f["sha256"]:
                raise GoldenError(path, f["hex_line"], "the hex dump does not match the "
                                  "peer line's sha256")
        out_peers.append(Peer(f["bytes"], f["sha256"], tuple(f["reads"]), f["reset"], f["data"],
                              f.get("program_exit")))
    g = Golden(exit=exit_, faults=faults, peers=out_peers,
               multi=bool(peers) and None not in peers, events=events,
               syscalls=syscalls, queue=queue, fired=fired, fired_calls=fired_calls)
    g.event_lines = event_lines
    g.path = path
    return g


def load(path: str | os.PathLike) -> Golden:
    """Reads and parses a golden file (bytes, no newline translation)."""
    with open(path, "rb") as f:
        return parse(f.read(), path)


def write(path: str | os.PathLike, text: str) -> bool:
    """Writes text as the golden's exact bytes (no newline translation).
    Returns False, leaving the file alone, when it already holds them."""
    data = text.encode("utf-8")
    p = Path(path)
    try:
        if p.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, p)
    return True


# --------------------------------------------------------------- comparing


@dataclass
class Difference:
    """One field that differs; `text` says how, for a human."""
    field: str
    text: str


def exit_text(ex: dict) -> str:
    """A trace's or a golden's exit fields as the golden's `exit:` line
    writes them (`code=0`, `signal="SIGABRT"`), or "(none)" when empty."""
    return _exit_line(ex) if ex else "(none)"


def _events_diff(g: Golden, a: Golden) -> str:
    ge, ae = g.events, a.events
    i = 0
    while i < len(ge) and i < len(ae) and ge[i] == ae[i]:
        i += 1
    where = f"event {i + 1}"
    if g.event_lines and i < len(g.event_lines) and g.path:
        where += f" ({os.path.basename(g.path)} line {g.event_lines[i]})"
    lines = [f"events: first difference at {where}; golden has {len(ge)} events, "
             f"actual {len(ae)}"]
    lo, hi = max(0, i - CONTEXT), i + CONTEXT + 1
    width = len(str(max(len(ge), len(ae), 1)))
    for label, evs in (("golden", ge), ("actual", ae)):
        lines.append(f"  {label}:")
        for k in range(lo, min(hi, len(evs))):
            mark = ">" if k == i else " "
            lines.append(f"  {mark} {k + 1:>{width}}  {evs[k]}")
        if i >= len(evs):
            lines.append(f"  > {'':>{width}}  (no event {i + 1}: the list ends)")
    return "\n".join(lines)


def _syscalls_diff(g: Golden, a: Golden) -> str:
    kinds = list(g.syscalls)
    kinds += [k for k in a.syscalls if k not in g.syscalls]
    kinds.sort()
    w = max([len(k) for k in kinds] + [7])
    rows = ["syscalls (golden | actual):", f"  {'kind':<{w}}  {'golden':>10}  {'actual':>10}"]
    for k in kinds:
        gv = g.syscalls.get(k)
        av = a.syscalls.get(k)
        gs = "-" if gv is None else str(gv)
        as_ = "-" if av is None else str(av)
        mark = "   <-- differs" if gv != av else ""
        rows.append(f"  {k:<{w}}  {gs:>10}  {as_:>10}{mark}")
    return "\n".join(rows)


def _bytes_diff(tag: str, gp: Peer, ap: Peer) -> str:
    if gp.data is not None and ap.data is not None:
        gd, ad = gp.data, ap.data
        off = next((k for k in range(min(len(gd), len(ad))) if gd[k] != ad[k]),
                   min(len(gd), len(ad)))
        lines = [f"{tag} bytes: first difference at offset {off} (0x{off:x}); "
                 f"golden {len(gd)} bytes, actual {len(ad)} bytes"]
        start = max(0, off - off % HEX_WIDTH - HEX_WIDTH)
        end = off - off % HEX_WIDTH + 2 * HEX_WIDTH
        for label, d in (("golden", gd), ("actual", ad)):
            lines.append(f"  {label}:")
            dump = hexdump(d, start, end)
            for l in dump:
                mark = ">" if int(l[:8], 16) == off - off % HEX_WIDTH else " "
                lines.append(f"  {mark} {l}")
            if not dump or off >= len(d):
                lines.append(f"  > (the stream ends at offset {len(d)})")
        return "\n".join(lines)
    return (f"{tag} bytes: golden {gp.bytes} bytes sha256 {gp.sha256}\n"
            f"{' ' * len(tag)}        actual {ap.bytes} bytes sha256 {ap.sha256}")


def _fired_diff(g: Golden, a: Golden) -> str:
    def head(x):
        return "(none)" if x.fired is None else " ".join(f"{k}={x.fired[k]}" for k in FIRED_KEYS)
    lines = [f"fired: golden {head(g)}, actual {head(a)}"]
    i = 0
    while i < len(g.fired_calls) and i < len(a.fired_calls) and g.fired_calls[i] == a.fired_calls[i]:
        i += 1
    if i < max(len(g.fired_calls), len(a.fired_calls)):
        lines.append(f"  first differing fired call: {i + 1}")
        for label, calls in (("golden", g.fired_calls), ("actual", a.fired_calls)):
            lines.append(f"  {label}: {calls[i] if i < len(calls) else '(none)'}")
    return "\n".join(lines)


def compare(golden: Golden, actual: Golden) -> list[Difference]:
    """The fields where actual differs from golden; empty when they match.
    Bytes compare by length and sha256 only (never a copy of the stream)."""
    diffs: list[Difference] = []
    if golden.exit != actual.exit:
        diffs.append(Difference("exit", f"exit: golden {exit_text(golden.exit)}, "
                                        f"actual {exit_text(actual.exit)}"))
    if golden.faults != actual.faults:
        diffs.append(Difference("faults", f"faults: golden {golden.faults}, actual {actual.faults}"))
    if golden.fired is not None and (golden.fired, golden.fired_calls) != \
            (actual.fired, actual.fired_calls):
        # Named as part of syscalls: the calls a rule changes follow the
        # calls made, so a legacy `except=syscalls` leaves them out too.
        diffs.append(Difference("syscalls fired", _fired_diff(golden, actual)))
    if len(golden.peers) != len(actual.peers) or golden.multi != actual.multi:
        diffs.append(Difference("peer", f"peer: golden has {len(golden.peers)} connection(s), "
                                        f"actual {len(actual.peers)}"))
    else:
        for i, (gp, ap) in enumerate(zip(golden.peers, actual.peers)):
            tag = f"peer c{i}" if golden.multi else "peer"
            if (gp.bytes, gp.sha256) != (ap.bytes, ap.sha256):
                diffs.append(Difference(tag, _bytes_diff(tag, gp, ap)))
            if tuple(gp.reads) != tuple(ap.reads):
                diffs.append(Difference(tag, f"{tag} reads: golden {list(gp.reads)}, "
                                             f"actual {list(ap.reads)}"))
            if gp.reset != ap.reset:
                diffs.append(Difference(tag, f"{tag} reset: golden {_value(gp.reset)}, "
                                             f"actual {_value(ap.reset)}"))
            if gp.program_exit != ap.program_exit:
                diffs.append(Difference(tag, f"{tag} program_exit: golden {_value(gp.program_exit)}, "
                                             f"actual {_value(ap.program_exit)}"))
    if golden.events != actual.events:
        diffs.append(Difference("events", _events_diff(golden, actual)))
    if golden.syscalls != actual.syscalls:
        diffs.append(Difference("syscalls", _syscalls_diff(golden, actual)))
    if golden.queue != actual.queue:
        diffs.append(Difference("queue", f"queue: golden {_queue_line(golden.queue)}, "
                                         f"actual {_queue_line(actual.queue)}"))
    return diffs


def report(diffs: Iterable[Difference]) -> str:
    """The differences as one readable text."""
    return "\n\n".join(d.text for d in diffs)
