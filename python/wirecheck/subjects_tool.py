"""Foreign subjects against the reference goldens, side by side (docs/subjects.md).
Run as `python3 -m wirecheck.subjects_tool [OPTION]`:

    (no option)              the table: node and libuv on every queue,
                             batching and half-open scenario
    --subject node           one subject
    --propose node           the differences-file lines of every unexplained
                             difference, for a person to review and give a
                             reason
    --propose PATH [--subject-preload]
                             the same for a subject program of one's own
                             (docs/subjects.md)
    --sends                  writing calls for N x write(128 B) in one task,
                             N = 1, 16, 256, on each subject
    --claims                 the seeds' two claims on the installed Bun (and
                             node, the reference stack): batching on a
                             handed-off socket, and end before the poll change
    --json                   all of it, as JSON (the report's section)

Subjects: node, libuv, bun (subjects/node/subject.js run by Bun), a
subject program's PATH (its differences file is subjects/STEM.differences,
as the pytest plugin's), and node-upgrade, bun-upgrade: the same programs with every connection the
socket a node:http server hands to its 'upgrade' listener (the shape of the
batching seed, oven-sh/bun#45246). On those the gate also counts the read of
the Upgrade request and the send of the 101 (one writing call).

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
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from . import differences as D
from . import golden as G
from . import runner
from .runner import REPO

BEHAVIOUR_DIRS = ("queue", "batching", "half-open")
WRITING = ("send", "sendto", "sendmsg", "write", "writev")
SUBJECTS = ("node", "libuv", "bun", "node-upgrade", "bun-upgrade")


def scenarios(root: Path) -> list[Path]:
    out = []
    for b in BEHAVIOUR_DIRS:
        out += sorted((root / b).glob("*.wcs"))
    return out


def writes(sys_counts: dict) -> int:
    return sum(sys_counts.get(k, 0) for k in WRITING)


def total(sys_counts: dict) -> int:
    return sum(v for k, v in sys_counts.items() if "." not in k)


def is_path(subject: str) -> bool:
    """A subject program's PATH rather than a subject's name."""
    return subject not in SUBJECTS and subject != "refstack"


def subject_name(subject: str) -> str:
    """The name of a subject's differences file: a PATH's stem (as the
    pytest plugin names it)."""
    return Path(subject).stem if is_path(subject) else subject


def run_flags(subject: str, extra=()) -> list:
    """`wirecheck run`'s flags for a subject; extra (--subject-preload) is
    for a PATH only."""
    return ["--subject", subject, *(extra if is_path(subject) else ())]


def available(subject: str, binary: Path) -> bool:
    """Built beside wirecheck (NAME-upgrade: NAME's program, handed-off
    sockets), and for bun the runtime installed (subjects/bun/subject.sh);
    a PATH is checked by main()."""
    if is_path(subject):
        return True
    base = subject.removesuffix("-upgrade")
    if not (binary.parent / f"{base}-subject").exists():
        return False
    return base != "bun" or bun_binary() is not None


def bun_binary():
    """The Bun that bun-subject runs: $WIRECHECK_BUN, else the one
    scripts/setup.sh installs; None when neither is there."""
    path = Path(os.environ.get("WIRECHECK_BUN") or
                REPO / "third_party/bun/node_modules/@oven/bun-linux-x64/bin/bun")
    return path if path.is_file() and os.access(path, os.X_OK) else None


def compare_all(subjects, binary: Path, log, extra=()) -> dict:
    """Every scenario profile on every subject: rows, per-subject totals, and
    the unexplained differences as differences-file lines (their keys below
    the folder that holds subjects/, as the plugin's). extra: more `run`
    flags (--subject-preload)."""
    rows, proposals = [], {s: [] for s in subjects}
    totals = {s: {"runs": 0, "bytes_equal": 0, "reads_equal": 0, "events_equal": 0, "skipped": 0,
                  "unexplained": 0} for s in subjects}
    for path in scenarios(REPO / "scenarios"):
        meta = runner.check(str(path.relative_to(REPO)), binary)
        for profile in runner.profiles(meta):
            golden = G.load(G.golden_path(path, profile.golden_suffix))
            for subject in subjects:
                dfile, key = D.find_file(path, subject_name(subject))
                if profile.id:
                    key += "::" + profile.id
                log(f"{subject} {key}")
                trace = runner.run(str(path), list(profile.flags) + run_flags(subject, extra),
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


def sends(subjects, binary: Path, log, extra=()) -> list[dict]:
    """Writing calls for N x write(128 B) and an end in one task."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (1, 16, 256):
            wcs = Path(tmp) / f"writes-{n}.wcs"
            wcs.write_text("task\n" + "  write 128\n" * n + "  end\n")
            row = {"writes": n, "bytes": 128 * n}
            for s in subjects:
                log(f"sends {s} N={n}")
                t = runner.run(str(wcs), run_flags(s, extra), binary=binary)
                if "syscalls" not in t:
                    # The trace has no counters when the gate never attached.
                    raise SystemExit(f"wirecheck.subjects_tool --sends: subject {s} reported no "
                                     f"syscalls: its gate never attached (a program not "
                                     f"built against the gate needs --subject-preload)")
                sc = t["syscalls"]
                row[s] = {"writing_calls": writes(sc),
                          "by_kind": {k: sc[k] for k in WRITING if sc.get(k)},
                          "peer_bytes": t["peer"]["bytes"]}
            out.append(row)
    return out


# ---- the seeds' two claims ---------------------------------------------------

SEVERAL_WRITES = "scenarios/batching/several-writes.wcs"
PER_CONNECTION = "scenarios/half-open/per-connection.wcs"


def batching_claim(subjects, binary: Path, log) -> dict:
    """oven-sh/bun#45246: the writes after the first of a task, on a handed-off
    socket, leave in one send after the task. Shown by batching/several-writes:
    at the checkpoint inside the task the peer has only the first write (6
    bytes, reads [6, 13]) when the stack batches, all 19 when it does not."""
    path = REPO / SEVERAL_WRITES
    golden = G.load(G.golden_path(path, ""))
    out = {"scenario": SEVERAL_WRITES, "golden_reads": list(golden.peers[0].reads),
           "golden_writes": writes(golden.syscalls), "subjects": {}}
    for s in subjects:
        log(f"claim batching {s}")
        t = runner.run(str(path), ["--subject", s], binary=binary)
        reads = t["peer"]["reads"]
        out["subjects"][s] = {"reads": reads, "writing_calls": writes(t["syscalls"]),
                              "handoff": s.endswith("-upgrade"),
                              "batches": bool(reads) and reads[0] < t["peer"]["bytes"]}
    return out


def per_connection(subject: str, binary: Path, extra=()) -> dict:
    proc = subprocess.run([str(binary), "per-connection", str(REPO / PER_CONNECTION),
                           "--from", "10", "--to", "30", *extra,
                           *(["--subject", subject] if subject != "refstack" else [])],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip()[-300:]}
    return json.loads(proc.stdout)["per_connection"]


STRACE_CALL = re.compile(r"^(\w+)\((\d+)(?:, ([^)]*))?.*= (-?\d+)")


def strace_calls(lines):
    """(pid, call, first argument, the rest up to ')', result) of each line of
    `strace -f`, a call that another thread interrupted (<unfinished ...>,
    then <... NAME resumed>) put back together."""
    pending = {}
    for raw in lines:
        m = re.match(r"^(\d+)\s+(.*)$", raw)
        if not m:
            continue
        pid, body = m.groups()
        if body.endswith("<unfinished ...>"):
            pending[pid] = body[:-len("<unfinished ...>")]
            continue
        r = re.match(r"^<\.\.\. \w+ resumed>(.*)$", body)
        if r:
            if pid not in pending:
                continue
            body = pending.pop(pid) + r.group(1)
        c = STRACE_CALL.match(body)
        if c:
            yield (pid, *c.groups(), body)


def end_order(subject: str, binary: Path, extra=()) -> dict:
    """The subject's calls on its socket from the read that returned 0 (the
    peer's FIN) to its shutdown(), from `strace -f` of one run of
    half-open/per-connection: whether the poll changes (epoll_ctl MOD) come
    before the shutdown that the end handler makes, or not at all (the order
    of the oven-sh/bun pull request "usockets: dispatch on_end before the
    poll change in the half-open EOF arm": on_end first, then no MOD)."""
    if shutil.which("strace") is None:
        return {"error": "strace is not installed"}
    with tempfile.TemporaryDirectory() as tmp:
        log_path = Path(tmp) / "strace.txt"
        argv = ["strace", "-f", "-o", str(log_path), "-e",
                "trace=read,recvfrom,recvmsg,epoll_ctl,shutdown", str(binary), "run",
                str(REPO / PER_CONNECTION), *extra,
                *(["--subject", subject] if subject != "refstack" else [])]
        subprocess.run(argv, capture_output=True, text=True, timeout=600)
        lines = log_path.read_text(errors="replace").splitlines()
    open_fin = {}   # pid -> (fd, calls since its read returned 0)
    for pid, call, first, rest, ret, line in strace_calls(lines):
        if call in ("read", "recvfrom", "recvmsg") and ret == "0" and '""' in line:
            open_fin[pid] = (first, [])
            continue
        if pid not in open_fin:
            continue
        fd, calls = open_fin[pid]
        if call == "epoll_ctl" and rest and rest.split(", ")[1] == fd:
            op = rest.split(", ")[0].replace("EPOLL_CTL_", "")
            ev = re.search(r"events=([A-Z|]+)", rest)
            calls.append(f"epoll_ctl {op}" + (f" {ev.group(1)}" if ev else ""))
        elif call == "shutdown" and first == fd:
            calls.append("shutdown")
            mods_before = sum(c.startswith("epoll_ctl MOD") for c in calls[:-1])
            return {"calls": calls, "mod_before_shutdown": mods_before,
                    "end_first": mods_before == 0}
    return {"error": "no shutdown after the peer's FIN in the strace log"}


def half_open_claim(subjects, binary: Path, log) -> dict:
    """The oven-sh/bun pull request "usockets: dispatch on_end before the poll
    change in the half-open EOF arm". Shown by half-open/per-connection (the peer sends its
    request and then its FIN, the subject replies 1 KiB and ends): epoll_ctl
    MOD per connection, (count at 30 - count at 10) / 20, and the order of the
    calls on one connection."""
    out = {"scenario": PER_CONNECTION, "subjects": {}}
    for s, extra in [("refstack", ()), ("refstack poll-first", ("--variant", "halfopen=poll-first")),
                     *[(s, ()) for s in subjects]]:
        name = s.split()[0]
        log(f"claim half-open {s}")
        pc = per_connection(name, binary, extra)
        out["subjects"][s] = {"per_connection": pc, "order": end_order(name, binary, extra),
                              "mod_per_connection": pc.get("epoll_ctl.mod")}
    return out


def print_claims(c: dict) -> None:
    b, h = c["batching"], c["half_open"]
    print(f"Batching on a handed-off socket ({b['scenario']}; golden reads {b['golden_reads']}):")
    for s, r in b["subjects"].items():
        print(f"  {s}: reads {r['reads']}, writing calls {r['writing_calls']}"
              f"{' (one is the 101)' if r['handoff'] else ''}: "
              f"{'batches' if r['batches'] else 'no batching: every write left in its call'}")
    print(f"End before the poll change ({h['scenario']}):")
    for s, r in h["subjects"].items():
        o = r["order"]
        order = " -> ".join(o["calls"]) if "calls" in o else o.get("error")
        print(f"  {s}: epoll_ctl MOD per connection {r['mod_per_connection']}; after the FIN: "
              f"{order}")


def claims(subjects, binary: Path, log) -> dict:
    handed = [s for s in subjects if s.endswith("-upgrade")]
    return {"batching": batching_claim(handed, binary, log),
            "half_open": half_open_claim([s for s in subjects if s != "libuv"], binary, log)}


def runtimes(subjects) -> dict:
    """The versions the figures are of."""
    out = {}
    if any(s.startswith("node") for s in subjects) and shutil.which("node"):
        out["node"] = subprocess.run(["node", "--version"], capture_output=True,
                                     text=True, timeout=30).stdout.strip()
    if any(s.startswith("bun") for s in subjects) and bun_binary():
        out["bun"] = subprocess.run([str(bun_binary()), "--version"], capture_output=True,
                                    text=True, timeout=30).stdout.strip()
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
          "(the gate's counts; the subject's own pipes are not counted); on NAME-upgrade "
          "one of them is the 101")


