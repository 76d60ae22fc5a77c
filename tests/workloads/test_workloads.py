"""Swap traces: the synthetic generator's shape, save/load, and replay through both backends."""

import numpy as np
import pytest

from zswap_host import ConventionalSwap, SwapStore, open_device
from zswap_host.workloads import SwapTrace, TraceBuilder, replay, synthetic_dlrm_trace
from zswap_host.workloads.trace import DISCARD, IDLE, SWAP_IN, SWAP_OUT


def test_synthetic_trace_is_deterministic_and_consistent(tmp_path):
    t = synthetic_dlrm_trace(5000, dram_fraction=0.1, batch_pages=300, iterations=40, idle_s=0.01, seed=4)
    again = synthetic_dlrm_trace(5000, dram_fraction=0.1, batch_pages=300, iterations=40, idle_s=0.01, seed=4)
    assert np.array_equal(t.ids, again.ids) and np.array_equal(t.ops, again.ops)
    # replaying the events on a set: a page is faulted only while swapped out, evicted only while resident
    swapped = set()
    for k in range(len(t)):
        ids = t.event_ids(k).tolist()
        if t.ops[k] == SWAP_OUT:
            assert not (set(ids) & swapped)
            swapped |= set(ids)
        elif t.ops[k] == SWAP_IN:
            assert set(ids) <= swapped
            swapped -= set(ids)
    assert (t.ops == IDLE).sum() == 40 and t.pages == 5000
    path = tmp_path / "t.npz"
    t.save(str(path))
    back = SwapTrace.load(str(path))
    assert np.array_equal(back.bounds, t.bounds) and back.meta["seed"] == 4


def test_replay_through_both_backends_with_verification():
    t = synthetic_dlrm_trace(3000, batch_pages=200, iterations=30, idle_s=0.002, seed=1)
    busy = synthetic_dlrm_trace(3000, batch_pages=200, iterations=30, idle_s=0.0, seed=1)   # no idle
    only_idle = TraceBuilder()
    only_idle.add(IDLE, idle_s=0.25)
    only_idle = only_idle.build()
    makers = (lambda: SwapStore(open_device("emu://?zones=16&zone_size=4MiB&preset=thesis-ssd")),
              lambda: ConventionalSwap(open_device("emu-conv://?size=32MiB&preset=thesis-ssd")))
    for make in makers:
        b = make()
        replay(b, t, verify=True)
        s = b.stats()
        c = t.counts()
        assert s.host_write_bytes == c["swap_out_pages"] * 4096
        assert s.host_read_bytes == c["swap_in_pages"] * 4096
        assert s.pages_stored == 3000 and s.clock == "modeled"
        # idle windows let the device clock pass: on an idle device by exactly their length; on the
        # trace by more than nothing and at most their length (queued work completes inside them)
        b0 = make()
        replay(b0, only_idle)
        assert b0.stats().device_time_s == pytest.approx(0.25)
        b1 = make()
        replay(b1, busy)
        assert busy.counts()["idle_s"] == 0 and busy.counts()["swap_out_pages"] == c["swap_out_pages"]
        assert 0 < s.device_time_s - b1.stats().device_time_s <= c["idle_s"]


def test_a_trace_without_one_kind_of_event():
    tb = TraceBuilder({"kind": "t"})
    tb.add(SWAP_OUT, [1, 2, 3], stream=2)
    tb.add(DISCARD, [2])
    tb.add(IDLE, idle_s=0.5)
    tb.add(SWAP_IN, [1, 3])
    tb.add(DISCARD, [1, 3])
    tr = tb.build()
    t = tr.without(DISCARD)
    assert t.ops.tolist() == [SWAP_OUT, IDLE, SWAP_IN]
    assert [t.event_ids(k).tolist() for k in range(len(t))] == [[1, 2, 3], [], [1, 3]]
    assert t.streams.tolist() == [2, 0, 0] and t.idle_s.tolist() == [0.0, 0.5, 0.0]
    assert t.meta == {"kind": "t", "without": [DISCARD]} and tr.meta == {"kind": "t"}
    b = ConventionalSwap(open_device("emu-conv://?size=1MiB&preset=none"))
    replay(b, t, verify=True)                     # no discard reaches the backend: 2 stays stored
    assert b.stats().pages_stored == 3


def test_a_synthetic_trace_can_discard_what_it_faults_in():
    t = synthetic_dlrm_trace(3000, batch_pages=200, iterations=30, seed=2, discard_faulted=True)
    plain = synthetic_dlrm_trace(3000, batch_pages=200, iterations=30, seed=2)
    assert np.array_equal(t.without(DISCARD).ids, plain.ids)          # the same faults and evictions
    ins = np.flatnonzero(t.ops == SWAP_IN)
    assert ins.size and (t.ops[ins + 1] == DISCARD).all()
    assert all(np.array_equal(t.event_ids(k), t.event_ids(k + 1)) for k in ins.tolist())
    b = SwapStore(open_device("emu://?zones=16&zone_size=1MiB&preset=none"))
    replay(b, t, verify=True)                                           # every evicted page written again
    resident = 3000 - b.stats().pages_stored
    assert 0 < resident <= max(200, int(0.1 * 3000))
