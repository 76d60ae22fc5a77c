"""The store's write planner and committer (store/plan.py, store/commit.py) through their public
members: a plan is decided before any device call and changes nothing; its units are cut as the
device and the zone allow; the committer lands it; GC relocation is planned and landed by the same
planner and committer as a swap-out."""

import numpy as np
import pytest

from zswap_host import StoreConfig, SwapStore, open_device
from zswap_host.store.plan import Planner, WritePlan

PS = 4096
URL = "emu://?zones=16&zone_size=1MiB&max_append=128KiB&preset=none"   # 256 pages a zone, 32-page units


def pages(ids, version=0):
    ids = np.asarray(ids, np.int64)
    return ((ids[:, None] * 7919 + version) * np.ones((1, PS // 8), np.int64)).view(np.uint8).reshape(ids.size, PS)


def snapshot(store):
    st = store.state
    return (st.zones.cursors.copy(), st.slots.arrays[0].copy(), [b.n for b in st.buffers], st.live,
            store.device.stats().device_write_bytes)


@pytest.fixture
def store():
    s = SwapStore(open_device(URL), StoreConfig(placement="temporal"))
    yield s
    s.close()


def test_a_plan_is_decided_without_a_device_call_and_changes_nothing(store):
    store.swap_out(np.arange(300), pages(np.arange(300)))        # one zone open, partly written
    st = store.state
    before = snapshot(store)
    planner = Planner(st)
    z = st.zones.current(st.group_of[0])
    lens = planner.stream_lengths(z, 100, st.min_write_pages)
    h = np.arange(100, dtype=np.int64)
    wp = planner.stream((0, h, pages(h), st.min_write_pages, False, np.zeros(100, bool)), z, st.group_of[0], lens)
    assert isinstance(wp, WritePlan)
    b = st.buffers[0].n
    assert planner.one_batch_units(z, b, 64)[2] == ([b] if b else []) + [32, 32]   # an express run's units
    after = snapshot(store)
    assert all(np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b for a, b in zip(before, after))
    # what the write will do: units of the write unit, back to back from the zone's cursor
    assert sum(lens) <= min(100, st.zones.room(z)) and all(m <= st.unit_pages for m in lens)
    assert wp.first == z * st.slots.slots_per_zone + st.zones.written(z)
    assert wp.zones.tolist() == [z] * len(lens) and wp.nbytes.tolist() == [m * PS for m in lens]
    assert wp.expected(PS) == [(wp.first + sum(lens[:i])) * PS for i in range(len(lens))]
    assert [u[2] for u in wp.units] == [sum(lens[:i]) for i in range(len(lens))]     # buffer spans
    assert wp.written == [sum(lens)]


def test_units_are_cut_at_the_zone_end_and_at_least_pages(store):
    st = store.state
    planner = Planner(st)
    store.swap_out(np.arange(250), pages(np.arange(250)))
    z = st.zones.current(st.group_of[0])
    room = st.zones.room(z)
    lens = planner.stream_lengths(z, 10 * st.unit_pages, st.min_write_pages)
    assert sum(lens) == room and lens[-1] == room - st.unit_pages * (len(lens) - 1)
    assert planner.stream_lengths(z, st.min_write_pages - 1, st.min_write_pages) == []


def test_jobs_in_two_zones_have_no_single_expected_offset():
    s = SwapStore(open_device(URL), StoreConfig(placement="stream", max_streams=2))
    try:
        s.swap_out(np.arange(10), pages(np.arange(10)), stream=0)
        s.swap_out(np.arange(10, 20), pages(np.arange(10, 20)), stream=1)
        st = s.state
        s.swap_out(np.arange(100, 140), pages(np.arange(100, 140)), stream=0)   # opens zone of stream 0
        s.swap_out(np.arange(200, 240), pages(np.arange(200, 240)), stream=1)
        z0, z1 = st.zones.current(st.group_of[0]), st.zones.current(st.group_of[1])
        assert z0 is not None and z1 is not None and z0 != z1
        jobs = [(k, np.arange(5, dtype=np.int64), pages(np.arange(5)), 1, True, np.zeros(5, bool)) for k in (0, 1)]
        wp = Planner(st).jobs(jobs, [z0, z1])
        assert wp.first == -1 and {u[1] for u in wp.units} == {z0, z1} and wp.written == [5, 5]
        same = Planner(st).jobs(jobs, [z0, z0])
        assert same.first == z0 * st.slots.slots_per_zone + st.zones.written(z0)
    finally:
        s.close()


def test_gc_relocation_is_planned_and_landed_as_a_swap_out(monkeypatch):
    planned = []
    real = Planner.stream

    def recording(self, job, z, group, lens):
        planned.append(job[0])
        return real(self, job, z, group, lens)

    monkeypatch.setattr(Planner, "stream", recording)
    s = SwapStore(open_device(URL), StoreConfig(placement="temporal"))
    try:
        ids = np.arange(1500)
        version = np.full(ids.size, -1)
        rng = np.random.default_rng(3)
        for v in range(8):                                       # overwrites leave garbage for GC
            pick = np.sort(rng.choice(ids, 700, replace=False))
            s.swap_out(pick, pages(pick, v))
            version[pick] = v
            while s.gc_step() > 0:
                pass
        s.flush()
        s.check()
        gc = s.state.gc_buffer
        assert s.gc_write_bytes > 0 and gc in planned              # GC's writes went through the planner
        assert 0 in planned                                        # ... as the user stream's did
        for v in range(8):                                         # every page reads back its newest copy
            held = ids[version == v]
            assert np.array_equal(s.swap_in(held), pages(held, v))
    finally:
        s.close()
