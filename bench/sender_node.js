'use strict';
// sender_node.js: node's end(P) for bench/sender_cpu, so that the bench puts
// node 20's own write path (the user's alternative) beside the reference
// stack's, on the same bytes, socket kind, reader and CPU, in the same run.
//
// Protocol (one line each way per run): the bench writes
//   "unix <path> <bytes>" or "tcp <port> <bytes>"
// and the script connects, starts the clock once connected, calls
// socket.end(payload, cb), and in cb (node runs it once the kernel has every
// byte and the FIN is sent) answers "ok <cpu µs>": process.cpuUsage() user +
// system of the whole process (node has no per-thread clock; its other
// threads are idle during a write). A failure answers "error <code>".
// "ready <version>" is the first line, once the script runs. The payload is
// Buffer.alloc(bytes, 0x61), made once per size before any run.
const net = require('net');
const readline = require('readline');

const payloads = new Map();

function payload(bytes) {
  let b = payloads.get(bytes);
  if (b === undefined) {
    b = Buffer.alloc(bytes, 0x61);
    payloads.set(bytes, b);
  }
  return b;
}

function run(kind, where, bytes) {
  const buf = payload(bytes);
  const opts = kind === 'unix' ? { path: where } : { host: '127.0.0.1', port: Number(where) };
  const s = net.connect(opts);
  let answered = false;
  const answer = (line) => {
    if (!answered) {
      answered = true;
      process.stdout.write(line + '\n');
    }
  };
  s.on('error', (e) => answer(`error ${e.code || e.message}`));
  s.on('connect', () => {
    const t0 = process.cpuUsage();
    s.end(buf, () => {
      const d = process.cpuUsage(t0);
      answer(`ok ${d.user + d.system}`);
    });
  });
}

const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const [kind, where, bytes] = line.trim().split(' ');
  const n = Number(bytes);
  if ((kind !== 'unix' && kind !== 'tcp') || !where || !Number.isSafeInteger(n) || n <= 0) {
    process.stdout.write(`error bad command: ${line}\n`);
    return;
  }
  run(kind, where, n);
});
rl.on('close', () => process.exit(0));
process.stdout.write(`ready ${process.version}\n`);
