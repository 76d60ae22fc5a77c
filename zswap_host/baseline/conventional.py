"""``ConventionalSwap``: what Linux 6.1 swap does to a conventional SSD, as a ``SwapBackend``.

Swap-out is a reclaim batch written to 4 KiB slots of the swap area (:mod:`.reclaim`,
:mod:`.swap_area`; the slots from the cluster allocator, :mod:`.slots`). Swap-in is a page fault
with VMA readahead (:mod:`.readahead`), one at a time, or with ``faults="batched"`` the asked pages
announced first and read as one queue; one pass plans a call's reads (:mod:`.fault_plan`), then they
are charged. What the model knows of each page is its :class:`.page_table.PageTable`.

A page swapped in keeps its slot: the read fault leaves the folio in the swap cache
(``do_swap_page``: ``should_try_to_free_swap`` frees it only on a write fault or when
``vm_swap_full()``, i.e. less than half the area free), the later write reuses the exclusive page
without freeing it (``do_wp_page``), and reclaim writes the dirty swap-cache folio back to that same
slot (``shrink_folio_list``: no ``add_to_swap`` for a folio already in the swap cache). So a page
swapped out again is rewritten *in place* — a scattered 4 KiB write — when it was swapped in while
the area was less than half full (``in_place=True``, measured in a 6.1 guest: see
docs/baseline.md, "Validation against the kernel"). When the fault finds the area over half full
the slot is freed right away and the page, now only in DRAM, gets a new slot when it is swapped out
again (the model keeps its bytes on the side, so that a caller that drops it clean can still swap it
in). ``discard`` of a resident page frees its slot (what a write fault does). With
``in_place=False`` (the model before the validation) every re-swap gets a new slot and the old slot
is freed once the new copy is written.

``swap_in_latencies()`` are page waits: for each page asked, the time from the start of the
``swap_in`` call (the moment the caller needed it) to the moment its data was in memory, so a
page's wait includes the faults served before it. ``fault_latencies()`` are the major faults' own
latencies (serial mode).
"""

from __future__ import annotations

import threading
from collections import Counter

import numpy as np

from ..backend import LatencyLog, SwapStats
from ..errors import StoreClosedError, SwapFullError
from ..neighbours import check_limit, first_distinct, slots_near
from ..store.idmap import as_page_ids
from .fault_plan import FaultPlan, FaultPlanner
from .page_table import PageTable
from .readahead import SWAP_RA_ORDER_CEILING, SwapCache, VmaReadahead
from .reclaim import Reclaim
from .swap_area import PAGE_SIZE, SwapArea

FAULT_MODES = ("serial", "batched")

_DISCARD_MODES = {False: (False, False), None: (False, False), "none": (False, False),
                  True: (True, True), "both": (True, True), "once": (True, False), "pages": (False, True)}


