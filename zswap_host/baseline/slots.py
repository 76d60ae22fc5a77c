"""The swap-slot allocator of Linux 6.1 on an SSD (``SWP_SOLIDSTATE``), as in ``mm/swapfile.c``.

Slots are 4 KiB pages of the swap area; slot 0 holds the swap header and is never handed out. The
area is cut into clusters of ``SWAPFILE_CLUSTER`` slots (256 without ``CONFIG_THP_SWAP``,
``HPAGE_PMD_NR`` = 512 with it). What is modeled:

- ``setup_swap_map_and_extents``: the header's cluster and the partial last cluster are never free;
  the free-cluster list starts interleaved by ``SWAP_CLUSTER_COLS`` (0, 64, 128, …, 1, 65, …), so two
  clusters taken one after the other are usually far apart on the device.
- ``scan_swap_map_try_ssd_cluster``: each CPU owns a current cluster and hands out its free slots in
  ascending order; when it is used up the CPU takes the head of the free-cluster list.
- ``scan_swap_map_ssd_cluster_conflict``: a per-CPU cluster that became wholly free again (and so
  sits on the free list) is given up unless it is the list head.
- ``scan_swap_map_slots`` (``scan:`` label): with no free cluster left, first-fit scan for free slots
  from the CPU's ``cluster_next_cpu`` upwards, wrapping to the lowest free slot — this fallback is
  what fragments a long-running swap area.
- ``set_cluster_next``: the per-CPU scan base moves to the slot after the last one handed out; when
  it crosses a ``SWAP_ADDRESS_SPACE_PAGES`` (16384-slot) trunk it jumps to a random trunk.
- ``swapon``: every CPU's scan base starts at a random slot (``1 + prandom_u32_max(highest_bit)``).
- ``dec_cluster_info_page``/``free_cluster``: a cluster whose last slot is freed goes to the tail
  of the free list (through the discard list when ``SWP_PAGE_DISCARD`` is set; the caller discards).

One call of :meth:`ClusterAllocator.alloc` stands for one ``scan_swap_map_slots`` call; all
bookkeeping is numpy, the only Python loop is per cluster (or per scan window), not per slot.
"""

from __future__ import annotations

from collections import deque

import numpy as np

SWAP_ADDRESS_SPACE_SHIFT = 14                     # mm/swap.h
SWAP_ADDRESS_SPACE_PAGES = 1 << SWAP_ADDRESS_SPACE_SHIFT
_L1_COLS = 16                                     # DIV_ROUND_UP(L1_CACHE_BYTES 64, sizeof(cluster_info) 4)


