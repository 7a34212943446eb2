"""The report's plots drawn in worker processes (plots.Plotter): the same
files, byte for byte, as one process draws; a plot that fails is named; the
process-wide cache of parsed math text (figure.py) changes no byte; and the
report's --record-lock waits for the suite that holds it."""
import copy
import fcntl
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

pytest.importorskip("matplotlib", reason="python3-matplotlib is not installed")

from wirecheck.report import cli, plots  # noqa: E402

SAMPLE = REPO / "reports" / "sample" / "report.json"
# A few profiles of the committed sample: log axes with large counts (the
# queue's end-large), a batching and a half-open scenario.
STEMS = ("queue-end-large", "batching-several-writes", "half-open-per-connection")


@pytest.fixture(scope="module")
def small_report() -> dict:
    sample = json.loads(SAMPLE.read_text())
    report = copy.deepcopy(sample)
    report["scenarios"] = [s for s in sample["scenarios"] if s["stem"] in STEMS]
    assert len(report["scenarios"]) == len(STEMS)
    sweep = sample["sweep"]
    keep = {s["path"] for s in sweep["scenarios"][:4]}
    report["sweep"] = dict(sweep, scenarios=[s for s in sweep["scenarios"] if s["path"] in keep])
    return report


def draw(report: dict, out: Path, workers: int, extra=()) -> list[str]:
    out.mkdir()
    jobs, files = plots.plot_jobs(copy.deepcopy(report), out, extra)
    plots.run_plots(jobs, lambda m: None, workers=workers)
    return files


def test_workers_draw_the_same_files_as_one_process(small_report, tmp_path):
    one = draw(small_report, tmp_path / "one", 1, ("png",))
    two = draw(small_report, tmp_path / "two", 2, ("png",))
    assert one == two and len(one) >= 6
    assert any(f.startswith("sweep-") for f in one)
    names = sorted(p.name for p in (tmp_path / "one").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "two").iterdir())
    assert len(names) == 2 * len(one)  # an SVG and a PNG each
    for name in names:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name


def _fails(path: Path) -> None:
    raise ValueError("no data")


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failed_plot_is_named_and_the_others_are_drawn(small_report, tmp_path, workers):
    jobs, files = plots.plot_jobs(copy.deepcopy(small_report), tmp_path, ())
    jobs, files = jobs[:2], files[:2]
    jobs.insert(1, (_fails, (tmp_path / "broken.svg",)))
    with pytest.raises(plots.PlotError) as e:
        plots.run_plots(jobs, lambda m: None, workers=workers)
    assert "1 plot(s) failed" in str(e.value)
    assert "broken.svg:" in str(e.value) and "ValueError: no data" in str(e.value)
    assert all((tmp_path / f).is_file() for f in files)


def test_a_plot_handed_in_twice_is_drawn_once(small_report, tmp_path):
    jobs = plots.plot_jobs(copy.deepcopy(small_report), tmp_path, ())[0][:3]
    logged = []
    with plots.Plotter(2, logged.append) as plotter:
        plotter.submit(jobs[:2])
        plotter.submit(jobs)
        plotter.wait()
    assert logged == ["plots: 3 in 2 processes"]


SHARED_PARSES = """
import sys
from pathlib import Path
sys.path.insert(0, {python!r})
import matplotlib.mathtext as mt
own = mt.MathTextParser._parse_cached
from wirecheck.report import figure
plt = figure.pyplot()
assert getattr(mt.MathTextParser._parse_cached, "wirecheck_shared", False)
out = Path({out!r})
for name in ("shared-1", "shared-2", "own"):
    if name == "own":
        mt.MathTextParser._parse_cached = own
    fig, ax = plt.subplots()
    ax.set_yscale("log")
    ax.bar(range(3), [1, 300, 90000])
    figure.save(fig, out / (name + ".svg"), ("png",))
    plt.close(fig)
"""


def test_shared_math_parses_change_no_byte(tmp_path):
    """The log axis's labels (math text) parsed once for the process give the
    same files as matplotlib's own cache per figure."""
    code = SHARED_PARSES.format(python=str(REPO / "python"), out=str(tmp_path))
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    for ext in ("svg", "png"):
        own = (tmp_path / f"own.{ext}").read_bytes()
        assert b"10" in own or ext == "png"
        assert (tmp_path / f"shared-1.{ext}").read_bytes() == own
        assert (tmp_path / f"shared-2.{ext}").read_bytes() == own


def test_the_report_waits_for_the_record_lock(tmp_path):
    """--record-lock: the report reads the record only when the suite that
    holds the lock is over; here the lock is held by this test, and the
    report must still be waiting, with no report.md, until it lets go."""
    lock = tmp_path / "record.lock"
    record = tmp_path / "record"
    out = tmp_path / "out"
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        proc = subprocess.Popen(
            [sys.executable, "-m", "wirecheck.report", "--no-bench", "--no-per-connection",
             "--paths", str(REPO / "scenarios/batching/several-writes.wcs"),
             "--from-record", str(record), "--record-lock", str(lock), "--out", str(out)],
            env={"PYTHONPATH": str(REPO / "python"), "PATH": "/usr/bin:/bin"},
            stderr=subprocess.PIPE, text=True)
        # The report says it waits, then waits: its stderr line is the sync.
        line = proc.stderr.readline()
        while "waiting for" not in line and line:
            line = proc.stderr.readline()
        assert "waiting for" in line
        assert proc.poll() is None and not (out / "report.md").exists()
        record.mkdir()  # what the suite makes while it holds the lock
    rest = proc.communicate(timeout=120)[1]
    assert proc.returncode == 0, rest
    assert (out / "report.md").is_file()


def test_record_lock_needs_from_record(capsys):
    assert cli.main(["--no-bench", "--record-lock", "/nonexistent.lock", "-q"]) == 2
    assert "--record-lock goes with --from-record" in capsys.readouterr().err
