"""ConventionalSwap: the Linux-swap baseline (zswap_host.baseline)."""

from __future__ import annotations

import dataclasses
import threading
import tracemalloc
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from golden import check_golden, regen_main
from zswap_host.backend import SwapBackend
from zswap_host.baseline import ClusterAllocator, ConventionalSwap, VmaReadahead, merge_runs, swapin_nr_pages
from zswap_host.devices import open_device
from zswap_host.devices.serial_batches import SerialGroups
from zswap_host.errors import DeviceIOError, SwapFullError

PS = 4096
KiB = 1024


def dev(size="64MiB", preset="none"):
    return open_device(f"emu-conv://?size={size}&preset={preset}")


def content(ids, version=0):
    """Distinct bytes per (id, version); the id is in the first 8 bytes."""
    ids = np.ascontiguousarray(ids, np.int64)
    p = np.empty((ids.size, PS), np.uint8)
    p[:] = ((ids * 7 + version * 13) % 251).astype(np.uint8)[:, None]
    p[:, :8] = ids.view(np.uint8).reshape(-1, 8)
    return p


def hist_delta(after, before):
    return Counter(after) - Counter(before)


# -- basics ---------------------------------------------------------------------------------
def test_round_trip_replace_discard_keyerror():
    sw = ConventionalSwap(dev("4MiB"))
    assert isinstance(sw, SwapBackend) and sw.page_size == PS
    ids = np.arange(100, dtype=np.int64)
    sw.swap_out(ids, content(ids))
    order = np.array([5, 99, 0, 42, 5])
    assert (sw.swap_in(order) == content(order)).all()
    sw.swap_out(ids[:10], content(ids[:10], 1))                       # replace
    assert (sw.swap_in(ids[:10]) == content(ids[:10], 1)).all()
    assert (sw.swap_in(ids[10:]) == content(ids[10:])).all()
    sw.discard(np.array([3, 4, 1000]))                                 # unknown id ignored
    before = sw.stats()
    with pytest.raises(KeyError):
        sw.swap_in(np.array([0, 3]))
    after = sw.stats()
    assert after.device_read_bytes == before.device_read_bytes and after.pages_stored == 98
    assert (sw.swap_in(np.array([0, 2])) == content([0, 2], 1)).all()
    sw.swap_out(np.array([7, 7]), content([7, 7], 2)[[0, 0]] + np.array([[0], [1]], np.uint8))
    assert sw.swap_in(np.array([7]))[0, 100] == content([7], 2)[0, 100] + 1   # last copy wins
    s = sw.stats()
    assert s.host_write_bytes == 112 * PS and s.pages_stored == 98
    assert s.extra["free_slots"] == s.extra["total_slots"] - 98
    sw.flush()
    sw.close()


def test_works_on_a_regular_file(tmp_path):
    path = tmp_path / "swap.img"
    path.write_bytes(b"\0" * (2 << 20))
    d = open_device(str(path))
    sw = ConventionalSwap(d, close_device=True)
    ids = np.arange(300)
    sw.swap_out(ids, content(ids))
    assert (sw.swap_in(ids[::-1]) == content(ids[::-1])).all()
    assert sw.stats().clock == "wall"
    sw.close()


def test_swap_full_only_when_full():
    sw = ConventionalSwap(dev("1MiB"))                 # 256 slots, 255 usable
    ids = np.arange(255)
    sw.swap_out(ids, content(ids))
    before = sw.stats()
    with pytest.raises(SwapFullError):
        sw.swap_out(np.array([0, 1, 500]), content([0, 1, 500], 1))
    after = sw.stats()
    assert after.device_write_bytes == before.device_write_bytes and after.pages_stored == 255
    assert (sw.swap_in(ids) == content(ids)).all()
    sw.swap_out(ids, content(ids, 1))                 # full, but every page replaces one: fits
    assert (sw.swap_in(ids) == content(ids, 1)).all()
    sw.discard(np.arange(10))
    sw.swap_out(np.arange(245, 265), content(np.arange(245, 265), 2))   # 10 new + 10 replaced
    assert sw.stats().pages_stored == 255
    assert (sw.swap_in(np.arange(10, 265)) == np.concatenate(
        [content(np.arange(10, 245), 1), content(np.arange(245, 265), 2)])).all()


# -- allocation and request sizes -------------------------------------------------------------
def test_free_cluster_list_is_interleaved_like_setup_swap_map():
    a = ClusterAllocator(256 * 130, cluster_slots=256)
    assert list(a.free_list)[:6] == [64, 128, 1, 65, 129, 2]      # cluster 0 holds the header
    assert a.free_clusters == 129 and a.nfree == 256 * 130 - 1
    s = a.alloc(300)
    assert (s[:256] == np.arange(64 * 256, 65 * 256)).all() and (s[256:] == np.arange(128 * 256, 128 * 256 + 44)).all()


def test_fallback_scan_when_no_free_cluster():
    a = ClusterAllocator(64, cluster_slots=16, seed=3)            # 4 clusters; 0 has the header
    s = a.alloc(63)
    assert a.free_clusters == 0 and a.nfree == 0 and sorted(s.tolist()) == list(range(1, 64))
    a.free(np.array([20, 21, 40, 41, 42]))
    assert a.free_clusters == 0
    got = a.alloc(5)
    assert sorted(got.tolist()) == [20, 21, 40, 41, 42]
    a.free(np.arange(16, 32))                                      # a wholly free cluster again
    assert list(a.free_list) == [1]
    assert (a.alloc(4) == np.arange(16, 20)).all()


