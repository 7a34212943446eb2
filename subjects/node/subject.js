#!/usr/bin/env node
// subject.js: node:net as a wirecheck subject (docs/subjects.md).
//
// It speaks the subject protocol (docs/subject-protocol.md) as
// refstack-subject does: the script on fd 3, events on fd 4, one write(2)
// per line; and performs each operation with node:net. It runs with the
// gate preloaded (faultinject/preload.c with WIRECHECK_SHM_FD=5, which
// `wirecheck run --subject node` sets): the gate counts node's socket calls
// into fd 5's shared memory, and the script's `fault` lines and the
// `disarm` operation reach the gate as commands written to fd 5.
//
// Tasks are numbered as refstack-subject numbers them: the n-th macrotask
// (an I/O callback, an immediate) that reported an event is task n; ticks
// and microtasks belong to the macrotask that queued them. async_hooks tells
// a macrotask's start ("before" of any resource but ticks and microtasks).
// Node 20, no npm packages.
//
// Bun runs the same program (bun-subject, subjects/bun/subject.sh): where
// Bun lacks what node gives, the parts marked "Bun:" below say what the
// subject does instead (docs/subjects.md, "Bun").
//
// With `handoff upgrade` in the script (`--subject node-upgrade`,
// `bun-upgrade`), every connection is the socket a node:http server hands
// to its 'upgrade' listener, as a WebSocket server's: the peer connects and
// sends an Upgrade request, the subject answers 101 and runs the scenario
// on that socket (openHandedOff).
'use strict';

const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const asyncHooks = require('node:async_hooks');
const http = require('node:http');

// Bun implements node:net, node:http and process, not all of node's insides.
const BUN = typeof process.versions.bun === 'string';

const FD_CTL = 3;
const FD_EVENTS = 4;
const FD_SHM = 5;

// ---- the event pipe --------------------------------------------------------

function writeAll(fd, text) {
  const buf = Buffer.from(text, 'latin1');
  let off = 0;
  while (off < buf.length) {
    try {
      off += fs.writeSync(fd, buf, off, buf.length - off);
    } catch (e) {
      if (e.code === 'EAGAIN' || e.code === 'EINTR') continue;
      process.exit(70); // the harness is gone: nothing to report to
    }
  }
}

function lineOut(text) {
  writeAll(FD_EVENTS, text + '\n');
}

function fatal(message) {
  lineOut(`fatal ${message}`);
  process.exit(2);
}

function waitGo() {
  const buf = Buffer.alloc(3);
  let got = 0;
  while (got < 3) {
    let n;
    try {
      n = fs.readSync(FD_CTL, buf, got, 3 - got, null);
    } catch (e) {
      if (e.code === 'EAGAIN' || e.code === 'EINTR') continue;
      process.exit(70);
    }
    if (n <= 0) process.exit(70);
    got += n;
  }
  if (buf.toString('latin1') !== 'go\n') process.exit(71);
}

// ---- names ------------------------------------------------------------------

const SIGNAL_NAMES = new Map();
for (const [name, num] of Object.entries(os.constants.signals)) {
  if (!SIGNAL_NAMES.has(num) && name !== 'SIGIOT' && name !== 'SIGPOLL' &&
      name !== 'SIGUNUSED')
    SIGNAL_NAMES.set(num, name);
}
const ERRNO_NAMES = new Map();
for (const [name, num] of Object.entries(os.constants.errno)) {
  if (!ERRNO_NAMES.has(num) && name !== 'EWOULDBLOCK' && name !== 'EDEADLOCK')
    ERRNO_NAMES.set(num, name);
}

// An error as the trace shows it: the errno name node gives (EPIPE), or
// node's own code (ERR_STREAM_WRITE_AFTER_END) for errors without one.
function errName(err) {
  if (!err) return 'ok';
  if (typeof err.code === 'string') return err.code;
  if (typeof err.errno === 'number') return ERRNO_NAMES.get(-err.errno) || `E${-err.errno}`;
  return 'ERROR';
}

// ---- the script ---------------------------------------------------------------

const OPS = new Set(['write', 'end', 'destroy', 'destroy-soon', 'cork', 'uncork',
  'pause', 'resume', 'signal', 'disarm', 'checkpoint', 'ignore', 'abort',
  'exit', 'execve', 'await-drained', 'write-owned', 'overwrite']);
