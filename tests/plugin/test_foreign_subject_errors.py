"""A foreign subject of one's own (--wirecheck-subject PATH) that goes wrong,
and its differences file's mistakes (docs/subjects.md).

What is asserted, and why it can fail:
- a subject that crashed, was killed or stopped with a fatal error, where
  the reference stack ends cleanly, fails its item saying so, with the
  subject's stderr, and proposes no REASON line (before: the plugin threw
  wirecheck's stderr away and asked for the crash to be recorded as an
  `exit` difference);
- every failure of a foreign item shows wirecheck's stderr as a section;
- a `wirecheck run` whose stdout is not JSON fails the item with a message,
  not a JSONDecodeError traceback.
"""
import os
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def wirecheck_path() -> Path:
    return Path(os.environ.get("WIRECHECK_BIN") or REPO / "build" / "bin" / "wirecheck")

OWN = """
behaviour batching
peer read at checkpoint 1
task
  write "first\\n"
  write "second\\n"
  checkpoint
  end
"""

# Reads the script (fd 3) up to its end, then does BODY.
SUBJECT = """#!/usr/bin/python3
import os, signal, sys
d = b""
while not d.endswith(b"run\\n"):
    chunk = os.read(3, 65536)
    if not chunk:
        break
    d += chunk
{body}
"""


def subject(tmp: Path, name: str, body: str) -> Path:
    p = tmp / f"{name}.py"
    p.write_text(SUBJECT.format(body=textwrap.dedent(body).strip()))
    p.chmod(0o755)
    return p


def own_suite(suite):
    suite.scenario("writes", OWN)
    (suite.path / "s" / "subjects").mkdir()
    suite.update("s/writes.wcs")


def failure_text(res) -> str:
    out = res.stdout.str()
    assert res.ret == 1, out
    return out


def test_a_subject_that_exits_with_an_error_is_not_a_difference(suite):
    own_suite(suite)
    crash = subject(suite.path, "crash", 'raise RuntimeError("my stack blew up")')
    out = failure_text(suite.run("s/writes.wcs", f"--wirecheck-subject={crash}"))
    assert "subject crash exited with status 1" in out, out
    assert "ends the scenario cleanly" in out and "not a difference to record" in out, out
    # the subject's own traceback, through wirecheck's stderr
    assert "RuntimeError: my stack blew up" in out, out
    assert "REASON" not in out and "does not explain" not in out, out


def test_a_subject_printing_bytes_that_are_not_utf8_is_still_reported(suite):
    # The subject's stdout goes to wirecheck's stderr; a strict decode of it
    # raised UnicodeDecodeError in the runner, a traceback instead of the
    # report (review of this change).
    own_suite(suite)
    crash = subject(suite.path, "latin", 'os.write(1, b"caf\\xe9 \\xff\\n"); raise RuntimeError("after the bytes")')
    out = failure_text(suite.run("s/writes.wcs", f"--wirecheck-subject={crash}"))
    assert "subject latin exited with status 1" in out, out
    assert "RuntimeError: after the bytes" in out, out
    assert "UnicodeDecodeError" not in out, out


def test_a_subject_killed_by_a_signal_is_reported_with_it(suite):
    own_suite(suite)
    abort = subject(suite.path, "abort", 'sys.stderr.write("about to abort\\n"); sys.stderr.flush(); os.abort()')
    out = failure_text(suite.run("s/writes.wcs", f"--wirecheck-subject={abort}"))
    assert "subject abort was killed by SIGABRT" in out, out
    assert "about to abort" in out, out
    assert "REASON" not in out, out


def test_a_subject_fatal_error_is_reported_with_its_message(suite):
    own_suite(suite)
    fatal = subject(suite.path, "fatal", """
        os.write(4, b"fatal my stack could not create its epoll instance\\n")
        os._exit(2)
    """)
    out = failure_text(suite.run("s/writes.wcs", f"--wirecheck-subject={fatal}"))
    assert ("subject fatal stopped with a fatal error: my stack could not create its "
            "epoll instance") in out, out
    assert "REASON" not in out, out


def test_every_failure_of_a_foreign_item_shows_wirecheck_stderr(suite, tmp_path):
    # A subject that runs the scenario as the reference stack does (it is
    # the reference stack, behind a wrapper that talks on stderr); its
    # differences file lists a difference the run does not show: the item
    # fails as stale, and the section shows what the subject said.
    own_suite(suite)
    wrapper = suite.path / "mine.sh"
    wrapper.write_text("#!/bin/sh\necho 'hello from my stack' >&2\n"
                       f"exec {wirecheck_path().parent / 'refstack-subject'} \"$@\"\n")
    wrapper.chmod(0o755)
    (suite.path / "s" / "subjects" / "mine.differences").write_text(
        "writes exit 000000000000 a difference it does not show\n")
    out = failure_text(suite.run("s/writes.wcs", f"--wirecheck-subject={wrapper}"))
    assert "no longer shows" in out, out
    assert "wirecheck stderr" in out and "hello from my stack" in out, out