def test_merge_runs():
    first, cnt, pos = merge_runs(np.array([5, 6, 7, 20, 10, 9, 8, 30]))
    assert first.tolist() == [5, 20, 8, 30] and cnt.tolist() == [3, 1, 3, 1]
    assert pos.tolist() == [0, 1, 2, 3, 6, 5, 4, 7]


def test_fresh_area_gives_merged_128k_writes():
    sw = ConventionalSwap(dev())
    ids = np.arange(3200)
    sw.swap_out(ids, content(ids))
    assert sw.stats().write_size_histogram == {128 * KiB: 100}


def test_fragmented_area_gives_small_writes():
    sw = ConventionalSwap(dev())
    n = sw.stats().extra["total_slots"]
    ids = np.arange(n)
    sw.swap_out(ids, content(ids))                   # full: slots in id order within clusters
    sw.discard(ids[::2])                             # every other slot free, no free cluster
    s0 = sw.stats()
    assert s0.extra["free_clusters"] == 0 and s0.extra["free_slot_fragmentation"] == 1.0
    new = np.arange(n, n + 2000)
    sw.swap_out(new, content(new))
    h = hist_delta(sw.stats().write_size_histogram, s0.write_size_histogram)
    assert h == {4 * KiB: 2000}
    assert (sw.swap_in(new[::97]) == content(new[::97])).all()


# -- the swap cache keeps a faulted-in page's slot (measured on a 6.1 guest) ---------------------
class RecordingDevice:
    """Records every write request (offset, bytes) going to the wrapped device."""

    def __init__(self, inner):
        self._inner, self.writes = inner, []

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def write_batch(self, offsets, data, sizes, *a, **k):
        self.writes += list(zip(np.asarray(offsets).tolist(), np.asarray(sizes).tolist()))
        return self._inner.write_batch(offsets, data, sizes, *a, **k)

    def write_groups(self, offsets, data, sizes, *a, **k):
        self.writes += list(zip(np.asarray(offsets).tolist(), np.asarray(sizes).tolist()))
        return self._inner.write_groups(offsets, data, sizes, *a, **k)


def test_read_fault_keeps_the_slot_and_a_reswap_rewrites_it_in_place():
    """6.1: a read fault leaves the page in the swap cache with its slot (``should_try_to_free_swap``
    is false unless the area is over half full), the write that follows reuses the page
    (``do_wp_page``), and reclaim writes the dirty swap-cache page back to that slot. Measured in
    the guest (docs/baseline.md, "Validation against the kernel"): 66-74% of a DLRM job's swap-outs
    went back to the page's previous slot and 95-96% of its write requests were 4 KiB; the model
    that gave every re-swap a fresh slot wrote them as merged 128 KiB requests (1-2% of 4 KiB)."""
    d = RecordingDevice(dev())
    sw = ConventionalSwap(d, page_cluster=0)
    ids = np.arange(3200)
    sw.swap_out(ids, content(ids))
    back = ids[::100]                                            # 32 scattered pages
    old = sw._slot_of(back)
    assert (sw.swap_in(back) == content(back)).all()
    s0 = sw.stats()
    d.writes.clear()
    sw.swap_out(back, content(back, 1))                          # one reclaim chunk
    s1 = sw.stats()
    assert sorted(d.writes) == sorted((int(o) * PS, PS) for o in old)  # 32 x 4 KiB, at the old slots
    assert hist_delta(s1.write_size_histogram, s0.write_size_histogram) == {4 * KiB: 32}
    assert s1.extra["free_slots"] == s0.extra["free_slots"] and s1.extra["in_place_pages"] == 32
    assert (sw.swap_in(back) == content(back, 1)).all()
    # a write fault frees the slot (discard), and in_place=False is the model before the fix:
    # both take fresh slots from the cluster allocator, one merged 128 KiB write
    for fresh in (lambda: ConventionalSwap(dev(), page_cluster=0, in_place=False), None):
        sw2 = fresh() if fresh else ConventionalSwap(dev(), page_cluster=0)
        sw2.swap_out(ids, content(ids))
        sw2.swap_in(back)
        if fresh is None:
            sw2.discard(back)
        h0 = sw2.stats().write_size_histogram
        sw2.swap_out(back, content(back, 1))
        assert hist_delta(sw2.stats().write_size_histogram, h0) == {128 * KiB: 1}
        assert sw2.stats().extra["in_place_pages"] == 0
        assert (sw2.swap_in(back) == content(back, 1)).all()


def test_over_half_full_area_frees_the_slot_at_the_fault():
    """``vm_swap_full()`` (fewer than half the slots free) at fault time: ``folio_free_swap`` gives
    the slot back at once and the page gets a new one when it is swapped out again."""
    for stored, kept in ((100, True), (200, False)):              # 255 usable slots
        sw = ConventionalSwap(dev("1MiB"), page_cluster=0)
        ids = np.arange(stored)
        sw.swap_out(ids, content(ids))
        back = ids[::10]
        f0 = sw.stats().extra["free_slots"]
        assert (sw.swap_in(back) == content(back)).all()
        s = sw.stats()
        assert s.extra["free_slots"] == f0 + (0 if kept else back.size)
        assert s.extra["slots_freed_on_fault"] == (0 if kept else back.size) and s.pages_stored == stored
        assert (sw.swap_in(back) == content(back)).all()               # dropped clean: still there
        sw.swap_out(back, content(back, 1))
        s = sw.stats()
        assert s.extra["in_place_pages"] == (back.size if kept else 0)
        assert s.extra["free_slots"] == f0 and s.pages_stored == stored
        assert (sw.swap_in(ids) == np.where(np.isin(ids, back)[:, None], content(ids, 1), content(ids))).all()
        sw.discard(ids)
        assert sw.stats().pages_stored == 0 and sw.stats().extra["free_slots"] == 255


