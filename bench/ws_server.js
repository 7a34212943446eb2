// ws_server.js MODE PATH: node's side of bench/ws_echo.c, npm ws 8.18.3 on
// node's http server, listening on the unix socket PATH.
//   MODE echo: every message goes back to its sender, with its type;
//   MODE chat: every message goes to every client (the sender included).
// A text message "!cpu" is answered to its sender alone with
// "cpu USER_US SYS_US" (process.cpuUsage(): getrusage of this process);
// "!quit" ends the process. Written for the bench; not a test subject.
'use strict';
const http = require('http');
const path = require('path');
const { WebSocketServer } = require(path.join(__dirname, '..', 'third_party',
  'node', 'node_modules', 'ws'));

const [mode, sock] = process.argv.slice(2);
if ((mode !== 'echo' && mode !== 'chat') || !sock) {
  process.stderr.write('usage: ws_server.js echo|chat PATH\n');
  process.exit(2);
}
const server = http.createServer();
// npm ws's defaults (perMessageDeflate off on a server, maxPayload 100 MiB).
const wss = new WebSocketServer({ server });
wss.on('connection', (ws) => {
  ws.on('message', (data, isBinary) => {
    if (!isBinary && data.length <= 5 && data[0] === 0x21) {
      const s = data.toString();
      if (s === '!cpu') {
        const u = process.cpuUsage();
        ws.send(`cpu ${u.user} ${u.system}`);
        return;
      }
      if (s === '!quit') process.exit(0);
    }
    if (mode === 'echo') {
      ws.send(data, { binary: isBinary });
      return;
    }
    for (const c of wss.clients) c.send(data, { binary: isBinary });
  });
});
server.listen(sock, () => process.stdout.write('ready\n'));