const EVENTS = new Set(['data', 'eof', 'drain', 'finish', 'close', 'write-cb', 'end-cb']);

// Operations node has no equivalent for: the run ends with
// "fatal unsupported OP: REASON" before connecting, and the harness and
// the pytest plugin report the scenario as skipped with that reason.
const UNSUPPORTED = {};
if (typeof process.execve !== 'function')
  UNSUPPORTED.execve = 'node 20 has no execve() (process.execve came in node 23.11)';
// The reference stack's protocol layers (docs/scenario-language.md): HTTP/1.1
// serving and WebSocket framing are its own code above the socket, which
// this subject (node:net alone) does not drive.
const LAYERS = {
  http: 'HTTP/1.1 serving (http yes) is a layer of the reference stack; the node subject drives node:net only',
  websocket: 'WebSocket framing (websocket yes) is a layer of the reference stack; the node subject drives node:net only',
};
// Operations added to the language after this subject: declared, never faked.
const NOT_YET = 'an operation this subject does not perform yet (docs/subjects.md)';

const S = {
  transport: 'tcp', address: '', port: 0, server: false, nconns: 1,
  handoff: null, handoffEvent: 'accept', activity: 0, taskOpen: false,
  halfOpen: false, faults: [], tasks: [], handlers: [], syncStart: false,
  syncTask: new Set(), conns: [], connected: 0, nextTask: 0,
  checkpoints: 0, macro: 0, lastEventMacro: -1, visibleTask: 0,
  layers: new Set(), unknownOps: new Set(),
};

function readScript() {
  const chunks = [];
  const buf = Buffer.alloc(65536);
  let text = '';
  for (;;) {
    let n;
    try {
      n = fs.readSync(FD_CTL, buf, 0, buf.length, null);
    } catch (e) {
      if (e.code === 'EAGAIN' || e.code === 'EINTR') continue;
      fatal(`reading the script: ${e.message}`);
    }
    if (n === 0) fatal("the script ended before 'run'");
    chunks.push(Buffer.from(buf.subarray(0, n)));
    text = Buffer.concat(chunks).toString('latin1');
    // The script ends at "run"; "go" lines come only after sync lines, so
    // nothing past it is read here.
    if (text === 'run\n' || text.endsWith('\nrun\n')) break;
  }
  let open = null;
  for (const line of text.split('\n')) {
    if (line === '' || line === 'run') continue;
    const w = line.split(' ');
    if (w[0] === 'op') {
      if (!open) fatal('an op outside a block');
      open.ops.push(parseOp(w));
    } else if (w[0] === 'task') {
      open = { conn: Number(w[1]), ops: [] };
      S.tasks.push(open);
    } else if (w[0] === 'handler') {
      // An event of a layer this subject lacks (request, message): declared.
      if (!EVENTS.has(w[1])) S.unknownOps.add(`event ${w[1]}`);
      open = { event: w[1], conn: Number(w[2]), ops: [] };
      S.handlers.push(open);
    } else if (w[0] === 'endblock') {
      open = null;
    } else if (w[0] === 'variant') {
      // A strategy of the reference stack: node has one way of its own.
      lineOut(`note variant ${w[1]}=${w[2]} is the reference stack's; node ignores it`);
    } else if (w[0] === 'http' || w[0] === 'websocket') {
      S.layers.add(w[0]);
    } else if (w[0] === 'fault') {
      S.faults.push(line.slice(6));
    } else if (w[0] === 'connections') {
      S.nconns = Number(w[1]);
    } else if (w[0] === 'half-open') {
      S.halfOpen = w[1] === '1';
    } else if (w[0] === 'handoff' && w[1] === 'upgrade') {
      // The peer opens each connection with an Upgrade request; the
      // connection reports the event of the scenario's role (connect or
      // accept), so that its events compare with the golden's.
      S.handoff = w[1];
      S.handoffEvent = w[2] === 'connect' ? 'connect' : 'accept';
    } else if (w[0] === 'connect' || w[0] === 'listen') {
      S.server = w[0] === 'listen';
      S.transport = w[1];
      S.address = w[2];
      S.port = Number(w[3] || 0);
    } else if (line === 'sync start') {
      S.syncStart = true;
    } else if (w[0] === 'sync' && w[1] === 'task') {
      S.syncTask.add(Number(w[2]));
    } else {
      fatal(`unknown script line '${line}'`);
    }
  }
}

