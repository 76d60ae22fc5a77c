"""``LocalCore``: the C core's resolver calls (``pg_wait``, ``pg_take_fetch``, ``pg_fetched``,
``pg_evict_begin``, ...) in numpy terms, on a pager of this process. ``Resolver`` makes its backend
I/O through this interface; ``channel.ChannelCore`` is the same interface from a backend process."""

from __future__ import annotations

import numpy as np

from .native import check, ptr


class LocalCore:
    """The resolver side of pager ``handle`` (``(ffi, lib)`` from ``pager_lib``). Every call
    releases the GIL; ``OSError`` when the core returns -errno. ``FETCH``, ``EVICT``, ``DISCARD``
    and ``STOPPED`` are ``wait``'s mask bits."""

    def __init__(self, ffi, lib, handle, page_size: int) -> None:
        self._ffi, self._lib, self._h, self._ps = ffi, lib, handle, page_size
        self.FETCH, self.EVICT, self.DISCARD, self.STOPPED = lib.PG_FETCH, lib.PG_EVICT, lib.PG_DISCARD, lib.PG_STOPPED

    def _p(self, a: np.ndarray, ctype: str = "uint64_t *"):
        return ptr(self._ffi, a, ctype)

    def wait(self, timeout_ms: int) -> int:
        """The mask of work to do (0 after ``timeout_ms`` with none)."""
        return self._lib.pg_wait(self._h, timeout_ms)

    def take_fetch(self, cap: int) -> np.ndarray:
        """Up to ``cap`` queued pages to read (uint64), now being fetched."""
        pages = np.empty(cap, np.uint64)
        return pages[:check(self._lib.pg_take_fetch(self._h, self._p(pages), cap), "pg_take_fetch")]

    def claim(self, candidates: np.ndarray, cap: int) -> np.ndarray:
        """Fault-around: the pages of ``candidates`` (uint64, in order) claimed to read ahead."""
        cand = np.ascontiguousarray(candidates, np.uint64)
        out = np.empty(cap, np.uint64)
        return out[:check(self._lib.pg_claim(self._h, self._p(cand), len(cand), self._p(out), cap), "pg_claim")]

    def fetched(self, pages: np.ndarray, data: np.ndarray, ok: np.ndarray, why: str) -> None:
        """Resolve taken pages: row i of ``data`` is page i's contents where ``ok[i]``; else SIGBUS
        for its waiters with ``why``."""
        pages = np.ascontiguousarray(pages, np.uint64)
        check(self._lib.pg_fetched(self._h, self._p(pages), self._p(data, "uint8_t *"), self._p(ok, "uint8_t *"),
                                   len(pages), why.encode()), "pg_fetched")

    def take_discards(self, cap: int) -> np.ndarray:
        """Up to ``cap`` pages whose stale backend copy is to be discarded now."""
        pages = np.empty(cap, np.uint64)
        return pages[:check(self._lib.pg_take_discards(self._h, self._p(pages), cap), "pg_take_discards")]

    def discarded(self, pages: np.ndarray, ok: bool) -> None:
        pages = np.ascontiguousarray(pages, np.uint64)
        check(self._lib.pg_discarded(self._h, self._p(pages) if len(pages) else self._ffi.NULL, len(pages), int(ok)),
              "pg_discarded")

    def evict_begin(self, cap: int) -> tuple[np.ndarray, np.ndarray]:
        """Up to ``cap`` victims (the dirty ones first) and the dirty ones' bytes, one row each, in
        a fresh array (a backend may keep the pages it is given)."""
        pages = np.empty(cap, np.uint64)
        buf = np.empty((cap, self._ps), np.uint8)
        nd = self._ffi.new("uint32_t *")
        n = check(self._lib.pg_evict_begin(self._h, cap, self._p(pages), self._p(buf, "uint8_t *"), nd),
                  "pg_evict_begin")
        return pages[:n], buf[:int(nd[0])]

    def evict_end(self, ok: bool) -> int:
        """Close the eviction (``ok``: the dirty victims are stored); the pages released."""
        return check(self._lib.pg_evict_end(self._h, int(ok)), "pg_evict_end")

    def fail_waiting(self, why: str) -> int:
        """SIGBUS every fault waiting for room, with ``why``; how many."""
        return self._lib.pg_fail_waiting(self._h, why.encode())

    def streams(self, pages: np.ndarray) -> np.ndarray:
        """Each page's stream (its region's placement hint), int64."""
        pages = np.ascontiguousarray(pages, np.uint64)
        out = np.empty(len(pages), np.int64)
        check(self._lib.pg_page_streams(self._h, self._p(pages), len(pages), self._p(out, "int64_t *")),
              "pg_page_streams")
        return out
