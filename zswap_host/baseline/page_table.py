"""``PageTable``: what ``ConventionalSwap`` knows of each page it holds, and the bytes of its orphans.

Page ids are integers in ``[0, 2**63 - 1]`` (:func:`..store.idmap.as_page_ids`: anything else is a
ValueError before anything changes) and may be sparse: per-page state lives in arrays indexed by a
dense *handle* (:class:`..store.idmap.IdMap`, the store's id map), so memory follows the pages held,
never the largest id. Readahead looks the ids of its window up in that map (an id not held is not
swapped out).
"""

from __future__ import annotations

import numpy as np

from ..store.idmap import IdMap


class PageTable:
    """Per-page state, indexed by handle + 1 (IdMap handle; index 0 is a sentinel for ids not
    held, never written: slot -1, not resident). An id is held while it has a slot or is an
    orphan; discard forgets it (its handle is reused). ``live``: the pages stored.

    An orphan is a page whose slot was freed at its fault (``vm_swap_full``): its bytes are kept
    for a caller that drops it clean, as rows of a pool (``orow``: handle -> row), so a call's
    orphans are stored and read with one copy each way. ``width``: the bytes kept per page."""

    def __init__(self, id_space: int, width: int) -> None:
        self.ids = IdMap(direct=id_space)             # id_space: as StoreConfig.id_space
        self.slot = np.full(1024, -1, np.int64)       # slot (-1: none)
        self.resident = np.zeros(1024, np.bool_)      # swapped in since last swap_out (PTE present)
        self.keep = np.zeros(1024, np.bool_)          # resident and its slot kept in the swap cache
        self.orph = np.zeros(1024, np.bool_)          # resident, slot freed at the fault (vm_swap_full)
        self.orow = np.full(1024, -1, np.int64)
        # a payload-free device keeps a page's first 8 bytes only (devices/fingerprint.py): so does the
        # pool then, else orphans alone would hold the working set's bytes in RAM
        self.width = int(width)
        self.pool = np.empty((0, self.width), np.uint8)
        self.free_rows: list[int] = []                # pool rows not in use
        self.orphans = 0
        self.live = 0

    def index(self, ids: np.ndarray) -> np.ndarray:
        """State index (handle + 1) of each id; 0 for ids not held."""
        return self.ids.lookup(ids) + 1

    def fit(self) -> None:
        """Grow the state arrays to hold every handle handed out (+1 for the sentinel)."""
        need = self.ids.handles + 1
        if need > self.slot.size:
            n = max(need, 2 * self.slot.size)
            slot = np.full(n, -1, np.int64)
            slot[:self.slot.size] = self.slot
            res = np.zeros(n, np.bool_)
            res[:self.resident.size] = self.resident
            keep = np.zeros(n, np.bool_)
            keep[:self.keep.size] = self.keep
            orph = np.zeros(n, np.bool_)
            orph[:self.orph.size] = self.orph
            orow = np.full(n, -1, np.int64)
            orow[:self.orow.size] = self.orow
            self.slot, self.resident, self.keep, self.orph, self.orow = slot, res, keep, orph, orow

    def keep_orphans(self, h: np.ndarray, pages: np.ndarray) -> None:
        """Keep the bytes of the pages at state indices ``h`` (their slots were freed)."""
        k = h.size
        if len(self.free_rows) < k:                   # grow the pool (doubling)
            old = self.pool.shape[0]
            size = max(2 * old, old + k - len(self.free_rows), 64)
            pool = np.empty((size, self.width), np.uint8)
            pool[:old] = self.pool
            self.pool = pool
            self.free_rows.extend(range(size - 1, old - 1, -1))
        rows = self.free_rows[-k:]
        del self.free_rows[-k:]
        rows = np.array(rows, np.int64)
        self.orow[h] = rows
        self.pool[rows] = pages[:, :self.width]
        self.orphans += k

    def drop_orphans(self, h: np.ndarray) -> None:
        """Forget the kept bytes of the orphans at state indices ``h``."""
        self.free_rows.extend(self.orow[h].tolist())
        self.orow[h] = -1
        self.orphans -= h.size
