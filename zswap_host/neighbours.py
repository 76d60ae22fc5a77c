"""Fault-around hints: the optional ``neighbours`` method of a ``SwapBackend`` (see ``backend.py``)
and the numpy helpers its implementations share (``SwapStore``: same zone, near the page's slot;
``ConventionalSwap``: the page's aligned swap-slot cluster)."""

from __future__ import annotations

import operator
from typing import Protocol, runtime_checkable

import numpy as np

_NONE = np.zeros(0, np.int64)


@runtime_checkable
class NeighbourHint(Protocol):
    """A backend that can say which stored pages are likely needed with some others (a pager reads
    them ahead in the same ``swap_in``). Optional: callers find it with
    ``getattr(backend, "neighbours", None)`` and read nothing ahead without it."""

    def neighbours(self, page_ids: np.ndarray, limit: int) -> np.ndarray:
        """Up to ``limit`` distinct ids stored by the backend, none of ``page_ids``, most likely
        first (int64). Ids not stored have no neighbours. Changes nothing. ``ValueError`` for
        bad ids or a negative ``limit``."""


def check_limit(limit) -> int:
    """``limit`` as a non-negative int; ``ValueError`` otherwise (bools and floats refused)."""
    try:
        if isinstance(limit, bool):
            raise TypeError
        n = operator.index(limit)
    except TypeError:
        raise ValueError(f"limit must be an integer, not {limit!r}") from None
    if n < 0:
        raise ValueError(f"limit must not be negative, not {n}")
    return n


def slots_near(slots: np.ndarray, lo: np.ndarray, hi: np.ndarray, window: int) -> np.ndarray:
    """The slots within ``window`` of each of ``slots`` and inside its bounds ``[lo, hi)``, nearest
    first over all of them (distance 1 after, 1 before, 2 after, ...; ties in input order), the
    input slots themselves left out. May repeat a slot (callers keep the first)."""
    if slots.size == 0 or window <= 0:
        return _NONE
    d = np.arange(1, window + 1, dtype=np.int64)
    offsets = np.stack([d, -d], axis=1).reshape(-1)           # +1, -1, +2, -2, ...
    cand = slots[None, :] + offsets[:, None]                  # row-major: by distance, then input
    ok = (cand >= lo[None, :]) & (cand < hi[None, :])
    return cand[ok]


def first_distinct(ids: np.ndarray, exclude: np.ndarray, limit: int) -> np.ndarray:
    """The first ``limit`` distinct ``ids`` not in ``exclude``, in their order."""
    ids = ids[~np.isin(ids, exclude)]
    if ids.size == 0:
        return _NONE
    _, first = np.unique(ids, return_index=True)
    return ids[np.sort(first)[:limit]]
