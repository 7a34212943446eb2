#!/bin/sh
# bun-subject: the node subject's program (subjects/node/subject.js) run by
# Bun, which implements node:net (docs/subjects.md, "Bun"). The harness starts
# it with the gate preloaded (`wirecheck run --subject bun`); exec keeps the
# pid, so the subject's `kill SIG PID` lines name the Bun process.
#
# The Bun binary: $WIRECHECK_BUN when set (a runtime binary of your own),
# else the pinned one scripts/setup.sh installs from npm into third_party/bun.
# Without one, the run ends with "fatal unsupported runtime: ..." (exit 2),
# which the pytest plugin reports as a skip with that reason.
here=$(dirname "$(readlink -f "$0")")
root=$(dirname "$(dirname "$here")")
bun=${WIRECHECK_BUN:-$root/third_party/bun/node_modules/@oven/bun-linux-x64/bin/bun}
# Installed (libexec/wirecheck): node-subject is beside it, and Bun on PATH.
js=$here/node-subject
[ -f "$js" ] || js=$root/subjects/node/subject.js
[ -x "$bun" ] || [ -n "$WIRECHECK_BUN" ] || ! command -v bun >/dev/null || bun=$(command -v bun)
if [ ! -x "$bun" ]; then
  # One write(2) to the event pipe (fd 4), as docs/subject-protocol.md asks.
  printf 'fatal unsupported runtime: bun is not installed (%s is not an executable; scripts/setup.sh installs it, or set WIRECHECK_BUN)\n' "$bun" >&4
  exit 2
fi
exec "$bun" "$js" "$@"
