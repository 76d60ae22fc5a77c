"""``Bookkeeper``: the interface of the store's per-page bookkeeping.

The store has one implementation, in C (``NativeBook``, store/native.py over native/store.c); a
pure-Python one lives in tests/support/book_oracle.py as the oracle the C is compared with. A store
takes either through ``SwapStore(..., book=factory)`` (default: ``NativeBook``). Arrays are the
store's ``StoreState`` per-handle arrays and rooms (store/state.py documents their layout);
handles are int64 arrays, C-contiguous.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

#: ``fill``'s ``which``: the per-handle array set
BUFFER_OF, IN_FLIGHT = 5, 6


class Bookkeeper(Protocol):
    """Per-page bookkeeping on one store's state. ``calls`` counts the calls made (tests assert the
    implementation they meant ran)."""

    calls: int

    def prepare(self, ids: np.ndarray) -> tuple[int, np.ndarray | None, int, int, int]:
        """Classify a batch: (status, handles, ids not held, new pages, buffered pages). Status 0:
        classified (handles: -1 for ids not held); -1 a negative id, -2 an id beyond the id map's
        direct array, -3 a repeated id, each for the first such id (then only the status).
        Changes nothing; the batch becomes the prepared one."""
        ...

    def insert(self, ids: np.ndarray, h: np.ndarray, fresh: int) -> bool:
        """Hand the ``fresh`` ids with ``h < 0`` new handles (in place in ``h``, the id map
        updated) when the id map can without reusing handles or growing; False, nothing done,
        otherwise (the caller uses ``IdMap.insert``)."""
        ...

    def fill(self, which: int, h: np.ndarray, value: int) -> None:
        """``buffer_of[h] = value`` (which = ``BUFFER_OF``) or ``in_flight[h] = value`` (``IN_FLIGHT``)."""
        ...

    def discard(self, ids: np.ndarray, remove: bool) -> bool:
        """``SwapStore.discard`` of page ids held in the id map's direct array (others ignored):
        each one's copies dropped (device slot, write buffer, read-ahead), its lost flag cleared,
        the live count, lost count and read-ahead waste moved; ``remove``: the id forgotten and its
        handle freed (pushed on the free stack in the order given; an id given twice is found the
        first time only), else ``ids`` are distinct and stay held. False, nothing changed, when an
        id lies beyond the direct array."""
        ...

    def commit(self, h: np.ndarray, first_slot: int, buffered: bool) -> None:
        """Map ``h`` to consecutive slots from ``first_slot`` (the old copies invalidated),
        ``in_flight[h] = False`` and, ``buffered``, ``buffer_of[h] = 0``."""
        ...
