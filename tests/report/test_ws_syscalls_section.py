"""The syscalls-per-message table of bench/ws_syscalls.py, rendered by the
report's section (the one renderer; the bench prints it through
wirecheck.report.render)."""
from wirecheck.report.render import render


def cell(median):
    return {"median": median, "min": median, "max": median}


def test_every_side_the_bench_measured_has_its_columns():
    # The chat row carries the loops of sends on both sides; an echo row
    # has no such side, and shows "-" there.
    chat = {"row": "chat, 32 clients (per message in)"}
    for side, writes in (("ref", 0.4), ("ref_send", 8.0), ("node", 32.0), ("bun", 1.0),
                         ("bun_send", 31.1)):
        chat[f"{side}_writes"], chat[f"{side}_reads"] = cell(writes), cell(0.125)
    echo = {"row": "echo 16 B text", "ref_writes": cell(0.19), "ref_reads": cell(0.16),
            "node_writes": cell(1.0), "node_reads": cell(0.03)}
    md = render("ws_syscalls", {"rows": [echo, chat], "rounds": 1, "count": 200,
                                "chat_rounds": 4, "chat_clients": 32})
    header = next(ln for ln in md.splitlines() if ln.startswith("| Row |"))
    assert header == ("| Row | reference: writes | reference, loop of rs_ws_send: writes | "
                      "node + ws: writes | Bun: writes | Bun, loop of ws.send: writes | "
                      "reference: reads | reference, loop of rs_ws_send: reads | "
                      "node + ws: reads | Bun: reads | Bun, loop of ws.send: reads |")
    assert ("| chat, 32 clients (per message in) | 0.400 (0.400-0.400) | 8.000 (8.000-8.000) | "
            "32.000 (32.000-32.000) |") in md
    assert "| echo 16 B text | 0.190 (0.190-0.190) | - | 1.000 (1.000-1.000) | - | - |" in md


def test_no_plot_link_in_a_bench_s_own_tables():
    # render() draws no plot, so the section's link to one is left out.
    md = render("chunked", {"sizes": [8192], "sides": ["fixed", "separate"],
                            "syscalls": {}, "rps": {}})
    assert "![" not in md