class ConventionalSwap:
    """Linux swap on a ``BlockDevice`` (emulated SSD, file, …).

    ``page_cluster`` is ``/proc/sys/vm/page-cluster`` (readahead up to 2^page_cluster pages);
    ``discard`` is ``swapon --discard[=once|pages]`` (True = both); ``cpus`` is the number of
    per-CPU allocation clusters (stream ``s`` allocates on CPU ``s % cpus``).
    Keyword-only: ``cluster_slots`` (SWAPFILE_CLUSTER: 256, or 512 with CONFIG_THP_SWAP),
    ``swap_cache_pages`` (bound on readahead pages kept), ``vma_pages`` (ids per VMA for the
    readahead clamp; None = one VMA), ``seed`` (the kernel's random scan bases),
    ``in_place`` (a page swapped in while the area is less than half full keeps its slot and is
    rewritten there when swapped out again, as 6.1 does after a read fault; False: every re-swap
    gets a new slot, as after a write fault), ``ra_lifetime`` (a readahead page not used before
    this many more pages were swapped out is dropped, as reclaim drops an unused readahead folio
    when it reaches the inactive LRU's tail: about half the DRAM of the swapping process; None =
    only the ``swap_cache_pages`` bound), ``close_device`` (close the device in :meth:`close`),
    ``faults`` (``"serial"``: one fault at a time; ``"batched"``: the asked pages announced first and
    read as one queue, see the module doc), ``batch_qd`` (queue depth of a batched read),
    ``handles`` (on an FDP device: None — no placement hints, as Linux 6.1 writes swap; ``"stream"``
    — a swap-out of stream ``s`` is written under handle ``s % ruhs``, a hypothetical FDP-aware swap
    that keeps each stream's pages in reclaim units of their own)."""

    page_size = PAGE_SIZE

    def __init__(self, device, page_cluster: int = 3, discard: bool | str = False, cpus: int = 1, *,
                 cluster_slots: int = 256, swap_cache_pages: int = 4096, vma_pages: int | None = None,
                 seed: int = 0, in_place: bool = True, ra_lifetime: int | None = None,
                 close_device: bool = False, faults: str = "serial", batch_qd: int = 32,
                 handles: str | None = None, id_space: int = 0) -> None:
        if PAGE_SIZE % device.block_size:
            raise ValueError(f"device block size {device.block_size} does not divide the {PAGE_SIZE}-byte page")
        if discard not in _DISCARD_MODES:
            raise ValueError(f"discard must be True/False or 'once', 'pages', 'both'; not {discard!r}")
        if faults not in FAULT_MODES:
            raise ValueError(f"faults must be one of {', '.join(FAULT_MODES)}; not {faults!r}")
        if int(batch_qd) < 1:
            raise ValueError(f"batch_qd must be >= 1, not {batch_qd}")
        if handles not in (None, "stream"):
            raise ValueError(f"handles must be None or 'stream', not {handles!r}")
        if handles and not getattr(device, "ruhs", 0):
            raise ValueError(f"handles={handles!r} needs a device with placement handles (fdp://), not {device.url}")
        self._ruhs = int(getattr(device, "ruhs", 0)) if handles else 0
        self.faults = faults
        self.batch_qd = int(batch_qd)
        self.cpus = int(cpus)
        self.page_cluster = int(page_cluster)
        self._close_device = close_device
        self._lock = threading.RLock()
        self._base = device.stats()                    # before swapon's discard (the area's): counted
        self._area = SwapArea(device, self.cpus, cluster_slots, seed, *_DISCARD_MODES[discard])
        self._ra = VmaReadahead(page_cluster, vma_pages)
        self._cache = SwapCache(swap_cache_pages, ra_lifetime)
        self._table = PageTable(id_space, PAGE_SIZE if getattr(device, "payload", True) else 8)
        self._planner = FaultPlanner(self._table, self._cache, self._ra, self.batch_qd)
        self._reclaim = Reclaim(self._table, self._area, self._cache)
        self._freed_on_fault = 0
        self.in_place = bool(in_place)
        self._host_w = self._host_r = 0
        self._faults = self._ra_hits = 0
        self._r_reqs = 0
        self._lat = LatencyLog()                       # page waits from the start of swap_in
        self._fault_lat = LatencyLog()                 # major faults' own latencies
        self._closed = False

    def swap_in_latencies(self) -> np.ndarray:
        """Every swapped-in page's wait so far: seconds (the device's clock) from the start of its
        ``swap_in`` call to its data being in memory."""
        with self._lock:
            return self._lat.values().copy()

    def fault_latencies(self) -> np.ndarray:
        """Every major fault's own latency so far (seconds, the device's clock)."""
        with self._lock:
            return self._fault_lat.values().copy()

    @property
    def device(self):
        """The block device the swap area is on (its clock: ``device.now()``)."""
        return self._area.device

    @property
    def capacity_pages(self) -> int:
        """Pages the swap area holds (its slots less the header)."""
        return self._area.capacity

    def idle(self, seconds: float) -> None:
        """Host idle time: Linux swap does no work of its own in it, so it passes on the device's
        clock (an emulated SSD with ``idle_gc=1`` collects garbage in it; a no-op on a wall clock).
        ``ValueError`` for a negative or non-finite window, as ``SwapStore.idle``."""
        seconds = float(seconds)
        if not np.isfinite(seconds) or seconds < 0:
            raise ValueError(f"idle window must be finite and not negative, not {seconds}")
        with self._lock:
            self._check_open()
            self._area.device.advance(seconds)

    # -- helpers ----------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError("ConventionalSwap is closed")

    def _slot_of(self, page_ids) -> np.ndarray:
        """Slot of each id (-1: not held or no slot)."""
        with self._lock:
            return self._table.slot[self._table.index(as_page_ids(page_ids))].copy()

    # -- SwapBackend ------------------------------------------------------------------------
    def swap_out(self, page_ids: np.ndarray, pages: np.ndarray, stream: int = 0) -> None:
        """Write a reclaim batch; replaces ids already stored. SwapFullError (nothing changed)
        when the live pages would not fit; a device error leaves every stored page as it was
        (pages rewritten in place included, on devices that fail a write before writing, as the
        emulated ones do; a real device may leave such a page's old copy torn, as in the kernel)."""
        ids = as_page_ids(page_ids)
        pages = np.asarray(pages)
        if pages.dtype != np.uint8 or pages.shape != (ids.size, PAGE_SIZE):
            raise ValueError(f"pages must be uint8 of shape ({ids.size}, {PAGE_SIZE}), not {pages.dtype} {pages.shape}")
        if ids.size == 0:
            return
        n_asked = ids.size
        uniq, last = np.unique(ids[::-1], return_index=True)
        if uniq.size != ids.size:                     # the same id twice: the last copy wins
            keep = np.sort(ids.size - 1 - last)
            ids, pages = ids[keep], pages[keep]
        with self._lock:
            self._check_open()
            hx = self._table.index(ids)
            old = self._table.slot[hx]
            new = int(((old < 0) & ~self._table.orph[hx]).sum())
            if self._table.live + new > self._area.capacity:
                raise SwapFullError(f"swap area full: {self._table.live} pages stored, {new} more asked, "
                                    f"{self._area.capacity} slots")
            cpu = int(stream) % self.cpus
            handle = int(stream) % self._ruhs if self._ruhs else None
            keep = self._table.keep[hx] & (old >= 0)  # dirty swap-cache pages: rewritten in place
            self._reclaim.write(ids, hx, pages, old, keep, cpu, handle)
            self._host_w += n_asked * PAGE_SIZE
            self._cache.age(n_asked)

    def swap_in(self, page_ids: np.ndarray) -> np.ndarray:
        """Fault the pages in, in the order asked; KeyError (nothing changed) on an unknown id.

        Planned, then charged: which page is a repeat, an orphan, announced (batched), a swap-cache
        hit or a major fault, and what each fault's readahead window reads, does not depend on
        timing, so one pass decides it all; the reads are then charged as serial groups (one per
        fault, each issued when the previous one completes) in one device call and copied out
        with one gather. Latencies, counters and the clock are those of faulting one at a time."""
        ids = as_page_ids(page_ids)
        n = ids.size
        with self._lock:
            self._check_open()
            if n == 0:
                return np.empty((0, PAGE_SIZE), np.uint8)
            hx = self._table.index(ids)               # held: a slot, or resident without one
            bad = hx == 0
            if bad.any():
                raise KeyError(int(ids[np.argmax(bad)]))
            order = np.argsort(ids, kind="stable")
            u = ids[order]
            if n == 1 or (u[1:] != u[:-1]).all():      # no repeats (the usual case)
                fi, src, firsts, hf = order, None, np.arange(n), hx
            else:
                u, fi, inv = np.unique(ids, return_index=True, return_inverse=True)
                src = fi[inv.reshape(-1)]             # each position's first occurrence
                firsts = np.sort(fi)                  # a repeat is already mapped
                hf = hx[firsts]
            orph = self._table.orph[hf]               # never left DRAM (the caller dropped it clean)
            t0 = self._area.device.now()
            lat = np.zeros(n)
            p = FaultPlan()
            pre = self._planner.willneed(u, hx[fi], fi, p) if self.faults == "batched" else None
            todo = ~orph
            if pre is not None:                       # announced pages need no fault
                ann = np.zeros(n, np.bool_)
                ann[pre[0]] = True
                todo &= ~ann[firsts]
            work = firsts[todo]
            if work.size:
                self._planner.plan_faults(ids, hx, work, firsts, p)
            pages = done = ends = None
            if p.grp_n:
                try:
                    buf, done = self._area.device.read_groups(np.asarray(p.req_slot, np.int64) * PAGE_SIZE,
                                                              np.asarray(p.req_cnt, np.int64) * PAGE_SIZE,
                                                              np.asarray(p.grp_n, np.int64),
                                                              np.asarray(p.grp_qd, np.int64))
                except BaseException:
                    self._cache.forget(p.puts)        # readahead that never arrived
                    raise
                pages = np.asarray(buf).reshape(-1, PAGE_SIZE)
                done = np.asarray(done, np.float64)
                gstart = np.cumsum(p.grp_n) - np.asarray(p.grp_n)
                ends = np.maximum.reduceat(done, gstart) if done.size else np.zeros(len(p.grp_n))
            if pages is not None:
                rowmap = np.zeros(n, np.int64)        # the row of the data read for each position
            if pre is not None:                       # announced: read by the batch
                ppos, prow, preq = pre
                lat[ppos] = np.maximum(0.0, done[preq] - t0)
                rowmap[ppos] = prow
            if p.f_pos:                               # major faults
                fpos = np.asarray(p.f_pos, np.int64)
                fgrp = np.asarray(p.f_grp, np.int64)
                before = np.concatenate(([t0], ends[:-1]))
                self._fault_lat.add(np.maximum(0.0, done[np.asarray(p.f_req, np.int64)] - before[fgrp]))
                lat[fpos] = ends[fgrp] - t0
                rowmap[fpos] = p.f_row
                self._faults += fpos.size
            if pages is None:
                out = np.empty((n, PAGE_SIZE), np.uint8)
            elif len(p.f_row) == n and pages.shape[0] == n and pre is None and p.f_row[-1] == n - 1:
                out = pages                           # one single-page fault per position, in order
            else:                                     # one gather (positions not read are set below)
                out = pages[rowmap]
            for i, (page, ready), gb in p.hits:       # minor faults on readahead pages
                if page is None:                      # read ahead earlier in this call
                    page, ready = pages[ready[1]], float(done[ready[0]])
                out[i] = page
                lat[i] = max(0.0, ready, float(ends[gb - 1]) if gb else t0) - t0
            self._ra_hits += len(p.hits)
            if p.puts:                                # readahead pages left in the swap cache
                self._cache.fill(p.puts, lambda ref: (pages[ref[1]].copy(), float(done[ref[0]])))
            if orph.any():
                op = firsts[orph]
                if self._table.width == PAGE_SIZE:
                    out[op] = self._table.pool[self._table.orow[hx[op]]]
                else:                                 # the device's read: the word, zeros after
                    out[op] = 0
                    out[op, :self._table.width] = self._table.pool[self._table.orow[hx[op]]]
            if src is not None:
                dup = np.flatnonzero(src != np.arange(n))
                out[dup] = out[src[dup]]
            # do_swap_page -> should_try_to_free_swap: a read fault keeps the swap-cache slot
            # unless vm_swap_full() (fewer than half the slots free); then the slot is freed
            keep = self.in_place and 2 * self._area.alloc.nfree >= self._area.capacity
            fpos_all = firsts[~orph]
            hin = hx[fpos_all]
            self._table.resident[hin] = True
            self._table.keep[hin] = keep
            if self.in_place and not keep and fpos_all.size:   # folio_free_swap(): the slots go back now
                slots = self._table.slot[hin]
                self._table.slot[hin] = -1
                self._area.owner[slots[slots >= 0]] = 0
                self._table.orph[hin] = True
                self._table.keep_orphans(hin, out if fpos_all.size == n else out[fpos_all])
                self._freed_on_fault += int(fpos_all.size)
                self._area.free(slots)
            self._r_reqs += len(p.req_slot)
            self._lat.add(lat[firsts])
            self._host_r += n * PAGE_SIZE
            return out

    def discard(self, page_ids: np.ndarray) -> None:
        """Drop pages (munmap / MADV_FREE of swapped pages: ``free_swap_and_cache``); unknown ids
        are ignored."""
        ids = np.unique(as_page_ids(page_ids))
        with self._lock:
            self._check_open()
            hx = self._table.index(ids)
            m = hx > 0                                # held: a slot or an orphan
            ids, hx = ids[m], hx[m]
            if not ids.size:
                return
            slots = self._table.slot[hx]
            orph = self._table.orph[hx]
            if orph.any():
                self._table.orph[hx] = False
                self._table.drop_orphans(hx[orph])
                slots = slots[~orph]
            self._area.owner[slots[slots >= 0]] = 0
            self._table.slot[hx] = -1
            self._table.resident[hx] = False
            self._table.keep[hx] = False
            self._table.ids.remove(ids)               # the handles are reused
            if len(self._cache):
                self._cache.drop(ids.tolist())
            self._table.live -= ids.size
            self._area.free(slots)

    def neighbours(self, page_ids: np.ndarray, limit: int) -> np.ndarray:
        """Fault-around hint (``SwapBackend``'s optional ``neighbours``): up to ``limit`` swapped-out
        ids (a slot, not resident) whose slots share the aligned cluster of ``2^page_cluster`` slots
        of one of ``page_ids``' slots, nearest first — the window of the kernel's
        ``swap_cluster_readahead`` (the slot-order read-ahead before VMA read-ahead). Distinct, none
        of ``page_ids``; ids not swapped out have none; ``page_cluster`` 0: none. int64; changes
        nothing. ``ValueError`` for bad ids or a negative limit, or after ``close()``."""
        ids = as_page_ids(page_ids)
        limit = check_limit(limit)
        with self._lock:
            self._check_open()
            win = 1 << min(self.page_cluster, SWAP_RA_ORDER_CEILING)
            if ids.size == 0 or limit == 0 or win == 1:
                return np.zeros(0, np.int64)
            sl = self._table.slot[self._table.index(ids)]
            sl = sl[sl >= 0]
            lo = sl & ~np.int64(win - 1)
            cand = slots_near(sl, lo, np.minimum(lo + win, self._area.owner.size), win - 1)
            hx = self._area.owner[cand].astype(np.int64)
            hx = hx[(hx > 0) & ~self._table.resident[hx]]
            return first_distinct(self._table.ids.ids[hx - 1], ids, limit)

    def flush(self) -> None:
        with self._lock:
            self._check_open()
            self._area.device.flush()

    def stats(self) -> SwapStats:
        with self._lock:
            ds, b = self._area.device.stats(), self._base
            a = self._area.alloc
            free_slots = a.nfree
            s = SwapStats(
                clock=ds.clock, page_size=PAGE_SIZE, pages_stored=self._table.live,
                host_write_bytes=self._host_w, host_read_bytes=self._host_r,
                device_write_bytes=ds.device_write_bytes - b.device_write_bytes,
                device_read_bytes=ds.device_read_bytes - b.device_read_bytes,
                device_gc_write_bytes=ds.gc_write_bytes - b.gc_write_bytes,
                media_write_bytes=ds.media_write_bytes - b.media_write_bytes,
                discard_bytes=ds.discard_bytes - b.discard_bytes,
                device_time_s=ds.device_time_s - b.device_time_s,
                write_size_histogram=dict(Counter(ds.write_size_histogram) - Counter(b.write_size_histogram)),
                read_size_histogram=dict(Counter(ds.read_size_histogram) - Counter(b.read_size_histogram)),
                extra={
                    "major_faults": self._faults,
                    "faults": self.faults,
                    "batched_read_pages": self._planner.batched_pages,
                    "readahead_hits": self._ra_hits,
                    "readahead_pages": self._planner.readahead_pages,
                    "readahead_wasted_bytes": self._cache.wasted * PAGE_SIZE,
                    "readahead_window": self._ra.window(),
                    "swap_cache_pages": len(self._cache),
                    "ra_lifetime": self._cache.lifetime,
                    "write_requests": self._area.write_requests,
                    "in_place_pages": self._reclaim.in_place_pages,
                    "slots_freed_on_fault": self._freed_on_fault,
                    "resident_without_slot": self._table.orphans,
                    "in_place": self.in_place,
                    "read_requests": self._r_reqs,
                    "total_slots": self._area.capacity,
                    "free_slots": free_slots,
                    "free_clusters": a.free_clusters,
                    "total_clusters": a.ncl,
                    # share of free slots outside wholly free clusters: 0 fresh, -> 1 fragmented
                    "free_slot_fragmentation": (1.0 - a.free_clusters * a.C / free_slots) if free_slots else 0.0,
                    "page_cluster": self.page_cluster, "cpus": self.cpus, "cluster_slots": a.C,
                    "discard": {(False, False): "none", (True, True): "both", (True, False): "once",
                                (False, True): "pages"}[(self._area.area_discard, self._area.page_discard)],
                })
            return self._lat.fill(s)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._area.device.flush()
            self._closed = True
            if self._close_device:
                self._area.device.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
