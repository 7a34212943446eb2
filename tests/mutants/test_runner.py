"""scripts/mutants.py's parts that need no build: the patch's header lines,
that every patch applies to the tree, the order of the scenario folders, the scratch cleaned after a pass, and a
merge that takes the reasons from the patches as they are now. The runner
as a whole runs in CI on its fixed sample (scripts/test.sh)."""
import importlib.util
import json
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("mutants_runner", REPO / "scripts" / "mutants.py")
runner = importlib.util.module_from_spec(spec)
spec.loader.exec_module(runner)

PATCH = """# breaks: a rule
# not by scenarios: a reason
diff --git a/reference/ws.c b/reference/ws.c
--- a/reference/ws.c
+++ b/reference/ws.c
@@ -1 +1 @@
-# not by scenarios: inside the diff, not a header
+x
"""


def test_header_lines(tmp_path):
    p = tmp_path / "m.patch"
    p.write_text(PATCH)
    assert runner.breaks_of(str(p)) == "a rule"
    assert runner.reason_of(str(p)) == "a reason"
    assert runner.files_of(str(p)) == ["reference/ws.c"]
    p.write_text(PATCH.replace("# not by scenarios: a reason\n", ""))
    assert runner.reason_of(str(p)) == ""


def test_every_patch_has_its_rule():
    for p in (REPO / "tests" / "mutants").glob("*.patch"):
        assert runner.breaks_of(str(p)), p.name
        assert runner.files_of(str(p)), p.name


def test_every_patch_applies_to_the_tree():
    """A patch whose context the code moved away from is a mutant the pass
    no longer runs ("no-apply", not counted): 24 of the 123 had rotted that
    way unseen, since CI runs only a sample of three. Each must apply to
    the tree as it is (remade where the code now holds the rule)."""
    stale = []
    for p in sorted((REPO / "tests" / "mutants").glob("*.patch")):
        r = subprocess.run(["git", "apply", "--check", str(p)], cwd=REPO,
                           capture_output=True, text=True)
        if r.returncode != 0:
            stale.append(p.name)
    assert not stale, f"{len(stale)} patches no longer apply (remake them): {stale}"


def test_scenario_folders_put_the_likely_one_first(tmp_path):
    for d in ["batching", "chunked", "rules", "ws"]:
        (tmp_path / "scenarios" / d).mkdir(parents=True)
    every = ["scenarios/batching", "scenarios/chunked", "scenarios/rules", "scenarios/ws"]
    for files, first in [(["reference/ws_frame.c"], "ws"), (["reference/utf8.c"], "ws"),
                         (["reference/chunk.c"], "chunked"), (["reference/http.c"], "chunked"),
                         (["reference/socket.c"], "rules"), ([], "rules")]:
        order = runner.scenario_folders(str(tmp_path), files)
        assert order[0] == "scenarios/" + first
        assert order[1] == ("scenarios/batching" if first == "rules" else "scenarios/rules")
        assert sorted(order) == every  # each folder once


def test_clean_scratch_keeps_logs_and_result(tmp_path):
    (tmp_path / "build" / "bin").mkdir(parents=True)
    (tmp_path / "build" / "bin" / "wirecheck").write_text("x")
    (tmp_path / "reference").mkdir()
    (tmp_path / "README.md").write_text("x")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "m.log").write_text("x")
    (tmp_path / "result.json").write_text("{}")
    runner.clean_scratch(str(tmp_path), str(tmp_path / "result.json"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["logs", "result.json"]
    assert (tmp_path / "logs" / "m.log").exists()


def test_merge_later_file_wins_and_reasons_come_from_the_patches(tmp_path):
    def res(status, reason=""):
        return {"name": "batch-outside-task", "breaks": "old", "files": [],
                "reason": reason, "status": status, "by": "", "seconds": 1.0}
    a, b, out = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "all.json"
    a.write_text(json.dumps({"summary": {"seconds": 10.0}, "mutants": [res("missed")]}))
    b.write_text(json.dumps({"summary": {"seconds": 5.0}, "mutants": [res("unit")]}))
    p = subprocess.run([sys.executable, str(REPO / "scripts" / "mutants.py"), "--merge",
                        str(a), str(b), "--json", str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    data = json.loads(out.read_text())
    (m,) = data["mutants"]
    assert m["status"] == "unit"
    patch = REPO / "tests" / "mutants" / "batch-outside-task.patch"
    assert m["reason"] == runner.reason_of(str(patch)) != ""
    assert m["breaks"] == runner.breaks_of(str(patch))
    assert data["summary"]["seconds"] == 15.0
    assert data["summary"]["kill_rate"] == 100.0


def test_merge_leaves_out_a_mutant_whose_patch_is_gone(tmp_path):
    """A patch removed (its code rewritten, the mutant replaced) takes its
    old result with it: the result counts the mutants there are."""
    def res(name):
        return {"name": name, "breaks": "x", "files": [], "reason": "",
                "status": "scenarios", "by": "", "seconds": 1.0}
    a, out = tmp_path / "a.json", tmp_path / "all.json"
    a.write_text(json.dumps({"summary": {"seconds": 2.0},
                             "mutants": [res("batch-outside-task"), res("no-such-mutant")]}))
    p = subprocess.run([sys.executable, str(REPO / "scripts" / "mutants.py"), "--merge",
                        str(a), "--json", str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "no-such-mutant: no tests/mutants/no-such-mutant.patch any more" in p.stdout
    assert [m["name"] for m in json.loads(out.read_text())["mutants"]] == ["batch-outside-task"]