def test_unused_readahead_pages_age_out_with_reclaim():
    """``ra_lifetime``: an unused readahead page goes once that many pages were swapped out after
    it was read (it reached the inactive LRU's tail); then touching it is a major fault."""
    sw = ConventionalSwap(dev(), ra_lifetime=100)
    ids = np.arange(64)
    sw.swap_out(ids, content(ids))
    sw.swap_in(np.array([10]))
    sw.swap_in(np.array([11]))                                   # window 2: 12 read ahead
    assert sw.stats().extra["swap_cache_pages"] == 1
    other = np.arange(1000, 1110)
    sw.swap_out(other[:60], content(other[:60]))                 # 60 pages reclaimed: still cached
    assert sw.stats().extra["swap_cache_pages"] == 1
    sw.swap_out(other[60:], content(other[60:]))                 # 110 > 100: dropped, wasted
    s = sw.stats()
    assert s.extra["swap_cache_pages"] == 0 and s.extra["readahead_wasted_bytes"] == PS
    faults = s.extra["major_faults"]
    assert (sw.swap_in(np.array([12])) == content([12])).all()
    assert sw.stats().extra["major_faults"] == faults + 1 and sw.stats().extra["readahead_hits"] == 0


# -- readahead -------------------------------------------------------------------------------
def test_swapin_nr_pages_heuristic():
    assert swapin_nr_pages(10, 50, 0, 8, 0) == 1          # random, no hits
    assert swapin_nr_pages(10, 11, 0, 8, 0) == 2          # adjacent
    assert swapin_nr_pages(10, 50, 1, 8, 0) == 4          # hits + 2 rounded up
    assert swapin_nr_pages(10, 50, 7, 8, 0) == 8          # capped at 2^page_cluster
    assert swapin_nr_pages(10, 50, 0, 8, 8) == 4          # shrinks by half at most
    ra = VmaReadahead(3)
    assert ra.on_fault(100) == (100, 101)
    assert ra.on_fault(101) == (101, 103)                 # forward from the fault
    ra.on_hit(102)
    assert ra.on_fault(103) == (103, 107)
    ra.on_hit(104)
    ra.on_hit(105)
    assert ra.on_fault(1023) == (1022, 1024)              # centred, clamped to the PMD
    assert VmaReadahead(0).on_fault(5) == (5, 6)


def test_readahead_window_grows_on_sequential_and_shrinks_on_random_faults():
    sw = ConventionalSwap(dev())
    ids = np.arange(4000)
    sw.swap_out(ids, content(ids))
    seq = np.arange(1000, 1200)
    assert (sw.swap_in(seq) == content(seq)).all()
    s = sw.stats()
    assert s.extra["readahead_window"] == 8
    assert s.read_size_histogram.get(32 * KiB, 0) >= 20     # 8-page readahead, merged
    assert s.extra["readahead_hits"] >= 170 and s.extra["major_faults"] <= 30
    rnd = np.array([3000, 100, 2500, 400, 3500, 700])
    assert (sw.swap_in(rnd) == content(rnd)).all()
    s2 = sw.stats()
    assert s2.extra["readahead_window"] == 1
    assert s2.extra["readahead_hits"] == s.extra["readahead_hits"]


def test_readahead_hit_needs_no_device_read():
    sw = ConventionalSwap(dev())
    ids = np.arange(64)
    sw.swap_out(ids, content(ids))
    sw.swap_in(np.array([10]))
    sw.swap_in(np.array([11]))                               # adjacent: window 2 reads 11, 12
    s = sw.stats()
    assert s.extra["swap_cache_pages"] == 1 and s.read_size_histogram == {4 * KiB: 1, 8 * KiB: 1}
    got = sw.swap_in(np.array([12]))
    s2 = sw.stats()
    assert (got == content([12])).all()
    assert s2.device_read_bytes == s.device_read_bytes
    assert s2.extra["readahead_hits"] == 1 and s2.extra["swap_cache_pages"] == 0


def test_readahead_skips_resident_pages_and_counts_waste():
    sw = ConventionalSwap(dev(), swap_cache_pages=2)
    ids = np.arange(64)
    sw.swap_out(ids, content(ids))
    sw.swap_in(np.array([31, 32]))                           # 31 alone, then 32..33 (window 2)
    sw.swap_in(np.array([33]))                               # readahead hit: hits = 1
    s0 = sw.stats()
    sw.swap_in(np.array([30]))                               # window 4 centred: 29..32
    s1 = sw.stats()
    assert hist_delta(s1.read_size_histogram, s0.read_size_histogram) == {8 * KiB: 1}  # 31, 32 resident
    assert s1.extra["swap_cache_pages"] == 1 and s1.extra["readahead_wasted_bytes"] == 0
    sw.swap_out(np.array([29]), content([29], 1))            # the read-ahead copy was never used
    assert sw.stats().extra["readahead_wasted_bytes"] == PS
    assert (sw.swap_in(np.array([29])) == content([29], 1)).all()


def test_swap_cache_is_bounded():
    from zswap_host.baseline import SwapCache
    c = SwapCache(2)
    for p in range(3):
        c.put(p, np.zeros(PS, np.uint8), 0.0)
    assert len(c) == 2 and 0 not in c and c.wasted == 1


