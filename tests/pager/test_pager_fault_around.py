"""Fault-around (read-ahead) in the userfaultfd pager: ``Pager(fault_around=N)`` reads up to N of
the backend's ``neighbours`` of the faulted pages in the same ``swap_in``; every byte still
survives random reads and writes from 2 threads over a region 4x the budget, the budget/RSS bound
holds, a page being read ahead is waited for by a thread that faults on it, ``fault_around=0`` and
a backend without ``neighbours`` read nothing ahead; and the hints themselves: ``SwapStore``'s
(same zone, nearest slots) and ``ConventionalSwap``'s (the aligned swap-slot cluster)."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

from zswap_host import ConventionalSwap, SwapStore, open_device
from zswap_host.verify import VerifyingBackend

pytest.importorskip("zswap_host.pager")
from pager_harness import (BUDGET_PAGES, PS, RSS_SLACK_PAGES, Ledger, _resident, check_stats, random_reads_and_writes,  # noqa: E402
                           make_backend, read_all, stored_by_pager)

from zswap_host.pager import Pager, range_rss  # noqa: E402

if not os.path.exists("/dev/userfaultfd") and os.geteuid() != 0:
    pytest.skip("userfaultfd needs root here", allow_module_level=True)


@pytest.fixture(params=["store", "conv"])
def backend(request):
    b = make_backend(request.param)
    yield b
    b.close()


class Counting:
    """Delegates to ``inner``; counts ``neighbours`` and ``swap_in`` calls (sizes of the latter)."""

    def __init__(self, inner) -> None:
        self.inner, self.page_size = inner, inner.page_size
        self.hint_calls = 0
        self.swap_ins: list[int] = []

    def neighbours(self, ids, limit):
        self.hint_calls += 1
        return self.inner.neighbours(ids, limit)

    def swap_in(self, ids):
        self.swap_ins.append(len(ids))
        return self.inner.swap_in(ids)

    def __getattr__(self, name):
        return getattr(self.inner, name)


class NoHint:
    """The ``SwapBackend`` protocol of ``inner`` and nothing else (no ``neighbours``)."""

    def __init__(self, inner) -> None:
        self.inner, self.page_size = inner, inner.page_size

    def swap_out(self, ids, pages, stream=0):
        return self.inner.swap_out(ids, pages, stream)

    def swap_in(self, ids):
        return self.inner.swap_in(ids)

    def discard(self, ids):
        return self.inner.discard(ids)


def written_region(pager: Pager, pages: int, seed: int):
    """A region of ``pages`` pages filled with random bytes front to back (so most of it was evicted
    in page order: neighbours on the backend), and its oracle. (One large memcpy: it may store its
    first and last bytes after the rest, so the first and last pages may be resident.)"""
    a = pager.alloc((pages, PS), np.uint8)
    data = np.random.default_rng(seed).integers(0, 256, a.shape, dtype=np.uint8)
    pager.copy(a, data)
    assert pager.quiesce(timeout=60)
    return a, data


# ---------------------------------------------------------------- correctness with read-ahead
@pytest.mark.parametrize("discard_on_write", [False, True])
@pytest.mark.parametrize("fault_around", [8, 64])
def test_random_reads_and_writes_with_fault_around(backend, fault_around, discard_on_write):
    """test_pager's random pattern (2 threads, own interleaved 4-page chunks, region 4x the budget)
    with read-ahead on: every read checks against the thread's oracle, every byte at the end; no
    read-ahead ever asked the backend for a page it does not hold (Ledger); the pager read pages
    ahead, never had more than the budget mapped or in flight, and once quiet the backend holds
    exactly what the pager counts as stored."""
    budget, nthreads = BUDGET_PAGES, 2
    npages, chunk = 4 * budget, 4 * PS
    ledger = Ledger(backend)
    with Pager(ledger, budget * PS, evict_batch=budget // 8, discard_on_write=discard_on_write,
               fault_around=fault_around) as pager:
        a = pager.alloc(npages * PS, np.uint8)
        oracle = np.random.default_rng(9).integers(0, 256, npages * PS, dtype=np.uint8)
        pager.copy(a, oracle)                     # all pages exist: reads fault them in with neighbours
        failures = random_reads_and_writes(pager, a, oracle, nthreads, chunk, seed=200)
        assert not failures, failures[:3]
        same = np.array_equal(read_all(pager, a), oracle)  # (an assert would repr paged memory)
        assert same
        assert pager.quiesce(timeout=60)
        s = pager.stats()
        assert s.spec_pages_in > 0 and s.pages_in > s.spec_pages_in
        assert s.spec_hits + s.spec_unused <= s.spec_pages_in
        assert s.fetch_batches < s.pages_in
        assert not ledger.bad_reads
        assert backend.stats().pages_stored == len(ledger.held) == stored_by_pager(pager)
        check_stats(pager)


def test_rss_stays_within_budget_with_fault_around(backend):
    """Sweeps over a region 4x the budget with a read-ahead as large as the budget: the region's
    Rss never exceeds the budget (+ RSS_SLACK_PAGES), nor do mapped + in-flight pages, and the
    read-ahead took pages."""
    with Pager(backend, BUDGET_PAGES * PS, fault_around=BUDGET_PAGES) as pager:
        a, data = written_region(pager, 4 * BUDGET_PAGES, 1)
        r = pager.regions[0]
        limit = (BUDGET_PAGES + RSS_SLACK_PAGES) * PS
        for k in range(2):
            same = np.array_equal(read_all(pager, a), data)
            assert same and 0 < range_rss(r.addr, r.nbytes) <= limit
            data = np.roll(data, 1 + k, axis=1)
            pager.copy(a, data)                       # writes over pages the backend holds
            assert 0 < range_rss(r.addr, r.nbytes) <= limit
        s = pager.stats()
        assert s.spec_pages_in > 0 and s.max_resident <= pager.budget_pages
        check_stats(pager)


def test_a_sequential_rewrite_is_read_ahead_and_hits(backend):
    """Writing over a region the backend holds, front to back: the pages come in with their
    neighbours, so far fewer swap_in calls than pages, and nearly every page read ahead is then
    written (a hit: its write-protect fault names it)."""
    counting = Counting(backend)
    with Pager(counting, BUDGET_PAGES * PS, fault_around=8) as pager:
        a, data = written_region(pager, 4 * BUDGET_PAGES, 2)
        s0, calls0 = pager.stats(), len(counting.swap_ins)
        new = data[:, ::-1].copy()
        pager.copy(a, new)
        assert pager.quiesce(timeout=60)
        s = pager.stats()
        pages_in, batches = s.pages_in - s0.pages_in, s.fetch_batches - s0.fetch_batches
        spec, hits = s.spec_pages_in - s0.spec_pages_in, s.spec_hits - s0.spec_hits
        assert pages_in >= 2 * BUDGET_PAGES and batches == len(counting.swap_ins) - calls0
        assert batches <= pages_in // 3                 # 1 faulted + up to 8 ahead per call
        assert spec > 0 and hits >= 0.8 * spec, (spec, hits)
        same = np.array_equal(read_all(pager, a), new)  # (an assert would repr paged memory)
        assert same
        check_stats(pager)


def test_a_fault_on_a_page_being_read_ahead_waits_for_it(backend):
    """Page X faults; its neighbour Y is claimed and read in the same swap_in, which is held at a
    gate. A second thread touching Y meanwhile must wait (no second read of Y, no eviction of it),
    and gets Y's bytes once the read completes; Y counts as a hit."""
    armed, gate, entered = threading.Event(), threading.Event(), threading.Event()

    class Gated(Counting):
        def swap_in(self, ids):
            if armed.is_set() and len(ids) > 1:
                entered.set()
                assert gate.wait(60)
            return super().swap_in(ids)

    gated = Gated(backend)
    with Pager(gated, BUDGET_PAGES * PS, fault_around=1) as pager:
        a, data = written_region(pager, 4 * BUDGET_PAGES, 3)
        X = a.shape[0] // 4                           # written (and evicted) early on
        base = pager.id_base
        y_ids = backend.neighbours(np.array([X + base]), 1)
        assert y_ids.size == 1
        Y = int(y_ids[0]) - base
        addr = pager.regions[0].addr
        assert 0 <= Y < a.shape[0] and Y != X
        assert not _resident(addr + X * PS) and not _resident(addr + Y * PS)
        calls0, s0 = len(gated.swap_ins), pager.stats()
        armed.set()
        got_x, got_y = np.empty(PS, np.uint8), np.empty(PS, np.uint8)
        tx = threading.Thread(target=pager.copy, args=(got_x, a[X]))
        tx.start()
        assert entered.wait(60)                       # X + Y are being read, held at the gate
        ty = threading.Thread(target=pager.copy, args=(got_y, a[Y]))
        ty.start()
        time.sleep(0.2)                               # (only lets ty reach its fault; no bound)
        assert ty.is_alive() and tx.is_alive()
        gate.set()
        tx.join(60)
        ty.join(60)
        assert not tx.is_alive() and not ty.is_alive()
        assert np.array_equal(got_x, data[X]) and np.array_equal(got_y, data[Y])
        assert _resident(addr + Y * PS)
        s = pager.stats()
        assert gated.swap_ins[calls0:] == [2]          # one read for both: Y was not read again
        assert s.spec_pages_in - s0.spec_pages_in == 1 and s.spec_hits - s0.spec_hits == 1
        check_stats(pager)


