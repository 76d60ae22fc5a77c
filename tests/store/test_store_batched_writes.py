"""The store's write path at queue depth (issue 12): a swap_out or a buffer flush of several write
units goes to the device as one ``append_batch`` per zone; units that land in any order are
committed in the zone's order; a unit that fails is retried without losing or misplacing a page.
``SerialAppends`` (emulated devices) is the contract's reference: offsets where each request
landed, (index, error) for each failure, nothing raised for a request's failure."""

from __future__ import annotations

import numpy as np
import pytest

from zswap_host import StoreConfig, SwapStore, open_device
from zswap_host.errors import DeviceIOError, InvalidIOError

from store_pages import pages_for

PS = 4096
DEV = "emu://?zones=16&zone_size=2MiB&preset=none"


def spy(dev):
    calls = []
    orig = dev.append_batch

    def append_batch(zones, data, lengths, qd=32):
        calls.append((np.asarray(zones).tolist(), np.asarray(lengths).tolist(), qd))
        return orig(zones, data, lengths, qd)

    dev.append_batch = append_batch
    return calls


def test_a_large_swap_out_goes_down_as_batches_of_units_per_zone():
    d = open_device(DEV)
    calls = spy(d)
    st = SwapStore(d, StoreConfig(write_size=128 << 10, append_qd=6))
    ids = np.arange(1200)
    st.swap_out(ids, pages_for(ids))
    assert calls, "no append_batch"
    assert max(len(z) for z, _, _ in calls) > 1
    for zones, lengths, qd in calls:
        assert len(set(zones)) == 1 and qd == 6               # one zone per batch
        assert all(n <= 128 << 10 for n in lengths)
    st.flush()
    st.check()
    assert np.array_equal(st.swap_in(ids), pages_for(ids))


def test_a_topped_up_buffer_unit_goes_down_with_the_callers_units():
    """Calls that are not a multiple of the write unit leave a remainder in the buffer; the next
    call tops it up to a unit and sends it in the same batch as its own units (one trip)."""
    d = open_device(DEV)
    st = SwapStore(d, StoreConfig(write_size=128 << 10))          # 32-page units
    ids = np.arange(1000)
    st.swap_out(ids[:100], pages_for(ids[:100]))                   # 3 units, 4 pages wait
    calls = spy(d)
    appends = []
    append = d.append
    d.append = lambda z, data: appends.append(z) or append(z, data)
    st.swap_out(ids[100:200], pages_for(ids[100:200]))             # 28 top up + 2 units of its own
    assert len(calls) == 1 and calls[0][1] == [32 * PS] * 3, calls
    assert len(appends) == 3                                       # the batch's own appends, nothing else
    st.flush()
    st.check()
    assert np.array_equal(st.swap_in(ids[:200]), pages_for(ids[:200]))


def test_a_flush_of_several_streams_goes_down_as_one_batch():
    """flush() with pages waiting in several streams' buffers: one append_batch over their zones."""
    d = open_device(DEV)
    st = SwapStore(d, StoreConfig(write_size=128 << 10, placement="stream"))
    ids = np.arange(400)
    for s in range(3):                                         # a zone per stream, opened
        st.swap_out(ids[s * 100:s * 100 + 40], pages_for(ids[s * 100:s * 100 + 40]), stream=s)
    for s in range(3):                                         # ... and a few pages waiting in each
        st.swap_out(ids[s * 100 + 40:s * 100 + 50], pages_for(ids[s * 100 + 40:s * 100 + 50]), stream=s)
    calls = spy(d)
    st.flush()
    assert any(len(set(z)) == 3 for z, _, _ in calls), calls
    st.check()
    want = np.concatenate([ids[s * 100:s * 100 + 50] for s in range(3)])
    assert np.array_equal(st.swap_in(want), pages_for(want))


def test_units_landing_out_of_order_are_committed_where_they_landed():
    """A device that completes a zone's appends in reverse order (as zone append may): each unit's
    pages are mapped where that unit landed."""
    d = open_device(DEV)
    orig_append = d.append

    def reversed_batch(zones, data, lengths, qd=32):
        lengths = np.asarray(lengths, np.int64)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        view = np.asarray(data).reshape(-1).view(np.uint8)
        offsets = np.full(lengths.size, -1, np.int64)
        for k in range(lengths.size - 1, -1, -1):             # the last unit lands first
            offsets[k] = orig_append(int(zones[k]), view[starts[k]:starts[k] + lengths[k]])
        return offsets, []

    d.append_batch = reversed_batch
    st = SwapStore(d, StoreConfig(write_size=128 << 10))
    ids = np.arange(400)
    st.swap_out(ids, pages_for(ids, 7))
    st.flush()
    st.check()
    assert np.array_equal(st.swap_in(ids), pages_for(ids, 7))