function parseOp(w) {
  if (!OPS.has(w[1])) S.unknownOps.add(w[1]);
  const op = { kind: w[1], conn: -1, len: 0, fill: -1, cb: false, micro: false,
    sig: 0, external: false, data: null };
  for (const f of w.slice(2)) {
    const eq = f.indexOf('=');
    if (eq < 0) fatal(`bad op field '${f}'`);
    const k = f.slice(0, eq), v = f.slice(eq + 1);
    if (k === 'hex') { op.data = Buffer.from(v, 'hex'); op.len = op.data.length; }
    else if (k === 'conn') op.conn = Number(v);
    else if (k === 'len') op.len = Number(v);
    else if (k === 'fill') op.fill = Number(v);
    else if (k === 'cb') op.cb = v === '1';
    else if (k === 'micro') op.micro = v === '1';
    else if (k === 'sig') op.sig = Number(v);
    else if (k === 'ext') op.external = v === '1';
    else if (k !== 'final' && k !== 'resume' && k !== 'ws') fatal(`unknown op field '${k}'`);
  }
  if (op.conn >= S.nconns) fatal(`op on connection ${op.conn} of ${S.nconns}`);
  return op;
}

// ---- the gate ---------------------------------------------------------------

function gateCommand(text) {
  if (!process.env.WIRECHECK_SHM_FD) {
    if (text === 'disarm') return true;
    fatal(`${text}: the fault gate is not preloaded (run through ` +
          '`wirecheck run --subject node`, which sets LD_PRELOAD and WIRECHECK_SHM_FD)');
  }
  try {
    if (BUN) return bunGateWrite(text);
    fs.writeSync(FD_SHM, text);
    return true;
  } catch (e) {
    return false;
  }
}

// Bun: fs.writeSync makes the write(2) syscall itself, not through libc's
// write(), so the preloaded gate never sees it (the command's text would
// land in the counters' memfd). The subject calls the gate library's own
// write() through bun:ffi instead: the library named in LD_PRELOAD.
let bunGate = null;
function bunGateWrite(text) {
  if (!bunGate) {
    const ffi = require('bun:ffi');
    const lib = (process.env.LD_PRELOAD || '').split(/[ :]/)
      .find((p) => p.endsWith('libwirecheck-preload.so'));
    if (!lib) fatal('bun: no libwirecheck-preload.so in LD_PRELOAD for the gate\'s commands');
    bunGate = ffi.dlopen(lib, {
      write: { args: [ffi.FFIType.i32, ffi.FFIType.ptr, ffi.FFIType.u64], returns: ffi.FFIType.i64 },
    });
  }
  const buf = Buffer.from(text, 'latin1');
  return Number(bunGate.symbols.write(FD_SHM, buf, buf.length)) === buf.length;
}

// ---- tasks and events ----------------------------------------------------------

// A macrotask starts: the "before" of any resource but ticks and microtasks.
// Ticks (process.nextTick) and microtasks (queueMicrotask) queued and not
// run yet are counted, so that the end of a task can wait for them.
const MICRO_TYPES = new Set(['TickObject', 'PROMISE', 'Microtask']);
const macroIds = new Set();
const queued = new Map(); // id -> 'tick' | 'micro', until it runs
if (!BUN) asyncHooks.createHook({
  init(id, type) {
    if (type === 'TickObject') queued.set(id, 'tick');
    else if (type === 'Microtask') queued.set(id, 'micro');
    else if (!MICRO_TYPES.has(type)) macroIds.add(id);
  },
  before(id) {
    if (queued.delete(id)) return;
    if (macroIds.has(id)) S.macro++;
  },
  destroy(id) {
    macroIds.delete(id);
    queued.delete(id);
  },
}).enable();

// Runs fn once the current macrotask's ticks and microtasks have all run,
// those they queue included: the end of a task, before any I/O.
function afterMicrotasks(fn) {
  if (BUN) return afterQuiet(fn);
  const check = () => {
    let ticks = 0;
    for (const kind of queued.values()) if (kind === 'tick') ticks++;
    if (ticks > 0) process.nextTick(check);
    else if (queued.size > 0) queueMicrotask(check);
    else fn();
  };
  queueMicrotask(check);
}

