"""``PageCache``: the DRAM page cache of bounded size in front of a ``SwapBackend`` that
``PagedEmbedding``'s tables are paged through (what a step asks of it: paged_embedding.py).

``budget`` frames of ``page_size`` bytes (the frame array is allocated with ``np.zeros``, so
untouched frames cost no memory), CLOCK replacement over per-frame ``referenced`` / ``dirty`` /
``pinned`` bits. The sweep is vectorised: the hand advances over the frame arrays in chunks, clearing
the referenced bits it passes and taking unreferenced, unpinned frames as victims, exactly as
one-frame-at-a-time CLOCK would. Pages never touched are created on first touch (:mod:`.first_touch`).

Backends keep a page's copy after ``swap_in`` until it is swapped out again or discarded, so the
copy of a clean page is still good; ``discard_dirty=True`` instead discards the backend's copy as
soon as a page is dirtied (what Linux does on a write fault to a swap-cache page), which lets GC
forget stale copies of resident pages. ``id_base`` / ``stream_base`` shift the ids and streams the
backend sees, so that several page caches can share one backend.
"""

from __future__ import annotations

import time

import numpy as np

from ..errors import ZswapError
from .first_touch import FirstTouch
from .paging_counters import PagingCounters
from .table_layout import TableLayout
from .trace import DISCARD, SWAP_IN, SWAP_OUT

UNTOUCHED, RESIDENT, SWAPPED = 0, 1, 2


def parse_budget(budget, total_bytes: int) -> int:
    """Budget in bytes: a float in (0, 1] is a fraction of ``total_bytes``; an int is bytes; a string
    is a size (``64MiB``) or a percentage (``25%``)."""
    if isinstance(budget, str):
        b = budget.strip()
        if b.endswith("%"):
            budget = float(b[:-1]) / 100.0
        else:
            from ..units import parse_size
            budget = parse_size(b)
    if isinstance(budget, (bool, np.bool_)):
        raise ValueError(f"not a budget: {budget!r}")
    if isinstance(budget, (float, np.floating)):
        if not 0.0 < budget <= 1.0:
            raise ValueError(f"a fractional budget must be in (0, 1] (of {total_bytes} table bytes), not {budget}")
        return int(budget * total_bytes) if budget < 1.0 else int(total_bytes)
    budget = int(budget)
    if budget <= 0:
        raise ValueError(f"budget must be positive, not {budget}")
    return budget


