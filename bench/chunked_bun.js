'use strict';
// chunked_bun.js: Bun's HTTP server (Bun.serve, uWebSockets inside)
// answering every request with a streamed body, a chunked response (no
// Content-Length), for bench/chunked.py: the same payload as
// chunked_server's /tryfinal/N and bench/chunked_node.js's, so that wrk and
// the preload gate's counts put Bun's write path beside the reference
// stack's and node's.
//
//   bun bench/chunked_bun.js BYTES [PORT_FILE] [STREAM]
//
// STREAM is how the body is streamed: "direct" (the default: Bun's direct
// ReadableStream, `type: "direct"`, whose controller writes the bytes to
// the socket as they are given: write(body), then end(), the shape of
// node's res.write(body) + res.end()) or "web" (a standard ReadableStream
// that enqueues the body and closes). Both answer with
// Transfer-Encoding: chunked.
// Listens on 127.0.0.1 (a port the kernel picks), prints "listening PORT"
// on stdout and, with PORT_FILE ("-": none), writes PORT there too
// (written to a temporary name, then renamed). The body is
// Buffer.alloc(BYTES, 0x61), made once. Keep-alive as Bun's default, its
// idle timeout raised to 60 s so that wrk's connections stay up. SIGINT and
// SIGTERM end it with status 0 (the gate's counts are written at exit).
const { announce } = require('./port_file.js');

const size = Number(process.argv[2]);
const portFile = process.argv[3] && process.argv[3] !== '-' ? process.argv[3] : null;
const stream = process.argv[4] || 'direct';
if (!Number.isInteger(size) || size < 0 || !['direct', 'web'].includes(stream)) {
  console.error('usage: bun chunked_bun.js BYTES [PORT_FILE|-] [direct|web]');
  process.exit(2);
}
const body = Buffer.alloc(size, 0x61);

const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  idleTimeout: 60,
  fetch: stream === 'direct'
    ? () => new Response(new ReadableStream({
      type: 'direct',
      pull(controller) {
        controller.write(body);
        controller.end();
      },
    }))
    : () => new Response(new ReadableStream({
      start(controller) {
        controller.enqueue(body);
        controller.close();
      },
    })),
});
announce(server.port, portFile);
for (const sig of ['SIGINT', 'SIGTERM'])
  process.on(sig, () => process.exit(0));