@pytest.mark.parametrize("fail_at", [0, 1, 2])
def test_a_failed_unit_in_a_batch_is_retried_and_nothing_is_lost(fail_at):
    d = open_device(DEV)
    orig_append = d.append
    count = {"n": 0}

    def flaky_append(z, data):
        count["n"] += 1
        if count["n"] == fail_at + 1:
            raise DeviceIOError("injected failure of one unit", offset=0)
        return orig_append(z, data)

    d.append = flaky_append                                    # SerialAppends calls self.append
    st = SwapStore(d, StoreConfig(write_size=128 << 10))
    ids = np.arange(600)
    st.swap_out(ids, pages_for(ids, 3))
    st.flush()
    st.check()
    assert np.array_equal(st.swap_in(ids), pages_for(ids, 3))


def test_serial_appends_contract():
    d = open_device(DEV)
    g = d.geometry
    data = np.arange(3 * PS, dtype=np.uint8) % 251
    offs, fails = d.append_batch([1, 1, 2], data, [PS, PS, PS])
    assert fails == [] and offs.tolist() == [g.zone_start(1), g.zone_start(1) + PS, g.zone_start(2)]
    assert np.array_equal(d.read(g.zone_start(1), 2 * PS), data[:2 * PS])
    d.inject_write_failures(1)
    offs, fails = d.append_batch([3, 3], data[:2 * PS], [PS, PS])
    assert [k for k, _ in fails] == [0] and isinstance(fails[0][1], DeviceIOError)
    assert offs.tolist() == [-1, g.zone_start(3)]
    with pytest.raises(InvalidIOError, match="zone 99 does not exist"):
        d.append_batch([99], data[:PS], [PS])
    with pytest.raises(InvalidIOError, match="add up"):
        d.append_batch([1], data, [PS])
    assert d.report_zones()[1].wp == g.zone_start(1) + 2 * PS   # refused batches wrote nothing


def test_append_batch_takes_one_buffer_per_unit():
    """A sequence of buffers, one per request, instead of one buffer holding them back to back."""
    d = open_device(DEV)
    g = d.geometry
    a, b = np.full(2 * PS, 7, np.uint8), np.full(PS, 9, np.uint8)
    offs, fails = d.append_batch([4, 4], [a, b], [2 * PS, PS])
    assert fails == [] and offs.tolist() == [g.zone_start(4), g.zone_start(4) + 2 * PS]
    assert np.array_equal(d.read(g.zone_start(4), 3 * PS), np.concatenate([a, b]))
    with pytest.raises(InvalidIOError, match="buffers of sizes"):
        d.append_batch([5, 5], [a, b], [PS, 2 * PS])
    assert d.report_zones()[5].wp == g.zone_start(5)                # refused: nothing written


def _overwritten_store(d):
    """A store on d whose zones hold victims mostly valid (85% full, 2 x 400 pages overwritten)."""
    st = SwapStore(d, StoreConfig(write_size=128 << 10))
    rng = np.random.default_rng(5)
    n = 2600
    ids = np.arange(n)
    version = np.zeros(n, np.int64)
    st.swap_out(ids, pages_for(ids))
    for v in range(1, 3):
        hot = np.sort(rng.choice(n, 400, replace=False))
        version[hot] = v
        st.swap_out(hot, np.concatenate([pages_for([i], v) for i in hot.tolist()]))
    st.flush()
    return st, ids, version


def _all_back(st, ids, version):
    st.check()
    want = np.concatenate([pages_for([i], int(version[i])) for i in ids.tolist()])
    assert np.array_equal(st.swap_in(ids), want)


def test_gc_submits_its_next_read_before_it_appends_the_last_chunk():
    """On a device with ``overlapped_io`` GC relocates a whole victim (foreground GC, gc_step) in
    chunks: the read of chunk k+1 is submitted to the reader before chunk k's appends start, and
    waited for only after them. (The reader here runs each read when its result is asked for, so
    the order of events is exact; the real reader thread is in the next test.)"""
    d = open_device(DEV)
    d.overlapped_io = True
    log = []
    append_batch = d.append_batch

    def appends(zones, data, lengths, qd=32):
        log.append("append")
        return append_batch(zones, data, lengths, qd)

    class Lazy:
        def submit(self, fn, *args):
            log.append("submit")

            class Later:
                def result(self):
                    log.append("wait")
                    return fn(*args)
            return Later()

        def shutdown(self):
            pass

    st, ids, version = _overwritten_store(d)
    d.append_batch = appends
    st._reader = Lazy
    log.clear()
    for _ in range(3):
        assert st.gc_step() > 4 * (128 << 10)           # whole victims, more than one chunk each
    text = " ".join(log)
    # per victim: the first read alone, then every later read submitted before an append and
    # waited for after it
    assert text.count("submit append") >= 3 and "submit wait submit wait" not in text, text
    assert text.count("submit") == text.count("wait")
    _all_back(st, ids, version)


def test_gc_with_its_reader_thread_moves_every_page():
    d = open_device(DEV)
    d.overlapped_io = True
    st, ids, version = _overwritten_store(d)
    for _ in range(3):
        assert st.gc_step() > 0
    assert st._read_pool is not None                      # the reads ran on the reader thread
    _all_back(st, ids, version)
    st.close()
    assert st._read_pool is None
