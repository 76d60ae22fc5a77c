"""The store's rooms one at a time, through their public methods: the slot map, the zone allocator,
the collector (with a minimal host standing in for the store's write and read paths) and the
placement registry."""

import numpy as np
import pytest
from book_oracle import slot_commit

from zswap_host import StoreConfig, open_device
from zswap_host.devices import ZoneCond
from zswap_host.errors import DeviceIOError, StoreInvariantError
from zswap_host.gc import register_victim_policy
from zswap_host.gc.collector import Collector
from zswap_host.gc.scheduler import GcScheduler
from zswap_host.store import read_zone_summary
from zswap_host.store.placement import Placement, get_placement, placements, register_placement
from zswap_host.store.slotmap import UNMAPPED, SlotMap
from zswap_host.store.zones import ZoneAllocator

PS = 4096
URL = "emu://?zones=8&zone_size=256KiB&preset=none"      # 64 pages a zone, 63 of them data


def pages(handles, version=0):
    h = np.asarray(handles, np.int64)
    return ((h[:, None] * 1009 + version) * np.ones((1, PS // 8), np.int64)).view(np.uint8).reshape(h.size, PS)


# -- SlotMap --------------------------------------------------------------------------------------
def test_slotmap_commit_moves_entries_and_invalidates_old_copies_in_one_step():
    m = SlotMap(nr_zones=3, slots_per_zone=8)
    m.grow(6)
    slot_commit(m, np.array([0, 1, 2, 3]), 0)                 # zone 0, slots 0..3
    assert m.slots(np.arange(4)).tolist() == [0, 1, 2, 3] and m.valid(0) == 4
    slot_commit(m, np.array([1, 3, 5]), 8)                    # newer copies of 1 and 3 land in zone 1
    assert m.slots(np.array([1, 3, 5])).tolist() == [8, 9, 10]
    assert m.owners(np.arange(4)).tolist() == [0, -1, 2, -1]   # the old slots hold nothing valid
    assert (m.valid(0), m.valid(1)) == (2, 3)
    assert m.valid_offsets(0, 0, 4).tolist() == [0, 2]
    assert m.zone_handles(1).tolist() == [1, 3, 5]
    assert m.mapped(np.arange(6)).tolist() == [True, True, True, True, False, True]
    m.check(written=np.array([4, 3, 0]))


def test_slotmap_valid_offsets_with_a_limit_are_the_first_ones():
    """GC's step asks for as many valid slots as it moves: the first ``limit`` of the range's, found
    without scanning to the zone's end (in growing spans), the same as the whole list cut."""
    spz = 3000
    m = SlotMap(nr_zones=2, slots_per_zone=spz)
    rng = np.random.default_rng(5)
    h = rng.permutation(spz)[:1700]                           # 1,700 pages at random slots of zone 1
    m.grow(spz)
    slot_commit(m, np.arange(spz), spz)
    m.invalidate(np.setdiff1d(np.arange(spz), h))
    for start, end, limit in [(0, spz, 1), (0, spz, 129), (17, 2990, 700), (2000, 2001, 5), (5, 5, 3),
                              (0, spz, 5000), (100, 2900, 0)]:
        whole = m.valid_offsets(1, start, end)
        assert m.valid_offsets(1, start, end, limit).tolist() == whole[:limit].tolist()


def test_slotmap_invalidate_and_lose_zone():
    m = SlotMap(2, 8)
    m.grow(10)
    slot_commit(m, np.arange(5), 0)
    slot_commit(m, np.arange(5, 8), 8)
    m.invalidate(np.array([1, 6, 9]))                   # 9 was never mapped: skipped
    assert m.slots(np.array([1, 6, 9])).tolist() == [UNMAPPED] * 3
    assert (m.valid(0), m.valid(1)) == (4, 2)
    gone = m.lose_zone(0)
    assert sorted(gone.tolist()) == [0, 2, 3, 4]
    assert m.valid(0) == 0 and not m.mapped(gone).any() and m.mapped_handles().tolist() == [5, 7]
    m.check()


def test_slotmap_check_names_what_is_broken():
    m = SlotMap(2, 8)
    m.grow(4)
    slot_commit(m, np.array([0, 1]), 7)                       # a run spanning two zones: counted in one
    with pytest.raises(StoreInvariantError, match="valid counts"):
        m.check()
    m = SlotMap(2, 8)
    m.grow(4)
    slot_commit(m, np.array([0]), 3)
    slot_commit(m, np.array([1]), 3)                          # two pages claim one slot
    with pytest.raises(StoreInvariantError, match="disagree"):
        m.check()
    m = SlotMap(2, 8)
    m.grow(4)
    slot_commit(m, np.array([0, 1, 2]), 0)
    with pytest.raises(StoreInvariantError, match="more valid pages than written"):
        m.check(written=np.array([2, 0]))
    with pytest.raises(ValueError, match="32-bit"):
        SlotMap(1 << 20, 1 << 13)


# -- ZoneAllocator --------------------------------------------------------------------------------
def test_allocator_keeps_the_reserve_for_gc_and_tracks_cursors():
    d = open_device(URL)
    a = ZoneAllocator(d, PS, reserve=1)
    assert (a.slots_per_zone, a.data_slots) == (64, 63)
    got = [a.take(g) for g in range(7)]
    assert got == list(range(7)) and a.free_count() == 1
    assert not a.can_take(for_gc=False) and a.can_take(for_gc=True)
    assert a.current(3) == 3 and a.owner_of(3, group=0) == 3 and a.owner_of(3, group=3) == 3
    off = d.append(0, pages(np.arange(10)))
    assert a.record(0, off // PS, np.arange(10)) is False
    assert a.written(0) == 10 and a.room(0) == 53 and a.clock == 10 * PS
    with pytest.raises(StoreInvariantError, match="expected"):
        a.record(0, 3, np.arange(2))                    # the device wrote elsewhere: zone abandoned
    assert a.current(0) is None and a.full_zones().tolist() == [0]


def test_allocator_seals_with_a_summary_and_reclaims():
    d = open_device(URL)
    a = ZoneAllocator(d, PS)
    z = a.take(0)
    ids = np.arange(100, 163)
    off = d.append(z, pages(ids[:32]))
    assert not a.record(z, off // PS, ids[:32])
    off = d.append(z, pages(ids[32:]))
    assert a.record(z, off // PS, ids[32:])             # the data area is full: seal it
    a.seal(0, z)
    assert d.report_zones()[z].cond == ZoneCond.FULL and a.current(0) is None
    seq, listed = read_zone_summary(d, z)
    assert seq == 1 and listed.tolist() == ids.tolist()
    assert a.reclaimable(np.zeros(8, np.int64)).tolist() == [z]
    assert a.reclaimable(np.array([1] + [0] * 7)).tolist() == []     # still holds a valid page
    a.reset(z)
    assert d.report_zones()[z].written == 0 and a.free_count() == 8 and a.history(np.array([z]))[2][0] == 1


def test_allocator_retires_and_takes_over():
    d = open_device(URL)
    d.append(2, pages([1]))
    d.set_zone_condition(5, ZoneCond.READ_ONLY)
    d.set_zone_condition(6, ZoneCond.OFFLINE)
    a = ZoneAllocator(d, PS)
    a.take_over()
    assert d.report_zones()[2].written == 0            # data left by someone else is reset
    assert a.usable() == 6 and a.is_retired(5) and a.is_retired(6)
    assert a.retire(5) is False                         # retired once
    assert sorted(a.take(g) for g in range(6)) == [0, 1, 2, 3, 4, 7]
    assert a.counts() == {"zones_free": 0, "zones_open": 6, "zones_full": 0, "zones_retired": 2}


def test_allocator_leaves_summaries_in_open_zones():
    d = open_device(URL)
    a = ZoneAllocator(d, PS)
    z = a.take(0)
    off = d.append(z, pages(np.arange(5)))
    a.record(z, off // PS, np.arange(40, 45))
    a.write_summaries()
    assert read_zone_summary(d, z)[1].tolist() == [40, 41, 42, 43, 44]
    with pytest.raises(ValueError, match="page size"):
        ZoneAllocator(d, 3 << 10)


# -- Collector ------------------------------------------------------------------------------------
USER, GC = 0, 1


class Host:
    """The store's part, minimally: GC copies go straight to the GC group's zone."""

    def __init__(self, d, slots, zones):
        self.d, self.slots, self.zones = d, slots, zones
        self.newer: set[int] = set()
        self.read_failures = 0
        self.gc = None
        self.chunk = 0                         # pages per relocation read (0: the whole step at once)

    def newer_copy(self, handles):
        return np.isin(handles, list(self.newer))

    def read_slots(self, slots):
        if self.read_failures:
            self.read_failures -= 1
            raise DeviceIOError("injected")
        return np.stack([self.d.read(int(s) * PS, PS) for s in slots])

    def start_read(self, slots):
        data = self.read_slots(slots)
        return lambda: data

    def read_chunk_pages(self):
        return self.chunk

    def queue_relocated(self, handles, data):
        z = self.zones.current(GC)
        if z is None:
            z = self.zones.take(GC)
        off = self.d.append(z, data)
        full = self.zones.record(z, off // PS, handles)
        slot_commit(self.slots, handles, off // PS)
        self.gc.wrote(data.nbytes)
        if full:
            self.zones.seal(GC, z)

    def flush_relocated(self):
        pass

    def zone_trouble(self, z):
        return False

    def now(self):
        return 0.0


def collector(victim="greedy", url=URL):
    d = open_device(url)
    zones = ZoneAllocator(d, PS)
    slots = SlotMap(d.geometry.nr_zones, zones.slots_per_zone)
    slots.grow(4096)
    host = Host(d, slots, zones)
    gc = Collector(host, slots, zones, GcScheduler(d.geometry.nr_zones, StoreConfig(), host.now), victim, PS, 16)
    host.gc = gc
    return d, zones, slots, host, gc


def fill(d, zones, slots, handles):
    """User writes of these handles into group USER, sealing zones as they fill."""
    i = 0
    while i < handles.size:
        z = zones.current(USER)
        if z is None:
            z = zones.take(USER)
        h = handles[i:i + min(16, zones.room(z))]
        off = d.append(z, pages(h))
        full = zones.record(z, off // PS, h)
        slot_commit(slots, h, off // PS)
        if full:
            zones.seal(USER, z)
        i += h.size


def test_collector_relocates_the_emptiest_zone_and_resets_it():
    d, zones, slots, host, gc = collector()
    fill(d, zones, slots, np.arange(126))               # zones 0 and 1 full (63 each)
    fill(d, zones, slots, np.arange(0, 63, 3))          # overwrites: zone 0 keeps 42 valid pages
    fill(d, zones, slots, np.arange(63, 126, 2))        # zone 1 keeps 31: the greedy victim
    fill(d, zones, slots, np.arange(200, 214))          # (zone 2 full too now)
    assert gc.table().zone.tolist() == [0, 1, 2]
    moved = gc.step(None, "manual")
    assert moved == 31 * PS and gc.victim is None
    assert slots.valid(1) == 0 and d.report_zones()[1].written == 0 and 1 not in zones.full_zones()
    kept = np.arange(64, 126, 2)
    assert np.array_equal(np.stack([d.read(int(s) * PS, PS) for s in slots.slots(kept)]), pages(kept))
    c = gc.counters()
    assert c["gc_runs_manual"] == 1 and c["gc_relocated_bytes"] == 31 * PS
    assert c["gc_reclaimed_bytes"] == (63 - 31) * PS and gc.write_bytes == 31 * PS


def test_collector_steps_within_max_bytes_and_resumes():
    d, zones, slots, host, gc = collector()
    fill(d, zones, slots, np.arange(63 + 10))
    fill(d, zones, slots, np.arange(0, 63, 2))          # zone 0: 31 valid left
    assert gc.step(10 * PS, "background") == 10 * PS and gc.victim == 0 and slots.valid(0) == 21
    assert gc.step(10 * PS, "background") == 10 * PS and gc.victim == 0
    assert gc.step(None, "background") == 11 * PS and gc.victim is None and slots.valid(0) == 0
    assert gc.counters()["gc_runs_background"] == 1


def test_collector_invalidates_pages_with_a_newer_copy_instead_of_moving_them():
    d, zones, slots, host, gc = collector()
    fill(d, zones, slots, np.arange(70))
    fill(d, zones, slots, np.arange(0, 40))             # zone 0: 23 valid left (40..62)
    host.newer |= {41, 42, 43}                          # their newer copies wait in a write buffer
    assert gc.step(None, "manual") == 20 * PS
    assert not slots.mapped(np.array([41, 42, 43])).any()


def test_collector_falls_back_to_greedy_and_gives_up_on_full_zones():
    @register_victim_policy("test-rooms-fullest")
    def fullest(table):
        return int(table.zone[np.argmax(table.valid_bytes)])

    d, zones, slots, host, gc = collector("test-rooms-fullest")
    fill(d, zones, slots, np.arange(126))
    fill(d, zones, slots, np.arange(63, 73))            # zone 1: 53 valid, zone 0: all 63
    assert gc.step(None, "manual") == 53 * PS          # the policy's fully valid zone 0 gains nothing
    d, zones, slots, host, gc = collector()
    fill(d, zones, slots, np.arange(63))
    assert gc.step(None, "manual") == -1 and gc.victim is None


def test_collector_drains_a_read_only_zone_without_resetting_it():
    d, zones, slots, host, gc = collector()
    fill(d, zones, slots, np.arange(63))
    d.set_zone_condition(0, ZoneCond.READ_ONLY)
    zones.retire(0)
    gc.queue_drain(0)
    gc.background()
    assert slots.valid(0) == 0 and gc.drain_queue == [] and gc.counters()["gc_runs_drain"] == 1
    assert d.report_zones()[0].cond == ZoneCond.READ_ONLY and gc.counters()["gc_reclaimed_bytes"] == 0


def test_collector_keeps_its_victim_across_read_failures_then_gives_up():
    d, zones, slots, host, gc = collector()
    fill(d, zones, slots, np.arange(70))
    fill(d, zones, slots, np.arange(0, 30))
    host.read_failures = 2
    assert gc.step(None, "manual") == 0 and gc.victim == 0
    assert gc.step(None, "manual") == 0 and gc.victim == 0
    assert gc.step(None, "manual") == 33 * PS and gc.victim is None
    host.read_failures = 3
    fill(d, zones, slots, np.arange(63, 70))
    fill(d, zones, slots, np.arange(100, 200))
    results = [gc.step(None, "manual") for _ in range(3)]
    assert results[:2] == [0, 0] and results[2] == -1 and gc.victim is None


def test_collector_reclaims_empty_zones_without_reading():
    d, zones, slots, host, gc = collector()
    fill(d, zones, slots, np.arange(63))
    fill(d, zones, slots, np.arange(63))                # zone 0 now holds nothing valid
    host.read_failures = 99                             # a read would fail: none is needed
    assert gc.reclaim_empty() and d.report_zones()[0].written == 0
    assert gc.counters()["gc_reclaimed_bytes"] == 63 * PS and not gc.reclaim_empty()


# -- placement registry -----------------------------------------------------------------------------
def test_placement_registry_validates_config_and_takes_new_placements():
    assert placements()[:4] == ["single", "temporal", "stream", "hotness"]
    assert not get_placement("single").gc_own_stream and get_placement("hotness").counts_swap_outs
    assert get_placement("stream").user_streams(max_streams=4, open_limit=3) == 2
    with pytest.raises(ValueError, match="single, temporal, stream, hotness"):
        StoreConfig(placement="no-such")
    with pytest.raises(TypeError):
        register_placement("bad", object())

    class ByParity(Placement):
        def user_streams(self, max_streams, open_limit):
            return 2

        def assign(self, handles, stream, swap_counts, n_streams, hot_threshold):
            return (handles & 1).astype(np.int64)

    register_placement("test-parity", ByParity())
    from zswap_host import SwapStore
    st = SwapStore(open_device("emu://?zones=16&zone_size=256KiB&preset=none"),
                   StoreConfig(placement="test-parity", write_size=128 << 10))
    ids = np.arange(64)
    st.swap_out(ids, pages(ids))
    st.flush()
    even, odd = set(st.locate(ids[::2]).tolist()), set(st.locate(ids[1::2]).tolist())
    assert len(even) == 1 and len(odd) == 1 and even != odd     # handles 0, 2, ... in one zone
    assert np.array_equal(st.swap_in(ids), pages(ids))
    st.check()


def test_collector_relocates_in_chunks_when_the_device_overlaps_reads_and_appends():
    """With a chunk size (a device with overlapped_io), the same victim moves the same pages, chunk
    after chunk; a read failure part way keeps what was moved and the victim, and a later step
    finishes it."""
    d, zones, slots, host, gc = collector()
    host.chunk = 10
    fill(d, zones, slots, np.arange(126))
    fill(d, zones, slots, np.arange(63, 126, 2))        # zone 1: 31 valid, the greedy victim
    reads = []
    read = host.read_slots
    host.read_slots = lambda s: reads.append(s.size) or read(s)
    assert gc.step(None, "manual") == 31 * PS and gc.victim is None and slots.valid(1) == 0
    assert reads == [10, 10, 10, 1]
    kept = np.arange(64, 126, 2)
    assert np.array_equal(np.stack([d.read(int(s) * PS, PS) for s in slots.slots(kept)]), pages(kept))

    d, zones, slots, host, gc = collector()
    host.chunk = 10
    fill(d, zones, slots, np.arange(70))
    fill(d, zones, slots, np.arange(0, 30))             # zone 0: 33 valid
    calls = {"n": 0}
    read = host.read_slots

    def second_read_fails(s):
        calls["n"] += 1
        if calls["n"] == 2:
            raise DeviceIOError("injected")
        return read(s)

    host.read_slots = second_read_fails
    assert gc.step(None, "manual") == 0 and gc.victim == 0 and slots.valid(0) == 23   # 10 moved
    assert gc.step(None, "manual") == 23 * PS and gc.victim is None and slots.valid(0) == 0
