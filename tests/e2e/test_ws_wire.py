"""The seed's wire table (oven-sh/bun "ws: take the frame type of send() from options.binary") in C terms, judged by real
peers: every cell of data kind (text, bytes, empty, invalid UTF-8, large)
x binary option (absent, false, true) x fin (true, false) x socket (server,
client) sends one call from the reference stack (build/bin/ws_cell) and,
in the same test, the same call from node + npm ws 8.18.3; the frames on
the wire and what each peer (npm ws, python3-websockets, wsproto) receives
must be the same for both senders in every cell.

A text cell is a C string of valid UTF-8 and a JS string in npm ws; a bytes
cell is bytes and a Buffer (the invalid UTF-8 cell is the seed's Buffer
`ff 68`). A fin=false cell is the call with fin false, then an empty text
send with fin true that ends the message (npm ws: `send('', {fin: true})`).
Each connection ends with close(1000). Client frames are compared without
their mask (each side's keys differ; the mask bit is kept).

The compress axis: with compress "on" every side enables permessage-deflate
with its library's defaults (ws_cell's `deflate`, npm ws's
perMessageDeflate: true, websockets' compression="deflate", wsproto's
PerMessageDeflate()), and the raw peers that read the wire offer and answer
as npm ws does. npm ws keeps its context, so it compresses every message
(its 1,024-byte threshold counts only without context takeover) and sets
RSV1 on each message's first frame; the compressed bytes are equal to npm
ws's in every cell (its zlib is node's, the same settings as ours). With
compress "false" the extension is agreed the same way, and each cell's send
is npm ws's `send(data, { ..., compress: false })` (ws_cell's no-compress:
rs_ws_send_options.no_compress): no frame carries RSV1, and the empty send
that ends a fin=false cell, with the default compress, must not compress
either (npm ws's sender decides on a message's first fragment).

The table is written to build/ws-wire-table.md.
"""
import json
import os
import pathlib
import pytest
import shutil
import socket
import subprocess

import sys

# The repository, from this file (not `from conftest import`: with several
# test folders in one run, "conftest" may be another folder's).
REPO = pathlib.Path(__file__).resolve().parents[2]

CELL_BIN = REPO / "build" / "bin" / "ws_cell"
PEERS = REPO / "tests" / "e2e" / "ws_peers"
WS_MODULE = REPO / "third_party" / "node" / "node_modules" / "ws"
TIMEOUT = 120

KINDS = [("text", "text", "hello".encode()),
         ("bytes", "bytes", bytes([0, 1, 0xfe, 0xff])),
         ("empty", "text", b""),
         ("invalid UTF-8", "bytes", b"\xff\x68"),
         ("large", "text", "é".encode() * 1500)]
BINARY = [("absent", None), ("false", False), ("true", True)]
FIN = [True, False]
COMPRESS = ["off", "on", "false"]
CELLS = [dict(name=name, kind=kind, hex=data.hex(), binary=b, fin=fin, bname=bname)
         for name, kind, data in KINDS for bname, b in BINARY for fin in FIN]

pytestmark = [
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
    pytest.mark.skipif(not (WS_MODULE / "package.json").exists(),
                       reason="npm ws is not installed (scripts/setup.sh installs it)"),
]


def cell_lines():
    return "".join(f"{1 if c['kind'] == 'text' else 2} "
                   f"{-1 if c['binary'] is None else int(c['binary'])} "
                   f"{int(c['fin'])} {c['hex'] or '-'}\n" for c in CELLS)


def cell_json():
    return "".join(json.dumps({k: c[k] for k in ("kind", "hex", "binary", "fin")}) + "\n"
                   for c in CELLS)


def spawn(args, stdin_text, env=None, compress="off"):
    env = dict(env if env is not None else os.environ,
               WS_DEFLATE="0" if compress == "off" else "1",
               WS_COMPRESS="0" if compress == "false" else "1")
    p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    p.stdin.write(stdin_text)
    p.stdin.close()
    p.stdin = None  # communicate() must not flush it again
    return p


def node_env():
    return dict(os.environ, WS_MODULE=str(WS_MODULE))


def read_port(p):
    line = p.stdout.readline()
    assert line.startswith("port "), (line, p.stderr.read() if p.poll() is not None else "")
    return int(line.split()[1])


