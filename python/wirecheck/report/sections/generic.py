"""The section of a behaviour without a module of its own: its figure is
the sends (send, sendto, sendmsg, write, writev), and its summary line
counts the profiles where fixed sends fewer, the same, more.

A behaviour section module holds: KEY_LABEL (the figure's name in the
tables), KEY_FIELD (the comparison it reads: a key of a profile's
`comparison`, or `syscalls:KIND`), KEY_UNIT (the plot's axis: `bytes` or a
count's unit), PLOT_TITLE (the middle panel of its profiles' plots) and
summary(head, with_both) (its line in the report's summary, or None)."""
from __future__ import annotations

from typing import Optional, Sequence

from ..derive import key_comparison
from ..fmt import fmt_int, plural

KEY_LABEL = "sends"
KEY_FIELD = "writing_syscalls"
KEY_UNIT = "calls"
PLOT_TITLE = "Sends (send, sendto, sendmsg,\nwrite, writev)"


def key_line(head: str, with_both: Sequence[tuple[dict, dict]], label: str,
             field: str) -> Optional[str]:
    """'<head><label>: fixed fewer in F, the same in S, more in M of N
    profiles; X fixed against Y legacy in all.'; None without a pair."""
    pairs = [(k["fixed"], k["legacy"]) for k in
             (key_comparison(p, field) for _, p in with_both)
             if k["fixed"] is not None and k["legacy"] is not None]
    if not pairs:
        return None
    fewer = sum(1 for f, l in pairs if f < l)
    same = sum(1 for f, l in pairs if f == l)
    more = len(pairs) - fewer - same
    return (head + f"{label}: fixed fewer in {fewer}, the same in {same}, more in "
            f"{more} of {plural(len(pairs), 'profile')}; "
            f"{fmt_int(sum(f for f, _ in pairs))} fixed against "
            f"{fmt_int(sum(l for _, l in pairs))} legacy in all.")


def summary(head: str, with_both: Sequence[tuple[dict, dict]]) -> Optional[str]:
    return key_line(head, with_both, KEY_LABEL, KEY_FIELD)
