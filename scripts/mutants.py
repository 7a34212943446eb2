#!/usr/bin/python3
"""The project's mutation pass (docs/mutants.md).

Each tests/mutants/NAME.patch is one plausible bug: a unified diff against
the tree, whose first line "# breaks: ..." says which rule it breaks. For
each patch, in one scratch copy of the tree built once (default preset):
apply it, rebuild (make rebuilds the one file it touches and relinks), run
the scenario suite, stopping at its first failure; when that passes, build
everything and run the C unit tests and the other pytest suites; then
revert it (git apply -R). A mutant is:

  scenarios    caught by the scenario suite (a failure, or a hang killed
               at --timeout: status "timeout")
  unit         passed the scenarios, caught by the unit tests or the
               other pytest suites
  missed       every test passed
  build-failed the patch does not build (not counted as caught)
  no-apply     the patch does not apply to the tree (not counted)

Prints a table and the kill rate, writes a JSON result (--json). Exits 0
when every mutant that built was caught, 1 otherwise, 2 on a setup error.
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = "/usr/bin/python3"
# The targets the scenario suite runs: rebuilt first, the rest only when a
# mutant gets past the scenarios.
SCENARIO_TARGETS = ["wirecheck", "refstack-subject"]
# CTest's instruction-count figures are benchmarks, not tests of a rule.
CTEST_EXCLUDE = "instructions"
# CI's fixed sample (scripts/test.sh): three mutants the scenario suite
# catches, one per part (batch.c's exit wrappers, the gate's clamp, the
# socket's return value), so that the runner itself keeps working.
SAMPLE = ["abort-no-flush", "gate-clamp-off-by-one", "write-return-le-hwm"]
# The pass's own bounds first (they are aimed at the mutants no golden can
# catch), then CTest (FIRST_SUITES run before it), then the rest: a test
# that fails by timing on a loaded machine then does not take the credit
# for a mutant that an aimed test catches.
FIRST_SUITES = ["tests/mutants"]
# Tests of the patches themselves, not of the code: in a tree with a patch
# applied, that patch no longer applies, which is no catch.
DESELECT = ["tests/mutants/test_runner.py::test_every_patch_applies_to_the_tree"]
OTHER_SUITES = ["tests/e2e", "tests/plugin", "tests/report", "tests/property"]


def log(msg):
    print(msg, flush=True)


def run(cmd, cwd, timeout, logf):
    """Runs cmd in its own process group; returns (rc, output), rc None on
    a timeout (the whole group is killed)."""
    with open(logf, "a") as out:
        out.write("$ " + " ".join(cmd) + "\n")
        out.flush()
        # The scratch's own binaries, whatever conftest.py an enclosing
        # folder's pytest finds first (its wirecheck package would look in
        # its own build/).
        env = dict(os.environ, WIRECHECK_BIN=os.path.join(cwd, "build", "bin", "wirecheck"))
        p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True,
                             start_new_session=True, env=env)
        try:
            text, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            text, _ = p.communicate()
            out.write(text + "\n[timeout after %ss]\n" % timeout)
            return None, text
        out.write(text + "\n[rc %d]\n" % p.returncode)
        return p.returncode, text


def breaks_of(path):
    with open(path) as f:
        first = f.readline()
    m = re.match(r"#\s*breaks:\s*(.*)", first)
    return m.group(1).strip() if m else ""


def reason_of(path):
    """The patch's "# not by scenarios: ..." line: why the scenario suite
    cannot catch it and what does (tests/mutants/README.md), or ""."""
    with open(path) as f:
        for line in f:
            if line.startswith("diff "):
                break
            m = re.match(r"#\s*not by scenarios:\s*(.*)", line)
            if m:
                return m.group(1).strip()
    return ""


def files_of(path):
    with open(path) as f:
        return sorted(set(re.findall(r"^\+\+\+ b/(\S+)", f.read(), re.M)))


def first_failure(text):
    for line in text.splitlines():
        m = re.match(r"(FAILED|ERROR) (\S+)", line)
        if m:
            return m.group(2)
    m = re.search(r"The following tests FAILED:\s*\n\s*\d+ - (\S+)", text)
    if m:
        return "ctest " + m.group(1)
    return ""


def copy_tree(dst):
    """Copies the working tree (tracked and untracked, not ignored) to dst,
    without any build directory. A file dst already holds with the same
    bytes is left alone, so that an incremental build of a kept scratch
    rebuilds only what changed (a copy gets a new mtime: make never takes
    a mutant's object for the restored file's)."""
    names = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, check=True, capture_output=True).stdout.split(b"\0")
    for n in names:
        n = n.decode()
        if not n or n.startswith("build"):
            continue
        src = os.path.join(ROOT, n)
        if not os.path.isfile(src):
            continue
        d = os.path.join(dst, n)
        if os.path.isfile(d):
            with open(src, "rb") as a, open(d, "rb") as b:
                if a.read() == b.read():
                    continue
        os.makedirs(os.path.dirname(d), exist_ok=True)
        shutil.copyfile(src, d)
        shutil.copymode(src, d)


def build(tree, logf, targets=None, jobs=2, timeout=1800):
    cmd = ["cmake", "--build", "build", "-j%d" % jobs]
    if targets:
        cmd += ["--target"] + targets
    rc, _ = run(cmd, tree, timeout, logf)
    return rc == 0


def scenario_folders(tree, files):
    """Every folder of scenarios/, the one most likely to catch a patch of
    files first (the protocol's own folder, else rules/), then rules/, so
    that -x stops sooner; the suite run is the same set of scenarios
    whatever the order."""
    folders = sorted(d for d in os.listdir(os.path.join(tree, "scenarios"))
                     if os.path.isdir(os.path.join(tree, "scenarios", d))
                     and not d.startswith(("_", ".")))
    first = "rules"
    for f in files:
        b = os.path.basename(f)
        if b.startswith(("ws", "utf8")):
            first = "websocket" if "websocket" in folders else "ws"
        elif b.startswith(("chunk", "http")):
            first = "chunked"
    # rules/ next: small, and aimed at one rule each.
    order = [d for d in dict.fromkeys((first, "rules")) if d in folders]
    return ["scenarios/" + d for d in order + [d for d in folders if d not in order]]


def scenarios(tree, logf, args, files=()):
    cmd = [PY, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider"] + \
        scenario_folders(tree, files)
    if args.jobs > 1:
        cmd += ["-n", str(args.jobs)]
    return run(cmd, tree, args.timeout, logf)


def other_tests(tree, logf, args):
    """Returns (caught, text, timed_out) for the unit tests and the other
    pytest suites, stopping at the first that fails."""
    def pytest(suite):
        # One pytest per suite: two suites' conftest.py files share the
        # module name "conftest", and one process imports only the first.
        cmd = [PY, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", suite]
        cmd += [a for t in DESELECT if t.startswith(suite + "/") for a in ("--deselect", t)]
        if args.jobs > 1:
            cmd += ["-n", str(args.jobs)]
        return run(cmd, tree, args.timeout, logf)

    for suite in FIRST_SUITES:
        rc, text = pytest(suite)
        if rc != 0:
            return True, text, rc is None
    rc, text = run(["ctest", "--preset", "default", "-E", CTEST_EXCLUDE,
                    "--stop-on-failure"], tree, args.timeout, logf)
    if rc != 0:
        return True, text, rc is None
    for suite in OTHER_SUITES:
        rc, text = pytest(suite)
        if rc != 0:
            return True, text, rc is None
    return False, "", False


def one(tree, patch, logs, args):
    name = os.path.basename(patch)[:-len(".patch")]
    logf = os.path.join(logs, name + ".log")
    if os.path.exists(logf):
        os.unlink(logf)
    res = {"name": name, "breaks": breaks_of(patch), "files": files_of(patch),
           "reason": reason_of(patch), "status": "", "by": "", "seconds": 0.0}
    t0 = time.monotonic()
    rc, _ = run(["git", "apply", patch], tree, 60, logf)
    if rc != 0:
        res["status"] = "no-apply"
        return res
    try:
        if not build(tree, logf, SCENARIO_TARGETS, args.jobs):
            res["status"] = "build-failed"
            return res
        rc, text = scenarios(tree, logf, args, res["files"])
        if rc is None:
            res.update(status="scenarios", by="timeout")
        elif rc != 0:
            res.update(status="scenarios", by=first_failure(text) or "rc %d" % rc)
        elif args.scenarios_only:
            res["status"] = "missed"
        elif not build(tree, logf, None, args.jobs):
            res["status"] = "build-failed"
        else:
            caught, text, timed_out = other_tests(tree, logf, args)
            if caught:
                res.update(status="unit",
                           by="timeout" if timed_out else first_failure(text))
            else:
                res["status"] = "missed"
        return res
    finally:
        res["seconds"] = round(time.monotonic() - t0, 1)
        if run(["git", "apply", "-R", patch], tree, 60, logf)[0] != 0:
            log("error: cannot revert %s in %s" % (name, tree))
            sys.exit(2)


def summary(results):
    counted = [r for r in results if r["status"] in ("scenarios", "unit", "missed")]
    n = len(counted)
    sc = sum(r["status"] == "scenarios" for r in counted)
    un = sum(r["status"] == "unit" for r in counted)
    return {
        "mutants": len(results),
        "built": n,
        "caught_by_scenarios": sc,
        "caught_only_by_unit_tests": un,
        "missed": n - sc - un,
        "build_failed": sum(r["status"] == "build-failed" for r in results),
        "no_apply": sum(r["status"] == "no-apply" for r in results),
        "scenario_kill_rate": round(100.0 * sc / n, 1) if n else 0.0,
        "kill_rate": round(100.0 * (sc + un) / n, 1) if n else 0.0,
    }


def table(results, s):
    w = max([len(r["name"]) for r in results] + [6])
    lines = ["%-*s  %-12s  %6s  %s" % (w, "mutant", "result", "secs", "caught by")]
    for r in results:
        lines.append("%-*s  %-12s  %6.1f  %s" % (w, r["name"], r["status"],
                                                 r["seconds"], r["by"]))
    lines.append("")
    lines.append("mutants %d (built %d): caught by scenarios %d, caught only by "
                 "unit tests %d, missed %d, build failed %d, not applied %d"
                 % (s["mutants"], s["built"], s["caught_by_scenarios"],
                    s["caught_only_by_unit_tests"], s["missed"],
                    s["build_failed"], s["no_apply"]))
    lines.append("kill rate: scenarios %.1f%%, any test %.1f%%"
                 % (s["scenario_kill_rate"], s["kill_rate"]))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("patches", nargs="*",
                    help="patches or mutant names (default: tests/mutants/*.patch)")
    ap.add_argument("--scratch", default="/tmp/wirecheck-mutants",
                    help="the scratch copy of the tree (made anew each run)")
    ap.add_argument("--json", default=None,
                    help="result file (default SCRATCH/result.json)")
    ap.add_argument("--timeout", type=int, default=900,
                    help="seconds per test run before it counts as a hang")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--scenarios-only", action="store_true",
                    help="skip the unit tests: a mutant the scenarios miss is missed")
    ap.add_argument("--no-baseline", action="store_true",
                    help="skip the check that the unpatched tree passes the scenarios")
    ap.add_argument("--sample", action="store_true",
                    help="run CI's fixed sample (%s), scenarios only, no baseline"
                    % ", ".join(SAMPLE))
    ap.add_argument("--keep-scratch", action="store_true",
                    help="reuse SCRATCH and its build (files synced, build incremental), "
                         "and keep them after the pass (else only logs/ and the result stay)")
    ap.add_argument("--merge", nargs="+", metavar="JSON",
                    help="combine result files (a later one wins for a mutant), "
                         "print the table, write --json; runs nothing")
    args = ap.parse_args()
    if args.merge:
        return merge(args)
    if args.sample:
        args.patches = SAMPLE
        args.scenarios_only = True
        args.no_baseline = True

    patches = []
    for p in args.patches or sorted(glob.glob(os.path.join(ROOT, "tests/mutants/*.patch"))):
        if not p.endswith(".patch"):
            p = os.path.join(ROOT, "tests/mutants", p + ".patch")
        if not os.path.isfile(p):
            log("error: no mutant %s" % p)
            return 2
        patches.append(os.path.abspath(p))
    tree = os.path.abspath(args.scratch)
    if os.path.exists(tree) and not args.keep_scratch:
        shutil.rmtree(tree)
    logs = os.path.join(tree, "logs")
    os.makedirs(logs, exist_ok=True)
    setup_log = os.path.join(logs, "_setup.log")
    log("mutants: %d, scratch %s (logs in %s)" % (len(patches), tree, logs))
    copy_tree(tree)
    rc, _ = run(["cmake", "--preset", "default"], tree, 600, setup_log)
    # Scenarios only: the harness and the subject are all the pass builds.
    first = SCENARIO_TARGETS if args.scenarios_only else None
    if rc != 0 or not build(tree, setup_log, first, args.jobs):
        log("error: the unpatched tree does not build (see %s)" % setup_log)
        if not args.keep_scratch:
            clean_scratch(tree, "")
        return 2
    if not args.no_baseline:
        rc, text = scenarios(tree, setup_log, args)
        if rc != 0:
            log("error: the unpatched tree fails the scenarios: %s (see %s)"
                % (first_failure(text), setup_log))
            if not args.keep_scratch:
                clean_scratch(tree, "")
            return 2
    results = []
    t0 = time.monotonic()
    out = args.json or os.path.join(tree, "result.json")
    s = None
    try:
        for i, patch in enumerate(patches, 1):
            res = one(tree, patch, logs, args)
            results.append(res)
            log("[%d/%d] %-34s %-12s %6.1fs  %s" % (i, len(patches), res["name"],
                                                   res["status"], res["seconds"],
                                                   res["by"]))
            # Written after each mutant: a pass cut short keeps what it found.
            s = write_result(out, results, time.monotonic() - t0)
    finally:
        if not args.keep_scratch:
            clean_scratch(tree, out)
    if s is None:
        s = write_result(out, results, time.monotonic() - t0)
    return report(results, s, out)


def clean_scratch(tree, out):
    """Removes the scratch copy and its build, keeping logs/ and the result
    file when it is in the scratch: what a pass leaves behind is what it
    found, not a second tree of the repository."""
    for name in os.listdir(tree):
        path = os.path.join(tree, name)
        if name == "logs" or os.path.abspath(path) == os.path.abspath(out):
            continue
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)


def write_result(out, results, seconds):
    s = summary(results)
    s["seconds"] = round(seconds, 1)
    s["command"] = " ".join(["scripts/mutants.py"] + sys.argv[1:])
    with open(out, "w") as f:
        json.dump({"summary": s, "mutants": results}, f, indent=2, sort_keys=True)
        f.write("\n")
    return s


def report(results, s, out):
    log("")
    log(table(results, s))
    log("result: %s" % out)
    return 0 if s["built"] == s["caught_by_scenarios"] + s["caught_only_by_unit_tests"] \
        and s["build_failed"] == 0 and s["no_apply"] == 0 else 1


def merge(args):
    by_name = {}
    seconds = 0.0
    for path in args.merge:
        with open(path) as f:
            data = json.load(f)
        seconds += data["summary"].get("seconds", 0.0)
        for r in data["mutants"]:
            by_name[r["name"]] = r
    # The rule and the reason as the patches say them now (a reason line
    # may have been written after the run); a mutant whose patch is gone
    # leaves the result, which counts the mutants there are.
    for name in sorted(by_name):
        r = by_name[name]
        patch = os.path.join(ROOT, "tests/mutants", name + ".patch")
        if os.path.isfile(patch):
            r["breaks"], r["reason"] = breaks_of(patch), reason_of(patch)
        else:
            print(f"mutants: {name}: no tests/mutants/{name}.patch any more, "
                  "left out of the result")
            del by_name[name]
    results = [by_name[n] for n in sorted(by_name)]
    out = args.json or "result.json"
    s = write_result(out, results, seconds)
    return report(results, s, out)


if __name__ == "__main__":
    sys.exit(main())