def test_a_trace_that_is_not_json_fails_the_item_with_a_message(suite):
    # A wirecheck whose `run` prints something else than a trace on stdout
    # (a subject writing on the harness's stdout did that): the other
    # commands are the real binary's.
    own_suite(suite)
    fake = suite.path / "fake-wirecheck"
    fake.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        if [ "$1" = run ]; then
            echo 'I do not speak the protocol'
            echo 'wirecheck run: warning: something about the subject' >&2
            exit 0
        fi
        exec {wirecheck_path()} "$@"
        """))
    fake.chmod(0o755)
    mine = subject(suite.path, "mine", "pass")
    out = failure_text(suite.run("s/writes.wcs", f"--wirecheck-subject={mine}",
                                 f"--wirecheck-bin={fake}"))
    assert "wirecheck run's stdout is not a JSON trace" in out, out
    assert "'I do not speak the protocol'" in out, out
    assert "warning: something about the subject" in out, out
    assert "JSONDecodeError" not in out and "Traceback" not in out, out


# ------------------------------------------------- the differences file

def differences():
    import sys
    sys.path.insert(0, str(REPO / "python"))
    from wirecheck import differences as D
    return D


REASONS = ("reason send-per-write each write goes to the kernel in its call\n"
           "reason own-queue the queue is the stack's own\n")


def test_a_misspelt_reason_name_is_an_error_with_its_line(tmp_path):
    D = differences()
    path = tmp_path / "mine.differences"
    # one word naming no reason line: a typo, not the reason's text
    with pytest.raises(D.DifferencesError) as e:
        D.parse(REASONS + "a/b peer 0123456789ab send-per-wirte\n", path)
    assert str(e.value).startswith(f"{path}:3: no reason named 'send-per-wirte'"), e.value
    # a + list with one unknown name (it was taken for the text itself)
    with pytest.raises(D.DifferencesError) as e:
        D.parse(REASONS + "\n# c\na/b peer 0123456789ab own-queue+send-per-wirte\n", path)
    assert str(e.value).startswith(f"{path}:5: no reason named 'send-per-wirte'"), e.value
    # names that exist, and a text of its own (it has spaces), are reasons
    t = D.parse(REASONS + "a/b peer 0123456789ab send-per-write+own-queue\n"
                          "a/b events * the stack closes a task later\n"
                          "a/b queue * own-queue\n", path)
    assert [e.reason for e in t.entries] == [
        "each write goes to the kernel in its call Also: the queue is the stack's own",
        "the stack closes a task later", "the queue is the stack's own"]


def test_the_bundled_differences_files_name_their_reasons():
    D = differences()
    files = sorted((REPO / "scenarios" / "subjects").glob("*.differences"))
    assert files
    for f in files:
        assert D.load(f).entries, f


MATRIX = """
behaviour queue
matrix clamp 7 4096
task
  write 100
  end
