"""The pending-write queue (`queue`): its figure is the bytes the
queue moved (memmove of the unsent tail), 0 for the cursor."""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

from ..fmt import fmt_int

KEY_LABEL = "bytes moved"
KEY_FIELD = "bytes_moved"
KEY_UNIT = "bytes"
PLOT_TITLE = "Bytes moved by the queue"


def summary(head: str, with_both: Sequence[tuple[dict, dict]]) -> Optional[str]:
    """Fixed moving 0 bytes, legacy moving more, and the most it moved."""
    fixed_zero = sum(1 for _, p in with_both if p["fixed"]["bytes_moved"] == 0)
    more = [(s, p) for s, p in with_both
            if (p["legacy"]["bytes_moved"] or 0) > (p["fixed"]["bytes_moved"] or 0)]
    line = (head + f"queue bytes moved: fixed 0 in {fixed_zero} of {len(with_both)} "
            f"profiles; legacy more than fixed in {len(more)} of {len(with_both)}")
    if more:
        s, p = max(more, key=lambda sp: sp[1]["legacy"]["bytes_moved"])
        line += (f", up to {fmt_int(p['legacy']['bytes_moved'])} bytes "
                 f"(`{Path(s['path']).with_suffix('')}` {p['id'] or '-'})")
    return line + "."