class PageCache:
    """The frames, per-frame bits and per-page state of ``layout``'s pages, paged through ``backend``
    (None: DRAM only). ``budget``, ``trace``, ``clock``, ``discard_dirty``, ``id_base``,
    ``stream_base``, ``payload``: as ``PagedEmbedding`` takes them. ``io_wall_s`` / ``io_stall_s``:
    wall time and clock change inside demand backend calls; ``prefetch_wall_s`` / ``io_overlap_s``:
    the same inside prefetch calls (``prefetching``)."""

    def __init__(self, layout: TableLayout, first_touch: FirstTouch, backend, budget, trace, clock,
                 discard_dirty: bool, id_base: int, stream_base: int, payload: bool) -> None:
        self.layout = layout
        self.first_touch = first_touch
        self.page_size = layout.page_size
        self.total_pages = layout.total_pages
        self.backend = backend
        self.trace = trace
        self.clock = clock
        self.discard_dirty = bool(discard_dirty)
        self.id_base = int(id_base)
        self.stream_base = int(stream_base)
        if backend is None:
            self.budget_bytes = layout.total_bytes
        else:
            self.budget_bytes = min(parse_budget(budget, layout.total_bytes), layout.total_bytes)
        self.nframes = min(self.total_pages, self.budget_bytes // self.page_size)
        if self.nframes < 1:
            raise ValueError(f"budget of {self.budget_bytes} bytes holds no {self.page_size}-byte page")
        self.dram_only = self.nframes >= self.total_pages
        n, P = self.nframes, self.total_pages
        self.payload = bool(payload)
        # lazily backed by the OS; payload-free: no bytes at all (a 24 GB budget would not even map)
        self.frames = np.zeros((n, self.page_size if self.payload else 0), np.uint8)
        self.f32 = self.frames.view(np.float32)                      # (n, page_size // 4)
        if layout.uniform and self.payload:                          # (frames, rows_per_page, dim)
            self.rows = np.lib.stride_tricks.as_strided(
                self.f32, shape=(n, layout.rows_per_page, layout.dim),
                strides=(self.page_size, 4 * layout.dim, 4), writeable=True)
        self.frame_page = np.full(n, -1, np.int64)
        self.ref = np.zeros(n, bool)
        self.dirty = np.zeros(n, bool)
        self.pin = np.zeros(n, bool)
        self.free = np.arange(n - 1, -1, -1, dtype=np.int64)        # stack: pop from the end
        self.nfree = n
        self.hand = 0
        self.page_frame = np.full(P, -1, np.int32 if n < 2**31 else np.int64)
        self.page_state = np.zeros(P, np.uint8)
        self.held = np.zeros(P, bool)      # the backend holds a copy equal to the page (when clean)
        self.counters = PagingCounters()
        self.io_wall_s = 0.0
        self.io_stall_s = 0.0
        self.ahead: np.ndarray | None = None      # pages the last prefetch pinned for queued batches
        self.prefetching = False                  # backend calls now count as overlapped I/O
        self.io_overlap_s = 0.0                   # clock change across prefetch backend calls
        self.prefetch_wall_s = 0.0                # wall time inside prefetch backend calls

    @property
    def resident_pages(self) -> int:
        return self.nframes - self.nfree

    def view(self, t: int) -> np.ndarray:
        """The frames seen as (frames, rows_per_page, dim) rows of table t's layout."""
        if self.layout.uniform:
            return self.rows
        R, d = int(self.layout.rpp[t]), int(self.layout.dims[t])
        return np.lib.stride_tricks.as_strided(
            self.f32, shape=(self.nframes, R, d), strides=(self.page_size, 4 * d, 4), writeable=True)

    def make_resident(self, pages: np.ndarray) -> None:
        """Make ``pages`` (sorted, unique) resident and pin them. Atomic for the caller: if an
        eviction's write or the fault's read fails, the error propagates with no page half brought
        in, no frame taken and the pins as they were (pages evicted before the failure stay
        evicted: each is consistent on its own)."""
        c = self.counters
        fr = self.page_frame[pages]
        res = fr >= 0
        rf = fr[res]
        missing = pages[~res]
        m = int(missing.size)
        if m > self.nfree and pages.size > self.nframes:
            raise ValueError(
                f"one batch needs {pages.size} pages but the DRAM budget holds {self.nframes} "
                f"({self.budget_bytes} bytes): raise the budget or lower the batch size")
        self.ref[rf] = True
        if m == 0:
            self.pin[rf] = True
            c.page_refs += int(pages.size)
            c.hits += int(rf.size)
            return
        pin0 = self.pin.copy()
        self.pin[rf] = True
        st = self.page_state[missing]
        old = st == SWAPPED
        faulted = bool(old.any())
        try:
            if m > self.nfree:
                self.evict(m - self.nfree)
            data = self.io(self.backend.swap_in, self.bid(missing[old])) if faulted else None
        except BaseException:
            self.pin[:] = pin0          # the victims chosen and the pages asked for: unpinned again
            raise
        c.page_refs += int(pages.size)
        c.hits += int(rf.size)
        newf = self.free[self.nfree - m:self.nfree][::-1].copy()
        self.nfree -= m
        if faulted:
            ids = missing[old]
            if self.payload:
                self.frames[newf[old]] = data
            self.dirty[newf[old]] = False
            c.faults += int(ids.size)
            c.swap_in_calls += 1
            c.bytes_read += int(ids.size) * self.page_size
            if self.trace is not None:
                self.trace.add(SWAP_IN, self.bid(ids))
        if not old.all():
            new = ~old
            if self.payload:
                self.first_touch.create(self.f32, missing[new], newf[new])
            self.dirty[newf[new]] = True
            c.first_touch += int(new.sum())
        self.page_frame[missing] = newf
        self.frame_page[newf] = missing
        self.page_state[missing] = RESIDENT
        self.ref[newf] = True
        self.pin[newf] = True

    def clock_select(self, k: int) -> np.ndarray:
        """k victim frames by CLOCK: unpinned, occupied frames; a referenced one gets its bit
        cleared and a second chance. Vectorised over chunks of the frame array."""
        n = self.nframes
        out = []
        need = k
        sweeps = 0
        while need > 0:
            c = min(n, max(4 * need, 4096))
            idx = np.arange(self.hand, self.hand + c, dtype=np.int64)
            if self.hand + c > n:
                idx %= n
            elig = (self.frame_page[idx] >= 0) & ~self.pin[idx]
            cand = elig & ~self.ref[idx]
            pos = np.flatnonzero(cand)
            if pos.size >= need:
                last = int(pos[need - 1])
                sel = idx[pos[:need]]
                e = elig[:last + 1]
                self.ref[idx[:last + 1][e]] = False
                self.hand = (self.hand + last + 1) % n
                out.append(sel)
                self.pin[sel] = True
                need = 0
            else:
                sel = idx[pos]
                out.append(sel)
                self.pin[sel] = True          # not chosen twice in this sweep
                self.ref[idx[elig]] = False
                self.hand = (self.hand + c) % n
                need -= int(pos.size)
                sweeps += c
                if sweeps > 3 * n:
                    raise RuntimeError("CLOCK found no evictable frame")  # guarded by the capacity check
        return np.concatenate(out) if len(out) > 1 else out[0]

    def evict(self, k: int) -> None:
        fr = self.clock_select(k)
        pages = self.frame_page[fr]
        w = self.dirty[fr] | ~self.held[pages]
        if w.any():
            self.write(fr[w])
        c = self.counters
        c.evictions += int(fr.size)
        c.clean_drops += int(fr.size - w.sum())
        self.page_state[pages] = SWAPPED
        self.page_frame[pages] = -1
        self.frame_page[fr] = -1
        self.ref[fr] = False
        self.dirty[fr] = False
        self.pin[fr] = False
        self.free[self.nfree:self.nfree + fr.size] = fr
        self.nfree += int(fr.size)

    def write(self, fr: np.ndarray) -> None:
        """swap_out the pages in frames ``fr``: one call per table, CLOCK order within a table."""
        pages = self.frame_page[fr]
        t = self.layout.table_of_page(pages)
        order = np.argsort(t, kind="stable")
        t, fr, pages = t[order], fr[order], pages[order]
        cuts = np.flatnonzero(np.diff(t)) + 1
        c = self.counters
        for lo, hi in zip(np.concatenate([[0], cuts]), np.concatenate([cuts, [t.size]])):
            ids = pages[lo:hi]
            data = self.frames[fr[lo:hi]]
            self.io(self.backend.swap_out, self.bid(ids), data, stream=int(t[lo]) + self.stream_base)
            if self.trace is not None:
                self.trace.add(SWAP_OUT, self.bid(ids), int(t[lo]) + self.stream_base)
            # marked call by call: if a later table's call fails, these pages are written and clean
            self.held[ids] = True
            self.dirty[fr[lo:hi]] = False
            c.swap_out_calls += 1
            c.pages_written += int(ids.size)
            c.bytes_written += int(ids.size) * self.page_size

    def dirtied(self, f: np.ndarray, sf: np.ndarray | None) -> None:
        """Mark updated frames dirty; with ``discard_dirty`` the backend forgets its stale copies."""
        if sf is not None:
            self.dirty[sf] = True
        self.dirty[f] = True
        if self.discard_dirty and self.backend is not None:
            fr = np.unique(f if sf is None else np.concatenate([f, sf.reshape(-1)]))
            pages = self.frame_page[fr]
            pages = pages[self.held[pages]]
            if pages.size:
                try:
                    self.io(self.backend.discard, self.bid(pages))
                except ZswapError:
                    return          # the stale copies stay, harmless: the pages are dirty, rewritten before a read
                self.held[pages] = False
                self.counters.discards += int(pages.size)
                if self.trace is not None:
                    self.trace.add(DISCARD, self.bid(pages))

    def bid(self, pages: np.ndarray) -> np.ndarray:
        """The ids the backend knows these pages by."""
        return pages + self.id_base if self.id_base else pages

    def io(self, fn, *args, **kw):
        """``fn(*args, **kw)``, a backend call: its time added to the demand or the prefetch timers."""
        clk = self.clock
        c0 = clk() if clk is not None else 0.0
        w0 = time.perf_counter()
        try:
            return fn(*args, **kw)
        finally:
            w = time.perf_counter() - w0
            d = (clk() - c0) if clk is not None else w
            if self.prefetching:            # beside the step's compute: not stall (lookahead.py)
                self.prefetch_wall_s += w
                self.io_overlap_s += d
            else:
                self.io_wall_s += w
                self.io_stall_s += d

    def prefetch(self, batches) -> tuple[float, int]:
        """``PagedEmbedding.prefetch``: the pages of upcoming batches (nearest first) made resident and
        pinned beside the pinned ones, from the first batch that does not fit on left out."""
        if self.backend is None or self.dram_only or self.frames is None:
            return 0.0, 0
        pinned = int(np.count_nonzero(self.pin))
        room = self.nframes - pinned
        want = np.zeros(0, np.int64)
        cut = 0
        for k, sp in enumerate(batches):
            pages = self.layout.batch_pages(sp)
            u = np.union1d(want, pages)
            f = self.page_frame[u]
            if int(np.count_nonzero((f < 0) | ~self.pin[np.maximum(f, 0)])) > room:
                cut = len(batches) - k
                break
            want = u
        self.counters.prefetch_cut += cut
        self.ahead = want
        if not want.size:
            return 0.0, 0
        c = self.counters
        before = c.faults + c.first_touch
        refs, hits = c.page_refs, c.hits
        o0 = self.io_overlap_s
        self.prefetching = True
        try:
            self.make_resident(want)
        except BaseException:
            self.ahead = None               # nothing queued: the pins are as before the call
            raise
        finally:
            self.prefetching = False
        c.page_refs, c.hits = refs, hits            # a prefetch is not a reference: gather counts those
        brought = c.faults + c.first_touch - before
        if brought:
            c.prefetch_calls += 1
            c.prefetched += brought
        return self.io_overlap_s - o0, brought

    def read_pages(self, ids: np.ndarray) -> np.ndarray:
        """Current bytes of pages, (n, page_size) uint8, without making any resident."""
        out = np.empty((ids.size, self.page_size), np.uint8)
        fr = self.page_frame[ids]
        res = fr >= 0
        out[res] = self.frames[fr[res]]
        st = self.page_state[ids]
        sw = ~res & (st == SWAPPED)
        if sw.any():
            out[sw] = self.io(self.backend.swap_in, self.bid(ids[sw]))
            if self.trace is not None:
                self.trace.add(SWAP_IN, self.bid(ids[sw]))
        new = ~res & (st == UNTOUCHED)
        if new.any():
            out[new] = self.first_touch.values(ids[new]).view(np.uint8)
        return out

    def write_pages(self, table: int, ids: np.ndarray, data: np.ndarray) -> None:
        """Replace pages of one table: in their frames if resident, else in free frames while there
        are any, else with one swap_out. Nothing is evicted."""
        fr = self.page_frame[ids]
        res = fr >= 0
        if res.any():
            self.frames[fr[res]] = data[res]
            self.dirtied(fr[res].astype(np.int64), None)
        miss = ids[~res]
        m = int(miss.size)
        if m == 0:
            return
        if m <= self.nfree:
            newf = self.free[self.nfree - m:self.nfree][::-1].copy()
            self.nfree -= m
            self.frames[newf] = data[~res]
            self.page_frame[miss] = newf
            self.frame_page[newf] = miss
            self.page_state[miss] = RESIDENT
            self.ref[newf] = False
            self.pin[newf] = False
            self.dirtied(newf, None)
        else:
            self.io(self.backend.swap_out, self.bid(miss), data[~res], stream=int(table) + self.stream_base)
            if self.trace is not None:
                self.trace.add(SWAP_OUT, self.bid(miss), int(table) + self.stream_base)
            self.page_state[miss] = SWAPPED
            self.held[miss] = True

    def flush(self) -> None:
        """Write every dirty resident page to the backend (keeping it resident and now clean); the
        caller has a backend and settled its step."""
        fr = np.flatnonzero((self.frame_page >= 0) & (self.dirty | ~self.held[np.maximum(self.frame_page, 0)]))
        if fr.size:
            self.write(fr)
            self.dirty[fr] = False

    def release(self) -> None:
        """Discard (one call) every page the backend holds and drop the DRAM frames."""
        if self.backend is not None:
            ids = np.flatnonzero((self.page_state == SWAPPED) | self.held)
            if ids.size:
                self.io(self.backend.discard, self.bid(ids))
                if self.trace is not None:
                    self.trace.add(DISCARD, self.bid(ids))
        self.frames = self.f32 = self.rows = None
        self.page_state[:] = UNTOUCHED
        self.held[:] = False