def finish(p):
    out, err = p.communicate(timeout=TIMEOUT)
    assert p.returncode == 0, err
    return out


def by_cell(out):
    """'cell I REST' lines -> {I: REST}."""
    res = {}
    for line in out.splitlines():
        if line.startswith("cell "):
            _, i, *rest = line.split(" ", 2)
            res[int(i)] = rest[0] if rest else ""
    return res


def our_sender(role, by_kind=False, compress="off"):
    extra = (["by-kind"] if by_kind else []) + (["deflate"] if compress != "off" else []) + \
        (["no-compress"] if compress == "false" else [])
    if role == "server":
        return lambda port=None: spawn([str(CELL_BIN), "server", *extra], cell_lines(),
                                       compress=compress)
    return lambda port: spawn([str(CELL_BIN), "client", str(port), *extra], cell_lines(),
                              compress=compress)


def npm_sender(role, compress="off"):
    js = str(PEERS / "npm_peer.js")
    if role == "server":
        return lambda port=None: spawn(["node", js, "send-server", str(len(CELLS))],
                                       cell_json(), node_env(), compress)
    return lambda port: spawn(["node", js, "send-client", str(port), str(len(CELLS))],
                              cell_json(), node_env(), compress)


def receiver_args(lib, mode, port=None):
    n = str(len(CELLS))
    tail = [mode] + ([str(port)] if port else []) + [n]
    if lib == "npm":
        return ["node", str(PEERS / "npm_peer.js")] + tail, node_env()
    return [sys.executable, str(PEERS / "py_peer.py"), lib] + tail, None


def run_pair(role, sender, lib, compress="off"):
    """One sender (ours or npm's) in `role` against one peer library; returns
    ({cell: what the peer got}, {cell: the sender's close code})."""
    if role == "server":
        s = sender()
        port = read_port(s)
        args, env = receiver_args(lib, "recv-client", port)
        r = spawn(args, "", env, compress)
    else:
        args, env = receiver_args(lib, "recv-server")
        r = spawn(args, "", env, compress)
        s = sender(read_port(r))
    got, sent = by_cell(finish(r)), by_cell(finish(s))
    return got, sent


# ---- the frames on the wire -------------------------------------------------

def read_frames(sock, buf=b""):
    """Reads frames until a close frame; returns the frames before it."""
    out = []
    while True:
        while True:
            if len(buf) < 2:
                break
            n, h = buf[1] & 0x7f, 2
            if n == 126:
                if len(buf) < 4:
                    break
                n, h = int.from_bytes(buf[2:4], "big"), 4
            elif n == 127:
                if len(buf) < 10:
                    break
                n, h = int.from_bytes(buf[2:10], "big"), 10
            if buf[1] & 0x80:
                h += 4
            if len(buf) < h + n:
                break
            f, buf = buf[:h + n], buf[h + n:]
            if f[0] & 0x0f == 8:
                return out
            out.append(f)
        data = sock.recv(65536)
        if not data:
            return out
        buf += data


def split_frames(data):
    """Frames of [data] as the wire tests keep them (client frames with
    the mask bit and without their key)."""
    out = []
    while data:
        n, h = data[1] & 0x7f, 2
        if n == 126:
            n, h = int.from_bytes(data[2:4], "big"), 4
        elif n == 127:
            n, h = int.from_bytes(data[2:10], "big"), 10
        out.append(data[:h + n])
        data = data[h + n:]
    return out


def unmasked(f):
    n, h = f[1] & 0x7f, 2
    h = 4 if n == 126 else 10 if n == 127 else 2
    if not f[1] & 0x80:
        return f
    key, p = f[h:h + 4], f[h + 4:]
    return f[:h] + bytes(b ^ key[i & 3] for i, b in enumerate(p))


def read_head(sock):
    buf = b""
    while b"\r\n\r\n" not in buf:
        data = sock.recv(4096)
        assert data, "the stream ended in the handshake"
        buf += data
    head, rest = buf.split(b"\r\n\r\n", 1)
    return head, rest


# What npm ws's client offers with perMessageDeflate: true, and what npm
# ws's server answers to it (both read from npm ws's wire in
# test_deflate_handshake_equals_npm_ws).
NPM_OFFER = b"permessage-deflate; client_max_window_bits"
NPM_ANSWER = b"permessage-deflate"


