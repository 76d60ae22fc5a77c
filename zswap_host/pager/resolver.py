"""The resolver: the thread that does the pager's backend I/O. It blocks in the C core
(``core.wait``, GIL released) until faults need pages read, the budget needs pages evicted or (with
``discard_on_write``) stale copies need discarding, then makes one ``swap_in`` per fetch batch (with
fault-around: the faulted pages and the neighbours the C core let it claim), one ``discard`` for the
stale copies queued and one ``swap_out`` per stream per eviction. ``core`` is the pager's C core:
``core.LocalCore`` in the pager's process (the thread mode), ``channel.ChannelCore`` in a backend
process (``Pager.process``): the same rules either way."""

from __future__ import annotations

import threading
import time

import numpy as np

EVICT_GIVE_UP = 8  # failed evictions in a row (~0.5 s of back-off) before the faults waiting for room fail
DISCARD_BATCH = 4096  # stale copies per backend discard call (at most)


def describe(exc: BaseException) -> str:
    """One line naming a backend exception (for the SIGBUS message)."""
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:300]


class Resolver(threading.Thread):
    """Serves one pager's ``core`` (``LocalCore`` or ``ChannelCore``) until it stops. Backend
    exceptions are kept in ``errors`` (the last 16) and counted in ``nerrors``;
    they never stop the thread: a failed read becomes SIGBUS for its faulting threads, a failed
    write leaves the dirty victims resident (the clean ones are released) and is retried after a
    back-off; after ``EVICT_GIVE_UP`` failed evictions in a row that released nothing (a full
    backend), the faults waiting for room get SIGBUS (``fail_waiting``), and so do those that
    come while it lasts. ``fault_around``: pages to read ahead per fetch batch, among
    ``backend.neighbours`` of the faulted ones (0, or a backend without ``neighbours``: none)."""

    def __init__(self, core, backend, *, id_base: int, page_size: int, fetch_batch: int, evict_batch: int,
                 fault_around: int = 0) -> None:
        super().__init__(name="zswap-pager-resolver", daemon=True)
        self._core = core
        self._backend = backend
        self._id_base = id_base
        self._ps = page_size
        self._fetch_batch, self._evict_batch = fetch_batch, evict_batch
        self._fault_around = int(fault_around)
        self._neighbours = getattr(backend, "neighbours", None) if fault_around else None
        self.errors: list[BaseException] = []
        self.nerrors = 0
        self._write_failures = 0

    def run(self) -> None:
        core = self._core
        while True:
            mask = core.wait(200)
            if mask & core.FETCH:
                self._fetch()
            if mask & core.DISCARD and not mask & core.STOPPED:  # at stop, close() discards them
                self._discard()
            if mask & core.EVICT:
                self._evict()
            if mask & core.STOPPED and not mask & core.FETCH:
                return

    def note(self, exc: BaseException) -> None:
        """Count and keep a backend exception."""
        self.nerrors += 1
        self.errors = (self.errors + [exc])[-16:]

    # ------------------------------------------------------------ reads
    def _fetch(self) -> None:
        ps = self._ps
        pages = self._core.take_fetch(self._fetch_batch)
        if len(pages) == 0:
            return
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
            self.note(exc)
            data = np.zeros((n, ps), np.uint8)
            for k in range(n):  # error path only: find the pages that fail on their own
                try:
                    data[k] = self._read(ids[k:k + 1])[0]
                except Exception as exc1:  # noqa: BLE001
                    self.note(exc1)
                    ok[k] = 0
                    why = why or f"the backend's swap_in of page id {ids[k]} failed: {describe(exc1)}"
        self._core.fetched(pages, data, ok, why or "")

    def _claim(self, pages: np.ndarray) -> np.ndarray:
        """Fault-around: up to ``fault_around`` of the backend's neighbours of ``pages`` that the
        core lets this batch read ahead (pages of this pager, in the backend only, room left; the
        core skips ids out of range). A failing hint is noted and costs only the read-ahead."""
        try:
            ids = np.asarray(self._neighbours(pages.astype(np.int64) + self._id_base, self._fault_around),
                             np.int64).reshape(-1)
        except Exception as exc:  # noqa: BLE001 - a hint; the faulted pages are read regardless
            self.note(exc)
            return np.zeros(0, np.uint64)
        cand = ids - self._id_base
        cand = cand[cand >= 0].astype(np.uint64)
        if cand.size == 0:
            return np.zeros(0, np.uint64)
        return self._core.claim(cand, self._fault_around)

    def _read(self, ids: np.ndarray) -> np.ndarray:
        data = np.ascontiguousarray(self._backend.swap_in(ids), dtype=np.uint8)
        if data.shape != (len(ids), self._ps):
            raise ValueError(f"swap_in returned shape {data.shape}, expected {(len(ids), self._ps)}")
        return data

    # ------------------------------------------------------------ discards
    def _discard(self) -> None:
        """One ``backend.discard`` for the stale copies queued (per ``DISCARD_BATCH``; before any
        eviction: pager.c's protocol comment has why the order, and the core, keep a discard off a
        newer copy)."""
        while True:
            pages = self._core.take_discards(DISCARD_BATCH)
            self._discard_pages(pages)
            if len(pages) < DISCARD_BATCH:
                return

    def _discard_pages(self, pages: np.ndarray) -> None:
        pages = np.sort(pages)
        ok = True
        if len(pages):
            try:
                self._backend.discard(pages.astype(np.int64) + self._id_base)
            except Exception as exc:  # noqa: BLE001 - the copies stay stale, dropped later
                self.note(exc)
                ok = False
        self._core.discarded(pages, ok)

    # ------------------------------------------------------------ writes
    def _evict(self) -> None:
        pages, dirty = self._core.evict_begin(self._evict_batch)
        if len(pages) == 0:
            return
        d = len(dirty)
        ok = True
        if d:
            ids = pages[:d].astype(np.int64) + self._id_base
            streams = self._core.streams(pages[:d])
            try:
                for s in np.unique(streams):
                    sel = streams == s
                    self._backend.swap_out(ids[sel], dirty[sel], int(s))
            except Exception as exc:  # noqa: BLE001 - the victims stay resident
                self.note(exc)
                ok = False
        released = self._core.evict_end(ok)
        if ok or released:  # room was made (a failed write still releases the clean victims)
            self._write_failures = 0
            return
        self._write_failures += 1
        if self._write_failures >= EVICT_GIVE_UP:  # a full backend: the access fails, it does not wait forever
            why = (f"it needs room in the budget, and the backend failed the last {self._write_failures} "
                   f"write-outs that would make it: {describe(self.errors[-1])}")
            self._core.fail_waiting(why)
        time.sleep(min(0.5, 0.001 * 2 ** min(self._write_failures, 10)))  # do not hammer a failing backend