// Bun: async_hooks' createHook reports the init of ticks only, never a
// "before", so no hook tells where a macrotask starts or how many of its
// ticks and microtasks are left. A task starts at the first event after
// the last one ended, and ends once QUIET_HOPS hops through the tick and
// microtask queues in a row saw no event or operation: every tick and
// microtask the task queued before a hop runs before that hop, so a task
// is cut short only by a chain of more than QUIET_HOPS ticks or microtasks
// that reports nothing until its end (none of Bun's node:net emits nests
// that deep). The hops are queue order, never time: the same script gives
// the same task numbers.
const QUIET_HOPS = 16;

function afterQuiet(fn) {
  let seen = S.activity, hops = 0;
  const hop = () => {
    if (S.activity !== seen) {
      seen = S.activity;
      hops = 0;
    }
    if (++hops >= QUIET_HOPS) return fn();
    if (hops % 2) process.nextTick(hop);
    else queueMicrotask(hop);
  };
  queueMicrotask(hop);
}

function bunTaskStarts() {
  S.activity++;
  if (S.taskOpen) return;
  S.taskOpen = true;
  S.macro++;
  afterQuiet(() => { S.taskOpen = false; });
}

function event(conn, text) {
  if (BUN) bunTaskStarts();
  if (S.conns[conn]) taken(S.conns[conn]);
  if (S.macro !== S.lastEventMacro) {
    S.visibleTask++;
    S.lastEventMacro = S.macro;
  }
  lineOut(`ev ${S.visibleTask} ${conn} ${text}`);
}

// The bytes the kernel took on a connection (the stack's bytes_written):
// what the socket accepted, minus what waits in its buffer (corked, or
// behind a write in flight) and what libuv has not written yet. Sampled at
// every event of the connection while the handle is there; after it closed
// or a write failed, the last sample holds (libuv drops what it still had,
// and does not say how much of the failed write the kernel took).
// Bun: a write that fails in its call (EPIPE) has left writableLength by
// the time write() returns, so once the stream has errored the last
// sample holds too (else the failed bytes would count as taken).
function taken(c) {
  const sock = c.sock;
  if (!sock || (!BUN && !sock._handle) || c.failed || sock.destroyed || sock.errored) return c.written;
  c.written = Math.max(0, c.accepted - held(sock));
  return c.written;
}

// The bytes a socket accepted and the kernel has not taken yet, as far as
// the runtime shows them. node: its Writable buffer and libuv's write queue.
// Bun: writableLength, which counts a write until Bun's native socket wrote
// all of it (it has no writeQueueSize); bytes Bun holds outside it (what
// a batch of the seed would hold) are not seen, so the count is then too
// high (docs/subjects.md, "Bun").
function held(sock) {
  if (BUN) return sock.writableLength;
  let buffered = 0;
  for (const b of sock._writableState.getBuffer()) buffered += b.chunk.length;
  return buffered + (sock._handle ? sock._handle.writeQueueSize : 0);
}

function syncPoint(point) {
  let line = `sync ${point}`;
  for (const c of S.conns) line += ` ${taken(c)}`;
  lineOut(line);
  waitGo();
}

function runHandlers(ev, conn) {
  for (const h of S.handlers)
    if (h.event === ev && (h.conn < 0 || h.conn === conn)) runBlock(h, conn, 0);
}

function opBytes(op, c) {
  if (op.data) return op.data;
  const b = Buffer.alloc(op.len);
  if (op.fill >= 0) {
    b.fill(op.fill);
  } else {
    let x = c.seq;
    for (let i = 0; i < op.len; i++, x++) {
      // wc_pattern (protocol/protocol.h): 0x21 + ((x * 2654435761) >> 16) % 94, in 32 bits
      const h = Math.floor(Number((BigInt(x) * 2654435761n) & 0xffffffffn) / 65536);
      b[i] = 0x21 + (h % 94);
    }
  }
  return b;
}

function sigName(sig) {
  return SIGNAL_NAMES.get(sig) || null;
}

// A socket destroy() has run on (ours, or node's own once both sides
// ended) has no fd any more, though its 'close' comes a tick later: a call
// then is refused as on a closed one. node:net would take it as a no-op
// whose ERR_STREAM_DESTROYED reaches only its callback (no 'error' after
// destroy), so `-> ok` would claim bytes that never leave.
function gone(c) {
  return c.closed || c.sock.destroyed;
}

