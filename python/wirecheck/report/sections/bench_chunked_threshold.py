"""The chunked_threshold benchmark (bench/chunked_threshold): sender CPU per
chunked response, copy + send against MSG_MORE + sendmsg, and three sends
against one sendmsg, per body size: the measurement behind
RS_HTTP_COPY_MAX (docs/ARCHITECTURE.md, chunked). The report does not run
it; `python3 -m wirecheck.report.render chunked_threshold FILE` shows it."""
from __future__ import annotations

from ..fmt import md_table

NAME = "chunked_threshold"

# The ways, as the bench names them in its JSON, with their column titles.
WAYS = {"copy": "copy + send", "iov": "MSG_MORE + sendmsg",
        "sep": "separate: 3 sends", "one": "one sendmsg"}


def _cell(row: dict, way: str) -> str:
    lo, hi = row[f"{way}_block_us"]
    return f"{row[f'{way}_us']:.2f} [{lo:.2f}, {hi:.2f}]"


def _fixed_way(ct: dict, row: dict) -> str:
    """What the fixed strategy does at this size: copy up to copy_max."""
    return "copy" if row["response"] <= ct["copy_max"] else "iov"


def markdown(report: dict) -> list[str]:
    ct = report["bench"].get(NAME)
    if not ct:
        return []
    L = ["", "## Chunked: copy + send against MSG_MORE + sendmsg", "",
         f"Command: `{' '.join(ct['command'])}`", "",
         f"Sender CPU µs per response (thread CPU time, user + kernel), medians of "
         f"{ct['blocks']} blocks of {ct['rounds']} responses per way, interleaved; TCP "
         f"127.0.0.1, TCP_NODELAY. {ct['cpus']} CPUs, load average "
         f"{ct['load_average_start']:.2f} at the start and {ct['load_average_end']:.2f} "
         f"at the end.", ""]
    rows = []
    for r in ct["rows"]:
        rows.append([str(r["body"]), str(r["response"]), _cell(r, "copy"), _cell(r, "iov"),
                     f"{r['copy_us'] / r['iov_us']:.2f}", _cell(r, "sep"), _cell(r, "one"),
                     f"{r['sep_us'] / r[_fixed_way(ct, r) + '_us']:.2f}"])
    L += md_table(["body", "response", f"{WAYS['copy']} [block min, max]",
                   f"{WAYS['iov']} [block min, max]", "copy/iov",
                   f"{WAYS['sep']} [block min, max]", f"{WAYS['one']} [block min, max]",
                   "separate/fixed"], rows, "rrrrrrrr")
    if ct["crossover_body"] is None:
        L += ["", "Copying is cheaper up to the largest size measured."]
    else:
        L += ["", f"MSG_MORE + sendmsg is cheaper from a {ct['crossover_body']}-byte body on "
                  "(and at every larger size measured)."]
    return L
