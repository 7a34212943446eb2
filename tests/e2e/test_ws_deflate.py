"""permessage-deflate's negotiation judged by npm ws 8.18.3 itself: each
line (a side, npm ws's options, a Sec-WebSocket-Extensions value) goes to
the reference stack's negotiation (build/bin/ws_deflate_check, the code
of reference/ws_deflate.c) and to npm ws's lib/extension.js and
lib/permessage-deflate.js (tests/e2e/ws_peers/npm_deflate.js, the calls
its WebSocketServer and WebSocket make); the server's answer (text and
parameters), the client's agreed parameters, or the refusal must be the
same.

The one known difference is listed in DIFFERS: npm ws reads a window size
with JavaScript's `+value`, so it takes 1e1 or 0xa for 10; the reference
stack takes decimal digits only and refuses those.
"""
import os
import pathlib
import shutil
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
CHECK = REPO / "build" / "bin" / "ws_deflate_check"
JS = REPO / "tests" / "e2e" / "ws_peers" / "npm_deflate.js"
WS_MODULE = REPO / "third_party" / "node" / "node_modules" / "ws"

pytestmark = [
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
    pytest.mark.skipif(not (WS_MODULE / "package.json").exists(),
                       reason="npm ws is not installed (scripts/setup.sh installs it)"),
    pytest.mark.skipif(not CHECK.exists(), reason=f"{CHECK} is not built"),
]

# Options: (server_no_context_takeover, client_no_context_takeover,
# server_max_window_bits, client_max_window_bits), npm ws's values as
# rs_ws_deflate_options holds them: 0 not given, 1 true, -1 false, or a
# window size.
DEFAULT = (0, 0, 0, 0)
F = -1
OPTIONS = [DEFAULT, (1, 0, 0, 0), (0, 1, 0, 0), (1, 1, 0, 0), (0, 0, 10, 0),
           (0, 0, 0, 11), (0, 0, 12, 9),
           # npm ws's false and true values.
           (F, 0, 0, 0), (0, F, 0, 0), (0, 0, F, 0), (0, 0, 0, F), (F, F, F, F),
           (0, 0, 1, 0), (0, 0, 0, 1), (1, 1, 1, 1), (F, 1, F, 10), (1, F, 9, F)]
HEADERS = [
    "permessage-deflate",
    "permessage-deflate; client_max_window_bits",
    "permessage-deflate; client_max_window_bits=10",
    "permessage-deflate; client_max_window_bits=15",
    "permessage-deflate; client_max_window_bits=8",
    "permessage-deflate; server_max_window_bits=9",
    "permessage-deflate; server_max_window_bits=12",
    "permessage-deflate; server_max_window_bits=15; client_max_window_bits",
    "permessage-deflate; server_no_context_takeover",
    "permessage-deflate; client_no_context_takeover",
    "permessage-deflate; server_no_context_takeover; client_no_context_takeover",
    "permessage-deflate; client_max_window_bits=9; client_no_context_takeover",
    "permessage-deflate; server_max_window_bits=10, permessage-deflate; client_max_window_bits",
    "permessage-deflate; server_max_window_bits=10, permessage-deflate",
    "x-webkit-deflate-frame",
    "foo, permessage-deflate; client_max_window_bits=10",
    "permessage-deflate, foo",
    "foo; a=\"b\", bar; c",
    "permessage-deflate ;  server_max_window_bits=\"11\"",
    "permessage-deflate; server_max_window_bits=\"1\\1\"",
    "permessage-deflate; server_max_window_bits=010",
    "permessage-deflate; foo",
    "permessage-deflate; server_max_window_bits",
    "permessage-deflate; server_max_window_bits=7",
    "permessage-deflate; client_max_window_bits=16",
    "permessage-deflate; server_no_context_takeover=1",
    "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
    "permessage-deflate, permessage-deflate; x=1",
    "permessage-deflate;",
    "permessage-deflate,",
    ", permessage-deflate",
    "permessage-deflate; server_max_window_bits =10",
    "permessage-deflate; server_max_window_bits= 10",
    "permessage-deflate; server_max_window_bits=\"\"",
    "permessage-deflate; server_max_window_bits=\"10",
    "perm essage-deflate",
    "foo; a=\"b c\"",
    "permessage-deflate; server_max_window_bits=1e1",
    "permessage-deflate; server_max_window_bits=0xa",
]
DIFFERS = {"permessage-deflate; server_max_window_bits=1e1",
           "permessage-deflate; server_max_window_bits=0xa"}
LINES = [(side, o, h) for side in ("server", "client") for o in OPTIONS for h in HEADERS] + \
    [("offer", o, "-") for o in OPTIONS]


