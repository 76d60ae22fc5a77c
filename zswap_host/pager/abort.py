"""The pager's abort timer: a fault that waits this long for the resolver ends the process with a
message instead of hanging (``ZSWAP_PAGER_ABORT_S``)."""

from __future__ import annotations

import os

ABORT_ENV = "ZSWAP_PAGER_ABORT_S"
# a GIL deadlock never ends; a resolver legitimately away this long is not plausible: one backend call
# of up to 256 pages (the largest batch) takes well under a second on the host and a few seconds in the
# TCG guest (~12 ms a page), so 60 s is over 10x the slowest call seen and still ends a deadlock in a minute
DEFAULT_ABORT_S = 60.0


def abort_seconds() -> float:
    """The abort timer from ``ZSWAP_PAGER_ABORT_S`` (seconds, 0: off; unset: 60)."""
    raw = os.environ.get(ABORT_ENV, "").strip()
    if not raw:
        return float(DEFAULT_ABORT_S)
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"{ABORT_ENV}={raw!r}: expected seconds >= 0 (0 turns the abort timer off)")
    return value
