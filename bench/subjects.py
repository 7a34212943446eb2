#!/usr/bin/python3
"""Foreign subjects against the reference goldens, side by side.

    bench/subjects.py                      the table, node and libuv, every
                                           queue, batching and half-open scenario
    bench/subjects.py --subject node       one subject
    bench/subjects.py --propose node       the differences-file lines of every
                                           difference, for a person to review
    bench/subjects.py --sends              sends for N x write(128 B) in one
                                           task, N = 1, 16, 256, on each subject

For each scenario profile and subject: whether the peer's bytes equal the
golden's, whether the events do, the writing calls (send, sendto, sendmsg,
write, writev) and every counted syscall, and the fields that differ, each
with the reason the subject's differences file gives (docs/subjects.md).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from wirecheck import differences as D  # noqa: E402
from wirecheck import golden as G  # noqa: E402
from wirecheck import runner  # noqa: E402

BEHAVIOURS = ("queue", "batching", "half-open")
WRITING = ("send", "sendto", "sendmsg", "write", "writev")


def scenarios(root: Path) -> list[Path]:
    out = []
    for b in BEHAVIOURS:
        out += sorted((root / b).glob("*.wcs"))
    return out


def writes(sys_counts: dict) -> int:
    return sum(sys_counts.get(k, 0) for k in WRITING)


def total(sys_counts: dict) -> int:
    return sum(v for k, v in sys_counts.items() if "." not in k)


def run_one(path: Path, profile, subject: str, binary: Path):
    flags = list(profile.flags) + ["--subject", subject]
    return runner.run(str(path), flags, binary=binary)


def table(subjects, binary, propose: bool):
    rows, proposals = [], []
    summary = {s: {"runs": 0, "bytes": 0, "events": 0, "skipped": 0,
                   "unexplained": 0} for s in subjects}
    for path in scenarios(REPO / "scenarios"):
        meta = runner.check(str(path.relative_to(REPO)), binary)
        for profile in runner.profiles(meta):
            gpath = G.golden_path(path, profile.golden_suffix)
            golden = G.load(gpath)
            for subject in subjects:
                trace = run_one(path, profile, subject, binary)
                err = (trace.get("exit") or {}).get("error") or ""
                dfile, key = D.find_file(path, subject)
                if profile.id:
                    key += "::" + profile.id
                st = summary[subject]
                if err.startswith("unsupported "):
                    st["skipped"] += 1
                    rows.append((key, subject, "-", "-", "-", "-", "skipped: " + err))
                    continue
                actual = G.from_trace(trace)
                diffs = G.compare(golden, actual)
                verdict = D.judge(diffs, actual, D.load(dfile), key)
                fields = sorted({D.field_name(d) for d in diffs})
                bytes_eq = not any(f.startswith("peer") for f in fields)
                events_eq = "events" not in fields
                st["runs"] += 1
                st["bytes"] += bytes_eq
                st["events"] += events_eq
                st["unexplained"] += len({f for _, f, _ in verdict.unexplained})
                names = []
                for f in fields:
                    if f in ("syscalls", "queue"):
                        continue
                    hit = [e for d, e in verdict.explained if D.field_name(d) == f]
                    names.append(f"{f}: {hit[0].reason}" if hit else f"{f}: UNEXPLAINED")
                rows.append((key, subject, "yes" if bytes_eq else "NO",
                             "yes" if events_eq else "no",
                             f"{writes(golden.syscalls)}/{writes(actual.syscalls)}",
                             f"{total(golden.syscalls)}/{total(actual.syscalls)}",
                             "; ".join(names)))
                for _, f, fp in verdict.unexplained:
                    line = f"{key} {f} {fp} REASON"
                    if line not in proposals:
                        proposals.append(line)
    if propose:
        print("\n".join(proposals))
        return
    print("| scenario | subject | bytes = golden | events = golden | writing calls ref/subject "
          "| syscalls ref/subject | differences (reason) |")
    print("|---|---|---|---|---:|---:|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print()
    for s, st in summary.items():
        print(f"{s}: {st['runs']} runs, bytes equal {st['bytes']}/{st['runs']}, events equal "
              f"{st['events']}/{st['runs']}, {st['skipped']} skipped (unsupported), "
              f"{st['unexplained']} unexplained field(s)")


def sends(subjects, binary):
    print("| N x write(128 B), one task | " + " | ".join(subjects) + " |")
    print("|---:|" + "---:|" * len(subjects))
    with tempfile.TemporaryDirectory() as tmp:
        for n in (1, 16, 256):
            wcs = Path(tmp) / f"writes-{n}.wcs"
            wcs.write_text("task\n" + "  write 128\n" * n + "  end\n")
            cells = []
            for s in subjects:
                t = runner.run(str(wcs), ["--subject", s], binary=binary)
                sc = t["syscalls"]
                cells.append(f"{writes(sc)} ({', '.join(f'{k} {sc[k]}' for k in WRITING if sc.get(k))})")
            print(f"| {n} | " + " | ".join(cells) + " |")
    print("\nwriting calls = send + sendto + sendmsg + write + writev on the socket "
          "(the gate's counts; the subject's pipes are not counted)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--subject", action="append", help="node, libuv (default: both)")
    ap.add_argument("--propose", metavar="SUBJECT", help="print the unexplained differences as lines")
    ap.add_argument("--sends", action="store_true", help="the N x write(128 B) figure")
    ap.add_argument("--wirecheck-bin", default=None)
    a = ap.parse_args()
    binary = runner.find_binary(a.wirecheck_bin)
    if a.sends:
        sends(["refstack"] + (a.subject or ["node", "libuv"]), binary)
        return
    if a.propose:
        table([a.propose], binary, True)
        return
    table(a.subject or ["node", "libuv"], binary, False)


if __name__ == "__main__":
    main()