function opWrite(op, c) {
  const number = ++c.writes;
  if (gone(c)) {
    event(c.index, `write#${number} ${op.len} -> EBADF (closed)`);
    return;
  }
  // The subject's buffer stays its own (overwrite changes it); node gets a
  // copy, since node:net holds the Buffer it is given by reference.
  const bytes = Buffer.from(opBytes(op, c));
  keepLast(c, bytes, number);
  c.seq += op.len;
  const cb = op.cb ? (err) => {
    if (err) c.failed = true;
    event(c.index, `write#${number} cb ${errName(err)}`);
    runHandlers('write-cb', c.index);
  } : undefined;
  if (c.sock.writable) c.accepted += op.len;
  const ok = c.sock.write(Buffer.from(bytes), cb);
  event(c.index, `write#${number} ${op.len} -> ${ok ? 'true' : 'false'}`);
}

function keepLast(c, bytes, number) {
  c.last = bytes;
  c.lastNumber = number;
}

// write-owned: node:net is handed the subject's own Buffer, which it holds
// by reference until the write's callback (the release): what the kernel
// takes after an overwrite is the overwritten bytes.
function opWriteOwned(op, c) {
  const number = ++c.writes;
  if (gone(c)) {
    event(c.index, `write#${number} ${op.len} owned -> EBADF (closed)`);
    return;
  }
  const bytes = Buffer.from(opBytes(op, c));
  keepLast(c, bytes, number);
  c.seq += op.len;
  if (c.sock.writable) c.accepted += op.len;
  const ok = c.sock.write(bytes, (err) => {
    if (err) c.failed = true;
    event(c.index, `write#${number} released ${errName(err)}`);
    runHandlers('write-cb', c.index);
  });
  event(c.index, `write#${number} ${op.len} owned -> ${ok ? 'true' : 'false'}`);
}

function opOverwrite(op, c) {
  if (!c.last) {
    event(c.index, 'overwrite (no write)');
    return;
  }
  c.last.fill(op.fill);
  event(c.index, `overwrite write#${c.lastNumber} ${c.last.length}`);
}

function opEnd(op, c) {
  if (gone(c)) {
    event(c.index, `end ${op.len} -> EBADF (closed)`);
    return;
  }
  const bytes = op.len > 0 || op.data ? opBytes(op, c) : null;
  c.seq += op.len;
  const cb = op.cb ? (err) => {
    if (err) c.failed = true;
    event(c.index, `end cb ${errName(err)}`);
    runHandlers('end-cb', c.index);
  } : undefined;
  if (c.sock.writable) c.accepted += op.len;
  if (bytes && bytes.length > 0) c.sock.end(bytes, cb);
  else c.sock.end(cb);
  event(c.index, `end ${op.len} -> ok`);
}

function opSignal(op, conn) {
  const name = sigName(op.sig);
  if (op.external) {
    event(conn, `signal ${name || op.sig} external`);
    lineOut(`kill ${op.sig}`);
    waitGo();
    return;
  }
  event(conn, `signal ${name || op.sig}`);
  try {
    process.kill(process.pid, op.sig);
  } catch (e) {
    event(conn, `signal ${op.sig} refused`);
  }
}

const ignored = new Set();
function opIgnore(op, conn) {
  const name = sigName(op.sig);
  // node cannot set SIG_IGN: a listener that does nothing keeps the signal
  // from ending the process, which is what the scenario asks.
  try {
    if (!name) throw Object.assign(new Error('no such signal'), { code: 'EINVAL' });
    if (!ignored.has(name)) process.on(name, () => {});
    ignored.add(name);
    event(conn, `ignore ${name}`);
  } catch (e) {
    event(conn, `ignore ${op.sig} -> EINVAL`);
  }
}

// execve() of /bin/true, which exits 0 (Bun has process.execve). The new
// program is not the subject: it gets the environment without the gate
// (Bun's execve closes every fd above 2, fd 5 of the counters with them, and
// the gate would stop a program it cannot attach to them).
function opExecve(conn) {
  event(conn, 'execve /bin/true');
  const env = { ...process.env };
  delete env.LD_PRELOAD;
  delete env.WIRECHECK_SHM_FD;
  try {
    process.execve('/bin/true', ['true'], env);
  } catch (e) {
    event(conn, `execve -> ${errName(e)}`);
  }
}