# -- discard ---------------------------------------------------------------------------------
def test_discard_issues_whole_free_cluster_discards():
    sw = ConventionalSwap(dev(), discard=True)
    s0 = sw.stats()
    assert s0.discard_bytes == s0.extra["total_slots"] * PS      # swapon discard of the area
    ids = np.arange(512)
    sw.swap_out(ids, content(ids))                               # clusters 1 and 2
    sw.discard(ids[256:384])
    assert sw.stats().discard_bytes == s0.discard_bytes          # cluster 2 still in use
    sw.discard(ids[384:])
    assert sw.stats().discard_bytes == s0.discard_bytes + 256 * PS
    sw.swap_out(ids[:256], content(ids[:256], 1))                # cluster 1 wholly replaced
    assert sw.stats().discard_bytes == s0.discard_bytes + 512 * PS
    assert (sw.swap_in(ids[:256]) == content(ids[:256], 1)).all()

    plain = ConventionalSwap(dev())
    plain.swap_out(ids, content(ids))
    plain.discard(ids)
    assert plain.stats().discard_bytes == 0


# -- failures --------------------------------------------------------------------------------
class FlakyDevice(SerialGroups):
    """Fails the ``fail_at``-th write_batch (1-based) before writing anything. Grouped writes go
    down one group per write_batch (as on a real device), so a failure can come part-way through."""

    def __init__(self, inner, fail_at):
        self._inner, self.fail_at, self.calls = inner, fail_at, 0

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def write_batch(self, *a, **k):
        self.calls += 1
        if self.calls == self.fail_at:
            raise DeviceIOError("flaky")
        return self._inner.write_batch(*a, **k)


@pytest.mark.parametrize("fail_at", [1, 3])
def test_failed_write_loses_nothing(fail_at):
    d = dev()
    sw = ConventionalSwap(d)
    ids = np.arange(1000)
    sw.swap_out(ids, content(ids))
    before = sw.stats()
    batch = np.concatenate([np.arange(0, 60), np.arange(5000, 5100)])
    if fail_at == 1:
        d.inject_write_failures(1)
    else:
        sw._area.device = FlakyDevice(d, fail_at)
    with pytest.raises(DeviceIOError):
        sw.swap_out(batch, content(batch, 1))
    s = sw.stats()
    assert s.pages_stored == 1000 and s.extra["free_slots"] == before.extra["free_slots"]
    assert (sw.swap_in(ids) == content(ids)).all()
    with pytest.raises(KeyError):
        sw.swap_in(np.array([5000]))
    sw._area.device = d
    sw.swap_out(batch, content(batch, 1))
    assert (sw.swap_in(batch) == content(batch, 1)).all()
    assert (sw.swap_in(ids[60:]) == content(ids[60:])).all()


# -- concurrency -------------------------------------------------------------------------------
def test_threads_with_distinct_ids():
    sw = ConventionalSwap(dev(), cpus=2)
    errors = []

    def worker(t):
        try:
            rng = np.random.default_rng(t)
            base = t * 10_000
            ids = base + np.arange(500)
            for v in range(6):
                sub = rng.choice(ids, 200, replace=False)
                sw.swap_out(sub, content(sub, v), stream=t)
                chk = rng.choice(sub, 50, replace=False)
                assert (sw.swap_in(chk) == content(chk, v)).all()
        except Exception as e:                                     # pragma: no cover
            errors.append(e)

    ts = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    s = sw.stats()
    assert s.pages_stored == s.extra["total_slots"] - s.extra["free_slots"]



# -- page ids: sparse 64-bit ids cost memory per page held, bad ids are refused ------------------
def test_memory_follows_pages_held_not_the_largest_id():
    """The per-page state was dense by id: ``swap_out([2**32])`` asked for 32 GiB. It is indexed by
    the store's id map now: a few bytes per page held, whatever the ids."""
    rng = np.random.default_rng(0)
    ids = np.unique(rng.integers(0, 2 ** 63 - 1, 2000, dtype=np.int64))
    ids = np.concatenate([rng.permutation(ids), [2 ** 32, 2 ** 63 - 1]])
    data = content(ids)
    for faults in ("serial", "batched"):
        sw = ConventionalSwap(dev(), page_cluster=3, faults=faults)
        tracemalloc.start()
        sw.swap_out(ids, data)
        sw.swap_out([2 ** 32 + 1], content([2 ** 32 + 1]))      # a neighbour: readahead reads it
        got = sw.swap_in(ids[::-1])
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < 64 << 20, peak
        assert sw._table.slot.size <= 4096
        assert (got == data[::-1]).all()
        assert (sw.swap_in([2 ** 32 + 1, 2 ** 63 - 1]) == content([2 ** 32 + 1, 2 ** 63 - 1])).all()
        with pytest.raises(KeyError):
            sw.swap_in([2 ** 32 + 2])
        sw.discard(ids)
        assert sw.stats().pages_stored == 1 and sw._table.ids.n == 1
        sw.discard([2 ** 32 + 1, 12345])
        assert sw.stats().pages_stored == 0 and sw.stats().extra["free_slots"] == sw.capacity_pages