def test_fault_around_zero_asks_for_no_hint(backend):
    """fault_around=0 (the default) is the pager as before: the hint is never asked for, one page
    per swap_in on a sequential sweep, no read-ahead counted."""
    counting = Counting(backend)
    with Pager(counting, BUDGET_PAGES * PS) as pager:
        assert pager.fault_around == 0
        a, data = written_region(pager, 4 * BUDGET_PAGES, 4)
        same = np.array_equal(read_all(pager, a), data)  # (an assert would repr paged memory)
        assert same
        s = pager.stats()
        assert counting.hint_calls == 0
        assert s.spec_pages_in == s.spec_hits == s.spec_unused == 0 and s.readahead_hit_ratio == 0.0
        assert s.fetch_batches == s.pages_in == sum(counting.swap_ins) and set(counting.swap_ins) == {1}
        check_stats(pager)


def test_a_backend_without_neighbours_reads_nothing_ahead(backend):
    """fault_around > 0 over a backend with no ``neighbours``: works as without read-ahead (one page
    per swap_in from one thread), and 2 threads rewriting every page in random order keep every
    byte."""
    with Pager(NoHint(backend), BUDGET_PAGES * PS, fault_around=32) as pager:
        a, data = written_region(pager, 4 * BUDGET_PAGES, 5)
        rng = np.random.default_rng(6)

        def worker(t: int) -> None:
            for p in rng.permutation(np.arange(t, a.shape[0], 2)).tolist():
                pager.copy(a[p], data[p][::-1].copy())
        threads = [threading.Thread(target=worker, args=(t,)) for t in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        same = np.array_equal(read_all(pager, a), data[:, ::-1])
        assert same
        s = pager.stats()
        assert s.pages_in > 0 and s.spec_pages_in == 0
        same = np.array_equal(read_all(pager, a), data[:, ::-1])
        s1 = pager.stats()
        assert same and s1.pages_in > s.pages_in
        assert s1.pages_in - s.pages_in == s1.fetch_batches - s.fetch_batches and s1.spec_pages_in == 0
        check_stats(pager)


def test_fault_around_is_checked(backend):
    with pytest.raises(ValueError):
        Pager(backend, BUDGET_PAGES * PS, fault_around=-1)


# ---------------------------------------------------------------- the hints
def _pages(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, PS), dtype=np.uint8)