function runOp(op, connIndex) {
  if (BUN) S.activity++;
  const ci = op.conn >= 0 ? op.conn : connIndex;
  const c = S.conns[ci];
  switch (op.kind) {
    case 'write': return opWrite(op, c);
    case 'write-owned': return opWriteOwned(op, c);
    case 'overwrite': return opOverwrite(op, c);
    case 'end': return opEnd(op, c);
    case 'signal': return opSignal(op, ci);
    case 'disarm':
      gateCommand('disarm');
      return event(ci, 'disarm');
    case 'checkpoint':
      S.checkpoints++;
      event(ci, `checkpoint ${S.checkpoints}`);
      return syncPoint(`checkpoint:${S.checkpoints}`);
    case 'ignore': return opIgnore(op, ci);
    case 'abort':
      event(ci, 'abort');
      return process.abort();
    case 'exit':
      event(ci, `exit ${op.sig}`);
      return process.exit(op.sig);
    case 'execve': return opExecve(ci);
    default:
      break;
  }
  event(ci, `${op.kind}${c.closed ? ' (closed)' : ''}`);
  if (c.closed) return;
  switch (op.kind) {
    case 'destroy': c.sock.destroy(); break;
    case 'destroy-soon': c.sock.destroySoon(); break;
    case 'cork': c.sock.cork(); break;
    case 'uncork': c.sock.uncork(); break;
    case 'pause': c.sock.pause(); break;
    case 'resume': c.sock.resume(); break;
    default: break;
  }
}

// Runs a block from op `from`. Returns false when an await-drained carried
// the rest into a later task.
function runBlock(b, conn, from) {
  for (let i = from; i < b.ops.length; i++) {
    const op = b.ops[i];
    if (op.kind === 'await-drained') {
      const c = S.conns[op.conn >= 0 ? op.conn : conn];
      if (c.closed || (c.sock.writableLength === 0 && held(c.sock) === 0)) {
        event(c.index, 'drained');
        continue;
      }
      setImmediate(() => resumeBlock(b, conn, i));
      return false;
    }
    if (op.micro) {
      queueMicrotask(() => runOp(op, conn));
      continue;
    }
    runOp(op, conn);
  }
  return true;
}

function resumeBlock(b, conn, from) {
  if (runBlock(b, conn, from) && S.tasks.includes(b)) taskDone(S.tasks.indexOf(b) + 1);
}

function scriptTask(n) {
  const b = S.tasks[n - 1];
  if (runBlock(b, b.conn, 0)) taskDone(n);
}

// Task n ran its last op: its end is taken once its ticks and microtasks
// have run, before the loop goes on to I/O.
function taskDone(n) {
  afterMicrotasks(() => {
    if (S.syncTask.has(n)) syncPoint(`task:${n}`);
    postNextTask();
  });
}

function postNextTask() {
  if (S.nextTask === S.tasks.length) {
    S.nextTask++;
    syncPoint('done');
    return;
  }
  if (S.nextTask > S.tasks.length) return;
  const n = ++S.nextTask;
  setImmediate(() => scriptTask(n));
}

function allConnected() {
  if (S.syncStart) syncPoint('start');
  postNextTask();
}

// ---- sockets ----------------------------------------------------------------

function attach(c, sock) {
  c.sock = sock;
  sock.on('data', (d) => {
    event(c.index, `data ${d.length}`);
    runHandlers('data', c.index);
  });
  sock.on('end', () => {
    // "eof", not "end": end names the end() call in the trace.
    event(c.index, 'eof');
    runHandlers('eof', c.index);
  });
  sock.on('drain', () => {
    event(c.index, 'drain');
    runHandlers('drain', c.index);
  });
  sock.on('finish', () => {
    if (!c.failed) c.written = c.accepted; // the FIN went out behind every byte
    event(c.index, 'finish');
    runHandlers('finish', c.index);
  });
  sock.on('error', (err) => {
    c.failed = true;
    event(c.index, `error ${errName(err)} ${err.syscall || '-'}`);
  });
  sock.on('close', (hadError) => {
    c.closed = true;
    event(c.index, `close had_error=${hadError ? 1 : 0} bytes_written=${c.written}`);
    runHandlers('close', c.index);
  });
}

// The answer to the peer's Upgrade request, before the scenario's bytes.
const SWITCHING = 'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n' +
  'Upgrade: wirecheck\r\n\r\n';