def test_discarded_ids_give_their_state_back():
    """Churn over ever new ids: the handle-indexed state is reused, not grown per id."""
    sw = ConventionalSwap(dev("4MiB"), page_cluster=2)
    rng = np.random.default_rng(5)
    oracle: dict[int, int] = {}
    for v in range(60):
        new = rng.integers(0, 2 ** 63 - 1, 300, dtype=np.int64)
        sw.swap_out(new, content(new, v))
        oracle.update((int(i), v) for i in new)
        some = rng.choice(np.array(sorted(oracle), np.int64), 200, replace=False)
        got = sw.swap_in(some)
        assert all((row == content([i], oracle[int(i)])[0]).all() for row, i in zip(got, some))
        old = np.array(sorted(oracle), np.int64)[:300]
        sw.discard(old)
        for i in old.tolist():
            del oracle[i]
    assert sw.stats().pages_stored == len(oracle) == 0
    assert sw._table.slot.size <= 2048 and sw._table.ids.handles <= 600


def _replay(base, vma_pages=None, faults="serial", size="4MiB"):
    """A mixed run (runs, gaps, re-faults, re-swaps, discards, readahead) on ids ``base + k``;
    checks every page read against an oracle."""
    sw = ConventionalSwap(dev(size, "thesis-ssd"), page_cluster=3, vma_pages=vma_pages,
                          swap_cache_pages=64, faults=faults)
    rng = np.random.default_rng(11)
    rel = np.concatenate([np.arange(0, 300), np.arange(400, 700, 2), np.arange(1024 - 40, 1024)])
    sw.swap_out(base + rel, content(rel))
    ver = dict.fromkeys(rel.tolist(), 0)
    for v in range(1, 13):
        live = np.array(sorted(ver), np.int64)
        want = rng.choice(live, 120, replace=False)
        if v % 2:
            want = np.sort(want)
        got = sw.swap_in(base + want)
        for row, k in zip(got, want.tolist()):
            assert (row[8:] == content([k], ver[k])[0, 8:]).all()
        back = rng.choice(want, 60, replace=False)
        sw.swap_out(base + back, content(back, v))
        ver.update(dict.fromkeys(back.tolist(), v))
        gone = rng.choice(live, 5, replace=False)
        sw.discard(base + gone)
        for k in gone.tolist():
            del ver[k]
        again = np.setdiff1d(rel, live)[:3]                   # ids discarded earlier come back
        sw.swap_out(base + again, content(again, v))
        ver.update(dict.fromkeys(again.tolist(), v))
    s = dataclasses.asdict(sw.stats())
    del s["extra"]["readahead_window"]                        # the window of the VMA holding id 0
    return s, sw.fault_latencies(), sw.swap_in_latencies()


@pytest.mark.parametrize("faults", ["serial", "batched"])
@pytest.mark.parametrize("size", ["4MiB", "2MiB"])               # 2 MiB: over half full, orphans
def test_sparse_high_ids_behave_as_low_ids(faults, size):
    """The model does the same I/O for the same pattern of ids, wherever it lies: shifted by a
    multiple of the PMD (the readahead clamp) and of the VMA size, to 2**40, or to the very top of
    the id range (readahead windows clamped at 2**63 - 1)."""
    for (b0, v0), (b1, v1) in (((0, None), (2 ** 40, None)),
                               ((0, 1 << 20), (2 ** 63 - (1 << 20), 1 << 20)),
                               ((2 ** 40, 1 << 20), (2 ** 63 - (1 << 20), 1 << 20))):
        a, b = _replay(b0, v0, faults, size), _replay(b1, v1, faults, size)
        assert a[0] == b[0]
        assert np.array_equal(a[1], b[1]) and np.array_equal(a[2], b[2])
    e = a[0]["extra"]
    assert e["major_faults"] > 0 and (e["readahead_hits"] > 0 or (faults, size) == ("batched", "2MiB"))
    assert (e["slots_freed_on_fault"] > 0) == (size == "2MiB")


def _pinned_state(sw):
    s = dataclasses.asdict(sw.stats())
    t = sw._table
    return s, t.ids.n, t.ids.handles, t.slot.copy(), t.resident.copy(), t.orph.copy()


@pytest.mark.parametrize("bad", [[-1], [2 ** 63], [2 ** 64], np.array([2 ** 63], np.uint64), [900.5],
                                 np.array([900.0]), ["7"], [None], [True], [5, -3]])
def test_ids_outside_the_range_are_refused_before_anything(bad):
    sw = ConventionalSwap(dev("4MiB"), page_cluster=3)
    sw.swap_out([900, 901, 5], content([900, 901, 5], 3))
    sw.swap_in([901])
    before = _pinned_state(sw)
    n = len(bad) if not isinstance(bad, np.ndarray) else bad.size
    with pytest.raises(ValueError):
        sw.swap_out(bad, np.zeros((n, PS), np.uint8))
    with pytest.raises(ValueError):
        sw.swap_in(bad)
    with pytest.raises(ValueError):
        sw.discard(bad)
    after = _pinned_state(sw)
    assert before[:3] == after[:3] and all(np.array_equal(x, y) for x, y in zip(before[3:], after[3:]))
    assert (sw.swap_in([900, 5]) == content([900, 5], 3)).all()
    assert sw.stats().pages_stored == 3

# -- the thesis's finding 2 ---------------------------------------------------------------------
def irregular_workload(sw, n_ids=12_000, resident_cap=1_500, steps=300, batch=64, zipf_a=1.2, seed=1):
    """DLRM-like: Zipf-popular pages (popularity unrelated to address), faulted in batches,
    random resident pages evicted in reclaim batches, on a swap area filled once beforehand.
    Returns the stats before and after the irregular phase."""
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n_ids)
    for c in range(0, n_ids, 1024):
        ids = np.arange(c, min(n_ids, c + 1024))
        sw.swap_out(ids, content(ids))
    resident = np.zeros(n_ids, bool)
    before = sw.stats()
    for _ in range(steps):
        want = np.unique(perm[(rng.zipf(zipf_a, 2 * batch) - 1) % n_ids])[:batch]
        fault = want[~resident[want]]
        if fault.size:
            sw.swap_in(fault)
            resident[fault] = True
        over = int(resident.sum()) - resident_cap
        if over > 0:
            ev = rng.choice(np.flatnonzero(resident), over, replace=False)
            sw.swap_out(ev, content(ev, 1))
            resident[ev] = False
    return before, sw.stats()


