"""Host-memory buffers of the store: per-stream write buffers and the prefetch buffer."""

from __future__ import annotations

import numpy as np

from .._native import ffi, lib


class WriteBuffer:
    """Pages waiting to be written by one stream, in arrival order. Grows when a write fails.

    ``words``: a buffer that only ever holds pages given as their first words (``add_words``: the
    GC stream on a payload-free device, which keeps nothing else of a page). Every row's bytes past
    its word then stay zero for good, so ``add_words`` writes the words alone and ``drop_front``
    moves them alone, where a buffer of pages clears and moves whole rows; ``add`` refuses."""

    def __init__(self, pages: int, page_size: int, words: bool = False) -> None:
        self.page_size = page_size
        self.words = words
        self.ids = np.zeros(pages, np.int64)
        self.data = np.zeros((pages, page_size), np.uint8)
        self.n = 0
        self._p: tuple | None = None        # (ids, data, their C pointers) for drop_front

    def add(self, ids: np.ndarray, pages: np.ndarray) -> None:
        if self.words:
            raise ValueError("a buffer of words takes words (add_words), not pages")
        need = self._room(ids.size)
        self.ids[self.n:need] = ids
        self.data[self.n:need] = pages
        self.n = need

    def add_words(self, ids: np.ndarray, words: np.ndarray) -> None:
        """``add`` of pages that hold ``words`` (uint64, one per id) in their first 8 bytes and
        zeros after: what a payload-free device keeps of a page, without building the pages."""
        need = self._room(ids.size)
        self.ids[self.n:need] = ids
        rows = self.data[self.n:need]
        if not self.words:
            rows[:] = 0                  # one memset: cheaper than zeroing all but the words
        rows[:, :8] = words.astype(np.uint64, copy=False).view(np.uint8).reshape(-1, 8)
        self.n = need

    def _room(self, k: int) -> int:
        """Room for ``k`` more pages (the buffer doubles); returns the new count."""
        need = self.n + k
        if need > self.ids.size:
            cap = max(need, 2 * self.ids.size)
            self.ids = np.resize(self.ids, cap)
            data = np.zeros((cap, self.page_size), np.uint8)
            data[:self.n] = self.data[:self.n]
            self.data = data
        return need

    def drop_front(self, k: int) -> None:
        """The first ``k`` pages were written: the rest move to the front (``st_drop_front``,
        native/store.c, the one implementation for buffers of pages: the express path's C drops
        them the same way; a buffer of words moves its words)."""
        if not 0 <= k <= self.n:
            raise ValueError(f"drop_front({k}) of a buffer holding {self.n} pages")
        if self.words:                   # the words alone (numpy copies overlapping ranges right)
            left = self.n - k
            if left and k:
                self.ids[:left] = self.ids[k:self.n]
                self.data[:left, :8] = self.data[k:self.n, :8]
            self.n = left
            return
        p = self._p
        if p is None or p[0] is not self.ids or p[1] is not self.data:     # replaced by _room
            p = self._p = (self.ids, self.data, ffi.from_buffer("int64_t[]", self.ids),
                           ffi.from_buffer("uint8_t[]", self.data))
        self.n = lib.st_drop_front(p[2], p[3], self.n, k, self.page_size)

    def drop_written(self, ids: np.ndarray, done: np.ndarray) -> None:
        """Take the pages now on the device out (``ids``: the buffer's first ones when the write
        began, ``done``: which of them were written): a prefix, unless a retry failed after later
        units had landed."""
        w = int(np.count_nonzero(done))
        if done[:w].all():
            self.drop_front(w)
        else:
            self.remove(ids[done])

    def remove(self, ids: np.ndarray) -> None:
        """Drop these ids (a newer copy arrived, or they were discarded)."""
        keep = ~np.isin(self.ids[:self.n], ids)
        k = int(keep.sum())
        if k != self.n:
            self.ids[:k] = self.ids[:self.n][keep]
            self.data[:k] = self.data[:self.n][keep]
            self.n = k

    def lookup(self, ids: np.ndarray) -> np.ndarray:
        """Pages for ids that are all in this buffer."""
        have = self.ids[:self.n]
        order = np.argsort(have, kind="stable")
        pos = order[np.searchsorted(have, ids, sorter=order)]
        return self.data[pos]


class PrefetchBuffer:
    """A bounded ring of pages read ahead of demand. ``pos`` (indexed by page id, 0 = absent,
    else ring slot + 1) is owned by the store so it grows with the id space."""

    def __init__(self, pages: int, page_size: int) -> None:
        self.size = pages
        self.ids = np.full(pages, -1, np.int64)
        self.data = np.zeros((pages, page_size), np.uint8)
        self.head = 0
        self.hits = 0
        self.inserted = 0
        self.wasted_pages = 0

    def insert(self, pos: np.ndarray, ids: np.ndarray, pages: np.ndarray) -> None:
        if self.size == 0 or ids.size == 0:
            return
        if ids.size > self.size:
            ids, pages = ids[-self.size:], pages[-self.size:]
        k = ids.size
        ring = (self.head + np.arange(k)) % self.size
        old = self.ids[ring]
        old = old[old >= 0]
        self.wasted_pages += old.size
        pos[old] = 0
        self.ids[ring] = ids
        self.data[ring] = pages
        pos[ids] = ring + 1
        self.head = (self.head + k) % self.size
        self.inserted += k

    def take(self, pos: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Pages of ids that are all present; they leave the buffer (a hit)."""
        ring = pos[ids] - 1
        out = self.data[ring].copy()
        self.ids[ring] = -1
        pos[ids] = 0
        self.hits += ids.size
        return out

    def drop(self, pos: np.ndarray, ids: np.ndarray) -> None:
        """Forget ids whose stored copy changed; what was read ahead for them was wasted."""
        ids = ids[pos[ids] != 0]
        if ids.size:
            self.ids[pos[ids] - 1] = -1
            pos[ids] = 0
            self.wasted_pages += ids.size
