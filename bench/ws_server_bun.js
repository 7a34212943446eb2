// ws_server_bun.js MODE PATH: Bun's side of bench/ws_echo.c, Bun.serve's
// own WebSocket server (uWebSockets inside), listening on the unix socket
// PATH; the same protocol as bench/ws_server.js (node + npm ws).
//   MODE echo:  every message goes back to its sender, with its type
//               (ws.send of a string is a text frame, of a Buffer binary);
//   MODE chat:  every message goes to every client (the sender included)
//               through Bun's pub/sub: each socket subscribes to one topic
//               in open() and message() calls server.publish(topic, msg),
//               as Bun's guide "Build a publish-subscribe WebSocket
//               server" does for a chat room (server.publish reaches every
//               subscriber; ws.publish would leave the sender out);
//   MODE chat-send: the same chat with a loop of ws.send over the sockets,
//               as bench/ws_server.js does, to tell the two apart.
// A text message "!cpu" is answered to its sender alone with
// "cpu USER_US SYS_US" (process.cpuUsage(): getrusage of this process);
// "!quit" ends the process. Prints "ready" once it listens. Bun's
// defaults otherwise (perMessageDeflate off, as npm ws's on a server),
// but for the idle timeout (off, below).
// Written for the bench; not a test subject.
'use strict';

const [mode, sock] = process.argv.slice(2);
if (!['echo', 'chat', 'chat-send'].includes(mode) || !sock) {
  process.stderr.write('usage: ws_server_bun.js echo|chat|chat-send PATH\n');
  process.exit(2);
}
const TOPIC = 'chat';
const clients = new Set();
let server;
server = Bun.serve({
  unix: sock,
  fetch(req, srv) {
    if (srv.upgrade(req)) return undefined;
    return new Response('not a WebSocket request', { status: 400 });
  },
  websocket: {
    // Bun's default is 16 MiB; npm ws's 100 MiB. The rows stay far below.
    maxPayloadLength: 100 * 1024 * 1024,
    // Off, as the reference's and npm ws's servers have no idle timeout:
    // ws_echo's connections wait idle through the other rows, and Bun's
    // default (120 s: a ping at 104 s, which the bench's client does not
    // answer, and the close at 120 s) ended a long run with EPIPE
    // (tests/e2e/test_ws_bench_idle.py). uWebSockets resets the timer on
    // every message whatever this value, so the work per message is the
    // same.
    idleTimeout: 0,
    open(ws) {
      if (mode === 'chat') ws.subscribe(TOPIC);
      else if (mode === 'chat-send') clients.add(ws);
    },
    close(ws) {
      clients.delete(ws);
    },
    message(ws, data) {
      if (typeof data === 'string' && data.length <= 5 && data[0] === '!') {
        if (data === '!cpu') {
          const u = process.cpuUsage();
          ws.send(`cpu ${u.user} ${u.system}`);
          return;
        }
        if (data === '!quit') process.exit(0);
      }
      if (mode === 'echo') ws.send(data);
      else if (mode === 'chat') server.publish(TOPIC, data);
      else for (const c of clients) c.send(data);
    },
  },
});
process.stdout.write('ready\n');
