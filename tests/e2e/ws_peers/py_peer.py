"""python3-websockets and wsproto as peers of tests/e2e/test_ws_wire.py.

    py_peer.py LIB recv-server N         listen on 127.0.0.1:0, print "port P"
    py_peer.py LIB recv-client PORT N    connect N times, one after another
    py_peer.py LIB echo-server N         as recv-*, but each connection sends
    py_peer.py LIB echo-client PORT N    its cell (stdin, one JSON object a
                                         line, as npm_peer.js reads them),
                                         prints the one message that comes
                                         back, and closes 1000

A cell whose message is text that is not UTF-8 cannot be sent by these
libraries (text is a str): its line is "cell I skip".

LIB is websockets or wsproto. For each connection it prints one line,
"cell I MESSAGES close:CODE", MESSAGES being "text:HEX" or "binary:HEX"
("-" for an empty payload) for each whole message received, and CODE the
close code the library reports (websockets: the code of the close frame it
received, or the one it sent on an error; wsproto: the same).

WS_DEFLATE=1 enables permessage-deflate with each library's defaults
(websockets' compression="deflate", wsproto's PerMessageDeflate());
unset or 0, neither offers nor accepts it.
"""
import asyncio
import os
import socket
import sys

DEFLATE = os.environ.get("WS_DEFLATE") == "1"


def wsproto_extensions():
    from wsproto.extensions import PerMessageDeflate
    return [PerMessageDeflate()] if DEFLATE else []


import json


def read_cells():
    return [json.loads(l) for l in sys.stdin.read().splitlines() if l]


def cell_message(c):
    """The cell's message as the library sends it (str for text, by npm
    ws's rule), and as fragments when fin is false (the cell's bytes, then
    an empty fragment that ends it), or None when text is not UTF-8."""
    data = bytes.fromhex(c["hex"])
    text = c["binary"] is False or (c["binary"] is None and c["kind"] == "text")
    if text:
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return [data, data[:0]] if not c["fin"] else data


def line(i, got, code):
    print(" ".join([f"cell {i}"] + got + [f"close:{code}"]), flush=True)


def show(kind, data):
    return f"{kind}:{data.hex() or '-'}"


# ---- websockets (asyncio) ------------------------------------------------

async def ws_receive(ws, i):
    import websockets
    got = []
    try:
        async for msg in ws:
            got.append(show("text", msg.encode()) if isinstance(msg, str) else show("binary", msg))
    except websockets.ConnectionClosed:
        pass
    line(i, got, ws.close_code)


async def websockets_server(n):
    import websockets
    count = finished = 0
    done = asyncio.Event()

    async def handler(ws, path=None):
        nonlocal count, finished
        i = count
        count += 1
        await ws_receive(ws, i)
        await ws.wait_closed()
        finished += 1
        if finished == n:
            done.set()

    async with websockets.serve(handler, "127.0.0.1", 0, max_size=None,
                                compression="deflate" if DEFLATE else None) as srv:
        print(f"port {srv.sockets[0].getsockname()[1]}", flush=True)
        await done.wait()


async def websockets_client(port, n):
    import websockets
    for i in range(n):
        async with websockets.connect(f"ws://127.0.0.1:{port}/", max_size=None,
                                      compression="deflate" if DEFLATE else None) as ws:
            await ws_receive(ws, i)


async def ws_echo(ws, i, c):
    import websockets
    msg = cell_message(c)
    if msg is None:
        print(f"cell {i} skip", flush=True)
        return
    got = []
    try:
        await ws.send(msg)
        m = await ws.recv()
        got.append(show("text", m.encode()) if isinstance(m, str) else show("binary", m))
        await ws.close(1000)
    except websockets.ConnectionClosed:
        pass
    await ws.wait_closed()
    line(i, got, ws.close_code)


async def websockets_echo_server(n, cells):
    import websockets
    count = finished = 0
    done = asyncio.Event()

    async def handler(ws, path=None):
        nonlocal count, finished
        i = count
        count += 1
        await ws_echo(ws, i, cells[i])
        finished += 1
        if finished == n:
            done.set()

    async with websockets.serve(handler, "127.0.0.1", 0, max_size=None,
                                compression="deflate" if DEFLATE else None) as srv:
        print(f"port {srv.sockets[0].getsockname()[1]}", flush=True)
        await done.wait()


async def websockets_echo_client(port, n, cells):
    import websockets
    for i in range(n):
        async with websockets.connect(f"ws://127.0.0.1:{port}/", max_size=None,
                                      compression="deflate" if DEFLATE else None) as ws:
            await ws_echo(ws, i, cells[i])


# ---- wsproto (blocking sockets) -----------------------------------------

