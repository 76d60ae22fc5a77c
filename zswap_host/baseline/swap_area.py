"""``SwapArea``: the swap area on the device, as ``ConventionalSwap`` uses it (mm/swapfile.c,
mm/page_io.c).

Its slots come from the cluster allocator (:mod:`.slots`); ``owner`` says which page holds each
slot. A page is written by ``swap_writepage`` → ``__swap_writepage`` as a one-page bio; under the
reclaim plug only physically adjacent slots merge into one request. Freed slots are reused by the
allocator, so the SSD sees scattered overwrites unless page discard is on (``swapon --discard``:
``SWP_PAGE_DISCARD`` discards a cluster once it is wholly free, ``discard_swap_cluster``;
``SWP_AREA_DISCARD`` discards the whole area at swapon, ``discard_swap``).
"""

from __future__ import annotations

import numpy as np

from .readahead import merge_runs
from .slots import ClusterAllocator

PAGE_SIZE = 4096


class SwapArea:
    """The slots of ``device`` (4 KiB each, slot 0 the header): ``alloc`` hands them out,
    ``capacity`` is their number less the header, ``owner[slot]`` the state index of the page
    holding it (0: none; see :class:`.page_table.PageTable`). ``page_discard``: discard clusters
    as they become wholly free; ``area_discard``: discard the area once, here (swapon).
    ``write_requests`` counts the requests written."""

    def __init__(self, device, cpus: int, cluster_slots: int, seed: int, area_discard: bool,
                 page_discard: bool) -> None:
        self.device = device
        self.area_discard, self.page_discard = area_discard, page_discard
        self.alloc = ClusterAllocator(device.size // PAGE_SIZE, cpus, cluster_slots, seed)
        self.capacity = self.alloc.nslots - 1
        self.owner = np.zeros(self.alloc.nslots, np.int32)   # slot -> state index holding it (0: none)
        self.write_requests = 0
        if self.area_discard and self.capacity:                  # discard_swap(): all but the header
            device.discard(PAGE_SIZE, self.capacity * PAGE_SIZE)

    def write(self, slots: np.ndarray, pages: np.ndarray, handle: int | None) -> None:
        self.write_chunks([(slots, pages)], handle)

    def write_chunks(self, chunks: list[tuple[np.ndarray, np.ndarray]], handle: int | None) -> None:
        """Reclaim chunks written one after the other (each chunk's adjacent slots merged into one
        queue, the next chunk issued when it completes), in one device call; ``handle``: the FDP
        placement handle to write them under (None: no hint)."""
        firsts, cnts, datas, sizes = [], [], [], []
        for slots, pages in chunks:
            first, cnt, pos = merge_runs(slots)
            if pos.size and (pos[-1] != pos.size - 1 or np.any(np.diff(pos) != 1)):
                data = np.empty_like(pages)
                data[pos] = pages
            else:
                data = pages
            firsts.append(first)
            cnts.append(cnt)
            datas.append(data)
            sizes.append(first.size)
        first, cnt = np.concatenate(firsts), np.concatenate(cnts)
        data = np.ascontiguousarray(np.concatenate(datas) if len(datas) > 1 else datas[0])
        self.device.write_groups(first * PAGE_SIZE, data, cnt * PAGE_SIZE, np.array(sizes, np.int64),
                                 np.array(sizes, np.int64), **({} if handle is None else {"handle": handle}))
        self.write_requests += int(first.size)

    def free(self, slots: np.ndarray) -> None:
        """Give slots back to the allocator (discarding the clusters it empties, with page discard)."""
        emptied = self.alloc.free(slots)
        if self.page_discard:
            for c in emptied.tolist():                # discard_swap_cluster()
                lo, n = self.alloc.cluster_range(c)
                self.device.discard(lo * PAGE_SIZE, n * PAGE_SIZE)
