"""Chunked HTTP responses (`chunked`): its figure is the sends
(send, sendmsg): the fixed strategy sends the head and chunk header of a
large final chunk with MSG_MORE, then body and terminator in one sendmsg
(2 calls for 128 KiB), where chunked=separate sends header, body and
terminator apart (3). The bytes on the wire are the same."""
from __future__ import annotations

from typing import Optional, Sequence

from .generic import KEY_FIELD, KEY_LABEL, KEY_UNIT, PLOT_TITLE, key_line

__all__ = ["KEY_LABEL", "KEY_FIELD", "KEY_UNIT", "PLOT_TITLE", "summary"]


def summary(head: str, with_both: Sequence[tuple[dict, dict]]) -> Optional[str]:
    return key_line(head, with_both, KEY_LABEL, KEY_FIELD)
