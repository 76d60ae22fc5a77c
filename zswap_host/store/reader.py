"""The store's read path: a swap-in's pages gathered from the write buffers, the prefetch buffer and
the device (its slots read as one planned batch: ``readpath.plan_reads``), the pages' latencies, and
the error of a page lost with an offline zone. GC reads victim slots through ``read_slots`` too
(``gcport.GcPort``), without the prefetch window.

The caller (``SwapStore``) holds the store's lock, has checked the ids (``idmap.as_page_ids``) and
that the store is open.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..backend import LatencyLog
from ..devices.fingerprint import first_words
from ..errors import DeviceIOError, PageLostError
from .idmap import distinct_ids
from .readpath import plan_reads
from .slotmap import UNMAPPED
from .state import StoreState


class Reader:
    """One store's reads. ``state``: its ``StoreState``; ``zone_trouble(z)``: the committer's (a
    read that fails may mean zone z went read-only or offline); ``now()``: the device's clock.

    ``latency`` holds every swapped-in page's latency, ``host_read_bytes`` the bytes callers asked
    for; ``word_reads``: the device reads pages' first words alone (``read_batch(words=True)``)."""

    def __init__(self, state: StoreState, zone_trouble: Callable[[int], bool], now: Callable[[], float]) -> None:
        self._st = state
        self._trouble = zone_trouble
        self._now = now
        self.latency = LatencyLog()
        self.host_read_bytes = 0
        self.word_reads = bool(getattr(state.device, "word_reads", False))

    def swap_in(self, ids: np.ndarray, words: bool) -> np.ndarray:
        """``SwapStore.swap_in`` (``words``: ``swap_in_words``) of checked, non-empty ``ids``:
        the pages in the order asked. KeyError for an id not stored; PageLostError."""
        st = self._st
        ps = st.page_size
        row = first_words if words else _same
        uids, inv = distinct_ids(ids)
        uh = st.idmap.lookup(uids)
        if (uh < 0).any():
            raise KeyError(int(uids[uh < 0][0]))
        b = st.buffer_of[uh]
        loc = st.slots.slots(uh)
        known = (b != 0) | (loc != UNMAPPED)
        if not known.all():
            self._raise_if_lost(uids, uh)
            raise KeyError(int(uids[~known][0]))
        t0 = self._now()
        lat = np.zeros(uids.size)
        buffered = b != 0
        if not buffered.any() and not st.prefetch.size:   # the usual case: all on the device
            try:
                rows, at, done = self.read_slots(loc.astype(np.int64), words=words)
            except DeviceIOError:
                self._raise_if_lost(uids, uh)
                raise
            lat[:] = done - t0
            self.latency.add(lat[inv])
            self.host_read_bytes += ids.size * ps
            return np.take(rows, at[inv], axis=0)       # one gather, in the order asked
        # every page is copied once into the caller's array, in the order asked (repeats too)
        out = np.empty(ids.size, np.uint64) if words else np.empty((ids.size, ps), np.uint8)
        if buffered.any():
            for k in np.unique(b[buffered]):
                m = b == k
                _place(out, inv, m, row(st.buffers[int(k) - 1].lookup(uh[m])))
        md = ~buffered
        if st.prefetch.size:
            mp = md & (st.prefetch_pos[uh] != 0)
            if mp.any():
                _place(out, inv, mp, row(st.prefetch.take(st.prefetch_pos, uh[mp])))
                md &= ~mp
        if md.any():
            try:
                rows, at, done = self.read_slots(loc[md].astype(np.int64), words=words)
            except DeviceIOError:
                self._raise_if_lost(uids, uh)
                raise
            lat[md] = done - t0
            rank = np.cumsum(md) - 1
            sel = md[inv]
            out[sel] = rows[at[rank[inv[sel]]]]
        self.latency.add(lat[inv])
        self.host_read_bytes += ids.size * ps
        return out

    def _raise_if_lost(self, uids: np.ndarray, uh: np.ndarray) -> None:
        st = self._st
        lost = uids[st.lost[uh]]
        if lost.size:
            every = np.union1d(lost, st.take_lost())
            raise PageLostError(f"{every.size} page(s) lost with an offline zone "
                                f"({lost.size} of them asked for here)", every)

    def read_slots(self, slots: np.ndarray, prefetch: bool = True,
                   words: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Read distinct slots: (the rows read, each slot's row among them, each slot's completion
        time). Adjacent slots become one read; with prefetch (demand reads only: GC reads may see
        copies a write in flight is replacing) each read covers the aligned write unit around it,
        and what it brings beyond the request waits in the prefetch buffer. The caller gathers
        the rows it wants once, straight into its output. ``words``: each row is the page's first
        64-bit word (read as words where the device can, and where the prefetch buffer, which
        keeps pages, takes nothing). DeviceIOError, after the zones read were looked at."""
        st = self._st
        cfg, ps = st.config, st.page_size
        window = cfg.prefetch_bytes // ps if cfg.prefetch and prefetch else 0
        plan = plan_reads(slots, st.slots.slots_per_zone, st.zones.cursors, window, cfg.max_read_bytes // ps)
        as_words = words and not window and self.word_reads
        try:
            if as_words:
                rows, done = st.device.read_batch(plan.starts * ps, plan.lengths * ps, cfg.read_qd, words=True)
                return rows, plan.row_of_request, done[plan.request_of_slot]
            data, done = st.device.read_batch(plan.starts * ps, plan.lengths * ps, cfg.read_qd)
        except DeviceIOError:
            for z in np.unique(st.slots.zone_of(slots)).tolist():
                self._trouble(z)
            raise
        rows = data.reshape(-1, ps)
        if window and plan.extra_rows.size:
            handles = st.slots.owners(plan.extra_slots)
            ok = handles >= 0
            ok[ok] &= (st.buffer_of[handles[ok]] == 0) & (st.prefetch_pos[handles[ok]] == 0)
            st.prefetch.insert(st.prefetch_pos, handles[ok], rows[plan.extra_rows[ok]])
        return (first_words(rows) if words else rows), plan.row_of_request, done[plan.request_of_slot]


def _place(out: np.ndarray, inv: np.ndarray, mask: np.ndarray, pages: np.ndarray) -> None:
    """Put ``pages`` (one per unique id where ``mask``) at every position asking for them."""
    rank = np.cumsum(mask) - 1
    sel = mask[inv]
    out[sel] = pages[rank[inv[sel]]]


def _same(rows: np.ndarray) -> np.ndarray:
    return rows