def test_store_neighbours_are_the_nearest_slots_of_the_zone():
    """SwapStore: ids swapped out together sit side by side; neighbours are the nearest valid slots
    of the same zone (after, before, 2 after, ...), never crossing into another zone, never an
    asked id, never a discarded one; at most ``limit``; nothing for ids not stored."""
    st = SwapStore(open_device("emu://?zones=16&zone_size=1MiB&preset=none"))
    try:
        ids = np.arange(1000, 1300, dtype=np.int64)
        st.swap_out(ids, _pages(ids.size))
        st.flush()
        z = st.locate(ids)
        assert (np.diff(z) >= 0).all() and z.min() >= 0 and np.unique(z).size >= 2
        assert st.neighbours([1010], 4).tolist() == [1011, 1009, 1012, 1008]
        assert st.neighbours([1010, 1011], 4).tolist() == [1012, 1009, 1013, 1008]
        assert st.neighbours([1000], 3).tolist() == [1001, 1002, 1003]  # the zone's first page
        last = int(ids[z == z[0]][-1])                     # the zone's last page: nothing after it
        assert st.neighbours([last], 3).tolist() == [last - 1, last - 2, last - 3]
        assert st.neighbours([1010], 0).size == 0 and st.neighbours([], 5).size == 0
        assert st.neighbours([5, 99999], 8).size == 0     # not stored
        st.discard([1011])
        assert st.neighbours([1010], 4).tolist() == [1009, 1012, 1008, 1013]
        got = st.neighbours(np.arange(1100, 1110), 7)
        assert got.size == 7 and np.unique(got).size == 7 and not np.isin(got, np.arange(1100, 1110)).any()
        assert st.neighbours([1010], 4).dtype == np.int64
        assert VerifyingBackend(st).neighbours([1010], 2).tolist() == [1009, 1012]
        with pytest.raises(ValueError):
            st.neighbours([1010], -1)
        with pytest.raises(ValueError):
            st.neighbours([-3], 2)
    finally:
        st.close()