def small_share(h):
    total = sum(h.values())
    return sum(v for k, v in h.items() if k < 32 * KiB) / total


def test_irregular_workload_mostly_small_requests():
    sw = ConventionalSwap(dev())
    before, after = irregular_workload(sw)
    w = hist_delta(after.write_size_histogram, before.write_size_histogram)
    r = hist_delta(after.read_size_histogram, before.read_size_histogram)
    print(f"\nirregular workload: writes {sorted(w.items())}\n reads {sorted(r.items())}\n"
          f" share < 32 KiB: all {small_share(w + r):.3f}, writes {small_share(w):.3f}, reads {small_share(r):.3f}")
    assert small_share(w + r) > 0.8
    assert small_share(w) > 0.6 and small_share(r) > 0.9
    assert after.extra["free_clusters"] == 0


def test_irregular_workload_on_thesis_ssd_shows_device_gc():
    pytest.importorskip("zswap_host.ssdsim")
    try:
        d = dev(preset="thesis-ssd")
    except Exception as e:                                          # pragma: no cover
        pytest.skip(f"SSD model unavailable: {e}")
    sw = ConventionalSwap(d)
    before, after = irregular_workload(sw, steps=300)
    assert after.clock == "modeled" and after.device_time_s > 0
    assert after.device_gc_write_bytes > 0 and after.media_write_bytes > after.device_write_bytes
    assert after.swap_in_latency_p99_s >= after.swap_in_latency_p50_s > 0


# -- property-based: a dict is the oracle ------------------------------------------------------
class SwapMachine(RuleBasedStateMachine):
    ids = st.lists(st.integers(0, 80), min_size=1, max_size=40)

    @initialize(page_cluster=st.integers(0, 4), discard=st.booleans(), cpus=st.integers(1, 3),
                cluster=st.sampled_from([4, 8, 256]))
    def setup(self, page_cluster, discard, cpus, cluster):
        self.sw = ConventionalSwap(dev("256KiB"), page_cluster=page_cluster, discard=discard,
                                   cpus=cpus, cluster_slots=cluster, swap_cache_pages=8)
        self.cap = self.sw.stats().extra["total_slots"]               # 63
        self.oracle: dict[int, int] = {}
        self.version = 0

    @rule(ids=ids, stream=st.integers(0, 5))
    def swap_out(self, ids, stream):
        self.version += 1
        arr = np.array(ids, np.int64)
        need = len(set(self.oracle) | set(ids))
        if need > self.cap:
            with pytest.raises(SwapFullError):
                self.sw.swap_out(arr, content(arr, self.version))
            return
        self.sw.swap_out(arr, content(arr, self.version), stream=stream)
        for i in ids:
            self.oracle[i] = self.version

    @precondition(lambda self: self.oracle)
    @rule(data=st.data())
    def swap_in(self, data):
        ids = data.draw(st.lists(st.sampled_from(sorted(self.oracle)), min_size=1, max_size=20))
        got = self.sw.swap_in(np.array(ids))
        for row, i in zip(got, ids):
            assert (row == content([i], self.oracle[i])[0]).all()

    @rule(i=st.integers(0, 80))
    def swap_in_unknown(self, i):
        if i not in self.oracle:
            with pytest.raises(KeyError):
                self.sw.swap_in(np.array([i]))

    @rule(ids=ids)
    def discard(self, ids):
        self.sw.discard(np.array(ids))
        for i in ids:
            self.oracle.pop(i, None)

    @rule()
    def flush(self):
        self.sw.flush()

    @invariant()
    def counts(self):
        if hasattr(self, "sw"):
            s = self.sw.stats()
            assert s.pages_stored == len(self.oracle)
            slotted = len(self.oracle) - s.extra["resident_without_slot"]   # freed at a fault
            assert s.extra["free_slots"] == self.cap - slotted
            a = self.sw._area.alloc
            assert int((~a.avail).sum()) - 1 == slotted
            assert (a.count[1:-1] == (~a.avail[a.C:(a.ncl - 1) * a.C]).reshape(-1, a.C).sum(1)).all()


TestSwapMachine = SwapMachine.TestCase
TestSwapMachine.settings = settings(max_examples=150, stateful_step_count=40, deadline=None,
                                    suppress_health_check=[HealthCheck.too_slow])


# -- faults="batched": MADV_WILLNEED before the accesses ----------------------------------------
def _scattered(sw, n=400, seed=1):
    rng = np.random.default_rng(seed)
    ids = np.arange(4 * n, dtype=np.int64)
    sw.swap_out(ids, content(ids))
    return np.sort(rng.choice(ids, n, replace=False))


