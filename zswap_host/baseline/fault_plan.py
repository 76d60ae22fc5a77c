"""Swap-in planning for ``ConventionalSwap``: which asked page is a major fault, a swap-cache hit or
announced, and what each read covers, decided before any read is charged.

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
"""

from __future__ import annotations

import numpy as np

from ..store.idmap import MAX_PAGE_ID
from .page_table import PageTable
from .readahead import SwapCache, VmaReadahead, merge_runs


class FaultPlan:
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


class FaultPlanner:
    """Plans one ``swap_in`` call's reads into a :class:`FaultPlan` from the pages' state
    (``table``), the swap cache and VMA readahead (both updated as the faults walk them).
    ``batched_pages`` / ``readahead_pages``: pages read by announced batches / by readahead."""

    def __init__(self, table: PageTable, cache: SwapCache, ra: VmaReadahead, batch_qd: int) -> None:
        self.table, self.cache, self.ra = table, cache, ra
        self.batch_qd = batch_qd
        self.batched_pages = 0
        self.readahead_pages = 0

    def willneed(self, u: np.ndarray, hu: np.ndarray, fi: np.ndarray, p: FaultPlan):
        """``MADV_WILLNEED`` over the asked pages (``u``: the distinct ids, ascending; ``hu``
        their state indices, ``fi`` their first positions): the ones with a slot, not resident
        and not in the swap cache are read as the plan's first group, one queue of depth up to
        ``batch_qd`` (adjacent slots merged). Returns (their positions, rows of the data,
        requests), or None."""
        m = (self.table.slot[hu] >= 0) & ~self.table.resident[hu]
        if len(self.cache) and m.any():
            c = self.cache
            sel = np.flatnonzero(m)
            m[sel[np.array([q in c for q in u[sel].tolist()], np.bool_)]] = False
        if not m.any():
            return None
        first, cnt, pos = merge_runs(self.table.slot[hu[m]])   # the range is walked in address order
        p.req_slot.extend(first.tolist())
        p.req_cnt.extend(cnt.tolist())
        p.grp_n.append(int(first.size))
        p.grp_qd.append(min(self.batch_qd, int(first.size)))
        self.batched_pages += int(cnt.sum())
        return fi[m], pos, np.searchsorted(np.cumsum(cnt), pos, side="right")

    def swap_ptes(self, page_ids: list[int]) -> list[int]:
        """Per id: its slot if it has one and is not resident (a swap PTE), else -1."""
        h = self.table.index(np.array(page_ids, np.int64))
        return np.where(self.table.resident[h], -1, self.table.slot[h]).tolist()

    def plan_faults(self, ids: np.ndarray, hx: np.ndarray, work: np.ndarray, firsts: np.ndarray,
                    p: FaultPlan) -> None:
        """Walk the pages that need a fault (``work``: positions, in order): a page in the swap
        cache is a minor fault, any other a major fault whose readahead window is read as one
        group (the page plus the window's swap PTEs not in the swap cache, adjacent slots
        merged). Per fault, plain Python on a few ints. A page of the window is a swap PTE if it
        had a slot and was not resident at the call's start and was not asked before the fault
        (the walk maps pages in order); ids are looked up once per call, when a window first
        covers them or a neighbour of theirs."""
        cache, ra = self.cache, self.ra
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
        own_slots = self.table.slot[hx[work]].tolist()
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
                    pte.update(zip(near, self.swap_ptes(near)))
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
        self.readahead_pages += ra_pages
