"""``Repacker``: packing hot rows together in ``PagedEmbedding``'s pages — the rows ``RowPacker``
picks (:mod:`.row_packing`) swap slots, their values and optimizer state moving with them within the
pages those slots are on, in the page cache's frames. No value changes.
"""

from __future__ import annotations

import numpy as np

from ..errors import ZswapError
from .gather_apply import GatherApply
from .page_cache import PageCache
from .table_layout import ARRAYS, TableLayout


class Repacker:
    """Repacks ``layout``'s packed tables in ``cache`` (``run``, what ``PagedEmbedding.repack``
    documents); ``step``: the step in flight, settled and ended first. ``last_error``: the device
    error that cut the last failed repack short."""

    def __init__(self, layout: TableLayout, cache: PageCache, step: GatherApply) -> None:
        self.layout = layout
        self.cache = cache
        self.step = step
        self.last_error: ZswapError | None = None

    def run(self) -> int:
        pk, cache = self.layout.packer, self.cache
        if pk is None:
            return 0
        try:
            self.step.settle()
        except ZswapError as e:
            return self._failed(e)
        self.step.end()                   # its frames are about to move: a new step starts anyway
        cache.pin.fill(False)
        if cache.ahead is not None and cache.ahead.size:     # keep what a prefetch queued
            fa = cache.page_frame[cache.ahead]
            cache.pin[fa[fa >= 0]] = True
        room = cache.nframes - int(np.count_nonzero(cache.pin))
        names = ARRAYS[self.layout.optimizer]
        # rows moved: pack.max_rows, else a budget's worth of rows; fewer while their pages do not fit
        cap = int(pk.cfg.max_rows) if pk.cfg.max_rows is not None else room * int(self.layout.rpp.max())
        while True:
            plan = pk.plan(cap)
            if not plan:
                pk.decay()
                return 0
            layouts = {(t, nm): self.layout.array_layout(t, nm) for t, _, _, _ in plan for nm in names}
            pages = np.unique(np.concatenate([layouts[t, nm][0] + src // layouts[t, nm][1]
                                              for t, _, src, _ in plan for nm in names]))
            if pages.size <= room:
                break
            cap = min(cap - 1, int(cap * room / pages.size * 0.9))
        new = pages[cache.page_frame[pages] < 0]
        c = cache.counters
        refs, hits, f0 = c.page_refs, c.hits, c.faults
        pin0 = cache.pin.copy()
        try:
            cache.make_resident(pages)    # atomic: on an error no frame taken, the pins as they were
        except ZswapError as e:
            return self._failed(e)
        finally:
            c.page_refs, c.hits = refs, hits          # not lookups
        c.repack_faults += c.faults - f0
        if cache.payload:                 # pure DRAM from here: nothing can fail half-way
            for t, _, src, dst in plan:
                for nm in names:
                    first, R, w, _ = layouts[t, nm]
                    v = np.lib.stride_tricks.as_strided(cache.f32, shape=(cache.nframes, R, w),
                                                        strides=(cache.page_size, 4 * w, 4), writeable=True)
                    v[cache.page_frame[first + dst // R], dst % R] = v[cache.page_frame[first + src // R], src % R]
        cache.dirtied(cache.page_frame[pages].astype(np.int64), None)
        pk.commit(plan)
        cache.pin[:] = pin0
        cache.ref[cache.page_frame[new]] = False        # brought in for the move only: first to go
        moved = int(sum(r.size for _, r, _, _ in plan))
        c.repacks += 1
        c.rows_moved += moved
        c.repack_pages += int(pages.size)
        pk.decay()
        return moved

    def _failed(self, e: ZswapError) -> int:
        self.cache.counters.repack_errors += 1
        self.last_error = e
        return 0