def header(head, name):
    vals = [l.split(b":", 1)[1].strip() for l in head.split(b"\r\n")
            if l.lower().startswith(name.lower() + b":")]
    return vals[0] if vals else None


def our_wire(role, by_kind=False, compress="off", heads=None):
    """The frames ws_cell sends for each cell, read by a raw TCP peer that
    offers (server role) or answers (client role) permessage-deflate as npm
    ws does when compress is on. heads, a list, gets the heads ws_cell
    sent."""
    import base64
    import hashlib
    res = {}
    offer = b"Sec-WebSocket-Extensions: " + NPM_OFFER + b"\r\n" if compress != "off" else b""
    if role == "server":
        p = our_sender("server", by_kind, compress)()
        port = read_port(p)
        for i in range(len(CELLS)):
            with socket.create_connection(("127.0.0.1", port)) as s:
                s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                          b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                          b"Sec-WebSocket-Version: 13\r\n" + offer + b"\r\n")
                head, rest = read_head(s)
                if heads is not None:
                    heads.append(head)
                res[i] = b"".join(read_frames(s, rest)).hex()
        finish(p)
        return res, {}
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    p = our_sender("client", by_kind, compress)(srv.getsockname()[1])
    masks = {}
    for i in range(len(CELLS)):
        s, _ = srv.accept()
        with s:
            head, rest = read_head(s)
            if heads is not None:
                heads.append(head)
            key = header(head, b"sec-websocket-key")
            accept = base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
            answer = (b"Sec-WebSocket-Extensions: " + NPM_ANSWER + b"\r\n"
                      if compress != "off" and header(head, b"sec-websocket-extensions") else b"")
            s.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                      b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept + b"\r\n" +
                      answer + b"\r\n")
            fs = read_frames(s, rest)
            masks[i] = all(f[1] & 0x80 for f in fs)
            res[i] = b"".join(unmasked(f) for f in fs).hex()
    srv.close()
    finish(p)
    return res, masks


def npm_wire(role, compress="off"):
    p = spawn(["node", str(PEERS / "npm_peer.js"), f"wire-{role}"], cell_json(), node_env(),
              compress)
    return by_cell(finish(p))


def label(c):
    return f"{c['name']}, binary {c['bname']}, fin {str(c['fin']).lower()}"


@pytest.fixture(scope="module")
def built():
    if not CELL_BIN.exists():
        pytest.skip(f"{CELL_BIN} is not built")


TABLE = {}


@pytest.mark.parametrize("compress", COMPRESS)
@pytest.mark.parametrize("role", ["server", "client"])
def test_wire_equals_npm_ws(built, role, compress):
    heads = []
    ours, masks = our_wire(role, compress=compress, heads=heads)
    npm = npm_wire(role, compress)
    bad = [f"{label(c)}: ours {ours[i]}, npm ws {npm[i]}"
           for i, c in enumerate(CELLS) if ours[i] != npm[i]]
    assert not bad, "\n".join(bad)
    if role == "client":
        assert all(masks.values()), "a client frame without the mask bit"
    for i, c in enumerate(CELLS):
        TABLE.setdefault((role, compress, i), {})["wire"] = ours[i]
    write_table()
    i = next(i for i, c in enumerate(CELLS)
             if c["name"] == "invalid UTF-8" and c["bname"] == "false" and c["fin"])
    ext = {header(h, b"sec-websocket-extensions") for h in heads}
    if compress == "off":
        # The seed's example, as its table has it.
        want = "8102ff68" if role == "server" else "8182ff68"
        assert ours[i] == want
        assert ext == {None}
        return
    # permessage-deflate agreed as npm ws agrees it.
    assert ext == {NPM_ANSWER if role == "server" else NPM_OFFER}
    if compress == "false":
        # compress: false on each cell's first (or only) frame: no frame
        # has RSV1, not even the ending send of a fin=false cell, which
        # asked for compression (the code before the option compressed
        # every one of these messages).
        for i, c in enumerate(CELLS):
            heads = [f[0] for f in split_frames(bytes.fromhex(ours[i]))]
            assert heads and not any(h & 0x40 for h in heads), f"{label(c)}: RSV1 in {ours[i][:8]}"
        return
    # Every message compressed: RSV1 (0x40) on each message's first
    # frame, on none of its continuation frames (the code before this
    # axis sent no RSV1).
    for i, c in enumerate(CELLS):
        first = int(ours[i][:2], 16)
        assert first & 0x40, f"{label(c)}: no RSV1 in {ours[i][:8]}"
    # "ff 68" as text, deflated: c1 04 fa cf 02 00 (npm ws's bytes too).
    i = next(i for i, c in enumerate(CELLS)
             if c["name"] == "invalid UTF-8" and c["bname"] == "false" and c["fin"])
    assert ours[i].startswith("c104" if role == "server" else "c184"), ours[i]


