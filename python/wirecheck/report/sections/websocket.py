"""WebSocket framing (`websocket`): its figure is the bytes the
peer received. The legacy (ws=by-kind) sends text that is not UTF-8 decoded
with U+FFFD (`ff 68` grows to `ef bf bd 68`), and its queue stalls behind a
bad call that it took without a check, so the peer gets fewer bytes there
(scenarios/ws/queue-probe)."""
from __future__ import annotations

from typing import Optional, Sequence

from .generic import key_line

KEY_LABEL = "bytes to the peer"
KEY_FIELD = "bytes_delivered"
KEY_UNIT = "bytes"
PLOT_TITLE = "Bytes the peer received"


def summary(head: str, with_both: Sequence[tuple[dict, dict]]) -> Optional[str]:
    return key_line(head, with_both, KEY_LABEL, KEY_FIELD)
