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
# server_max_window_bits, client_max_window_bits), 0 for not given.
DEFAULT = (0, 0, 0, 0)
OPTIONS = [DEFAULT, (1, 0, 0, 0), (0, 1, 0, 0), (1, 1, 0, 0), (0, 0, 10, 0),
           (0, 0, 0, 11), (0, 0, 12, 9)]
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
LINES = [(side, o, h) for side in ("server", "client") for o in OPTIONS for h in HEADERS]


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
    assert {x.split(" ")[0] for x in ours} == {"ok", "none", "refused"}


WIRECHECK = REPO / "build" / "bin" / "wirecheck"


@pytest.mark.parametrize("text, problem", [
    ("websocket yes\nws-deflate server_max_window_bits=16\n", ":2: ws-deflate: server_max_window_bits '16': expected 8 to 15"),
    ("websocket yes\nws-deflate client_max_window_bits\n", ":2: ws-deflate: client_max_window_bits needs =N"),
    ("websocket yes\nws-deflate server_no_context_takeover=1\n", ":2: ws-deflate: server_no_context_takeover takes no value"),
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