@pytest.mark.parametrize("role", ["server", "client"])
def test_legacy_wire_differs_from_npm_ws(built, role):
    """ws=by-kind (the seed's base) differs from npm ws where the seed says:
    binary given against the kind, and ff 68 sent as text (U+FFFD)."""
    ours, _ = our_wire(role, by_kind=True)
    npm = npm_wire(role)
    differ = {label(c) for i, c in enumerate(CELLS) if ours[i] != npm[i]}
    assert "invalid UTF-8, binary false, fin true" in differ
    assert "text, binary true, fin true" in differ
    assert "bytes, binary absent, fin true" not in differ
    i = next(i for i, c in enumerate(CELLS)
             if c["name"] == "invalid UTF-8" and c["bname"] == "false" and c["fin"])
    # by-kind: bytes are a binary frame whatever binary says.
    assert ours[i] == ("8202ff68" if role == "server" else "8282ff68")


@pytest.mark.parametrize("compress", COMPRESS)
@pytest.mark.parametrize("lib", ["npm", "websockets", "wsproto"])
@pytest.mark.parametrize("role", ["server", "client"])
def test_peer_receives_as_from_npm_ws(built, role, lib, compress):
    if lib != "npm":
        try:
            __import__(lib)
        except ImportError:
            pytest.skip(f"python3-{lib} is not installed (scripts/setup.sh installs it)")
    ours, ours_close = run_pair(role, our_sender(role, compress=compress), lib, compress)
    npm, npm_close = run_pair(role, npm_sender(role, compress), lib, compress)
    bad = [f"{label(c)}: the peer got {ours.get(i)!r} from us, {npm.get(i)!r} from npm ws"
           for i, c in enumerate(CELLS) if ours.get(i) != npm.get(i)]
    assert not bad, "\n".join(bad)
    bad = [f"{label(c)}: our sender saw close {ours_close.get(i)}, npm ws {npm_close.get(i)}"
           for i, c in enumerate(CELLS) if ours_close.get(i) != npm_close.get(i)]
    # npm ws's sender reports 1005 where the peer's close frame had no
    # code and we report the same; any difference is a failure.
    assert not bad, "\n".join(bad)
    i = next(i for i, c in enumerate(CELLS)
             if c["name"] == "invalid UTF-8" and c["bname"] == "false" and c["fin"])
    # A validating peer fails the connection: the sender sees 1007.
    assert ours_close[i].endswith("1007"), ours_close[i]
    # Every message arrives intact: what the cell sent (text or binary by
    # npm ws's rule), whatever the compression.
    for i, c in enumerate(CELLS):
        kind = ("binary" if c["binary"] else "text") if c["binary"] is not None else \
            ("text" if c["kind"] == "text" else "binary")
        try:
            bytes.fromhex(c["hex"]).decode("utf-8")
        except UnicodeDecodeError:
            if kind == "text":
                continue  # a text frame that is not UTF-8: the peer closes 1007
        want = f"{kind}:{c['hex'] or '-'}"
        assert ours[i].split(" ")[0] == want, f"{label(c)}: {ours[i]!r}, want {want}"
    for i in range(len(CELLS)):
        TABLE.setdefault((role, compress, i), {})[lib] = ours[i]
    write_table()


