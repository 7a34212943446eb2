#!/usr/bin/env bash
# sender_instructions.sh SENDER_INSTR [CLAMPED [OWNED_UNCLAMPED [OWNED_CLAMPED]]]:
# runs
# `sender_instr --quick --json` (callgrind, 1 MiB over a unix socket whose peer
# reads in lockstep, every cell twice; about 20 s) and fails when
#  - any figure differs between the two runs (instructions, sends, EAGAINs,
#    epoll_waits, syscalls, bytes): the figures must not move;
#  - a target of the sender's cost that is met today fails: the copying queue within
#    (floor + copy) x 1.05 unclamped, each byte copied at most once, the
#    owned queue copying no byte;
#  - a figure rises above its regression ceiling, about 2% over the figure
#    measured when the per-send path was made cheaper (docs/queue-model.md,
#    "Sender cost"), so that the gain is held: copying / (floor + copy) at
#    the 4 KiB clamp above CLAMPED (default 1.09; 1.0680 measured, 1.2428
#    before), owned / floor above OWNED_UNCLAMPED (default 6.23; 6.1023
#    measured, 6.2921 before) and OWNED_CLAMPED (default 4.95; 4.8548, 6.6098
#    before). The owned targets are not met yet (docs/ARCHITECTURE.md,
#    "Targets not met"); a met target must also stay within its limit.
# Registered by tests/CMakeLists.txt for optimised builds without sanitizers.
set -euo pipefail
bin=${1:?usage: sender_instructions.sh SENDER_INSTR [CLAMPED [OWNED_UNCLAMPED [OWNED_CLAMPED]]]}
ceiling=${2:-1.09}
owned_unclamped=${3:-6.23}
owned_clamped=${4:-4.95}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" --quick --json >"$tmp/out.json" 2>"$tmp/err" ||
  { echo "sender_instructions: '$bin --quick --json' failed:" >&2; cat "$tmp/err" >&2; exit 1; }
/usr/bin/python3 - "$tmp/out.json" "$ceiling" "$owned_unclamped" "$owned_clamped" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))
clamped_ceiling = float(sys.argv[2])
owned_ceiling = {"unclamped": float(sys.argv[3]), "clamp_4k": float(sys.argv[4])}
bad = []
for c in rep["cells"]:
    if not c["built"]:
        continue
    name = f'{c["sender"]} {c["mode"]} {c["payload"]}'
    if len(set(c["instructions"])) != 1:
        bad.append(f"{name}: instructions differ between runs: {c['instructions']}")
    if not c["counts_equal"]:
        bad.append(f"{name}: sends, syscalls or bytes differ between runs")
for t in rep["targets"]:
    if not t["built"]:
        print(f'not built: {t["target"]} ({t["mode"]})')
        continue
    line = f'{t["target"]} ({t["mode"]}, {t["payload"]} bytes): {t["figure"]:.4f} (limit {t["limit"]:.2f})'
    if t["target"].startswith("copying: instructions") and t["mode"] == "clamp_4k":
        ceiling = clamped_ceiling
    elif t["target"].startswith("owned: instructions"):
        ceiling = owned_ceiling[t["mode"]]
    else:
        ceiling = None
    if ceiling is not None:
        ok = t["figure"] <= ceiling
        state = "PASS" if t["pass"] else "not met yet"
        print(f'{line}: {state}; regression ceiling {ceiling:.3f}: {"ok" if ok else "EXCEEDED"}')
        if not ok:
            bad.append(line + f" above the ceiling {ceiling}")
        if not t["pass"] and not t["target"].startswith("owned: instructions"):
            bad.append(line)
        continue
    print(f'{line}: {"PASS" if t["pass"] else "FAIL"}')
    if not t["pass"]:
        bad.append(line)
for b in bad:
    print("FAIL:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
