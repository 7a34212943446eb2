// npm ws as a peer of tests/e2e/test_ws_wire.py. WS_MODULE names the ws
// package (third_party/node/node_modules/ws, installed by scripts/setup.sh).
// Cells come on stdin, one JSON object a line: {kind: "text"|"bytes", hex,
// binary: null|false|true, fin: true|false}. Modes:
//   recv-server N | recv-client PORT N   receive N connections, print what came
//   send-server N | send-client PORT N   send each cell as ws_cell does
//   wire-server | wire-client            the frames npm ws puts on the wire
//   echo-server N | echo-client PORT N   send each cell, print what comes
//                                        back, close 1000
//   back-server N | back-client PORT N   echo each message back (as
//                                        ws_cell's echo does)
//   pmd-server N | pmd-client PORT N     receive N connections as recv-*
//                                        does, and print the handshake's
//                                        Sec-WebSocket-Extensions lines
//                                        (offer and answer the server saw;
//                                        the answer the client got) and a
//                                        refused handshake
// WS_DEFLATE=1 enables permessage-deflate with npm ws's default options on
// every side (the raw peers of the wire modes offer and accept it as npm ws
// does); unset or 0, no side offers or accepts it. WS_PMD, a JSON object,
// is npm ws's perMessageDeflate option instead (its false values
// included). WS_COMPRESS=0 sends each
// cell with npm ws's `compress: false` (the empty send that ends a
// fragmented cell keeps the default: npm ws's sender follows the first
// fragment).
'use strict';
const net = require('net');
const crypto = require('crypto');
const { WebSocketServer, WebSocket } = require(process.env.WS_MODULE);

const [mode, a1, a2] = process.argv.slice(2);
const cells = require('fs').readFileSync(0, 'utf8').split('\n').filter(Boolean).map(JSON.parse);
const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const DEFLATE = process.env.WS_DEFLATE === '1';
const NO_COMPRESS = process.env.WS_COMPRESS === '0';
const PMD = process.env.WS_PMD ? JSON.parse(process.env.WS_PMD) : DEFLATE;

// A text cell is a string (valid UTF-8 in every cell); bytes are a Buffer.
const dataOf = c => (c.kind === 'text' ? Buffer.from(c.hex, 'hex').toString('utf8') : Buffer.from(c.hex, 'hex'));
function optsOf(c) {
  const o = {};
  if (c.binary !== null) o.binary = c.binary;
  if (!c.fin) o.fin = false;
  if (NO_COMPRESS) o.compress = false;
  return o;
}
function sendCell(ws, c, close = true) {
  ws.send(dataOf(c), optsOf(c));
  if (!c.fin) ws.send('', { fin: true });
  if (close) ws.close(1000);
}
function receiver(ws, i, done) {
  const got = [];
  ws.on('message', (d, isBinary) => got.push(`${isBinary ? 'binary' : 'text'}:${Buffer.from(d).toString('hex') || '-'}`));
  ws.on('error', e => got.push(`error:${e.code || e.message}`));
  ws.on('close', code => { console.log(`cell ${i} ${got.join(' ')} close:${code}`.replace('  ', ' ')); done(); });
}

function serverMode(n, onConn, logHeads = false) {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: PMD });
  let i = 0, closed = 0;
  const done = () => { if (++closed === n) { wss.close(); } };
  wss.on('listening', () => console.log(`port ${wss.address().port}`));
  if (logHeads) {
    const heads = [];
    wss.on('headers', (headers, req) => {
      const a = headers.find(h => /^Sec-WebSocket-Extensions:/i.test(h));
      heads.push(`offer:${req.headers['sec-websocket-extensions'] || '-'} ` +
                 `answer:${a ? a.split(': ')[1] : '-'}`);
    });
    wss.on('connection', ws => { const k = i++; onConn(ws, k, done, heads.shift()); });
  } else {
    wss.on('connection', ws => onConn(ws, i++, done));
  }
  // With WS_PMD a handshake may be refused: npm ws answers 400 (as it
  // does without this listener), and the connection counts.
  if (process.env.WS_PMD) {
    wss.on('wsClientError', (err, socket, req) => {
      console.log(`cell ${i++} offer:${req.headers['sec-websocket-extensions'] || '-'} refused:400`);
      socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      done();
    });
  }
}
function clientMode(port, n, onConn) {
  let i = 0;
  const next = () => {
    if (i === n) return;
    const ws = new WebSocket(`ws://127.0.0.1:${port}/`, { perMessageDeflate: PMD });
    onConn(ws, i++, next);
  };
  next();
}
// A receiver that says what was agreed: the heads (a server's), or the
// answer a client got; messages as length and hash.
function pmdReceiver(ws, i, done, heads) {
  const got = [];
  let head = heads || '';
  ws.on('upgrade', res => { head = `answer:${res.headers['sec-websocket-extensions'] || '-'}`; });
  ws.on('message', (d, isBinary) => got.push(`${isBinary ? 'binary' : 'text'}:${d.length}:` +
    crypto.createHash('sha256').update(d).digest('hex').slice(0, 16)));
  ws.on('error', e => got.push(`error:${e.code || e.message}`));
  ws.on('close', code => { console.log(`cell ${i} ${head} ${got.join(' ')} close:${code}`.replace(/ +/g, ' ')); done(); });
}

