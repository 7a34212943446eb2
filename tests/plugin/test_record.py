"""--wirecheck-record DIR: each plain run's trace, for the report's
--from-record (python/wirecheck/record.py)."""
import json

from wirecheck import record

SCENARIO = """
    legacy batch=off must-match except=syscalls,queue
    matrix clamp 1 7
    task
      write 300 cb
      end
"""


def test_every_run_is_recorded_with_its_trace_and_an_old_record_goes(suite):
    wcs = suite.scenario("one", SCENARIO)
    suite.update()
    folder = suite.path / "rec"
    folder.mkdir()
    stale = folder / ("0" * 32 + ".json")
    stale.write_text("{}")
    res = suite.run(f"--wirecheck-record={folder}")
    assert res.ret == 0, res.stdout.str()
    assert not stale.exists()
    files = sorted(p.name for p in folder.iterdir())
    # 2 profiles x fixed and legacy
    assert len(files) == 4
    for pid in ("clamp=1", "clamp=7"):
        variants = []
        for side in ("fixed", "legacy"):
            entry = json.loads((folder / record.key(wcs, pid, side)).read_text())
            assert (entry["profile"], entry["side"]) == (pid, side)
            assert entry["trace"]["peer"]["bytes"] == 300
            assert entry["flags"] == ["--clamp-send", pid.split("=")[1]]
            variants.append(entry["trace"]["variant"])
        assert variants[0] != variants[1]


def test_a_record_of_runs_that_are_not_plain_is_refused(suite):
    suite.scenario("one", SCENARIO)
    res = suite.run(f"--wirecheck-record={suite.path / 'rec'}", "--wirecheck-repeat", "2")
    assert res.ret == 4
    assert "--wirecheck-record records plain runs" in res.stderr.str()
