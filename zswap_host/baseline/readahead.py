"""Swap-in readahead of Linux 6.1 on SSDs, the swap cache it fills, and block-layer merging.

- :func:`swapin_nr_pages` is ``__swapin_nr_pages`` (mm/swap_state.c): the window is ``hits + 2``
  rounded up to a power of two (at least 4) when earlier readahead pages were used, 2 for a fault
  next to the previous one, else 1; capped at ``2^page_cluster``; never below half the last window.
- :class:`VmaReadahead` is ``swap_vma_readahead``/``swap_ra_info``: per-VMA state (last fault
  address, window, hits); a fault computes the window, places it forward, backward or centred
  around the fault, clamps it to the VMA and to the PMD (512 pages) around the fault, and resets
  the hits; a swap-cache hit on a readahead page (``lookup_swap_cache`` with ``PG_readahead``)
  counts one hit. SSDs use VMA readahead (``swap_use_vma_readahead``: no rotating swap device).
- :class:`SwapCache` holds pages read ahead and not yet faulted, oldest evicted first; with a
  ``lifetime`` it also drops a page once that many pages have been swapped out since it was read
  (an unmapped, unreferenced swap-cache folio is reclaimed when it reaches the inactive LRU's tail).
- :func:`merge_runs` is plug merging (block/blk-merge.c ``blk_attempt_plug_merge``): a bio merges
  only with the request added just before it, when physically adjacent (back or front merge).
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

SWAP_RA_ORDER_CEILING = 5           # include/linux/swap.h, 64-bit
SWAP_RA_HITS_MAX = (1 << 6) - 1     # SWAP_RA_HITS_MASK with PAGE_SHIFT 12
PMD_PAGES = 512                     # PMD_SIZE / PAGE_SIZE on x86-64


def swapin_nr_pages(prev: int, fpfn: int, hits: int, max_pages: int, prev_win: int) -> int:
    """``__swapin_nr_pages(prev_offset, offset, hits, max_pages, prev_win)``."""
    pages = hits + 2
    if pages == 2:
        if fpfn != prev + 1 and fpfn != prev - 1:
            pages = 1
    else:
        roundup = 4
        while roundup < pages:
            roundup <<= 1
        pages = roundup
    pages = min(pages, max_pages)
    return max(pages, prev_win // 2)      # "Don't shrink readahead too fast"


class VmaReadahead:
    """Per-VMA readahead state. Page ids are virtual page numbers; with ``vma_pages`` set, ids
    ``[k*vma_pages, (k+1)*vma_pages)`` form VMA ``k``, otherwise all ids form one VMA from 0."""

    def __init__(self, page_cluster: int = 3, vma_pages: int | None = None) -> None:
        if page_cluster < 0:
            raise ValueError("page_cluster must be >= 0")
        self.max_win = 1 << min(page_cluster, SWAP_RA_ORDER_CEILING)
        self.vma_pages = vma_pages
        self._state: dict[int, list[int]] = {}    # vma -> [last fault pfn, win, hits]

    def _vma(self, pid: int) -> tuple[int, int, int]:
        if self.vma_pages:
            v = pid // self.vma_pages
            return v, v * self.vma_pages, (v + 1) * self.vma_pages
        return 0, 0, 1 << 62

    def _st(self, v: int) -> list[int]:
        st = self._state.get(v)
        if st is None:                        # swap_readahead_info starts at 0: no history
            st = self._state[v] = [-2, 0, 0]
        return st

    def on_hit(self, pid: int) -> None:
        """A fault found a readahead page in the swap cache."""
        v = pid // self.vma_pages if self.vma_pages else 0
        st = self._state.get(v)
        if st is None:
            st = self._state[v] = [-2, 0, 0]
        st[0] = pid
        if st[2] < SWAP_RA_HITS_MAX:
            st[2] += 1

    def on_fault(self, pid: int) -> tuple[int, int]:
        """A fault that needs I/O: returns the window ``[start, end)`` of page ids to read.
        (Called once per major fault: :func:`swapin_nr_pages` and the VMA lookup are inlined.)"""
        max_win = self.max_win
        if max_win == 1:
            return pid, pid + 1
        vp = self.vma_pages
        if vp:
            v = pid // vp
            vlo, vhi = v * vp, (v + 1) * vp
        else:
            v, vlo, vhi = 0, 0, 1 << 62
        st = self._state.get(v)
        if st is None:                        # swap_readahead_info starts at 0: no history
            st = self._state[v] = [-2, 0, 0]
        prev = st[0]
        win = swapin_nr_pages(prev, pid, st[2], max_win, st[1])
        st[0], st[1], st[2] = pid, win, 0
        if win == 1:
            return pid, pid + 1
        if pid == prev + 1:
            lo, hi = pid, pid + win
        elif prev == pid + 1:
            lo, hi = pid - win + 1, pid + 1
        else:
            left = (win - 1) // 2
            lo, hi = pid - left, pid + win - left
        pmd = pid - pid % PMD_PAGES
        if lo < vlo:
            lo = vlo
        if lo < pmd:
            lo = pmd
        if hi > vhi:
            hi = vhi
        if hi > pmd + PMD_PAGES:
            hi = pmd + PMD_PAGES
        return lo, hi

    def quiet(self) -> tuple[bool, int]:
        """One VMA (``vma_pages`` unset): ``(quiet, prev)`` — whether the next fault not next to
        ``prev`` (the last fault or hit) gets a one-page window: no hits since the last fault
        and half its window at most 1. Such faults then only move ``prev`` (:meth:`quiet_run`)."""
        st = self._state.get(0)
        if st is None:
            return True, -2
        return st[2] == 0 and st[1] // 2 <= 1, st[0]

    def quiet_run(self, last: int) -> None:
        """Faults in a quiet state, none next to the one before it, ``last`` the final one: what
        :meth:`on_fault` does for each (windows of one page)."""
        if self.max_win == 1:
            return
        st = self._state.get(0)
        if st is None:
            st = self._state[0] = [-2, 0, 0]
        st[0], st[1], st[2] = last, 1, 0

    def window(self, pid: int = 0) -> int:
        """The current window of ``pid``'s VMA (0 before its first fault)."""
        st = self._state.get(self._vma(pid)[0])
        return st[1] if st else 0


