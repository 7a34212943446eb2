// npm ws's own permessage-deflate negotiation (lib/extension.js and
// lib/permessage-deflate.js of the package WS_MODULE names), fed the lines
// of tests/unit/ws_deflate_check.c and printing its answers in the same
// form, for tests/e2e/test_ws_deflate.py. The calls are those of npm ws's
// WebSocketServer (handleUpgrade) and WebSocket (the upgrade response).
'use strict';
const path = require('path');
const lib = path.join(process.env.WS_MODULE, 'lib');
const PerMessageDeflate = require(path.join(lib, 'permessage-deflate.js'));
const { parse, format } = require(path.join(lib, 'extension.js'));

const lines = require('fs').readFileSync(0, 'utf8').split('\n').filter(Boolean);
const out = [];
for (const line of lines) {
  const m = /^(\S+) (-?\d+) (-?\d+) (-?\d+) (-?\d+) (.*)$/.exec(line);
  const [side, snct, cnct, smwb, cmwb, header] = [m[1], +m[2], +m[3], +m[4], +m[5], m[6]];
  // The options as ws_deflate_check reads them: 0 not given, 1 true, -1
  // false, else a window size.
  const value = v => (v === 1 ? true : v === -1 ? false : v);
  const opts = {};
  if (snct) opts.serverNoContextTakeover = value(snct);
  if (cnct) opts.clientNoContextTakeover = value(cnct);
  if (smwb) opts.serverMaxWindowBits = value(smwb);
  if (cmwb) opts.clientMaxWindowBits = value(cmwb);
  const pmd = new PerMessageDeflate(opts, side === 'server', 0);
  if (side === 'offer') {
    // What npm ws's WebSocket sends (websocket.js initAsClient).
    out.push(`offer ${format({ 'permessage-deflate': [pmd.offer()] })}`);
    continue;
  }
  let answer = '-';
  try {
    const offers = parse(header);
    if (side === 'server') {
      if (!offers['permessage-deflate']) { out.push('none'); continue; }
      pmd.accept(offers['permessage-deflate']);
      answer = format({ 'permessage-deflate': [pmd.params] });
    } else {
      const names = Object.keys(offers);
      if (names.length !== 1 || names[0] !== 'permessage-deflate') throw new Error('not requested');
      pmd.accept(offers['permessage-deflate']);
    }
  } catch (e) {
    out.push('refused');
    continue;
  }
  const p = pmd.params;
  const bits = v => (typeof v === 'number' ? v : 0);
  out.push(`ok ${answer}|${p.server_no_context_takeover ? 1 : 0} ${p.client_no_context_takeover ? 1 : 0} ` +
           `${bits(p.server_max_window_bits)} ${bits(p.client_max_window_bits)}`);
}
process.stdout.write(out.join('\n') + '\n');
