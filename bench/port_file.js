'use strict';
// port_file.js: how bench/'s HTTP servers (chunked_node.js on node,
// chunked_bun.js on Bun) say where they listen, for bench/chunked.py:
// "listening PORT" on stdout and, with a PORT_FILE, PORT there too,
// written to a temporary name, then renamed, so that a reader never sees
// half of it.
const fs = require('fs');

function announce(port, portFile) {
  if (portFile) {
    fs.writeFileSync(portFile + '.tmp', `${port}\n`);
    fs.renameSync(portFile + '.tmp', portFile);
  }
  console.log(`listening ${port}`);
}

module.exports = { announce };