class SwapCache:
    """Readahead pages not yet faulted: id -> (page bytes, time the read completes). Bounded;
    the oldest page goes first. ``lifetime``: a page is also dropped once :meth:`age` has been
    told of that many swapped-out pages since it was read (None: no ageing). ``wasted`` counts
    pages that left without being used."""

    def __init__(self, capacity: int = 4096, lifetime: int | None = None) -> None:
        self.capacity = max(0, capacity)
        self.lifetime = lifetime
        self._d: OrderedDict[int, tuple[np.ndarray, float]] = OrderedDict()
        self._born: dict[int, int] = {}
        self._clock = 0
        self.wasted = 0

    def __len__(self) -> int:
        return len(self._d)

    @property
    def held(self):
        """The held pages' ids, as a live read-only view (``pid in held``, ``bool(held)``): the
        dict's keys, so a per-fault loop tests membership without a method call each time."""
        return self._d.keys()

    def __contains__(self, pid: int) -> bool:
        return pid in self._d

    def put(self, pid: int, page: np.ndarray, ready: float) -> None:
        self._d[pid] = (page, ready)
        self._d.move_to_end(pid)
        self._born[pid] = self._clock
        while len(self._d) > self.capacity:
            old, _ = self._d.popitem(last=False)
            self._born.pop(old, None)
            self.wasted += 1

    def take(self, pid: int) -> tuple[np.ndarray, float] | None:
        self._born.pop(pid, None)
        return self._d.pop(pid, None)

    def fill(self, pids, resolve) -> None:
        """Give pages put with ``page=None`` (their read not charged yet; ``ready`` held a
        reference) their bytes and completion time: ``resolve(reference) -> (page, ready)``.
        Their place in the eviction order does not change."""
        d = self._d
        for p in pids:
            e = d.get(p)
            if e is not None and e[0] is None:
                d[p] = resolve(e[1])

    def forget(self, pids) -> None:
        """Drop pages put with ``page=None`` whose read never completed (the device failed)."""
        d = self._d
        for p in pids:
            e = d.get(p)
            if e is not None and e[0] is None:
                del d[p]
                self._born.pop(p, None)

    def age(self, pages: int) -> None:
        """``pages`` more pages were reclaimed: drop the pages read more than ``lifetime`` ago."""
        self._clock += int(pages)
        if self.lifetime is None:
            return
        d, born, limit = self._d, self._born, self._clock - self.lifetime
        while d:
            pid = next(iter(d))
            if born.get(pid, limit) > limit:
                break
            d.popitem(last=False)
            born.pop(pid, None)
            self.wasted += 1

    def drop(self, pids) -> None:
        """Invalidate pages (swapped out again or discarded): their readahead was wasted."""
        d = self._d
        if not d:
            return
        for p in pids:
            if d.pop(p, None) is not None:
                self._born.pop(p, None)
                self.wasted += 1


def merge_runs(slots: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Merge slots submitted in this order into requests of physically adjacent slots.

    Returns ``(first_slot, nr_slots, pos)``: per request its lowest slot and length, and per
    submitted slot its index in the requests' data laid back to back (ascending within each)."""
    slots = np.asarray(slots, np.int64)
    n = slots.size
    if n == 0:
        z = np.zeros(0, np.int64)
        return z, z, z
    brk = np.flatnonzero(np.abs(np.diff(slots)) != 1) + 1
    b = np.concatenate(([0], brk))
    e = np.concatenate((brk, [n]))
    lo = np.minimum(slots[b], slots[e - 1])
    cnt = e - b
    if b.size == 1 and slots[0] == lo[0]:
        return lo, cnt, np.arange(n)
    run = np.repeat(np.arange(b.size), cnt)
    start = np.concatenate(([0], np.cumsum(cnt)[:-1]))
    return lo, cnt, start[run] + slots - lo[run]