def test_store_neighbours_skip_pages_whose_newest_copy_is_buffered():
    st = SwapStore(open_device("emu://?zones=16&zone_size=1MiB&preset=none"))
    try:
        st.swap_out(np.arange(64), _pages(64))
        st.flush()
        st.swap_out(np.array([3]), _pages(1, 1))          # newest copy of 3 waits in a buffer
        assert 3 not in st.neighbours([2], 4).tolist()
        assert st.neighbours([3], 4).size == 0
    finally:
        st.close()


def test_conventional_neighbours_are_the_slot_cluster():
    """ConventionalSwap: the ids whose slots share the aligned 2^page_cluster-slot cluster of the
    asked ids' slots (swap_cluster_readahead's window), nearest first, swapped-out pages only (a
    resident one is not a swap PTE), at most ``limit``; nothing with page_cluster 0 or for ids not
    swapped out."""
    for pc in (3, 0):
        cv = ConventionalSwap(open_device("emu-conv://?size=16MiB&preset=none"), page_cluster=pc)
        try:
            ids = np.arange(500, 564, dtype=np.int64)
            cv.swap_out(ids, _pages(ids.size))
            slot = dict(zip(ids.tolist(), cv._slot_of(ids).tolist()))
            by_slot = {s: i for i, s in slot.items()}
            x = 510
            if pc == 0:
                assert cv.neighbours([x], 8).size == 0
                continue
            s = slot[x]
            lo = s & ~7
            want = sorted((by_slot[t] for t in range(lo, lo + 8) if t != s and t in by_slot),
                          key=lambda i: (abs(slot[i] - s), slot[i] < s))
            assert len(want) >= 4
            assert cv.neighbours([x], 8).tolist() == want
            assert cv.neighbours([x], 2).tolist() == want[:2]
            cv.swap_in([want[0]])                          # resident now: not a neighbour
            assert cv.neighbours([x], 8).tolist() == want[1:]
            assert cv.neighbours([7], 8).size == 0 and cv.neighbours([x], 0).size == 0
            cv.discard([want[1]])
            assert want[1] not in cv.neighbours([x], 8).tolist()
            cv.swap_out(np.array([want[0]]), _pages(1, 2))  # rewritten in place: a neighbour again
            assert want[0] in cv.neighbours([x], 8).tolist()
            with pytest.raises(ValueError):
                cv.neighbours([x], -2)
        finally:
            cv.close()