def run(args, lines, env=None):
    text = "".join(f"{side} {' '.join(map(str, o))} {h}\n" for side, o, h in lines)
    p = subprocess.run(args, input=text, capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    out = p.stdout.splitlines()
    assert len(out) == len(lines), p.stdout
    return out


def test_negotiation_equals_npm_ws():
    ours = run([str(CHECK)], LINES)
    npm = run(["node", str(JS)], LINES, dict(os.environ, WS_MODULE=str(WS_MODULE)))
    bad, differ = [], []
    for (side, o, h), a, b in zip(LINES, ours, npm):
        if a != b:
            (differ if h in DIFFERS else bad).append(f"{side} {o} {h!r}: ours {a}, npm ws {b}")
    assert not bad, "\n".join(bad)
    # The listed difference is still there (else DIFFERS and the docs are
    # out of date): npm ws takes the JavaScript spellings, we refuse them.
    assert differ and all("ours refused" in d for d in differ), differ
    # The table holds every kind of outcome.
    assert {x.split(" ")[0] for x in ours} == {"ok", "none", "refused", "offer"}
    got = {(side, o, h): a for (side, o, h), a in zip(LINES, ours)}
    # npm ws's false, as its permessage-deflate.js has it (the code before
    # these values read -1 as "given"): a client with clientMaxWindowBits
    # false offers no client_max_window_bits and refuses an answer with
    # one; a server with serverNoContextTakeover or serverMaxWindowBits
    # false refuses offers that ask for them; a server with
    # clientMaxWindowBits false leaves it out of its answer; a client with
    # clientNoContextTakeover false refuses an answer that has it.
    assert got[("offer", (0, 0, 0, F), "-")] == "offer permessage-deflate"
    assert got[("offer", (0, 0, 1, 0), "-")] == \
        "offer permessage-deflate; server_max_window_bits; client_max_window_bits"
    assert got[("client", (0, 0, 0, F), "permessage-deflate; client_max_window_bits=10")] == "refused"
    assert got[("server", (F, 0, 0, 0), "permessage-deflate; server_no_context_takeover")] == "refused"
    assert got[("server", (0, 0, F, 0), "permessage-deflate; server_max_window_bits=12")] == "refused"
    assert got[("server", (0, 0, 0, F), "permessage-deflate; client_max_window_bits=10")] == \
        "ok permessage-deflate|0 0 0 0"
    assert got[("client", (0, F, 0, 0), "permessage-deflate; client_no_context_takeover")] == "refused"


WIRECHECK = REPO / "build" / "bin" / "wirecheck"


@pytest.mark.parametrize("text, problem", [
    ("websocket yes\nws-deflate server_max_window_bits=16\n", ":2: ws-deflate: server_max_window_bits '16': expected 8 to 15"),
    ("websocket yes\nws-deflate client_max_window_bits\n", ":2: ws-deflate: client_max_window_bits needs =N"),
    ("websocket yes\nws-deflate server_no_context_takeover=1\n", ":2: ws-deflate: server_no_context_takeover '1': expected no value, true or false"),
    ("websocket yes\nws-deflate client_max_window_bits=no\n", ":2: ws-deflate: client_max_window_bits 'no': expected 8 to 15, true or false"),
    ("websocket yes\nws-deflate threshold=false\n", ":2: ws-deflate: threshold 'false': expected a byte count"),
    ("websocket yes\nws-deflate threshold=-1\n", ":2: ws-deflate: threshold '-1': expected a byte count"),
    ("websocket yes\nws-deflate bogus\n", ":2: ws-deflate 'bogus': expected yes, no, or a comma list"),
    ("ws-deflate yes\n", ":1: 'ws-deflate' needs 'websocket yes'"),
])
def test_ws_deflate_setting_errors(tmp_path, text, problem):
    """A bad ws-deflate line is refused with the file, the line and why."""
    f = tmp_path / "bad.wcs"
    f.write_text(text + "task\n  ws-send \"a\"\n" if text.startswith("websocket") else text + "task\n  write 1\n")
    p = subprocess.run([str(WIRECHECK), "check", str(f)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, p
    assert f"{f}{problem}" in p.stderr, p.stderr


@pytest.mark.parametrize("op, problem", [
    ('ws-send "a" compress=maybe', ":3: compress=maybe: expected true, false or bad"),
    ('ws-send "a" compress', ":3: unexpected 'compress' after 'ws-send'"),
    # ws-send's options once shared a bit with try-write's `final`.
    ('ws-send "a" final', ":3: unexpected 'final' after 'ws-send'"),
])
def test_ws_send_compress_option_errors(tmp_path, op, problem):
    """ws-send's compress= takes true, false or bad (npm ws's option and a
    value the stack must refuse); anything else names the file and line."""
    f = tmp_path / "bad.wcs"
    f.write_text(f"websocket yes\ntask\n  {op}\n")
    p = subprocess.run([str(WIRECHECK), "check", str(f)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, p
    assert f"{f}{problem}" in p.stderr, p.stderr


# ---- npm ws's false values on the wire --------------------------------------

CELL = REPO / "build" / "bin" / "ws_cell"
PEER = REPO / "tests" / "e2e" / "ws_peers" / "npm_peer.js"
# One text message a connection: short, and long enough to compress.
PMD_MESSAGES = ["hello".encode(), "é".encode() * 1500]
NAMES = ("serverNoContextTakeover", "clientNoContextTakeover",
         "serverMaxWindowBits", "clientMaxWindowBits")


def js_options(t):
    """rs_ws_deflate_options' values -> npm ws's perMessageDeflate object."""
    return {n: (True if v == 1 else False if v == F else v) for n, v in zip(NAMES, t) if v != 0}


# (the side the options are on, its options (ours, and npm ws's in the
# same place), npm ws's options on the other side, what that other side
# must see of the first connection).
PMD_CASES = [
    ("server", (F, 0, 0, 0), (1, 0, 0, 0), "error:Unexpected server response: 400 close:1006"),
    ("server", (F, 0, 0, 0), (0, 0, 0, 0), "answer:permessage-deflate text:5:"),
    ("server", (0, 0, F, 0), (0, 0, 10, 0), "error:Unexpected server response: 400 close:1006"),
    ("server", (0, 0, F, 0), (0, 0, 0, 0), "answer:permessage-deflate text:5:"),
    ("server", (0, 0, 0, F), (0, 0, 0, 10), "answer:permessage-deflate text:5:"),
    ("server", (F, F, F, F), (0, 1, 0, 0), "answer:permessage-deflate; client_no_context_takeover text:5:"),
    ("server", (0, 0, 1, 1), (0, 0, 0, 11), "answer:permessage-deflate; client_max_window_bits=11 text:5:"),
    ("client", (0, 0, 0, F), (0, 0, 0, 0), "offer:permessage-deflate answer:permessage-deflate text:5:"),
    ("client", (0, 0, 0, F), (0, 0, 0, 10), "offer:permessage-deflate refused:400"),
    ("client", (0, F, 0, 0), (0, 1, 0, 0),
     "offer:permessage-deflate; client_max_window_bits answer:permessage-deflate; "
     "client_no_context_takeover close:1006"),
    ("client", (0, 0, 1, 0), (0, 0, 0, 0),
     "offer:permessage-deflate; server_max_window_bits; client_max_window_bits refused:400"),
    ("client", (F, 0, F, 0), (1, 0, 10, 0),
     "offer:permessage-deflate; client_max_window_bits answer:permessage-deflate; "
     "server_no_context_takeover; server_max_window_bits=10 text:5:"),
]


def pmd_run(role, sender, opts, peer_opts):
    """`sender` ("ours": ws_cell; "npm") with opts in `role`, npm ws with
    peer_opts on the other side; returns the peer's lines."""
    import json
    env = dict(os.environ, WS_MODULE=str(WS_MODULE))
    penv = dict(env, WS_PMD=json.dumps(js_options(peer_opts) or True))
    senv = dict(env, WS_PMD=json.dumps(js_options(opts) or True))
    cells = "".join(f"1 -1 1 {m.hex()}\n" for m in PMD_MESSAGES)
    cjson = "".join(json.dumps({"kind": "text", "hex": m.hex(), "binary": None, "fin": True}) + "\n"
                    for m in PMD_MESSAGES)
    n = str(len(PMD_MESSAGES))
    pmd = "pmd=" + ",".join(map(str, opts))

    def start(args, text, e):
        p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=e)
        p.stdin.write(text)
        p.stdin.close()
        p.stdin = None
        return p

    def port_of(p):
        line = p.stdout.readline()
        assert line.startswith("port "), (line, p.stderr.read() if p.poll() is not None else "")
        return line.split()[1]

    if role == "server":
        s = (start([str(CELL), "server", pmd], cells, senv) if sender == "ours"
             else start(["node", str(PEER), "send-server", n], cjson, senv))
        peer = start(["node", str(PEER), "pmd-client", port_of(s), n], "", penv)
    else:
        peer = start(["node", str(PEER), "pmd-server", n], "", penv)
        port = port_of(peer)
        s = (start([str(CELL), "client", port, pmd], cells, senv) if sender == "ours"
             else start(["node", str(PEER), "send-client", port, n], cjson, senv))
    out, err = peer.communicate(timeout=60)
    assert peer.returncode == 0, err
    _, serr = s.communicate(timeout=60)
    assert s.returncode == 0, serr
    return sorted(line for line in out.splitlines() if line.startswith("cell "))


@pytest.mark.parametrize("role, opts, peer_opts, want", PMD_CASES)
def test_false_options_against_npm_ws(role, opts, peer_opts, want):
    """npm ws's false (and true) perMessageDeflate values, on the reference
    stack and on npm ws in the same place, against npm ws on the other
    side: the Sec-WebSocket-Extensions lines, the refusals and the
    messages npm ws receives are the same, and where the handshake
    succeeds every message arrives (the long one compressed)."""
    if not CELL.exists():
        pytest.skip(f"{CELL} is not built")
    ours = pmd_run(role, "ours", opts, peer_opts)
    npm = pmd_run(role, "npm", opts, peer_opts)
    assert ours == npm
    assert len(ours) == len(PMD_MESSAGES), ours
    first = ours[0].split(" ", 2)[2]
    assert first.startswith(want), first
    if want.endswith("text:5:"):
        # Both messages arrive whole: the second is 3,000 bytes.
        assert " text:3000:" in ours[1] and ours[1].endswith("close:1000"), ours[1]