"""


def test_a_misspelt_scenario_or_profile_in_the_differences_file_is_reported(suite):
    # Before, an entry of a scenario that never runs was never looked at:
    # 'batching/several-write' or '::clamp=8' explained nothing, silently.
    own_suite(suite)
    suite.scenario("big", MATRIX, folder="s/queue")
    mine = subject(suite.path, "mine", 'raise SystemExit("not run: the file is checked first")')
    diffs = suite.path / "s" / "subjects" / "mine.differences"
    cases = [("writ exit * why\n", "mine.differences:2: no scenario 'writ' (no writ.wcs below"),
             ("queue/big::clamp=8 exit * why\n",
              "mine.differences:2: no profile 'clamp=8' in scenario 'queue/big' "
              "(its profiles: clamp=7, clamp=4096)"),
             ("queue/big exit * why\n",
              "mine.differences:2: no profile given for scenario 'queue/big'"),
             ("writes::clamp=7 exit * why\n",
              "mine.differences:2: no profile 'clamp=7': scenario 'writes' has no matrix")]
    for line, message in cases:
        diffs.write_text("reason why a reason\n" + line)
        out = failure_text(suite.run("s/writes.wcs", f"--wirecheck-subject={mine}"))
        assert "the differences file cannot be read" in out and message in out, (line, out)
        assert "not run" not in out, out
    # Entries that name what exists (and `*`) pass the check: the subject runs.
    diffs.write_text("reason why a reason\nwrites peer * why\nqueue/big::clamp=7 exit * why\n"
                     "* queue * why\n")
    out = failure_text(suite.run("s/writes.wcs", f"--wirecheck-subject={mine}"))
    assert "cannot be read" not in out and "not run: the file is checked first" in out, out


def test_the_bundled_differences_files_name_existing_scenarios_and_profiles():
    D = differences()
    from wirecheck import runner
    binary = wirecheck_path()
    if not binary.exists():
        pytest.skip(f"{binary} is not built")

    def profiles_of(wcs):
        return [p.id for p in runner.profiles(runner.check(str(wcs), binary))]

    for f in sorted((REPO / "scenarios" / "subjects").glob("*.differences")):
        D.check_scenarios(D.load(f), profiles_of)


def test_without_a_differences_file_the_nearest_subjects_folder_is_proposed(tmp_path):
    D = differences()
    root = tmp_path / "scenarios"
    (root / "subjects").mkdir(parents=True)
    (root / "subjects" / "other.differences").write_text("")
    (root / "batching").mkdir()
    wcs = root / "batching" / "x.wcs"
    wcs.write_text("")
    # Before: batching/subjects/mine.differences, key 'x', though the suite
    # keeps its files in scenarios/subjects/.
    assert D.find_file(wcs, "mine") == (root / "subjects" / "mine.differences", "batching/x")
    # A subject's existing file wins over a nearer subjects/ folder without it.
    (root / "batching" / "subjects").mkdir()
    (root / "subjects" / "mine.differences").write_text("")
    assert D.find_file(wcs, "mine") == (root / "subjects" / "mine.differences", "batching/x")
    assert D.find_file(wcs, "new") == (root / "batching" / "subjects" / "new.differences", "x")
    # No subjects/ folder anywhere: the scenario's own folder.
    lone = tmp_path / "lone" / "y.wcs"
    lone.parent.mkdir()
    lone.write_text("")
    assert D.find_file(lone, "mine") == (lone.parent / "subjects" / "mine.differences", "y")


def test_the_plugin_asks_for_the_file_in_the_nearest_subjects_folder(suite):
    # The golden of a scenario that sent other bytes (written by the
    # reference stack), then the scenario as it is now: the reference stack
    # behind a wrapper, as a foreign subject, differs in its peer bytes.
    own_suite(suite)
    suite.scenario("x", OWN.replace("first", "FIRST"), folder="s/batching")
    suite.update("s/batching/x.wcs")
    suite.scenario("x", OWN, folder="s/batching")
    wrapper = suite.path / "mine.sh"
    wrapper.write_text(f"#!/bin/sh\nexec {wirecheck_path().parent / 'refstack-subject'} \"$@\"\n")
    wrapper.chmod(0o755)
    out = failure_text(suite.run("s/batching/x.wcs", f"--wirecheck-subject={wrapper}"))
    assert ("in a way s/subjects/mine.differences does not explain (there is no such file "
            "yet: create it)") in out, out
    assert [l.split()[:2] for l in out.splitlines() if l.strip().endswith(" REASON")] == \
        [["batching/x", "peer"]], out


def test_the_ci_workflow_installs_the_peers_of_the_bundled_scenarios():
    # docs/ci.md's workflow could not collect the chunked/ and ws/ scenarios
    # ("peer exec: no program 'curl'"), and their Python peers import h11
    # and websockets, which it did not install either.
    import re
    import sys
    text = (REPO / "docs" / "ci.md").read_text()
    m = re.search(r"apt-get install (.*?)\n\n", text, re.S)
    installed = {w for w in m.group(1).replace("\\", " ").split() if not w.startswith("-")}
    needed = set()
    for wcs in (REPO / "scenarios").glob("*/*.wcs"):
        for line in wcs.read_text().splitlines():
            if not line.startswith("peer exec "):
                continue
            program = line.split()[2]
            if Path(program).name.startswith("python3"):
                for names in re.findall(r"(?:^|\\n|\")import ([\w, ]+)", line):
                    needed |= {f"python3-{n.strip()}" for n in names.split(",")
                               if n.strip() not in sys.stdlib_module_names}
            else:
                needed.add(Path(program).name)
    assert {"curl", "python3-h11", "python3-websockets"} <= needed, needed
    assert needed <= installed, f"docs/ci.md's workflow does not install {needed - installed}"
