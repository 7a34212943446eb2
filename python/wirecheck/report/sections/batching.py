"""Write batching (`batching`): its figure is the sends; batch=on
makes at most two per task and connection where batch=off makes one per
write."""
from __future__ import annotations

from typing import Optional, Sequence

from .generic import KEY_FIELD, KEY_LABEL, KEY_UNIT, PLOT_TITLE, key_line

__all__ = ["KEY_LABEL", "KEY_FIELD", "KEY_UNIT", "PLOT_TITLE", "summary"]


def summary(head: str, with_both: Sequence[tuple[dict, dict]]) -> Optional[str]:
    return key_line(head, with_both, KEY_LABEL, KEY_FIELD)
