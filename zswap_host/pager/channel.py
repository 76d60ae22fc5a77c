"""``ChannelCore``: the C core's resolver calls made from a backend process (``Pager.process``),
through the channel the pager's bridge thread serves (``pg_serve``, native/pager.h): a shared-memory
block laid out as ``pg_channel`` says, and two eventfds. The same interface as ``core.LocalCore``, so
the backend process runs the same ``Resolver``."""

from __future__ import annotations

import mmap
import os

import numpy as np

from .native import check, pager_lib

_ONE = (1).to_bytes(8, "little")


class ChannelCore:
    """Calls to the pager over the channel in ``shm_fd`` (mapped here), waking the bridge with
    ``req_fd`` and waiting on ``rep_fd``. One caller at a time (the resolver thread). Rows a call
    hands over are at most the channel's ``cap``: larger requests are cut to it."""

    def __init__(self, shm_fd: int, req_fd: int, rep_fd: int, page_size: int) -> None:
        ffi, lib = pager_lib()
        self._ffi, self._req, self._rep, self._ps = ffi, req_fd, rep_fd, page_size
        self.FETCH, self.EVICT, self.DISCARD, self.STOPPED = lib.PG_FETCH, lib.PG_EVICT, lib.PG_DISCARD, lib.PG_STOPPED
        self._lib = lib
        self._mm = mmap.mmap(shm_fd, 0)
        self._ch = ch = ffi.cast("pg_channel *", ffi.from_buffer(self._mm))
        self.cap = cap = int(ch.cap)
        self._pages = np.frombuffer(self._mm, np.uint64, cap, int(ch.off_pages))
        self._aux = np.frombuffer(self._mm, np.uint64, cap, int(ch.off_aux))
        self._ok = np.frombuffer(self._mm, np.uint8, cap, int(ch.off_ok))
        self._data = np.frombuffer(self._mm, np.uint8, cap * page_size, int(ch.off_data)).reshape(cap, page_size)
        self.calls = 0
        self.fetch_cap = 0       # WAIT takes up to this many queued pages with it (take_fetch hands them out)
        self._taken = np.zeros(0, np.uint64)

    def _call(self, op: int, n: int = 0, arg: int = 0, why: str | None = None, what: str = "") -> int:
        ch = self._ch
        ch.op, ch.n, ch.arg = op, n, arg
        if why is not None:
            b = why.encode()[:len(ch.why) - 1] + b"\0"
            self._ffi.memmove(ch.why, b, len(b))
        os.write(self._req, _ONE)
        os.read(self._rep, 8)
        self.calls += 1
        return check(int(ch.rc), what)

    def wait(self, timeout_ms: int) -> int:
        mask = self._call(self._lib.PG_OP_WAIT, n=min(self.fetch_cap, self.cap), arg=timeout_ms, what="pg_wait")
        self._taken = self._pages[:int(self._ch.taken)].copy()
        return mask

    def take_fetch(self, cap: int) -> np.ndarray:
        if len(self._taken):  # taken with the wait
            pages, self._taken = self._taken[:cap], self._taken[cap:]
            return pages
        n = self._call(self._lib.PG_OP_TAKE_FETCH, n=min(cap, self.cap), what="pg_take_fetch")
        return self._pages[:n].copy()

    def claim(self, candidates: np.ndarray, cap: int) -> np.ndarray:
        k = min(len(candidates), self.cap)
        self._aux[:k] = candidates[:k]
        n = self._call(self._lib.PG_OP_CLAIM, n=k, arg=min(cap, self.cap), what="pg_claim")
        return self._pages[:n].copy()

    def fetched(self, pages: np.ndarray, data: np.ndarray, ok: np.ndarray, why: str) -> None:
        n = len(pages)
        if n > self.cap:
            raise ValueError(f"fetched: {n} pages, the channel holds {self.cap}")
        self._pages[:n], self._data[:n], self._ok[:n] = pages, data, ok
        self._call(self._lib.PG_OP_FETCHED, n=n, why=why, what="pg_fetched")

    def take_discards(self, cap: int) -> np.ndarray:
        n = self._call(self._lib.PG_OP_TAKE_DISCARDS, n=min(cap, self.cap), what="pg_take_discards")
        return self._pages[:n].copy()

    def discarded(self, pages: np.ndarray, ok: bool) -> None:
        self._pages[:len(pages)] = pages
        self._call(self._lib.PG_OP_DISCARDED, n=len(pages), arg=int(ok), what="pg_discarded")

    def evict_begin(self, cap: int) -> tuple[np.ndarray, np.ndarray]:
        n = self._call(self._lib.PG_OP_EVICT_BEGIN, n=min(cap, self.cap), what="pg_evict_begin")
        d = int(self._ch.ndirty)
        return self._pages[:n].copy(), self._data[:d].copy()  # copies: a backend may keep what it gets

    def evict_end(self, ok: bool) -> int:
        return self._call(self._lib.PG_OP_EVICT_END, arg=int(ok), what="pg_evict_end")

    def fail_waiting(self, why: str) -> int:
        return self._call(self._lib.PG_OP_FAIL_WAITING, why=why, what="pg_fail_waiting")

    def streams(self, pages: np.ndarray) -> np.ndarray:
        n = len(pages)
        self._pages[:n] = pages
        self._call(self._lib.PG_OP_STREAMS, n=n, what="pg_page_streams")
        return self._aux[:n].view(np.int64).copy()
