"""``ConventionalSwap``: what Linux 6.1 swap does to a conventional SSD, as a ``SwapBackend``.

Swap-out is a reclaim batch (``shrink_inactive_list`` → ``shrink_page_list`` in mm/vmscan.c):
chunks of at most ``SWAP_CLUSTER_MAX`` = 32 pages; each page gets a slot from the cluster allocator
(``add_to_swap`` → ``folio_alloc_swap`` → ``scan_swap_map_slots``, see :mod:`.slots`), in order,
and is written by ``swap_writepage`` → ``__swap_writepage`` (mm/page_io.c) as a one-page bio; under
the reclaim plug (``blk_start_plug`` in ``shrink_lruvec``) only physically adjacent slots merge into
one request. A chunk's requests reach the device as one queue (qd = number of requests).

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
is freed once the new copy is written. Freed slots are reused by the allocator,
so the SSD sees scattered overwrites unless page discard is on (``swapon --discard``:
``SWP_PAGE_DISCARD`` discards a cluster once it is wholly free, ``discard_swap_cluster``;
``SWP_AREA_DISCARD`` discards the whole area at swapon, ``discard_swap``).

Swap-in is a page fault (``do_swap_page`` → ``swapin_readahead`` → ``swap_vma_readahead`` in
mm/swap_state.c), one at a time (queue depth 1 per faulting thread): the faulting page plus the
readahead window around it (see :mod:`.readahead`), pages already in the swap cache or not swapped
out skipped, adjacent slots merged, all issued as one queue; the fault waits for its own page.

``faults="batched"`` is the same kernel when the application announces the pages it is about to
touch (``madvise(MADV_WILLNEED)`` / ``process_madvise``: ``madvise_willneed`` →
``force_swapin_readahead`` → ``read_swap_cache_async`` for every swap PTE in the range, under one
plug): every asked page not already in the swap cache is read at once, adjacent slots merged, as one
queue of depth up to ``batch_qd``; the accesses that follow are minor faults on swap-cache pages, so
VMA readahead does not fire (it runs only on a major fault). Slot allocation, in-place rewrites and
writes are unchanged.

``swap_in_latencies()`` are page waits: for each page asked, the time from the start of the
``swap_in`` call (the moment the caller needed it) to the moment its data was in memory, so a
page's wait includes the faults served before it. ``fault_latencies()`` are the major faults' own
latencies (serial mode).

Page ids are integers in ``[0, 2**63 - 1]`` (:func:`..store.idmap.as_page_ids`: anything else is a
ValueError before anything changes) and may be sparse: per-page state lives in arrays indexed by a
dense *handle* (:class:`..store.idmap.IdMap`, the store's id map), so memory follows the pages held,
never the largest id. Readahead looks the ids of its window up in that map (an id not held is not
swapped out).
"""

from __future__ import annotations

import threading
from collections import Counter

import numpy as np

from ..backend import LatencyLog, SwapStats
from ..errors import StoreClosedError, SwapFullError
from ..neighbours import check_limit, first_distinct, slots_near
from ..store.idmap import MAX_PAGE_ID, IdMap, as_page_ids
from .readahead import SWAP_RA_ORDER_CEILING, SwapCache, VmaReadahead, merge_runs
from .slots import ClusterAllocator

SWAP_CLUSTER_MAX = 32       # include/linux/swap.h: pages per reclaim batch
PAGE_SIZE = 4096
FAULT_MODES = ("serial", "batched")

_DISCARD_MODES = {False: (False, False), None: (False, False), "none": (False, False),
                  True: (True, True), "both": (True, True), "once": (True, False), "pages": (False, True)}


