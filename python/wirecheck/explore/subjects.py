"""What the model allows a foreign subject beyond the rules every stack
keeps: one table, read by model.py, each entry with the subject's
documented semantics that make it necessary (docs/subjects.md; the reasons
in scenarios/subjects/NAME.differences). A subject not listed, the
reference stack included, gets none.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Allowance:
    # `close ... bytes_written=N` may be below what the peer got on a
    # connection that failed or was destroyed (never above it): the
    # subject's count is a sample the runtime lets it take, which lags the
    # kernel there.
    written_may_lag_on_failure: bool = False


# node and libuv: the count is sampled at the connection's events and
# frozen at the first write error, since libuv drops what it still holds
# then and does not say how much of the failed write the kernel took
# (docs/subjects.md, "Bytes written"; taken() in subjects/node/subject.js
# and subjects/libuv/subject.c): under a clamp the sends between the last
# event and the failing one are not counted.
_LAGS = Allowance(written_may_lag_on_failure=True)

ALLOWANCES = {
    "node": _LAGS,
    "node-upgrade": _LAGS,
    "libuv": _LAGS,
    # Bun's node:net has no writeQueueSize: writableLength counts a write
    # whole until Bun's native socket wrote all of it (bun.differences and
    # bun-upgrade.differences, reason count-whole-write; docs/subjects.md,
    # "Bun").
    "bun": _LAGS,
    "bun-upgrade": _LAGS,
}


def allowance(subject: Optional[str]) -> Allowance:
    """The subject's allowances, by the name `--subject` was given."""
    return ALLOWANCES.get(os.path.basename(subject or ""), Allowance())