// A minimal reader of frames for the wire modes: returns [frames, rest].
function frames(buf) {
  const out = [];
  let off = 0;
  for (;;) {
    if (buf.length - off < 2) break;
    let len = buf[off + 1] & 0x7f, h = 2;
    if (len === 126) { if (buf.length - off < 4) break; len = buf.readUInt16BE(off + 2); h = 4; }
    else if (len === 127) { if (buf.length - off < 10) break; len = Number(buf.readBigUInt64BE(off + 2)); h = 10; }
    if (buf[off + 1] & 0x80) h += 4;
    if (buf.length - off < h + len) break;
    out.push(buf.subarray(off, off + h + len));
    off += h + len;
  }
  return [out, buf.subarray(off)];
}
// A client frame without its mask: the header's mask bit kept, no key, the
// payload unmasked, so that frames with different keys compare.
function unmasked(f) {
  let len = f[1] & 0x7f, h = 2;
  if (len === 126) h = 4; else if (len === 127) h = 10;
  if (!(f[1] & 0x80)) return f;
  const key = f.subarray(h, h + 4), p = Buffer.from(f.subarray(h + 4));
  for (let k = 0; k < p.length; k++) p[k] ^= key[k & 3];
  return Buffer.concat([f.subarray(0, h), p]);
}
function collect(sock, skipHead, onFrames) {
  let buf = Buffer.alloc(0), head = skipHead, seen = [];
  sock.on('data', d => {
    buf = Buffer.concat([buf, d]);
    if (head) {
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      head(buf.subarray(0, end + 4));
      head = null;
      buf = buf.subarray(end + 4);
    }
    const [fs, rest] = frames(buf);
    buf = rest;
    for (const f of fs) {
      if ((f[0] & 0x0f) === 8) { sock.destroy(); onFrames(seen); return; }
      seen.push(f);
    }
  });
}

function wireServer() {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: DEFLATE });
  let i = 0;
  wss.on('connection', ws => sendCell(ws, cells[i]));
  wss.on('listening', () => {
    const port = wss.address().port;
    const one = () => {
      if (i === cells.length) { wss.close(); return; }
      const sock = net.connect(port, '127.0.0.1', () => sock.write(
        'GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n' +
        (DEFLATE ? 'Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n' : '') +
        '\r\n'));
      collect(sock, () => {}, fs => {
        console.log(`cell ${i} ${Buffer.concat(fs).toString('hex')}`);
        i++;
        one();
      });
      sock.on('error', () => {});
    };
    one();
  });
}

function wireClient() {
  let i = 0;
  const srv = net.createServer(sock => {
    collect(sock, head => {
      const key = /Sec-WebSocket-Key: (\S+)/i.exec(head.toString())[1];
      const offer = /Sec-WebSocket-Extensions: ([^\r]*)/i.exec(head.toString());
      const accept = crypto.createHash('sha1').update(key + GUID).digest('base64');
      // npm ws's server answer to npm ws's client offer.
      sock.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
                 `Sec-WebSocket-Accept: ${accept}\r\n` +
                 (DEFLATE && offer ? 'Sec-WebSocket-Extensions: permessage-deflate\r\n' : '') + '\r\n');
    }, fs => {
      console.log(`cell ${i} ${Buffer.concat(fs.map(unmasked)).toString('hex')}`);
      i++;
      one();
    });
    sock.on('error', () => {});
  });
  const one = () => {
    if (i === cells.length) { srv.close(); return; }
    const ws = new WebSocket(`ws://127.0.0.1:${srv.address().port}/`, { perMessageDeflate: DEFLATE });
    ws.on('open', () => sendCell(ws, cells[i]));
    ws.on('error', () => {});
  };
  srv.listen(0, '127.0.0.1', one);
}

// Sends the cell once open and prints the one message that comes back.
function echoPeer(ws, i, done) {
  const got = [];
  const go = () => sendCell(ws, cells[i], false);
  if (ws.readyState === WebSocket.OPEN) go(); else ws.on('open', go);
  ws.on('message', (d, isBinary) => {
    got.push(`${isBinary ? 'binary' : 'text'}:${Buffer.from(d).toString('hex') || '-'}`);
    ws.close(1000);
  });
  ws.on('error', e => got.push(`error:${e.code || e.message}`));
  ws.on('close', code => {
    console.log(`cell ${i} ${got.join(' ')} close:${code} ext:${ws.extensions || '-'}`.replace('  ', ' '));
    done();
  });
}
// Sends each message back with its type, as ws_cell's echo does.
function backPeer(ws, i, done) {
  ws.on('message', (d, isBinary) => ws.send(d, { binary: isBinary }));
  ws.on('error', () => {});
  ws.on('close', code => { console.log(`cell ${i} close ${code}`); done(); });
}

const n = Number(mode.endsWith('server') ? a1 : a2);
if (mode === 'recv-server') serverMode(n, receiver);
else if (mode === 'recv-client') clientMode(Number(a1), n, receiver);
else if (mode === 'send-server' || mode === 'send-client') {
  const onConn = (ws, i, done) => {
    ws.on('open', () => sendCell(ws, cells[i]));
    if (mode === 'send-server') sendCell(ws, cells[i]);
    ws.on('error', () => {});
    ws.on('close', code => { console.log(`cell ${i} close ${code}`); done(); });
  };
  if (mode === 'send-server') serverMode(n, onConn); else clientMode(Number(a1), n, onConn);
} else if (mode === 'wire-server') wireServer();
else if (mode === 'wire-client') wireClient();
else if (mode === 'echo-server') serverMode(n, echoPeer);
else if (mode === 'echo-client') clientMode(Number(a1), n, echoPeer);
else if (mode === 'back-server') serverMode(n, backPeer);
else if (mode === 'back-client') clientMode(Number(a1), n, backPeer);
else if (mode === 'pmd-server') serverMode(n, pmdReceiver, true);
else if (mode === 'pmd-client') clientMode(Number(a1), n, pmdReceiver);
else { console.error(`unknown mode ${mode}`); process.exit(2); }