class _Plan:
    """One ``swap_in`` call's reads, decided before any is charged: requests (first slot, slots)
    in issue order, cut into serial groups (requests, queue depth); per major fault its position,
    the row of its page in the data read, its request and group; swap-cache hits (position,
    cache entry, groups charged before it); readahead pages put in the swap cache."""

    __slots__ = ("req_slot", "req_cnt", "grp_n", "grp_qd", "f_pos", "f_row", "f_req", "f_grp", "hits", "puts")

    def __init__(self) -> None:
        self.req_slot: list[int] = []
        self.req_cnt: list[int] = []
        self.grp_n: list[int] = []
        self.grp_qd: list[int] = []
        self.f_pos: list[int] = []
        self.f_row: list[int] = []
        self.f_req: list[int] = []
        self.f_grp: list[int] = []
        self.hits: list[tuple] = []
        self.puts: list[int] = []


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
        self._handle: int | None = None         # the handle of the swap-out being written
        self.faults = faults
        self.batch_qd = int(batch_qd)
        self._dev = device
        self.cpus = int(cpus)
        self.page_cluster = int(page_cluster)
        self._area_discard, self._page_discard = _DISCARD_MODES[discard]
        self._close_device = close_device
        self._lock = threading.RLock()
        self._base = device.stats()
        self._alloc = ClusterAllocator(device.size // PAGE_SIZE, self.cpus, cluster_slots, seed)
        self._capacity = self._alloc.nslots - 1
        self._ra = VmaReadahead(page_cluster, vma_pages)
        self._cache = SwapCache(swap_cache_pages, ra_lifetime)
        # Per-page state, indexed by handle + 1 (IdMap handle; index 0 is a sentinel for ids not
        # held, never written: slot -1, not resident). An id is held while it has a slot or is an
        # orphan; discard forgets it (its handle is reused).
        self._ids = IdMap(direct=id_space)             # id_space: as StoreConfig.id_space
        self._slot = np.full(1024, -1, np.int64)       # slot (-1: none)
        self._owner = np.zeros(self._alloc.nslots, np.int32)   # slot -> state index holding it (0: none)
        self._resident = np.zeros(1024, np.bool_)      # swapped in since last swap_out (PTE present)
        self._keep = np.zeros(1024, np.bool_)          # resident and its slot kept in the swap cache
        self._orph = np.zeros(1024, np.bool_)          # resident, slot freed at the fault (vm_swap_full)
        # ... and its bytes, for a caller that drops it clean: rows of a pool (handle -> row), so a
        # call's orphans are stored and read with one copy each way
        self._orow = np.full(1024, -1, np.int64)
        # a payload-free device keeps a page's first 8 bytes only (devices/fingerprint.py): so does the
        # pool then, else orphans alone would hold the working set's bytes in RAM
        self._owidth = PAGE_SIZE if getattr(device, "payload", True) else 8
        self._opool = np.empty((0, self._owidth), np.uint8)
        self._ofree: list[int] = []                    # pool rows not in use
        self._orphans = 0
        self._freed_on_fault = 0
        self.in_place = bool(in_place)
        self._in_place_pages = 0
        self._live = 0
        self._host_w = self._host_r = 0
        self._faults = self._ra_hits = self._ra_pages = 0
        self._w_reqs = self._r_reqs = 0
        self._lat = LatencyLog()                       # page waits from the start of swap_in
        self._fault_lat = LatencyLog()                 # major faults' own latencies
        self._batched_pages = 0
        self._closed = False
        if self._area_discard and self._capacity:                 # discard_swap(): all but the header
            device.discard(PAGE_SIZE, self._capacity * PAGE_SIZE)

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
        return self._dev

    @property
    def capacity_pages(self) -> int:
        """Pages the swap area holds (its slots less the header)."""
        return self._capacity

    def idle(self, seconds: float) -> None:
        """Host idle time: Linux swap does no work of its own in it, so it passes on the device's
        clock (an emulated SSD with ``idle_gc=1`` collects garbage in it; a no-op on a wall clock).
        ``ValueError`` for a negative or non-finite window, as ``SwapStore.idle``."""
        seconds = float(seconds)
        if not np.isfinite(seconds) or seconds < 0:
            raise ValueError(f"idle window must be finite and not negative, not {seconds}")
        with self._lock:
            self._check_open()
            self._dev.advance(seconds)

    # -- helpers ----------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError("ConventionalSwap is closed")

    def _hx(self, ids: np.ndarray) -> np.ndarray:
        """State index (handle + 1) of each id; 0 for ids not held."""
        return self._ids.lookup(ids) + 1

    def _slot_of(self, page_ids) -> np.ndarray:
        """Slot of each id (-1: not held or no slot)."""
        with self._lock:
            return self._slot[self._hx(as_page_ids(page_ids))].copy()

    def _fit(self) -> None:
        """Grow the state arrays to hold every handle handed out (+1 for the sentinel)."""
        need = self._ids.handles + 1
        if need > self._slot.size:
            n = max(need, 2 * self._slot.size)
            slot = np.full(n, -1, np.int64)
            slot[:self._slot.size] = self._slot
            res = np.zeros(n, np.bool_)
            res[:self._resident.size] = self._resident
            keep = np.zeros(n, np.bool_)
            keep[:self._keep.size] = self._keep
            orph = np.zeros(n, np.bool_)
            orph[:self._orph.size] = self._orph
            orow = np.full(n, -1, np.int64)
            orow[:self._orow.size] = self._orow
            self._slot, self._resident, self._keep, self._orph, self._orow = slot, res, keep, orph, orow

    def _write(self, slots: np.ndarray, pages: np.ndarray) -> None:
        self._write_chunks([(slots, pages)])

    def _write_chunks(self, chunks: list[tuple[np.ndarray, np.ndarray]]) -> None:
        """Reclaim chunks written one after the other (each chunk's adjacent slots merged into one
        queue, the next chunk issued when it completes), in one device call."""
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
        self._dev.write_groups(first * PAGE_SIZE, data, cnt * PAGE_SIZE, np.array(sizes, np.int64),
                               np.array(sizes, np.int64), **({} if self._handle is None else {"handle": self._handle}))
        self._w_reqs += int(first.size)

    def _keep_orphans(self, h: np.ndarray, pages: np.ndarray) -> None:
        """Keep the bytes of the pages at state indices ``h`` (their slots were freed)."""
        k = h.size
        if len(self._ofree) < k:                      # grow the pool (doubling)
            old = self._opool.shape[0]
            size = max(2 * old, old + k - len(self._ofree), 64)
            pool = np.empty((size, self._owidth), np.uint8)
            pool[:old] = self._opool
            self._opool = pool
            self._ofree.extend(range(size - 1, old - 1, -1))
        rows = self._ofree[-k:]
        del self._ofree[-k:]
        rows = np.array(rows, np.int64)
        self._orow[h] = rows
        self._opool[rows] = pages[:, :self._owidth]
        self._orphans += k

    def _drop_orphans(self, h: np.ndarray) -> None:
        """Forget the kept bytes of the orphans at state indices ``h``."""
        self._ofree.extend(self._orow[h].tolist())
        self._orow[h] = -1
        self._orphans -= h.size

    def _free_slots(self, slots: np.ndarray) -> None:
        emptied = self._alloc.free(slots)
        if self._page_discard:
            for c in emptied.tolist():                # discard_swap_cluster()
                lo, n = self._alloc.cluster_range(c)
                self._dev.discard(lo * PAGE_SIZE, n * PAGE_SIZE)

    def _commit(self, ids: np.ndarray, hx: np.ndarray, slots: np.ndarray, old: np.ndarray) -> None:
        new = hx == 0
        if new.any():                                 # ids not held yet get a handle now
            hx = hx.copy()
            hx[new] = self._ids.insert(ids[new]) + 1
            self._fit()
            self._orph[hx[new]] = False
        orph = self._orph[hx]
        self._owner[old[old >= 0]] = 0                # before the new ones: in-place rewrites keep theirs
        self._owner[slots] = hx
        self._slot[hx] = slots
        self._resident[hx] = False
        self._keep[hx] = False
        if orph.any():
            self._orph[hx] = False
            self._drop_orphans(hx[orph])
        if len(self._cache):
            self._cache.drop(ids.tolist())
        stale = old[(old >= 0) & (old != slots)]
        self._live += int(((old < 0) & ~orph).sum())
        self._free_slots(stale)

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
            hx = self._hx(ids)
            old = self._slot[hx]
            new = int(((old < 0) & ~self._orph[hx]).sum())
            if self._live + new > self._capacity:
                raise SwapFullError(f"swap area full: {self._live} pages stored, {new} more asked, "
                                    f"{self._capacity} slots")
            cpu = int(stream) % self.cpus
            self._handle = int(stream) % self._ruhs if self._ruhs else None
            keep = self._keep[hx] & (old >= 0)        # dirty swap-cache pages: rewritten in place
            if self._alloc.nfree >= int((~keep).sum()):
                self._swap_out_batch(ids, hx, pages, old, keep, cpu)
            else:
                if keep.any():
                    self._swap_out_batch(ids[keep], hx[keep], pages[keep], old[keep], keep[keep], cpu)
                    ids, hx, pages = ids[~keep], hx[~keep], pages[~keep]
                self._swap_out_tight(ids, hx, pages, cpu)
            self._host_w += n_asked * PAGE_SIZE
            self._cache.age(n_asked)

    def _swap_out_batch(self, ids, hx, pages, old, keep, cpu) -> None:
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
                    got = self._alloc.alloc(need, cpu)
                    done.append(got)
                    s[~k] = got
                chunks.append((s, pages[c:c + SWAP_CLUSTER_MAX]))
            self._write_chunks(chunks)
        except BaseException:
            for s in done:                            # nothing was mapped to them yet
                self._free_slots(s)
            raise
        self._in_place_pages += int(keep.sum())
        self._commit(ids, hx, slots, old)

    def _swap_out_tight(self, ids, hx, pages, cpu) -> None:
        """Nearly full area: write as many pages as there are free slots, commit (freeing the old
        slots), repeat. The full check guarantees free slots >= new ids still to write, so with
        no free slot left the rest all replace stored pages and are rewritten in place."""
        i = 0
        while i < ids.size:
            free = self._alloc.nfree
            k = min(SWAP_CLUSTER_MAX, ids.size - i, free) if free else min(SWAP_CLUSTER_MAX, ids.size - i)
            sub, hsub = ids[i:i + k], hx[i:i + k]
            old = self._slot[hsub]
            if free:
                s = self._alloc.alloc(k, cpu)
                try:
                    self._write(s, pages[i:i + k])
                except BaseException:
                    self._free_slots(s)
                    raise
            else:
                s = old
                self._write(s, pages[i:i + k])
            self._commit(sub, hsub, s, old)
            i += k

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
            hx = self._hx(ids)                        # held: a slot, or resident without one
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
            orph = self._orph[hf]                     # never left DRAM (the caller dropped it clean)
            t0 = self._dev.now()
            lat = np.zeros(n)
            p = _Plan()
            pre = self._willneed(u, hx[fi], fi, p) if self.faults == "batched" else None
            todo = ~orph
            if pre is not None:                       # announced pages need no fault
                ann = np.zeros(n, np.bool_)
                ann[pre[0]] = True
                todo &= ~ann[firsts]
            work = firsts[todo]
            if work.size:
                self._plan_faults(ids, hx, work, firsts, p)
            pages = done = ends = None
            if p.grp_n:
                try:
                    buf, done = self._dev.read_groups(np.asarray(p.req_slot, np.int64) * PAGE_SIZE,
                                                      np.asarray(p.req_cnt, np.int64) * PAGE_SIZE,
                                                      np.asarray(p.grp_n, np.int64), np.asarray(p.grp_qd, np.int64))
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
                if self._owidth == PAGE_SIZE:
                    out[op] = self._opool[self._orow[hx[op]]]
                else:                                 # the device's read: the word, zeros after
                    out[op] = 0
                    out[op, :self._owidth] = self._opool[self._orow[hx[op]]]
            if src is not None:
                dup = np.flatnonzero(src != np.arange(n))
                out[dup] = out[src[dup]]
            # do_swap_page -> should_try_to_free_swap: a read fault keeps the swap-cache slot
            # unless vm_swap_full() (fewer than half the slots free); then the slot is freed
            keep = self.in_place and 2 * self._alloc.nfree >= self._capacity
            fpos_all = firsts[~orph]
            hin = hx[fpos_all]
            self._resident[hin] = True
            self._keep[hin] = keep
            if self.in_place and not keep and fpos_all.size:   # folio_free_swap(): the slots go back now
                slots = self._slot[hin]
                self._slot[hin] = -1
                self._owner[slots[slots >= 0]] = 0
                self._orph[hin] = True
                self._keep_orphans(hin, out if fpos_all.size == n else out[fpos_all])
                self._freed_on_fault += int(fpos_all.size)
                self._free_slots(slots)
            self._r_reqs += len(p.req_slot)
            self._lat.add(lat[firsts])
            self._host_r += n * PAGE_SIZE
            return out

    def _willneed(self, u: np.ndarray, hu: np.ndarray, fi: np.ndarray, p: "_Plan"):
        """``MADV_WILLNEED`` over the asked pages (``u``: the distinct ids, ascending; ``hu``
        their state indices, ``fi`` their first positions): the ones with a slot, not resident
        and not in the swap cache are read as the plan's first group, one queue of depth up to
        ``batch_qd`` (adjacent slots merged). Returns (their positions, rows of the data,
        requests), or None."""
        m = (self._slot[hu] >= 0) & ~self._resident[hu]
        if len(self._cache) and m.any():
            c = self._cache
            sel = np.flatnonzero(m)
            m[sel[np.array([q in c for q in u[sel].tolist()], np.bool_)]] = False
        if not m.any():
            return None
        first, cnt, pos = merge_runs(self._slot[hu[m]])        # the range is walked in address order
        p.req_slot.extend(first.tolist())
        p.req_cnt.extend(cnt.tolist())
        p.grp_n.append(int(first.size))
        p.grp_qd.append(min(self.batch_qd, int(first.size)))
        self._batched_pages += int(cnt.sum())
        return fi[m], pos, np.searchsorted(np.cumsum(cnt), pos, side="right")

    def _swap_ptes(self, page_ids: list[int]) -> list[int]:
        """Per id: its slot if it has one and is not resident (a swap PTE), else -1."""
        h = self._hx(np.array(page_ids, np.int64))
        return np.where(self._resident[h], -1, self._slot[h]).tolist()

    def _plan_faults(self, ids: np.ndarray, hx: np.ndarray, work: np.ndarray, firsts: np.ndarray,
                     p: "_Plan") -> None:
        """Walk the pages that need a fault (``work``: positions, in order): a page in the swap
        cache is a minor fault, any other a major fault whose readahead window is read as one
        group (the page plus the window's swap PTEs not in the swap cache, adjacent slots
        merged). Per fault, plain Python on a few ints. A page of the window is a swap PTE if it
        had a slot and was not resident at the call's start and was not asked before the fault
        (the walk maps pages in order); ids are looked up once per call, when a window first
        covers them or a neighbour of theirs."""
        cache, ra = self._cache, self._ra
        cd = cache.held
        on_fault, on_hit, put, take = ra.on_fault, ra.on_hit, cache.put, cache.take
        top = MAX_PAGE_ID + 1
        req_slot, req_cnt, grp_n, grp_qd = p.req_slot, p.req_cnt, p.grp_n, p.grp_qd
        f_pos, f_row, f_req, f_grp = p.f_pos, p.f_row, p.f_req, p.f_grp
        hits, puts = p.hits, p.puts
        nrow = int(sum(req_cnt))
        n = ids.size
        pte: dict[int, int] | None = None             # id -> slot if a swap PTE at the call's start, else -1
        at: dict[int, int] = {}                       # asked id -> its first position (mapped from then on)
        ra_pages = 0
        own_slots = self._slot[hx[work]].tolist()
        wa = ids[work]
        wid, wpos = wa.tolist(), work.tolist()
        w = ra.max_win
        nw = len(wid)
        # Faults that can be charged in bulk: in a quiet readahead state (see VmaReadahead.quiet),
        # a fault not next to the previous one and not on a swap-cache page reads its own page
        # alone. brk marks the others (checked one by one); a page put in the swap cache during
        # the walk is marked when it is put.
        quiet = False
        if ra.vma_pages:
            brk = [True] * nw
        else:
            quiet, prev = ra.quiet()
            brk = [False] * nw
            if w > 1:
                pv = np.empty(nw, np.int64)
                pv[0] = prev
                pv[1:] = wa[:-1]
                brk = ((wa == pv + 1) | (wa == pv - 1)).tolist()
            if cd:
                brk = [b or q in cd for b, q in zip(brk, wid)]
        widx: dict[int, int] | None = None            # id -> its index in work, once pages are put
        k = 0
        while k < nw:
            if not brk[k] and quiet:                  # a run of one-page faults, in bulk
                b = k + 1
                while b < nw and not brk[b]:
                    b += 1
                m = b - k
                f_req.extend(range(len(req_slot), len(req_slot) + m))
                req_slot.extend(own_slots[k:b])
                req_cnt.extend([1] * m)
                f_row.extend(range(nrow, nrow + m))
                nrow += m
                f_grp.extend(range(len(grp_n), len(grp_n) + m))
                grp_n.extend([1] * m)
                grp_qd.extend([1] * m)
                f_pos.extend(wpos[k:b])
                ra.quiet_run(wid[b - 1])
                k = b
                continue
            i, pid, sl = wpos[k], wid[k], own_slots[k]
            k += 1
            if cd and pid in cd:                      # minor fault on a readahead page
                hits.append((i, take(pid), len(grp_n)))
                on_hit(pid)
                quiet = False
                continue
            lo, hi = on_fault(pid)
            if hi > top:
                hi = top
            sel = None
            if hi - lo > 1:                           # the window's swap PTEs not in the swap cache
                if pte is None:
                    pte, at = {}, dict(zip(ids[firsts].tolist(), firsts.tolist()))
                if any(q not in pte for q in range(lo, hi)):
                    # with the neighbourhoods of the next faults: windows come in short runs
                    # (after a hit or adjacent faults), and a lookup costs more than a few ids
                    near = {q for f in wid[k - 1:k + 3] for q in range(f - w + 1 if f >= w else 0, f + w)
                            if q not in pte and q < top}
                    near = list(near)
                    pte.update(zip(near, self._swap_ptes(near)))
                sel = [(q, pte[q]) for q in range(lo, hi)
                       if q != pid and pte[q] >= 0 and at.get(q, n) > i and q not in cd]
            if not sel:                               # no readahead: one 4 KiB read
                f_req.append(len(req_slot))
                req_slot.append(sl)
                req_cnt.append(1)
                f_row.append(nrow)
                nrow += 1
                grp_n.append(1)
                grp_qd.append(1)
            else:
                sel.append((pid, sl))
                sel.sort()
                # plug merging (merge_runs): a run goes on while slots step by +-1
                r0 = len(req_slot)
                runs: list[list[int]] = [[sel[0][1], sel[0][1]]]   # first and last slot of each run
                for _, s in sel[1:]:
                    last = runs[-1]
                    if s - last[1] == 1 or s - last[1] == -1:
                        last[1] = s
                    else:
                        runs.append([s, s])
                base: list[int] = []                  # rows and requests of each run
                for a, b in runs:
                    lo_s = a if a < b else b
                    base.append(nrow - lo_s)
                    req_slot.append(lo_s)
                    cnt = (b - a if b > a else a - b) + 1
                    req_cnt.append(cnt)
                    nrow += cnt
                r = 0
                last = None
                for q, s in sel:
                    if last is not None and s - last != 1 and s - last != -1:
                        r += 1
                    last = s
                    if q == pid:
                        f_req.append(r0 + r)
                        f_row.append(base[r] + s)
                    else:
                        put(q, None, (r0 + r, base[r] + s))
                        puts.append(q)
                        if widx is None:
                            widx = dict(zip(wid, range(nw)))
                        j = widx.get(q, -1)
                        if j >= k:                    # asked later: may be a swap-cache hit
                            brk[j] = True
                ra_pages += len(sel) - 1
                grp_n.append(len(runs))
                grp_qd.append(len(runs))
            f_pos.append(i)
            f_grp.append(len(grp_n) - 1)
            quiet = ra.quiet()[0] if not ra.vma_pages else False
        self._ra_pages += ra_pages

    def discard(self, page_ids: np.ndarray) -> None:
        """Drop pages (munmap / MADV_FREE of swapped pages: ``free_swap_and_cache``); unknown ids
        are ignored."""
        ids = np.unique(as_page_ids(page_ids))
        with self._lock:
            self._check_open()
            hx = self._hx(ids)
            m = hx > 0                                # held: a slot or an orphan
            ids, hx = ids[m], hx[m]
            if not ids.size:
                return
            slots = self._slot[hx]
            orph = self._orph[hx]
            if orph.any():
                self._orph[hx] = False
                self._drop_orphans(hx[orph])
                slots = slots[~orph]
            self._owner[slots[slots >= 0]] = 0
            self._slot[hx] = -1
            self._resident[hx] = False
            self._keep[hx] = False
            self._ids.remove(ids)                     # the handles are reused
            if len(self._cache):
                self._cache.drop(ids.tolist())
            self._live -= ids.size
            self._free_slots(slots)

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
            sl = self._slot[self._hx(ids)]
            sl = sl[sl >= 0]
            lo = sl & ~np.int64(win - 1)
            cand = slots_near(sl, lo, np.minimum(lo + win, self._owner.size), win - 1)
            hx = self._owner[cand].astype(np.int64)
            hx = hx[(hx > 0) & ~self._resident[hx]]
            return first_distinct(self._ids.ids[hx - 1], ids, limit)

    def flush(self) -> None:
        with self._lock:
            self._check_open()
            self._dev.flush()

    def stats(self) -> SwapStats:
        with self._lock:
            ds, b = self._dev.stats(), self._base
            a = self._alloc
            free_slots = a.nfree
            s = SwapStats(
                clock=ds.clock, page_size=PAGE_SIZE, pages_stored=self._live,
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
                    "batched_read_pages": self._batched_pages,
                    "readahead_hits": self._ra_hits,
                    "readahead_pages": self._ra_pages,
                    "readahead_wasted_bytes": self._cache.wasted * PAGE_SIZE,
                    "readahead_window": self._ra.window(),
                    "swap_cache_pages": len(self._cache),
                    "ra_lifetime": self._cache.lifetime,
                    "write_requests": self._w_reqs,
                    "in_place_pages": self._in_place_pages,
                    "slots_freed_on_fault": self._freed_on_fault,
                    "resident_without_slot": self._orphans,
                    "in_place": self.in_place,
                    "read_requests": self._r_reqs,
                    "total_slots": self._capacity,
                    "free_slots": free_slots,
                    "free_clusters": a.free_clusters,
                    "total_clusters": a.ncl,
                    # share of free slots outside wholly free clusters: 0 fresh, -> 1 fragmented
                    "free_slot_fragmentation": (1.0 - a.free_clusters * a.C / free_slots) if free_slots else 0.0,
                    "page_cluster": self.page_cluster, "cpus": self.cpus, "cluster_slots": a.C,
                    "discard": {(False, False): "none", (True, True): "both", (True, False): "once",
                                (False, True): "pages"}[(self._area_discard, self._page_discard)],
                })
            return self._lat.fill(s)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._dev.flush()
            self._closed = True
            if self._close_device:
                self._dev.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
