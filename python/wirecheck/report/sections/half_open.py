"""Half-open EOF order (`half_open`): its figure is the poll
changes (epoll_ctl MOD) that poll-first makes for a peer-closed connection
and end-first does not."""
from __future__ import annotations

from typing import Optional, Sequence

from .generic import key_line

KEY_LABEL = "epoll_ctl MOD"
KEY_FIELD = "syscalls:epoll_ctl.mod"
KEY_UNIT = "calls"
PLOT_TITLE = "epoll_ctl MOD"


def summary(head: str, with_both: Sequence[tuple[dict, dict]]) -> Optional[str]:
    return key_line(head, with_both, KEY_LABEL, KEY_FIELD)