def main() -> int:
    ap = argparse.ArgumentParser(prog="python3 -m wirecheck.subjects_tool",
                                 description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--subject", action="append", metavar="NAME|PATH",
                    help=f"{', '.join(SUBJECTS)} or a subject program's PATH "
                         "(default: every named one that is built)")
    ap.add_argument("--propose", metavar="NAME|PATH",
                    help="print the unexplained differences as differences-file lines")
    ap.add_argument("--subject-preload", action="store_true",
                    help="run the subject PATH with the gate preloaded (wirecheck run "
                         "--subject-preload; the pytest plugin's --wirecheck-subject-preload)")
    ap.add_argument("--sends", action="store_true", help="only the N x write(128 B) figure")
    ap.add_argument("--claims", action="store_true",
                    help="only the seeds' two claims (batching on a handed-off socket, end "
                         "before the poll change) on the subjects")
    ap.add_argument("--json", action="store_true", help="the table and the sends, as JSON")
    ap.add_argument("--wirecheck-bin", default=None)
    ap.add_argument("-q", "--quiet", action="store_true")
    a = ap.parse_args()
    binary = runner.find_binary(a.wirecheck_bin)

    def log(msg):
        if not a.quiet:
            print(f"subjects: {msg}", file=sys.stderr, flush=True)

    wanted = [a.propose] if a.propose else (a.subject or list(SUBJECTS))
    for i, s in enumerate(wanted):
        if is_path(s):
            path = Path(s).resolve()
            if not (path.is_file() and os.access(path, os.X_OK)):
                ap.error(f"{s}: not a subject ({', '.join(SUBJECTS)}) nor an executable")
            wanted[i] = str(path)
    if a.subject_preload and not any(is_path(s) for s in wanted):
        ap.error("--subject-preload is for a subject PATH")
    extra = ["--subject-preload"] if a.subject_preload else []
    subjects = [s for s in wanted if available(s, binary)]
    missing = [s for s in wanted if s not in subjects]
    for s in missing:
        log(f"{s}-subject is not built beside {binary}: left out")
    if a.propose:
        if not subjects:
            return 2
        print("\n".join(compare_all(subjects, binary, log, extra)["proposals"][subjects[0]]))
        return 0
    if a.sends:
        print_sends(sends(["refstack"] + subjects, binary, log, extra), ["refstack"] + subjects)
        return 0
    if a.claims:
        print_claims(claims(subjects, binary, log))
        return 0
    result = compare_all(subjects, binary, log, extra)
    if a.json:
        json.dump({"command": ["python3", "-m", "wirecheck.subjects_tool", *sys.argv[1:]], "subjects": subjects,
                   "missing": missing, "rows": result["rows"], "totals": result["totals"],
                   "sends": sends(["refstack"] + subjects, binary, log, extra),
                   "claims": claims(subjects, binary, log),
                   "runtimes": runtimes(subjects)},
                  sys.stdout, indent=1, sort_keys=True)
        print()
        return 0
    print_table(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