def test_batched_faults_read_the_same_bytes_in_one_queue_faster():
    ds, db = dev("64MiB", "thesis-ssd"), dev("64MiB", "thesis-ssd")
    serial = ConventionalSwap(ds, page_cluster=0)
    batched = ConventionalSwap(db, page_cluster=0, faults="batched", batch_qd=32)
    want = _scattered(serial)
    assert (_scattered(batched) == want).all()
    t = [ds.now(), db.now()]
    got_s, got_b = serial.swap_in(want), batched.swap_in(want)
    assert (got_s == content(want)).all() and (got_b == content(want)).all()
    stall_s, stall_b = ds.now() - t[0], db.now() - t[1]
    assert stall_b < stall_s / 4                       # one queue of depth 32 against depth 1
    s, b = serial.stats().extra, batched.stats().extra
    assert s["major_faults"] == want.size and b["major_faults"] == 0
    assert b["batched_read_pages"] == want.size and b["faults"] == "batched"
    assert b["readahead_pages"] == 0                   # minor faults after WILLNEED: no readahead
    # slot allocation and writes are the kernel's either way: re-swapping gives the same writes
    for sw in (serial, batched):
        sw.swap_out(want, content(want, 1))
    assert serial.stats().write_size_histogram == batched.stats().write_size_histogram
    assert serial.stats().extra["in_place_pages"] == batched.stats().extra["in_place_pages"] == want.size


def test_page_waits_run_from_the_start_of_the_call():
    d = dev("64MiB", "thesis-ssd")
    sw = ConventionalSwap(d, page_cluster=0)
    want = _scattered(sw, 50)
    t0 = d.now()
    sw.swap_in(want)
    waits, faults = sw.swap_in_latencies(), sw.fault_latencies()
    assert waits.size == faults.size == want.size
    # serial faults: page k waits for the k faults before it and its own
    assert np.all(np.diff(waits) > 0) and waits[-1] == pytest.approx(d.now() - t0)
    assert waits[-1] == pytest.approx(faults.sum(), rel=1e-6)
    db = dev("64MiB", "thesis-ssd")
    b = ConventionalSwap(db, page_cluster=0, faults="batched")
    _scattered(b, 50)
    t0 = db.now()
    b.swap_in(want)
    w = b.swap_in_latencies()
    assert w.size == want.size and w.max() == pytest.approx(db.now() - t0) and w.min() < w.max()


def test_bad_fault_mode_is_refused():
    with pytest.raises(ValueError, match="faults"):
        ConventionalSwap(dev(), faults="async")
    with pytest.raises(ValueError, match="batch_qd"):
        ConventionalSwap(dev(), faults="batched", batch_qd=0)


def test_read_groups_is_one_read_batch_per_group():
    """The grouped charge of a swap_in call (conv_submit_groups) is exactly the per-fault calls."""
    rng = np.random.default_rng(3)
    a, b = dev("16MiB", "thesis-ssd"), dev("16MiB", "thesis-ssd")
    for d in (a, b):
        d.write_batch(np.arange(0, 16 << 20, 1 << 20), np.zeros(16 << 20, np.uint8), np.full(16, 1 << 20), qd=4)
    sizes = rng.integers(1, 5, 40)
    qds = np.maximum(1, sizes - rng.integers(0, 2, 40))
    offs = rng.integers(0, 4000, int(sizes.sum())) * PS
    lens = rng.integers(1, 4, offs.size) * PS
    buf, done = a.read_groups(offs, lens, sizes, qds)
    parts, times, lo = [], [], 0
    for n, qd in zip(sizes.tolist(), qds.tolist()):
        x, t = b.read_batch(offs[lo:lo + n], lens[lo:lo + n], qd=qd)
        parts.append(x)
        times.append(t)
        lo += n
    assert np.array_equal(buf, np.concatenate(parts))
    assert np.concatenate(times).tobytes() == done.tobytes() and a.now() == b.now()
    assert a.stats().read_size_histogram == b.stats().read_size_histogram


def test_write_groups_is_one_write_batch_per_group():
    """A swap_out call's reclaim chunks charged in one call (write_groups) time, count and store
    exactly as one write_batch per chunk; an injected failure writes nothing."""
    rng = np.random.default_rng(4)
    a, b = dev("16MiB", "thesis-ssd"), dev("16MiB", "thesis-ssd")
    sizes = rng.integers(1, 6, 30)
    offs = rng.permutation(4000)[:int(sizes.sum())] * PS
    lens = np.full(offs.size, PS)
    data = rng.integers(0, 256, offs.size * PS, dtype=np.uint8)
    done = a.write_groups(offs, data, lens, sizes, sizes)
    times, lo = [], 0
    for n in sizes.tolist():
        times.append(b.write_batch(offs[lo:lo + n], data[lo * PS:(lo + n) * PS], lens[lo:lo + n], qd=n))
        lo += n
    assert np.concatenate(times).tobytes() == done.tobytes() and a.now() == b.now()
    assert a.stats().as_dict() == b.stats().as_dict()
    got, _ = a.read_batch(offs, lens)
    assert np.array_equal(got, data)
    a.inject_write_failures(1)
    with pytest.raises(DeviceIOError):
        a.write_groups(offs[:2], np.ones(2 * PS, np.uint8), lens[:2], np.array([1, 1]), np.array([1, 1]))
    assert np.array_equal(a.read_batch(offs[:2], lens[:2])[0], data[:2 * PS])


# -- fault-path golden (regression) ----------------------------------------------------------
# tests/data/baseline_golden.npz holds every page wait, fault latency, counter, the device clock
# and a digest of the bytes swapped in, for fixed scenarios (serial and batched faults, in_place
# on and off, an area over half full, readahead hits and waste, repeated ids, orphans, discards),
# recorded with the per-fault implementation that the kernel validation used (before the planned
# fault path of issue 11). Any change to what the model decides or charges fails this test; the SSD
# model's own timing is in it too (thesis-ssd), so an intended SSD timing change needs a regenerate:
#     PYTHONPATH=tests/support python tests/baseline/test_baseline.py --regen-golden    (and say why in the commit)

