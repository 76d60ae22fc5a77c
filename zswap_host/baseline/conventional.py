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
from ..errors import SwapFullError
from ..store.idmap import MAX_PAGE_ID, IdMap, as_page_ids
from .readahead import SwapCache, VmaReadahead, merge_runs
from .slots import ClusterAllocator

SWAP_CLUSTER_MAX = 32       # include/linux/swap.h: pages per reclaim batch
PAGE_SIZE = 4096
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
    read as one queue, see the module doc), ``batch_qd`` (queue depth of a batched read)."""

    page_size = PAGE_SIZE

    def __init__(self, device, page_cluster: int = 3, discard: bool | str = False, cpus: int = 1, *,
                 cluster_slots: int = 256, swap_cache_pages: int = 4096, vma_pages: int | None = None,
                 seed: int = 0, in_place: bool = True, ra_lifetime: int | None = None,
                 close_device: bool = False, faults: str = "serial", batch_qd: int = 32) -> None:
        if PAGE_SIZE % device.block_size:
            raise ValueError(f"device block size {device.block_size} does not divide the {PAGE_SIZE}-byte page")
        if discard not in _DISCARD_MODES:
            raise ValueError(f"discard must be True/False or 'once', 'pages', 'both'; not {discard!r}")
        if faults not in FAULT_MODES:
            raise ValueError(f"faults must be one of {', '.join(FAULT_MODES)}; not {faults!r}")
        if int(batch_qd) < 1:
            raise ValueError(f"batch_qd must be >= 1, not {batch_qd}")
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
        self._ids = IdMap()
        self._slot = np.full(1024, -1, np.int64)       # slot (-1: none)
        self._resident = np.zeros(1024, np.bool_)      # swapped in since last swap_out (PTE present)
        self._keep = np.zeros(1024, np.bool_)          # resident and its slot kept in the swap cache
        self._orph = np.zeros(1024, np.bool_)          # resident, slot freed at the fault (vm_swap_full)
        self._orphan: dict[int, np.ndarray] = {}       # ... and its bytes, for a caller that drops it clean
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
            raise ValueError("ConventionalSwap is closed")

    def _hx(self, ids: np.ndarray) -> np.ndarray:
        """State index (handle + 1) of each id; 0 for ids not held."""
        return self._ids.lookup(ids) + 1

    def _slot_of(self, page_ids) -> np.ndarray:
        """Slot of each id (-1: not held or no slot)."""
        with self._lock:
            return self._slot[self._hx(as_page_ids(page_ids))].copy()

    def _neighbours(self, ids: np.ndarray) -> np.ndarray | None:
        """State indices of the ids around each asked id: row ``i`` holds ``ids[i] - (W-1)`` ..
        ``ids[i] + (W-1)`` (W = the largest readahead window; 0 outside [0, MAX_PAGE_ID] or not
        held). Held ids do not change during a ``swap_in``, so one lookup serves all its faults."""
        w = self._ra.max_win
        if w <= 1:
            return None
        off = np.arange(1 - w, w, dtype=np.int64)
        col = ids[:, None]
        ok = np.where(off < 0, col >= -off, col <= MAX_PAGE_ID - np.maximum(off, 0))
        nid = col + off                               # wraps only where not ok
        out = np.zeros(nid.shape, np.int64)
        out[ok] = self._hx(nid[ok])
        return out

    def _window(self, pid: int, lo: int, hi: int, nb: np.ndarray | None) -> np.ndarray:
        """State indices of ids ``lo .. hi-1``."""
        w = self._ra.max_win
        if nb is not None and lo >= pid - (w - 1) and hi <= pid + w:
            return nb[lo - pid + w - 1:hi - pid + w - 1]
        cand = np.arange(hi - lo, dtype=np.int64) + np.int64(lo)
        out = np.zeros(cand.size, np.int64)
        ok = cand >= 0
        out[ok] = self._hx(cand[ok])
        return out

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
            self._slot, self._resident, self._keep, self._orph = slot, res, keep, orph

    def _write(self, slots: np.ndarray, pages: np.ndarray) -> None:
        first, cnt, pos = merge_runs(slots)
        if pos.size and (pos[-1] != pos.size - 1 or np.any(np.diff(pos) != 1)):
            data = np.empty_like(pages)
            data[pos] = pages
        else:
            data = np.ascontiguousarray(pages)
        self._dev.write_batch(first * PAGE_SIZE, data, cnt * PAGE_SIZE, qd=int(first.size))
        self._w_reqs += int(first.size)

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
        self._slot[hx] = slots
        self._resident[hx] = False
        self._keep[hx] = False
        if orph.any():
            self._orph[hx] = False
            for pid in ids[orph].tolist():
                self._orphan.pop(pid, None)
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
            for c in range(0, ids.size, SWAP_CLUSTER_MAX):
                k = keep[c:c + SWAP_CLUSTER_MAX]
                s = slots[c:c + SWAP_CLUSTER_MAX]
                need = int(k.size - k.sum())
                if need:
                    got = self._alloc.alloc(need, cpu)
                    done.append(got)
                    s[~k] = got
                self._write(s, pages[c:c + SWAP_CLUSTER_MAX])
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
        """Fault the pages in, in the order asked; KeyError (nothing changed) on an unknown id."""
        ids = as_page_ids(page_ids)
        out = np.empty((ids.size, PAGE_SIZE), np.uint8)
        with self._lock:
            self._check_open()
            if ids.size == 0:
                return out
            hx = self._hx(ids)                        # held: a slot, or resident without one
            bad = hx == 0
            if bad.any():
                raise KeyError(int(ids[np.argmax(bad)]))
            lats: list[float] = []
            seen: dict[int, int] = {}
            now = self._dev.now
            t0 = now()
            pre = self._willneed(ids, hx) if self.faults == "batched" else {}
            # do_swap_page -> should_try_to_free_swap: a read fault keeps the swap-cache slot
            # unless vm_swap_full() (fewer than half the slots free); then the slot is freed
            keep = self.in_place and 2 * self._alloc.nfree >= self._capacity
            freed: list[int] = []
            nb: np.ndarray | None = None
            first = True
            slot, resident, keeps, orph = self._slot, self._resident, self._keep, self._orph
            for i, (pid, h) in enumerate(zip(ids.tolist(), hx.tolist())):
                j = seen.get(pid)
                if j is not None:                     # asked twice: already mapped
                    out[i] = out[j]
                    continue
                seen[pid] = i
                if orph[h]:                           # never left DRAM (the caller dropped it clean)
                    out[i] = self._orphan[pid]
                    lats.append(0.0)
                    continue
                got = pre.get(pid)
                if got is not None:                   # announced: read by the batch
                    out[i] = got[0]
                    lats.append(max(0.0, got[1] - t0))
                else:
                    hit = self._cache.take(pid)
                    if hit is not None:               # minor fault on a readahead page
                        out[i] = hit[0]
                        lats.append(max(0.0, hit[1], now()) - t0)
                        self._ra.on_hit(pid)
                        self._ra_hits += 1
                    else:
                        if first:                     # the windows' ids, looked up once per call
                            nb, first = self._neighbours(ids), False
                        self._fault_lat.add(self._fault(pid, h, out, i, None if nb is None else nb[i]))
                        lats.append(now() - t0)
                resident[h] = True
                keeps[h] = keep
                if self.in_place and not keep:
                    freed.append(i)
            if freed:                                 # folio_free_swap(): the slots go back now
                pos = np.array(freed, np.int64)
                fids, fh = ids[pos], hx[pos]
                slots = slot[fh]
                slot[fh] = -1
                orph[fh] = True
                for p, k in zip(fids.tolist(), pos.tolist()):
                    self._orphan[p] = out[k].copy()
                self._freed_on_fault += int(fids.size)
                self._free_slots(slots)
            self._lat.add(np.asarray(lats))
            self._host_r += ids.size * PAGE_SIZE
            return out

    def _willneed(self, ids: np.ndarray, hx: np.ndarray) -> dict[int, tuple[np.ndarray, float]]:
        """``MADV_WILLNEED`` over the asked pages: the ones with a slot, not resident and not in the
        swap cache are read as one queue (adjacent slots merged). Returns page id -> (bytes, time
        the read completed)."""
        u, at = np.unique(ids, return_index=True)
        hu = hx[at]
        m = (self._slot[hu] >= 0) & ~self._resident[hu]
        sel, hs = u[m], hu[m]
        if len(self._cache) and sel.size:
            c = self._cache
            m = np.array([p not in c for p in sel.tolist()], np.bool_)
            sel, hs = sel[m], hs[m]
        if not sel.size:
            return {}
        first, cnt, pos = merge_runs(self._slot[hs])        # the range is walked in address order
        buf, done = self._dev.read_batch(first * PAGE_SIZE, cnt * PAGE_SIZE, qd=min(self.batch_qd, int(first.size)))
        self._r_reqs += int(first.size)
        self._batched_pages += int(sel.size)
        pages = np.asarray(buf).reshape(-1, PAGE_SIZE)
        done = np.asarray(done, np.float64)
        t = done[np.searchsorted(np.cumsum(cnt), pos, side="right")] if done.size else np.zeros(sel.size)
        return {p: (pages[pos[j]], float(t[j])) for j, p in enumerate(sel.tolist())}

    def _fault(self, pid: int, h: int, out: np.ndarray, i: int, nb: np.ndarray | None) -> float:
        """One major fault of ``pid`` (state index ``h``; ``nb``: its row of :meth:`_neighbours`):
        the window's requests as one queue; returns the fault's latency."""
        self._faults += 1
        t0 = self._dev.now()
        lo, hi = self._ra.on_fault(pid)
        hi = min(hi, MAX_PAGE_ID + 1)
        if hi - lo <= 1:
            sel = None
        else:
            hw = self._window(pid, lo, hi, nb)
            m = (self._slot[hw] >= 0) & ~self._resident[hw]          # is_swap_pte()
            m[pid - lo] = True
            sel = np.flatnonzero(m)
            if len(self._cache) and sel.size > 1:   # already in the swap cache: no I/O
                c = self._cache
                sel = sel[np.array([p == pid or p not in c for p in (sel + lo).tolist()], np.bool_)]
            hs = hw[sel]
            sel = sel + np.int64(lo)
        if sel is None or sel.size == 1:               # no readahead: one 4 KiB read
            off = np.array([self._slot[h] * PAGE_SIZE], np.int64)
            buf, done = self._dev.read_batch(off, np.array([PAGE_SIZE], np.int64), qd=1)
            self._r_reqs += 1
            out[i] = np.asarray(buf).reshape(PAGE_SIZE)
            return max(0.0, float(done[0]) - t0) if len(done) else 0.0
        first, cnt, pos = merge_runs(self._slot[hs])
        buf, done = self._dev.read_batch(first * PAGE_SIZE, cnt * PAGE_SIZE, qd=int(first.size))
        self._r_reqs += int(first.size)
        pages = np.asarray(buf).reshape(-1, PAGE_SIZE)
        done = np.asarray(done, np.float64)
        run = np.searchsorted(np.cumsum(cnt), pos, side="right")
        k = int(np.searchsorted(sel, pid))
        out[i] = pages[pos[k]]
        for j, p in enumerate(sel.tolist()):
            if j != k:
                self._cache.put(p, pages[pos[j]], float(done[run[j]]) if done.size else 0.0)
        self._ra_pages += sel.size - 1
        return max(0.0, float(done[run[k]]) - t0) if done.size else 0.0

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
                for pid in ids[orph].tolist():
                    self._orphan.pop(pid, None)
                slots = slots[~orph]
            self._slot[hx] = -1
            self._resident[hx] = False
            self._keep[hx] = False
            self._ids.remove(ids)                     # the handles are reused
            if len(self._cache):
                self._cache.drop(ids.tolist())
            self._live -= ids.size
            self._free_slots(slots)

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
                    "resident_without_slot": len(self._orphan),
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