def wsproto_session(sock, conn, i, client, cell=None):
    """Receives (and prints) what comes; with a cell, sends its message
    once open and closes 1000 after the first message that comes back."""
    from wsproto.events import (AcceptConnection, BytesMessage, CloseConnection,
                                Message, Ping, Request, TextMessage)
    from wsproto.connection import ConnectionState
    got, parts, code = [], [], None

    def send_cell():
        msg = cell_message(cell)
        pieces = msg if isinstance(msg, list) else [msg]
        for k, p in enumerate(pieces):
            sock.sendall(conn.send(Message(data=p, message_finished=k == len(pieces) - 1)))

    while code is None:
        data = sock.recv(65536)
        conn.receive_data(data or None)
        for ev in conn.events():
            if isinstance(ev, AcceptConnection) and client and cell == "skip":
                sock.sendall(conn.send(CloseConnection(code=1000)))
            elif isinstance(ev, AcceptConnection) and client and cell is not None:
                send_cell()
            elif isinstance(ev, Request):
                sock.sendall(conn.send(AcceptConnection(extensions=wsproto_extensions())))
                if cell is not None:
                    send_cell()
            elif isinstance(ev, (TextMessage, BytesMessage)):
                parts.append(ev.data.encode() if isinstance(ev, TextMessage) else ev.data)
                if ev.message_finished:
                    got.append(show("text" if isinstance(ev, TextMessage) else "binary", b"".join(parts)))
                    parts = []
                    if cell is not None and conn.state == ConnectionState.OPEN:
                        sock.sendall(conn.send(CloseConnection(code=1000)))
            elif isinstance(ev, Ping):
                sock.sendall(conn.send(ev.response()))
            elif isinstance(ev, CloseConnection):
                code = ev.code
                if conn.state not in (ConnectionState.CLOSED, ConnectionState.LOCAL_CLOSING):
                    try:
                        sock.sendall(conn.send(ev.response()))
                    except Exception:
                        pass
        if not data and code is None:
            code = 1006
    line(i, got, int(code))
    # Read what the other side still sends until it ends the stream, so
    # that closing here cannot reset the connection under its close frame
    # (a reset would make the other side's report depend on timing).
    sock.settimeout(5)
    try:
        while sock.recv(65536):
            pass
    except OSError:
        pass
    sock.close()


def wsproto_server(n, cells=None):
    from wsproto import ConnectionType, WSConnection
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    print(f"port {srv.getsockname()[1]}", flush=True)
    for i in range(n):
        sock, _ = srv.accept()
        if cells is not None and cell_message(cells[i]) is None:
            print(f"cell {i} skip", flush=True)
            sock.close()
            continue
        wsproto_session(sock, WSConnection(ConnectionType.SERVER), i, False,
                        cells[i] if cells is not None else None)
    srv.close()


def wsproto_client(port, n, cells=None):
    from wsproto import ConnectionType, WSConnection
    from wsproto.events import Request
    for i in range(n):
        cell = cells[i] if cells is not None else None
        skip = cell is not None and cell_message(cell) is None
        sock = socket.create_connection(("127.0.0.1", port))
        conn = WSConnection(ConnectionType.CLIENT)
        sock.sendall(conn.send(Request(host="127.0.0.1", target="/",
                                       extensions=wsproto_extensions())))
        if skip:
            # Opened and closed at once, so the server's count goes on.
            with open(os.devnull, "w") as quiet:
                out, sys.stdout = sys.stdout, quiet
                try:
                    wsproto_session(sock, conn, i, True, "skip")
                finally:
                    sys.stdout = out
            print(f"cell {i} skip", flush=True)
            continue
        wsproto_session(sock, conn, i, True, cell)


def main():
    lib, mode = sys.argv[1], sys.argv[2]
    if mode.startswith("echo-"):
        cells = read_cells()
        if lib == "websockets" and mode == "echo-server":
            asyncio.run(websockets_echo_server(int(sys.argv[3]), cells))
        elif lib == "websockets":
            asyncio.run(websockets_echo_client(int(sys.argv[3]), int(sys.argv[4]), cells))
        elif mode == "echo-server":
            wsproto_server(int(sys.argv[3]), cells)
        else:
            wsproto_client(int(sys.argv[3]), int(sys.argv[4]), cells)
        return
    if lib == "websockets":
        if mode == "recv-server":
            asyncio.run(websockets_server(int(sys.argv[3])))
        else:
            asyncio.run(websockets_client(int(sys.argv[3]), int(sys.argv[4])))
    elif mode == "recv-server":
        wsproto_server(int(sys.argv[3]))
    else:
        wsproto_client(int(sys.argv[3]), int(sys.argv[4]))


if __name__ == "__main__":
    main()
