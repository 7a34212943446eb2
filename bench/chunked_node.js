'use strict';
// chunked_node.js: node 20's http server answering every request with
// res.write(body) + res.end(), a chunked response (no Content-Length), for
// bench/chunked.py: the same payload as chunked_server's /tryfinal/N, so that
// wrk and the preload gate's counts put node's write path beside the
// reference stack's.
//
//   node bench/chunked_node.js BYTES [PORT_FILE]
//
// Listens on 127.0.0.1 (a port the kernel picks), prints "listening PORT"
// on stdout and, with PORT_FILE, writes PORT there too (written to a
// temporary name, then renamed, so that a reader never sees half of it).
// The body is Buffer.alloc(BYTES, 0x61), made once. Keep-alive as node's
// default, its timeout raised to 60 s so that wrk's connections stay up.
// SIGINT and SIGTERM end it with status 0 (the gate's counts are written
// at exit).
const http = require('http');
const { announce } = require('./port_file.js');

const size = Number(process.argv[2]);
if (!Number.isInteger(size) || size < 0) {
  console.error('usage: node chunked_node.js BYTES [PORT_FILE]');
  process.exit(2);
}
const portFile = process.argv[3];
const body = Buffer.alloc(size, 0x61);

const server = http.createServer((req, res) => {
  res.write(body);
  res.end();
});
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => announce(server.address().port, portFile));
for (const sig of ['SIGINT', 'SIGTERM'])
  process.on(sig, () => process.exit(0));
