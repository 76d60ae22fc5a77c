"""``Reclaim``: ``ConventionalSwap``'s swap-out, a reclaim batch written to the swap area.

Swap-out is a reclaim batch (``shrink_inactive_list`` → ``shrink_page_list`` in mm/vmscan.c):
chunks of at most ``SWAP_CLUSTER_MAX`` = 32 pages; each page gets a slot from the cluster allocator
(``add_to_swap`` → ``folio_alloc_swap`` → ``scan_swap_map_slots``, see :mod:`.slots`), in order,
and is written by ``swap_writepage`` → ``__swap_writepage`` (mm/page_io.c) as a one-page bio; under
the reclaim plug (``blk_start_plug`` in ``shrink_lruvec``) only physically adjacent slots merge into
one request. A chunk's requests reach the device as one queue (qd = number of requests).

A page still holding its swap-cache slot (swapped in while the area was less than half full, see
:mod:`.conventional`) is written back to that slot (``shrink_folio_list``: no ``add_to_swap`` for a
folio already in the swap cache); with ``in_place=False`` every re-swap gets a new slot and the old
slot is freed once the new copy is written.
"""

from __future__ import annotations

import numpy as np

from .page_table import PageTable
from .readahead import SwapCache
from .swap_area import SwapArea

SWAP_CLUSTER_MAX = 32       # include/linux/swap.h: pages per reclaim batch


class Reclaim:
    """Writes swap-outs to ``area`` and records the pages' new slots in ``table`` (dropping their
    readahead copies from ``cache``). ``in_place_pages``: pages rewritten in their kept slots."""

    def __init__(self, table: PageTable, area: SwapArea, cache: SwapCache) -> None:
        self.table, self.area, self.cache = table, area, cache
        self.in_place_pages = 0

    def write(self, ids, hx, pages, old, keep, cpu: int, handle: int | None) -> None:
        """One swap-out call's pages (ids deduplicated, state indices ``hx``, current slots ``old``,
        ``keep``: rewritten in place), allocating on ``cpu``'s cluster, under FDP ``handle``."""
        if self.area.alloc.nfree >= int((~keep).sum()):
            self.batch(ids, hx, pages, old, keep, cpu, handle)
        else:
            if keep.any():
                self.batch(ids[keep], hx[keep], pages[keep], old[keep], keep[keep], cpu, handle)
                ids, hx, pages = ids[~keep], hx[~keep], pages[~keep]
            self.tight(ids, hx, pages, cpu, handle)

    def commit(self, ids: np.ndarray, hx: np.ndarray, slots: np.ndarray, old: np.ndarray) -> None:
        """The pages written: ``slots`` are theirs now, ``old`` ones not rewritten are freed."""
        t, owner = self.table, self.area.owner
        new = hx == 0
        if new.any():                                 # ids not held yet get a handle now
            hx = hx.copy()
            hx[new] = t.ids.insert(ids[new]) + 1
            t.fit()
            t.orph[hx[new]] = False
        orph = t.orph[hx]
        owner[old[old >= 0]] = 0                      # before the new ones: in-place rewrites keep theirs
        owner[slots] = hx
        t.slot[hx] = slots
        t.resident[hx] = False
        t.keep[hx] = False
        if orph.any():
            t.orph[hx] = False
            t.drop_orphans(hx[orph])
        if len(self.cache):
            self.cache.drop(ids.tolist())
        stale = old[(old >= 0) & (old != slots)]
        t.live += int(((old < 0) & ~orph).sum())
        self.area.free(stale)

    def batch(self, ids, hx, pages, old, keep, cpu, handle) -> None:
        """Reclaim chunks of SWAP_CLUSTER_MAX pages in the order given: pages still holding their
        swap-cache slot are written back to it, the others get slots from the allocator
        (``add_to_swap``) in order; the chunk's bios merge when adjacent (plug)."""
        done: list[np.ndarray] = []
        slots = old.copy()
        try:
            chunks = []
            for c in range(0, ids.size, SWAP_CLUSTER_MAX):
                k = keep[c:c + SWAP_CLUSTER_MAX]
                s = slots[c:c + SWAP_CLUSTER_MAX]
                need = int(k.size - k.sum())
                if need:
                    got = self.area.alloc.alloc(need, cpu)
                    done.append(got)
                    s[~k] = got
                chunks.append((s, pages[c:c + SWAP_CLUSTER_MAX]))
            self.area.write_chunks(chunks, handle)
        except BaseException:
            for s in done:                            # nothing was mapped to them yet
                self.area.free(s)
            raise
        self.in_place_pages += int(keep.sum())
        self.commit(ids, hx, slots, old)

    def tight(self, ids, hx, pages, cpu, handle) -> None:
        """Nearly full area: write as many pages as there are free slots, commit (freeing the old
        slots), repeat. The full check guarantees free slots >= new ids still to write, so with
        no free slot left the rest all replace stored pages and are rewritten in place."""
        i = 0
        while i < ids.size:
            free = self.area.alloc.nfree
            k = min(SWAP_CLUSTER_MAX, ids.size - i, free) if free else min(SWAP_CLUSTER_MAX, ids.size - i)
            sub, hsub = ids[i:i + k], hx[i:i + k]
            old = self.table.slot[hsub]
            if free:
                s = self.area.alloc.alloc(k, cpu)
                try:
                    self.area.write(s, pages[i:i + k], handle)
                except BaseException:
                    self.area.free(s)
                    raise
            else:
                s = old
                self.area.write(s, pages[i:i + k], handle)
            self.commit(sub, hsub, s, old)
            i += k
