#!/usr/bin/env bash
# sender_instructions.sh SENDER_INSTR [CLAMPED]: runs
# `sender_instr --quick --json` (callgrind over a unix socket whose peer
# reads in lockstep, every cell twice: every sender at 1 MiB, the floor and
# the owned write at 4 MiB too; about 20 s) and fails when
#  - any figure differs between the two runs (instructions, sends, EAGAINs,
#    epoll_waits, syscalls, bytes): the figures must not move;
#  - a target that is met fails: the copying queue within (floor + copy) x
#    1.05 unclamped and x 1.10 at the 4 KiB clamp, each byte copied at most
#    once, the owned write copying no byte, the owned write at most 40
#    instructions per send beyond the floor's, unclamped and at the clamp;
#  - a figure rises above its regression ceiling, about 2 to 3% over the
#    figure measured when the path was made cheaper (docs/queue-model.md,
#    "Sender cost"), so that the gain is held: copying / (floor + copy) at
#    the 4 KiB clamp above CLAMPED (default 1.03; 1.0000 measured, 1.0407
#    before the one-run flush), and the owned write beyond the floor
#    (sender_instr's split of 1 and 4 MiB):
#    per send 0.0 at the clamp (-2.17 measured: a figure near 0 gets an
#    absolute margin) and 40 unclamped, its target (39.00; 53.00 before
#    the loop's and the writable event's cuts of docs/queue-model.md,
#    "The writable event, cut"); fixed per end(P) 460 at the clamp (449.36:
#    the intercept of the line through the 1 and 4 MiB cells, which rose
#    from 401.36 as the per-send slope fell, every cell lower) and 510
#    unclamped (497.00). Every sender's figures leave the bench's own work
#    out alike (sender_instr.c's header). The targets not met
#    (docs/ARCHITECTURE.md, "Targets not met") are held by their ceilings
#    alone.
# Registered by tests/CMakeLists.txt for optimised builds without sanitizers.
set -euo pipefail
bin=${1:?usage: sender_instructions.sh SENDER_INSTR [CLAMPED]}
ceiling=${2:-1.03}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" --quick --json >"$tmp/out.json" 2>"$tmp/err" ||
  { echo "sender_instructions: '$bin --quick --json' failed:" >&2; cat "$tmp/err" >&2; exit 1; }
/usr/bin/python3 - "$tmp/out.json" "$ceiling" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))
# Regression ceilings by (target, mode). The owned write's rows are
# instructions beyond the floor (sender_instr's split), the copying row a
# ratio.
ceilings = {
    ("copying: instructions <= (floor + copy) x limit", "clamp_4k"): float(sys.argv[2]),
    ("owned: instructions per send beyond the floor's", "clamp_4k"): 0.0,
    ("owned: instructions per send beyond the floor's", "unclamped"): 40.0,
    ("owned: fixed instructions per end(P) beyond the floor's", "clamp_4k"): 460.0,
    ("owned: fixed instructions per end(P) beyond the floor's", "unclamped"): 510.0,
}
bad = []
for c in rep["cells"]:
    if not c["built"] or not c["run"]:
        continue
    name = f'{c["sender"]} {c["mode"]} {c["payload"]}'
    if len(set(c["instructions"])) != 1:
        bad.append(f"{name}: instructions differ between runs: {c['instructions']}")
    if not c["counts_equal"]:
        bad.append(f"{name}: sends, syscalls or bytes differ between runs")
seen = set()
for t in rep["targets"]:
    if not t["built"]:
        print(f'not built: {t["target"]} ({t["mode"]})')
        continue
    key = (t["target"], t["mode"])
    payload = (f'{t["payload_from"]} to {t["payload"]}' if "payload_from" in t
               else str(t["payload"]))
    line = f'{t["target"]} ({t["mode"]}, {payload} bytes): {t["figure"]:.4f} (limit {t["limit"]:.2f})'
    ceiling = ceilings.get(key)
    if ceiling is None:
        print(f'{line}: {"PASS" if t["pass"] else "FAIL"}')
        if not t["pass"]:
            bad.append(line)
        continue
    seen.add(key)
    ok = t["figure"] <= ceiling
    state = "PASS" if t["pass"] else "not met yet"
    print(f'{line}: {state}; regression ceiling {ceiling:.3f}: {"ok" if ok else "EXCEEDED"}')
    if not ok:
        bad.append(line + f" above the ceiling {ceiling}")
    # A target met within its ceiling must stay met; the others are held
    # by the ceiling alone until they are met.
    if not t["pass"] and ceiling <= t["limit"]:
        bad.append(line)
for key in sorted(set(ceilings) - seen):
    bad.append(f"no figure for {key[0]} ({key[1]}): is the owned write built?")
for b in bad:
    print("FAIL:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
