"""The resolver: the Python thread that does the pager's backend I/O. It blocks in the C core
(``pg_wait``, GIL released) until faults need pages read, the budget needs pages evicted or (with
``discard_on_write``) stale copies need discarding, then makes one ``swap_in`` per fetch batch (with
fault-around: the faulted pages and the neighbours the C core let it claim), one ``discard`` for the
stale copies queued and one ``swap_out`` per stream per eviction."""

from __future__ import annotations

import threading
import time
from typing import Callable

import numpy as np

from .native import check, ptr

EVICT_GIVE_UP = 8  # failed evictions in a row (~0.5 s of back-off) before the faults waiting for room fail


def describe(exc: BaseException) -> str:
    """One line naming a backend exception (for the SIGBUS message)."""
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:300]


class Resolver(threading.Thread):
    """Serves one pager until ``pg_stop``. ``streams_of(pages) -> int64 array`` names each page's
    stream. Backend exceptions are kept in ``errors`` (the last 16) and counted in ``nerrors``;
    they never stop the thread: a failed read becomes SIGBUS for its faulting threads, a failed
    write leaves the dirty victims resident (the clean ones are released) and is retried after a
    back-off; after ``EVICT_GIVE_UP`` failed evictions in a row that released nothing (a full
    backend), the faults waiting for room get SIGBUS (``pg_fail_waiting``), and so do those that
    come while it lasts. ``fault_around``: pages to
    read ahead per fetch batch, among ``backend.neighbours`` of the faulted ones (0, or a backend
    without ``neighbours``: none); ``npages()``: the pager's page count now (its regions' pages)."""

    def __init__(self, ffi, lib, handle, backend, *, id_base: int, page_size: int,
                 streams_of: Callable[[np.ndarray], np.ndarray], fetch_batch: int, evict_batch: int,
                 fault_around: int = 0, npages: Callable[[], int] = lambda: 0) -> None:
        super().__init__(name="zswap-pager-resolver", daemon=True)
        self._ffi, self._lib, self._h = ffi, lib, handle
        self._backend = backend
        self._id_base = id_base
        self._ps = page_size
        self._streams_of = streams_of
        self._fetch_batch, self._evict_batch = fetch_batch, evict_batch
        self._fault_around = int(fault_around)
        self._neighbours = getattr(backend, "neighbours", None) if fault_around else None
        self._npages = npages
        self.errors: list[BaseException] = []
        self.nerrors = 0
        self._write_failures = 0

    def run(self) -> None:
        lib = self._lib
        while True:
            mask = lib.pg_wait(self._h, 200)
            if mask & lib.PG_FETCH:
                self._fetch()
            if mask & lib.PG_DISCARD and not mask & lib.PG_STOPPED:  # at stop, close() discards them
                self._discard()
            if mask & lib.PG_EVICT:
                self._evict()
            if mask & lib.PG_STOPPED and not mask & lib.PG_FETCH:
                return

    def _note(self, exc: BaseException) -> None:
        self.nerrors += 1
        self.errors = (self.errors + [exc])[-16:]

    # ------------------------------------------------------------ reads
    def _fetch(self) -> None:
        ffi, lib, ps = self._ffi, self._lib, self._ps
        pages = np.empty(self._fetch_batch, np.uint64)
        n = check(lib.pg_take_fetch(self._h, ptr(ffi, pages, "uint64_t *"), len(pages)), "pg_take_fetch")
        if n == 0:
            return
        pages = pages[:n]
        if self._neighbours is not None:
            pages = np.concatenate([pages, self._claim(pages)])
        pages = np.sort(pages)  # ascending ids: the backend's best case
        n = len(pages)
        ids = pages.astype(np.int64) + self._id_base
        ok = np.ones(n, np.uint8)
        why = None
        try:
            data = self._read(ids)
        except Exception as exc:  # noqa: BLE001 - any backend failure is per page below
            self._note(exc)
            data = np.zeros((n, ps), np.uint8)
            for k in range(n):  # error path only: find the pages that fail on their own
                try:
                    data[k] = self._read(ids[k:k + 1])[0]
                except Exception as exc1:  # noqa: BLE001
                    self._note(exc1)
                    ok[k] = 0
                    why = why or f"the backend's swap_in of page id {ids[k]} failed: {describe(exc1)}"
        check(lib.pg_fetched(self._h, ptr(ffi, pages, "uint64_t *"), ptr(ffi, data, "uint8_t *"),
                             ptr(ffi, ok, "uint8_t *"), n, (why or "").encode()), "pg_fetched")

    def _claim(self, pages: np.ndarray) -> np.ndarray:
        """Fault-around: up to ``fault_around`` of the backend's neighbours of ``pages`` that the
        core lets this batch read ahead (pages of this pager, in the backend only, room left). A
        failing hint is noted and costs only the read-ahead."""
        ffi, lib = self._ffi, self._lib
        try:
            ids = np.asarray(self._neighbours(pages.astype(np.int64) + self._id_base, self._fault_around),
                             np.int64).reshape(-1)
        except Exception as exc:  # noqa: BLE001 - a hint; the faulted pages are read regardless
            self._note(exc)
            return np.zeros(0, np.uint64)
        cand = ids - self._id_base
        cand = np.ascontiguousarray(cand[(cand >= 0) & (cand < self._npages())], np.uint64)
        if cand.size == 0:
            return np.zeros(0, np.uint64)
        out = np.empty(self._fault_around, np.uint64)
        k = check(lib.pg_claim(self._h, ptr(ffi, cand, "uint64_t *"), len(cand), ptr(ffi, out, "uint64_t *"),
                               len(out)), "pg_claim")
        return out[:k]

    def _read(self, ids: np.ndarray) -> np.ndarray:
        data = np.ascontiguousarray(self._backend.swap_in(ids), dtype=np.uint8)
        if data.shape != (len(ids), self._ps):
            raise ValueError(f"swap_in returned shape {data.shape}, expected {(len(ids), self._ps)}")
        return data

    # ------------------------------------------------------------ discards
    def _discard(self) -> None:
        """One ``backend.discard`` for the stale copies queued (per 4096; before any eviction:
        pager.c's protocol comment has why the order, and the core, keep a discard off a newer copy)."""
        ffi, lib = self._ffi, self._lib
        while True:
            pages = np.empty(4096, np.uint64)
            n = check(lib.pg_take_discards(self._h, ptr(ffi, pages, "uint64_t *"), len(pages)), "pg_take_discards")
            self._discard_pages(pages[:n])
            if n < len(pages):
                return

    def _discard_pages(self, pages: np.ndarray) -> None:
        ffi, lib = self._ffi, self._lib
        pages = np.ascontiguousarray(np.sort(pages))
        ok = 1
        if len(pages):
            try:
                self._backend.discard(pages.astype(np.int64) + self._id_base)
            except Exception as exc:  # noqa: BLE001 - the copies stay stale, dropped later
                self._note(exc)
                ok = 0
        check(lib.pg_discarded(self._h, ptr(ffi, pages, "uint64_t *") if len(pages) else ffi.NULL, len(pages), ok),
              "pg_discarded")

    # ------------------------------------------------------------ writes
    def _evict(self) -> None:
        ffi, lib = self._ffi, self._lib
        cap = self._evict_batch
        pages = np.empty(cap, np.uint64)
        buf = np.empty((cap, self._ps), np.uint8)  # fresh each time: a backend may keep the pages it got
        nd = ffi.new("uint32_t *")
        n = check(lib.pg_evict_begin(self._h, cap, ptr(ffi, pages, "uint64_t *"), ptr(ffi, buf, "uint8_t *"), nd),
                  "pg_evict_begin")
        if n == 0:
            return
        d = int(nd[0])
        ok = 1
        if d:
            ids = pages[:d].astype(np.int64) + self._id_base
            streams = self._streams_of(pages[:d])
            try:
                for s in np.unique(streams):
                    sel = streams == s
                    self._backend.swap_out(ids[sel], buf[:d][sel], int(s))
            except Exception as exc:  # noqa: BLE001 - the victims stay resident
                self._note(exc)
                ok = 0
        released = check(lib.pg_evict_end(self._h, ok), "pg_evict_end")
        if ok or released:  # room was made (a failed write still releases the clean victims)
            self._write_failures = 0
            return
        self._write_failures += 1
        if self._write_failures >= EVICT_GIVE_UP:  # a full backend: the access fails, it does not wait forever
            why = (f"it needs room in the budget, and the backend failed the last {self._write_failures} "
                   f"write-outs that would make it: {describe(self.errors[-1])}")
            lib.pg_fail_waiting(self._h, why.encode())
        time.sleep(min(0.5, 0.001 * 2 ** min(self._write_failures, 10)))  # do not hammer a failing backend