def write_table():
    """Each test writes its columns to build/ws-wire/ (tests may run in
    several xdist workers), then the table from every file there."""
    part = REPO / "build" / "ws-wire"
    try:
        part.mkdir(exist_ok=True)
        for (role, compress, i), v in TABLE.items():
            for k, val in v.items():
                (part / f"{role}.{compress}.{i}.{k}").write_text(val)
    except OSError:
        return
    table = {}
    for f in part.iterdir():
        parts = f.name.split(".", 3)
        if len(parts) != 4:
            continue  # a file of the table before the compress axis
        role, compress, i, k = parts
        table.setdefault((role, compress, int(i)), {})[k] = f.read_text()
    out = REPO / "build" / "ws-wire-table.md"
    rows = ["| socket | compress | cell | frame on the wire (unmasked) | npm ws gets | websockets gets | wsproto gets |",
            "|---|---|---|---|---|---|---|"]
    for (role, compress, i), v in sorted(table.items()):
        wire = v.get("wire", "")
        wire = wire if len(wire) <= 40 else wire[:40] + f"... ({len(wire) // 2} bytes)"
        cols = []
        for lib in ("npm", "websockets", "wsproto"):
            g = v.get(lib, "")
            cols.append(g if len(g) <= 48 else g[:48] + "...")
        rows.append(f"| {role} | {compress} | {label(CELLS[i])} | `{wire}` | " +
                    " | ".join(f"`{c}`" for c in cols) + " |")
    try:
        out.write_text("\n".join(rows) + "\n")
    except OSError:
        pass


# ---- the receive side: real peers send, the stack echoes -------------------

def echo_run(role, lib, echoer, compress):
    """The echoer (ours: ws_cell echo; npm: npm ws sending each message
    back) in `role`; lib's peer sends each cell's message and prints what
    came back. Returns {cell: line}."""
    n = str(len(CELLS))
    js = str(PEERS / "npm_peer.js")
    peer = (["node", js] if lib == "npm" else [sys.executable, str(PEERS / "py_peer.py"), lib])
    env = node_env()
    extra = ["deflate"] if compress != "off" else []
    if role == "server":
        e = (spawn([str(CELL_BIN), "server", "echo", *extra], cell_lines(), compress=compress)
             if echoer == "ours" else spawn(["node", js, "back-server", n], "", env, compress))
        p = spawn(peer + ["echo-client", str(read_port(e)), n], cell_json(), env, compress)
    else:
        p = spawn(peer + ["echo-server", n], cell_json(), env, compress)
        port = str(read_port(p))
        e = (spawn([str(CELL_BIN), "client", port, "echo", *extra], cell_lines(), compress=compress)
             if echoer == "ours" else spawn(["node", js, "back-client", port, n], "", env, compress))
    got = by_cell(finish(p))
    finish(e)
    return got


@pytest.mark.parametrize("compress", COMPRESS)
@pytest.mark.parametrize("lib", ["npm", "websockets", "wsproto"])
@pytest.mark.parametrize("role", ["server", "client"])
def test_stack_receives_as_npm_ws(built, role, lib, compress):
    """Each peer library (with deflate on when compress is) sends every
    cell's message to the reference stack, which sends it back; npm ws in
    the same place, in the same run, must give the peer the same answers,
    and every message that is valid comes back intact (so the stack's
    inflate and its compressed answer agree with each real peer)."""
    if lib != "npm":
        try:
            __import__(lib)
        except ImportError:
            pytest.skip(f"python3-{lib} is not installed (scripts/setup.sh installs it)")
    ours = echo_run(role, lib, "ours", compress)
    npm = echo_run(role, lib, "npm", compress)
    bad = [f"{label(c)}: back from us {ours.get(i)!r}, from npm ws {npm.get(i)!r}"
           for i, c in enumerate(CELLS) if ours.get(i) != npm.get(i)]
    assert not bad, "\n".join(bad)
    if lib == "npm":
        # npm ws says what was agreed: permessage-deflate when compress is on.
        ext = {line.rsplit(" ext:", 1)[1] for line in ours.values()}
        assert ext == ({"-"} if compress == "off" else {"permessage-deflate"}), ext
        ours = {i: line.rsplit(" ext:", 1)[0] for i, line in ours.items()}
    intact = 0
    for i, c in enumerate(CELLS):
        if ours[i] == "skip":
            continue
        kind = ("binary" if c["binary"] else "text") if c["binary"] is not None else \
            ("text" if c["kind"] == "text" else "binary")
        try:
            bytes.fromhex(c["hex"]).decode("utf-8")
        except UnicodeDecodeError:
            if kind == "text":
                # npm ws sends it: the stack closes 1007, as npm ws does.
                assert ours[i].endswith("close:1006") or ours[i].endswith("close:1007"), ours[i]
                continue
        assert ours[i] == f"{kind}:{c['hex'] or '-'} close:1000", f"{label(c)}: {ours[i]!r}"
        intact += 1
    assert intact >= 20