class ClusterAllocator:
    """Slot bitmap, per-cluster use counts, the free-cluster FIFO and per-CPU clusters."""

    def __init__(self, nslots: int, cpus: int = 1, cluster_slots: int = 256, seed: int = 0) -> None:
        if nslots < 2:
            raise ValueError(f"a swap area needs at least 2 slots (header + 1), not {nslots}")
        if cpus < 1 or cluster_slots < 1:
            raise ValueError("cpus and cluster_slots must be positive")
        self.nslots = nslots
        self.C = cluster_slots
        self.ncl = -(-nslots // cluster_slots)
        self.avail = np.ones(nslots, np.bool_)             # swap_map[offset] == 0
        self.avail[0] = False                              # swap header (SWAP_MAP_BAD)
        self._lo, self._hi = 1, nslots - 1                # lowest_bit / highest_bit hints
        self.count = np.zeros(self.ncl, np.int64)         # cluster_count(), tail padding included
        self.count[0] += 1
        self.count[-1] += self.ncl * cluster_slots - nslots
        self.nfree = nslots - 1
        self._rng = np.random.default_rng(seed)
        cols = max(_L1_COLS, -(-SWAP_ADDRESS_SPACE_PAGES // cluster_slots))
        pad = -(-self.ncl // cols) * cols                # for j in cols: for i: idx = i*cols + j
        order = np.arange(pad).reshape(-1, cols).T.reshape(-1)   # col 0 first: cluster_next = 1
        order = order[order < self.ncl]
        self.in_free = np.zeros(self.ncl, np.bool_)
        self.free_list: deque[int] = deque(int(c) for c in order if self.count[c] == 0)
        self.in_free[list(self.free_list)] = True
        self.pc_index = [-1] * cpus                       # percpu_cluster->index (-1 = null)
        self.pc_next = [0] * cpus                         # percpu_cluster->next
        self.cursor = [int(1 + self._rng.integers(nslots - 1)) for _ in range(cpus)]  # cluster_next_cpu

    # -- allocation -------------------------------------------------------------------------
    def alloc(self, n: int, cpu: int = 0) -> np.ndarray:
        """Hand out ``n`` slots for CPU ``cpu`` in the kernel's order (caller checks ``nfree``)."""
        if n > self.nfree:
            raise ValueError(f"{n} slots asked, {self.nfree} free")
        out: list[np.ndarray] = []
        need = n
        last = -1
        while need:
            ci = self.pc_index[cpu]
            if ci < 0:
                if self.free_list:                        # new cluster from the free list head
                    ci = self.free_list[0]
                    self.pc_index[cpu] = ci
                    self.pc_next[cpu] = ci * self.C
                    continue
                got = self._scan(self.cursor[cpu] if last < 0 else last + 1, need)
                out.append(got)
                last = int(got[-1])
                break
            lo, hi = self.pc_next[cpu], min(self.nslots, (ci + 1) * self.C)
            free = lo + np.flatnonzero(self.avail[lo:hi]) if lo < hi else np.zeros(0, np.int64)
            if free.size == 0:                            # cluster used up: cluster_set_null()
                self.pc_index[cpu] = -1
                continue
            if self.in_free[ci]:                          # wholly free again: conflict check
                if self.free_list[0] != ci:
                    self.pc_index[cpu] = -1
                    continue
                self.free_list.popleft()                  # alloc_cluster()
                self.in_free[ci] = False
            take = free[:need]
            self.avail[take] = False
            self.count[ci] += take.size
            self.pc_next[cpu] = int(take[-1]) + 1
            out.append(take)
            need -= take.size
            last = int(take[-1])
        self.nfree -= n
        self._set_cluster_next(cpu, last + 1)
        return np.concatenate(out).astype(np.int64, copy=False)

    def _scan(self, start: int, need: int) -> np.ndarray:
        """First-fit scan from ``start`` up to the end, then from slot 1 (the ``scan:`` loop)."""
        out: list[np.ndarray] = []
        pos = start if 1 <= start < self.nslots else 1
        window = max(4096, 8 * need)
        while need:
            end = min(self.nslots, pos + window)
            free = pos + np.flatnonzero(self.avail[pos:end])
            if free.size:
                take = free[:need]
                out.append(take)
                self.avail[take] = False
                np.add.at(self.count, take // self.C, 1)
                need -= take.size
            pos = end if end < self.nslots else 1
            window *= 2
        return np.concatenate(out)

    def _set_cluster_next(self, cpu: int, nxt: int) -> None:
        prev = self.cursor[cpu]
        if (prev >> SWAP_ADDRESS_SPACE_SHIFT) != (nxt >> SWAP_ADDRESS_SPACE_SHIFT):
            if self.nfree <= 1:
                return
            lowest, highest = self._bounds()
            if highest <= lowest:
                return
            nxt = lowest + int(self._rng.integers(highest - lowest + 1))
            nxt = max(nxt & ~(SWAP_ADDRESS_SPACE_PAGES - 1), lowest)
        self.cursor[cpu] = nxt

    def _bounds(self) -> tuple[int, int]:
        """Lowest and highest free slot (``si->lowest_bit``/``highest_bit``), searched from the
        hints kept on free so that the search stays short; only called with free slots left."""
        f = self.avail
        lo = self._lo
        while not f[lo]:
            seg = f[lo:lo + 4096]
            i = int(np.argmax(seg))
            lo = lo + i if seg[i] else lo + seg.size
        hi = self._hi
        while not f[hi]:
            seg = f[max(0, hi - 4095):hi + 1]
            nz = np.flatnonzero(seg)
            hi = hi - seg.size + 1 + int(nz[-1]) if nz.size else hi - seg.size
        self._lo, self._hi = lo, hi
        return lo, hi

    # -- freeing ----------------------------------------------------------------------------
    def free(self, slots: np.ndarray) -> np.ndarray:
        """Free ``slots`` (``swap_entry_free``); returns the clusters that became wholly free, in
        the order they did. They are appended to the free list; the caller discards them first
        when page discard is on."""
        slots = np.asarray(slots, np.int64)
        if slots.size == 0:
            return np.zeros(0, np.int64)
        self.avail[slots] = True
        self.nfree += slots.size
        self._lo = min(self._lo, int(slots.min()))        # swap_range_free()
        self._hi = max(self._hi, int(slots.max()))
        cl = slots // self.C
        u, c = np.unique(cl, return_counts=True)
        self.count[u] -= c
        emptied = u[self.count[u] == 0]
        if emptied.size > 1:                              # order of their last freed slot
            last_pos = np.full(self.ncl, -1, np.int64)
            np.maximum.at(last_pos, cl, np.arange(cl.size))
            emptied = emptied[np.argsort(last_pos[emptied], kind="stable")]
        for c_ in emptied.tolist():
            if not self.in_free[c_]:
                self.in_free[c_] = True
                self.free_list.append(c_)                 # __free_cluster(): list tail
        return emptied

    def cluster_range(self, c: int) -> tuple[int, int]:
        """First slot and slot count of cluster ``c`` (the last cluster may be partial)."""
        lo = c * self.C
        return lo, min(self.nslots, lo + self.C) - lo

    @property
    def free_clusters(self) -> int:
        return len(self.free_list)
