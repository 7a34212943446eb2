#!/usr/bin/python3
"""Foreign subjects against the reference goldens, side by side (docs/subjects.md).

    bench/subjects.py                      the table: node and libuv on every
                                           queue, batching and half-open scenario
    bench/subjects.py --subject node       one subject
    bench/subjects.py --propose node       the differences-file lines of every
                                           unexplained difference, for a person
                                           to review and give a reason
    bench/subjects.py --sends              writing calls for N x write(128 B) in
                                           one task, N = 1, 16, 256, on each subject
    bench/subjects.py --json               both, as JSON (the report's section)

For each scenario profile and subject: whether the peer's bytes equal the
golden's (bytes, sha256, reads), whether the events do, the writing calls
(send, sendto, sendmsg, write, writev) and every counted syscall, golden and
subject, and the fields that differ, each with the reason the subject's
differences file gives. The reference stack's side is its golden (the
bundled goldens are the reference stack's traces).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from wirecheck import differences as D  # noqa: E402
from wirecheck import golden as G  # noqa: E402
from wirecheck import runner  # noqa: E402

BEHAVIOUR_DIRS = ("queue", "batching", "half-open")
WRITING = ("send", "sendto", "sendmsg", "write", "writev")
SUBJECTS = ("node", "libuv")


def scenarios(root: Path) -> list[Path]:
    out = []
    for b in BEHAVIOUR_DIRS:
        out += sorted((root / b).glob("*.wcs"))
    return out


def writes(sys_counts: dict) -> int:
    return sum(sys_counts.get(k, 0) for k in WRITING)


def total(sys_counts: dict) -> int:
    return sum(v for k, v in sys_counts.items() if "." not in k)


def available(subject: str, binary: Path) -> bool:
    return (binary.parent / f"{subject}-subject").exists()


def compare_all(subjects, binary: Path, log) -> dict:
    """Every scenario profile on every subject: rows, per-subject totals, and
    the unexplained differences as differences-file lines."""
    rows, proposals = [], {s: [] for s in subjects}
    totals = {s: {"runs": 0, "bytes_equal": 0, "reads_equal": 0, "events_equal": 0, "skipped": 0,
                  "unexplained": 0} for s in subjects}
    for path in scenarios(REPO / "scenarios"):
        meta = runner.check(str(path.relative_to(REPO)), binary)
        for profile in runner.profiles(meta):
            golden = G.load(G.golden_path(path, profile.golden_suffix))
            for subject in subjects:
                dfile, key = D.find_file(path, subject)
                if profile.id:
                    key += "::" + profile.id
                log(f"{subject} {key}")
                trace = runner.run(str(path), list(profile.flags) + ["--subject", subject],
                                   binary=binary)
                err = (trace.get("exit") or {}).get("error") or ""
                st = totals[subject]
                row = {"scenario": key, "behaviour": meta.get("behaviour"), "subject": subject,
                       "golden_writes": writes(golden.syscalls),
                       "golden_syscalls": total(golden.syscalls)}
                if err.startswith("unsupported "):
                    st["skipped"] += 1
                    rows.append({**row, "skipped": err})
                    continue
                actual = G.from_trace(trace)
                diffs = G.compare(golden, actual)
                verdict = D.judge(diffs, actual, D.load(dfile), key)
                fields = sorted({D.field_name(d) for d in diffs})
                reasons = {D.field_name(d): e.reason for d, e in verdict.explained}
                unexplained = sorted({f for _, f, _ in verdict.unexplained})
                # the streams (length and sha256) apart from when the peer read them
                bytes_eq = [(p.bytes, p.sha256) for p in golden.peers] == \
                    [(p.bytes, p.sha256) for p in actual.peers]
                reads_eq = [p.reads for p in golden.peers] == [p.reads for p in actual.peers]
                st["runs"] += 1
                st["bytes_equal"] += bytes_eq
                st["reads_equal"] += reads_eq
                st["events_equal"] += "events" not in fields
                st["unexplained"] += len(unexplained)
                rows.append({**row, "skipped": None, "bytes_equal": bytes_eq,
                             "reads_equal": reads_eq,
                             "events_equal": "events" not in fields,
                             "writes": writes(actual.syscalls),
                             "syscalls": total(actual.syscalls),
                             "differs": fields, "reasons": reasons,
                             "unexplained": unexplained})
                for _, f, fp in verdict.unexplained:
                    line = f"{key} {f} {fp} REASON"
                    if line not in proposals[subject]:
                        proposals[subject].append(line)
    return {"rows": rows, "totals": totals, "proposals": proposals}


def sends(subjects, binary: Path, log) -> list[dict]:
    """Writing calls for N x write(128 B) and an end in one task."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (1, 16, 256):
            wcs = Path(tmp) / f"writes-{n}.wcs"
            wcs.write_text("task\n" + "  write 128\n" * n + "  end\n")
            row = {"writes": n, "bytes": 128 * n}
            for s in subjects:
                log(f"sends {s} N={n}")
                t = runner.run(str(wcs), ["--subject", s], binary=binary)
                sc = t["syscalls"]
                row[s] = {"writing_calls": writes(sc),
                          "by_kind": {k: sc[k] for k in WRITING if sc.get(k)},
                          "peer_bytes": t["peer"]["bytes"]}
            out.append(row)
    return out


