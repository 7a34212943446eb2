"""The report's sections: one module per behaviour, found through the
behaviour registry, and one per benchmark (python/wirecheck/report/)."""
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

pytest.importorskip("matplotlib", reason="python3-matplotlib is not installed")

from wirecheck import behaviours  # noqa: E402
from wirecheck.report import markdown, sections  # noqa: E402
from wirecheck.report.derive import compare  # noqa: E402


@pytest.mark.parametrize("name", [b.name for b in behaviours.BEHAVIOURS] + ["frobnication", None])
def test_every_behaviour_has_a_section_with_its_interface(name):
    sec = sections.behaviour_section(name)
    b = behaviours.get(name)
    expected = b.section if b and b.section else "generic"
    assert sec.__name__ == f"wirecheck.report.sections.{expected}"
    assert {"KEY_LABEL", "KEY_FIELD", "KEY_UNIT", "PLOT_TITLE", "summary"} <= set(dir(sec))


def test_titles_in_the_report_are_the_registry_titles():
    s = [{"legacy": {"variant": "batch=off"}, "fixed_variant": "batch=on"}]
    assert markdown.behaviour_title("batching", s) == \
        "Write batching (`batching`): fixed `batch=on`, legacy `batch=off`"
    for b in behaviours.BEHAVIOURS:
        assert markdown.behaviour_title(b.name, []) == f"{b.title} (`{b.name}`)"
    assert markdown.behaviour_title(None, []) == "No behaviour declared"


def test_a_behaviour_section_reads_its_own_figure():
    """half_open's figure is epoll_ctl MOD, a registry-less one's the sends."""
    p = {"comparison": {"writing_syscalls": compare(4, 8),
                        "syscalls": {"epoll_ctl.mod": compare(0, 1)}}}
    with_both = [({"path": "x.wcs"}, p)]
    assert sections.behaviour_section("half_open").summary("- H: ", with_both) == (
        "- H: epoll_ctl MOD: fixed fewer in 1, the same in 0, more in 0 of 1 profile; "
        "0 fixed against 1 legacy in all.")
    assert sections.behaviour_section("frobnication").summary("- F: ", with_both) == (
        "- F: sends: fixed fewer in 1, the same in 0, more in 0 of 1 profile; "
        "4 fixed against 8 legacy in all.")


def test_bench_sections_say_not_run():
    report = {"bench": {"ran": False, "runs": {}, "errors": []}, "seed_table": [],
              "scaling": {"bytes_moved": [], "sender_cpu": []}, "per_connection": None,
              "options": {"no_per_connection": True}}
    text = "\n".join(line for sec in sections.BENCH_SECTIONS for line in sec.markdown(report))
    # bytes_moved, sender_cpu, batching, chat, subjects and chunked
    # (per_connection and gate_cost say it their own way)
    assert text.count("Not run (--no-bench).") == 6
    assert "Not run (--no-per-connection)." in text
    assert all(sec.summary(report) == [] for sec in sections.BENCH_SECTIONS)