_GOLDEN_CASES = [  # faults, in_place, page_cluster, vma_pages, swap_cache_pages, ra_lifetime, size, pages held
    ("serial", True, 3, None, 4096, None, "8MiB", 1100),
    ("serial", True, 3, 64, 16, 150, "8MiB", 1500),       # over half full: slots freed at the fault
    ("serial", False, 5, None, 64, None, "16MiB", 900),
    ("batched", True, 3, None, 4096, 300, "8MiB", 1100),
    ("batched", False, 2, 128, 32, 50, "8MiB", 1500),
]


def _golden_case(cls, faults, in_place, page_cluster, vma_pages, cache, lifetime, size, n_ids, seed):
    import hashlib
    rng = np.random.default_rng(seed)
    d = dev(size, "thesis-ssd")
    sw = cls(d, page_cluster=page_cluster, cluster_slots=64, swap_cache_pages=cache, vma_pages=vma_pages,
             seed=seed, in_place=in_place, ra_lifetime=lifetime, faults=faults, batch_qd=8)
    ids = np.arange(n_ids, dtype=np.int64)
    for c in range(0, n_ids, 96):
        sw.swap_out(ids[c:c + 96], content(ids[c:c + 96]), stream=c % 3)
    out, resident, version = set(ids.tolist()), set(), {}
    h = hashlib.sha256()
    for step in range(40):
        pool = np.array(sorted(out | resident), np.int64)
        k = int(rng.integers(4, 40))
        kind = step % 4
        if kind == 0:                                    # a sequential run: readahead, swap-cache hits
            s = int(rng.integers(0, pool.size))
            ask = pool[s:s + k]
        elif kind == 1:                                  # popular pages, unrelated to address
            ask = pool[np.minimum(rng.zipf(1.3, k) - 1, pool.size - 1)]
        elif kind == 2:                                  # small clusters of neighbours
            c = pool[rng.integers(0, pool.size, max(1, k // 4))]
            ask = (c[:, None] + np.arange(4)).reshape(-1)
            ask = ask[np.isin(ask, pool)]
        else:                                            # random, some asked twice
            ask = rng.choice(pool, k)
            ask = np.concatenate([ask, ask[:3]])
        got = sw.swap_in(ask)
        h.update(got.tobytes())
        out.difference_update(ask.tolist())
        resident.update(ask.tolist())
        if len(resident) > n_ids // 4:                   # evict back to the budget, half of them dirty
            ev = rng.choice(np.array(sorted(resident), np.int64), len(resident) - n_ids // 4, replace=False)
            for p in ev.tolist():
                version[p] = version.get(p, 0) + int(rng.random() < 0.5)
            sw.swap_out(ev, np.concatenate([content([p], version.get(p, 0)) for p in ev.tolist()]), stream=step % 3)
            resident.difference_update(ev.tolist())
            out.update(ev.tolist())
        if step % 7 == 3:                                # munmap of a few pages, resident and not
            gone = rng.choice(pool, 4, replace=False)
            sw.discard(gone)
            out.difference_update(gone.tolist())
            resident.difference_update(gone.tolist())
    s = sw.stats()
    extra = [v for v in s.extra.values() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    hist = sorted(s.read_size_histogram.items()) + sorted(s.write_size_histogram.items())
    return {"lat": sw.swap_in_latencies(), "fault_lat": sw.fault_latencies(),
            "clock": np.array([d.now(), s.device_time_s]),
            "counters": np.array(extra + [s.host_read_bytes, s.host_write_bytes, s.device_read_bytes,
                                          s.device_write_bytes, s.media_write_bytes, s.discard_bytes], np.float64),
            "hist": np.array(hist, np.int64).reshape(-1),
            "pages": np.frombuffer(h.digest(), np.uint8)}


def _baseline_golden_run(cls=ConventionalSwap) -> dict[str, np.ndarray]:
    res = {}
    for i, case in enumerate(_GOLDEN_CASES):
        for k, v in _golden_case(cls, *case, seed=i).items():
            res[f"{i}-{case[0]}-{k}"] = np.asarray(v)
    return res


def test_swap_in_matches_the_committed_golden():
    """Page waits, fault latencies, counters, clock and bytes are bit-identical to
    tests/data/baseline_golden.npz (recorded with the per-fault implementation)."""
    check_golden(_baseline_golden_run(), "baseline_golden.npz", "the Linux-swap model's faults",
                 "PYTHONPATH=tests/support python tests/baseline/test_baseline.py --regen-golden")


if __name__ == "__main__":
    regen_main("baseline_golden.npz", _baseline_golden_run)


def test_calls_after_close_raise_store_closed_error_as_the_store_does():
    """Issue 34 item 8: every call but close (a no-op) and stats raises StoreClosedError after close,
    as SwapStore's do (it raised a plain ValueError)."""
    from zswap_host.errors import StoreClosedError

    sw = ConventionalSwap(dev("16MiB"))
    ids = np.arange(4, dtype=np.int64)
    sw.swap_out(ids, np.ones((4, 4096), np.uint8))
    sw.close()
    sw.close()
    for call in (lambda: sw.swap_in(ids), lambda: sw.swap_out(ids, np.ones((4, 4096), np.uint8)),
                 lambda: sw.discard(ids), sw.flush, lambda: sw.idle(0.1)):
        with pytest.raises(StoreClosedError):
            call()