def print_table(result: dict) -> None:
    print("| scenario | subject | bytes = golden | reads = golden | events = golden "
          "| writing calls golden/subject | syscalls golden/subject | differences (reason) |")
    print("|---|---|---|---|---|---:|---:|---|")
    for r in result["rows"]:
        if r["skipped"]:
            print(f"| {r['scenario']} | {r['subject']} | - | - | - | - | - | skipped: {r['skipped']} |")
            continue
        names = [f"{f}: {r['reasons'].get(f, 'UNEXPLAINED')}" for f in r["differs"]
                 if f not in ("syscalls", "queue")]
        print(f"| {r['scenario']} | {r['subject']} | {'yes' if r['bytes_equal'] else 'NO'} | "
              f"{'yes' if r['reads_equal'] else 'no'} | {'yes' if r['events_equal'] else 'no'} | {r['golden_writes']}/{r['writes']} | "
              f"{r['golden_syscalls']}/{r['syscalls']} | {'; '.join(names)} |")
    print()
    for s, st in result["totals"].items():
        print(f"{s}: {st['runs']} runs, bytes equal {st['bytes_equal']}/{st['runs']}, reads equal "
              f"{st['reads_equal']}/{st['runs']}, events "
              f"equal {st['events_equal']}/{st['runs']}, {st['skipped']} skipped (unsupported), "
              f"{st['unexplained']} unexplained field(s)")


def print_sends(rows: list[dict], subjects) -> None:
    print("| N x write(128 B), one task | " + " | ".join(subjects) + " |")
    print("|---:|" + "---:|" * len(subjects))
    for r in rows:
        cells = [f"{r[s]['writing_calls']} ({', '.join(f'{k} {v}' for k, v in r[s]['by_kind'].items())})"
                 for s in subjects]
        print(f"| {r['writes']} | " + " | ".join(cells) + " |")
    print("\nwriting calls = send + sendto + sendmsg + write + writev on the subject's socket "
          "(the gate's counts; the subject's own pipes are not counted)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--subject", action="append", choices=SUBJECTS,
                    help="node or libuv (default: both, those that are built)")
    ap.add_argument("--propose", metavar="SUBJECT", choices=SUBJECTS,
                    help="print the unexplained differences as differences-file lines")
    ap.add_argument("--sends", action="store_true", help="only the N x write(128 B) figure")
    ap.add_argument("--json", action="store_true", help="the table and the sends, as JSON")
    ap.add_argument("--wirecheck-bin", default=None)
    ap.add_argument("-q", "--quiet", action="store_true")
    a = ap.parse_args()
    binary = runner.find_binary(a.wirecheck_bin)

    def log(msg):
        if not a.quiet:
            print(f"subjects: {msg}", file=sys.stderr, flush=True)

    wanted = [a.propose] if a.propose else (a.subject or list(SUBJECTS))
    subjects = [s for s in wanted if available(s, binary)]
    missing = [s for s in wanted if s not in subjects]
    for s in missing:
        log(f"{s}-subject is not built beside {binary}: left out")
    if a.propose:
        if not subjects:
            return 2
        print("\n".join(compare_all(subjects, binary, log)["proposals"][a.propose]))
        return 0
    if a.sends:
        print_sends(sends(["refstack"] + subjects, binary, log), ["refstack"] + subjects)
        return 0
    result = compare_all(subjects, binary, log)
    if a.json:
        json.dump({"command": [sys.argv[0], *sys.argv[1:]], "subjects": subjects,
                   "missing": missing, "rows": result["rows"], "totals": result["totals"],
                   "sends": sends(["refstack"] + subjects, binary, log)},
                  sys.stdout, indent=1, sort_keys=True)
        print()
        return 0
    print_table(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