// handoff upgrade: a node:http server accepts every connection; its
// 'upgrade' listener gets the socket, answers 101, and once the kernel took
// the 101 (its write callback) the connection is up. The faults are armed
// only then (armFaults), so that the 101 is neither refused nor clamped
// and a rule's call numbers count the scenario's calls; the syscalls still
// count the request's read and the 101's write.
function openHandedOff() {
  const server = http.createServer();
  let answered = 0;
  server.on('upgrade', (req, sock, head) => {
    if (answered >= S.nconns) {
      sock.destroy();
      return;
    }
    answered++;
    // node:http's sockets are half-open (the server ends them itself);
    // the scenario's allow-half-open is the handed-off socket's.
    sock.allowHalfOpen = S.halfOpen;
    if (head && head.length) sock.unshift(head);
    sock.write(SWITCHING, (err) => {
      if (err) fatal(`the 101 answer: ${err.message}`);
      const c = S.conns[S.connected];
      attach(c, sock);
      event(c.index, S.handoffEvent);
      if (++S.connected === S.nconns) {
        server.close();
        armFaults();
        allConnected();
      }
    });
  });
  server.on('error', (e) => fatal(`listen: ${e.message}`));
  const ready = () => lineOut(`listening ${S.transport === 'unix' ? 0 : server.address().port}`);
  if (S.transport === 'unix') server.listen(S.address, ready);
  else server.listen(0, '127.0.0.1', ready);
}

function armFaults() {
  for (const f of S.faults)
    if (!gateCommand(`arm ${f}`)) fatal(`cannot arm '${f}'`);
}

function openConnections() {
  for (let i = 0; i < S.nconns; i++)
    S.conns.push({ index: i, sock: null, seq: 0, accepted: 0, written: 0, writes: 0,
      closed: false, failed: false, last: null, lastNumber: 0 });
  if (S.handoff) return openHandedOff();
  const opts = { allowHalfOpen: S.halfOpen };
  if (S.server) {
    const server = net.createServer(opts, (sock) => {
      if (S.connected >= S.nconns) {
        sock.destroy();
        return;
      }
      const c = S.conns[S.connected];
      attach(c, sock);
      event(c.index, 'accept');
      if (++S.connected === S.nconns) {
        server.close();
        allConnected();
      }
    });
    server.on('error', (e) => fatal(`listen: ${e.message}`));
    const ready = () => lineOut(`listening ${S.transport === 'unix' ? 0 : server.address().port}`);
    if (S.transport === 'unix') server.listen(S.address, ready);
    else server.listen(S.port, S.address, ready);
    return;
  }
  for (const c of S.conns) {
    const where = S.transport === 'unix' ? { path: S.address } : { host: S.address, port: S.port };
    const sock = net.connect({ ...where, allowHalfOpen: S.halfOpen });
    attach(c, sock);
    sock.once('connect', () => {
      event(c.index, 'connect');
      if (++S.connected === S.nconns) allConnected();
    });
  }
}

// A script whose every fault is on a call node never makes (libuv reads
// with read(2) and writes with write(2)/writev(2)) would run fault-free and
// wait for an error that cannot come: declared unsupported, with the reason.
const UNREACHED_TARGETS = ['send', 'sendto', 'sendmsg', 'recv'];
function refuseUnreachedFaults() {
  // Bun: uSockets calls send(2) and recv(2), which these rules reach.
  if (BUN || S.faults.length === 0) return;
  const targets = S.faults.map((f) => f.split(':')[0]);
  if (targets.every((t) => UNREACHED_TARGETS.includes(t)))
    fatal(`unsupported fault ${targets.join(',')}: node's libuv never calls ` +
          `${targets.join(' or ')} (it reads with read(2), writes with ` +
          'write(2)/writev(2)), so the scenario would run without its faults');
}

function main() {
  readScript();
  refuseUnreachedFaults();
  for (const layer of S.layers) fatal(`unsupported ${layer}: ${LAYERS[layer]}`);
  for (const op of S.unknownOps) fatal(`unsupported ${op}: ${NOT_YET}`);
  for (const blocks of [S.tasks, S.handlers])
    for (const b of blocks)
      for (const op of b.ops)
        if (UNSUPPORTED[op.kind]) fatal(`unsupported ${op.kind}: ${UNSUPPORTED[op.kind]}`);
  if (!S.handoff) armFaults();
  openConnections();
}

main();
