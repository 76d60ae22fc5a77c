"""The swap_out fast path (issue 12): per-page bookkeeping in C (``store/native.py``,
``native/store.c``) and one commit per batch of write units that landed back to back. Checked by
running the same operations on two stores, one with the C bookkeeping (``NativeBook``) and one
with its pure-Python oracle (``book=OracleBook``, tests/support/book_oracle.py), on two identical devices, and comparing everything:
what each call returned or raised, the maps, the buffers, the stats, the bytes read back,
including write failures injected in the middle of a batch and GC under pressure."""

from __future__ import annotations

import numpy as np
import pytest

from zswap_host import StoreConfig, SwapStore, open_device
from zswap_host.devices.request_checks import check_append_batch
from zswap_host.errors import InvalidIOError
from zswap_host.store.native import NativeBook

from book_oracle import OracleBook
from store_pages import pages_for
from store_twins import GUEST, GUEST_504, PS, SMALL, both, pair, same, state



@pytest.mark.parametrize("express", [False, True])
@pytest.mark.parametrize("url", [GUEST, GUEST_504])
@pytest.mark.parametrize("run", [False, True])
def test_the_fast_path_is_taken_and_agrees_on_fresh_batches_of_2mib(run, url, express):
    """The guest's namespace shape, 2 MiB calls of fresh ids until half the device is full (the
    issue's sequence): the express path's one commit per batch (with the guest's 504 KiB append
    limit each call also tops up and leaves a tail in the write buffer) or the general path, the
    same state as the store on the oracle's bookkeeping, which takes the general path's steps."""
    stores, _, _ = pair(url, StoreConfig(placement="temporal", prefetch=False), run, express)
    ids = np.arange(64 * 3072 // 2)
    for i in range(0, ids.size, 512):
        both(stores, lambda st: st.swap_out(ids[i:i + 512], pages_for(ids[i:i + 512])))
    same(state(stores[0]), state(stores[1]))
    fast, oracle = stores[0].fast_path, stores[1].fast_path
    assert fast["prepared"] >= ids.size // 512 - 10           # all but those that widen the direct array
    assert fast["one_commit_batches"] >= ids.size // 512 - ids.size // 3000 - 2
    assert oracle["one_batch_calls"] == 0                     # a usual call is one batch on the express path only
    if express:
        assert fast["one_batch_calls"] >= ids.size // 512 - 2 * (ids.size // 3000) - 2   # all but zone ends
        assert stores[0]._express.taken >= fast["one_batch_calls"] - 10
        if url == GUEST_504:                                  # the buffer was staged and committed in C
            assert stores[0]._express._bufs[0]
    else:
        assert oracle == fast
    for st in stores:
        st.check()
        assert np.array_equal(st.swap_in(ids[::97]), pages_for(ids[::97]))


@pytest.mark.parametrize("express", [False, True])
@pytest.mark.parametrize("run", [False, True])
@pytest.mark.parametrize("placement", ["temporal", "stream", "hotness"])
def test_a_mixed_run_with_failures_mid_batch_agrees_with_the_reference(placement, run, express):
    """Random batch sizes (a page to several units), overwrites, repeated ids in a batch, discards
    (the C ``st_discard`` against the oracle's; repeated ids, hashed ones through the id map),
    swap-ins, flushes, GC under pressure, ids too large for the direct array, and write failures
    injected at the 1st..4th append of a call (one, two, or many in a row)."""
    rng = np.random.default_rng(7)
    cfg = StoreConfig(placement=placement, write_size=128 << 10, prefetch=placement == "stream")
    stores, devs, fails = pair(SMALL, cfg, run, express)
    cap = stores[0].capacity_pages
    universe = cap * 3 // 4
    version = 0
    for step in range(400):
        op = rng.random()
        if op < 0.6:
            n = int(rng.choice([1, 7, 32, 33, 64, 100, 128, 200]))
            ids = rng.choice(universe, n, replace=bool(rng.random() < 0.1)).astype(np.int64)
            if rng.random() < 0.05:
                ids[0] = (1 << 40) + step                    # beyond the direct array: hashed
            version += 1
            pages = pages_for(ids, version)
            if rng.random() < 0.15:
                at, count = int(rng.integers(1, 5)), int(rng.choice([1, 1, 2, 9]))
                for f in fails:
                    f.arm(at, count)
            stream = int(rng.integers(0, 4))
            both(stores, lambda st: st.swap_out(ids, pages, stream))
            for d, f in zip(devs, fails):                   # an unused injection ends with the call
                f.at = None
                d.inject_write_failures(0)
        elif op < 0.7:                                      # repeats, any order; now and then a hashed id
            ids = rng.choice(universe, int(rng.integers(1, 40)), replace=bool(rng.random() < 0.3))
            if rng.random() < 0.2:
                ids = np.append(ids, (1 << 40) + int(rng.integers(0, step + 1)))
            both(stores, lambda st: st.discard(ids))
        elif op < 0.85:
            ids = rng.choice(universe, int(rng.integers(1, 50)))
            both(stores, lambda st: st.swap_in(ids))
        elif op < 0.9:
            both(stores, lambda st: st.flush())
        else:
            limit = int(rng.integers(1, 64)) * PS
            both(stores, lambda st: st.gc_step(limit))
        same(state(stores[0]), state(stores[1]))
    for st in stores:
        st.check()
    assert stores[0].fast_path["prepared"] > 100
    assert stores[0].book.discards > 10                      # the C discard ran
    assert stores[0].fast_path["one_commit_batches"] > 10
    if stores[0]._express is None:                           # hotness, or express off: the general path alone
        assert stores[0].fast_path == stores[1].fast_path
    elif placement == "temporal":                            # (stream: prefetch on, so the express path declines)
        assert stores[0].fast_path["one_batch_calls"] > 10


@pytest.mark.parametrize("express", [False, True])
@pytest.mark.parametrize("run", [False, True])
def test_a_failed_one_batch_call_goes_through_the_general_landing_and_agrees(run, express):
    """A call on the one-batch path (a buffered unit and the caller's units: the express path's run)
    whose 1st..5th append fails: its units are retried as the general path's would be (``_land``),
    same state; with the express path off the general path writes both calls."""
    cfg = StoreConfig(placement="temporal", prefetch=False, id_space=4096)   # no call widens the id map
    for at in range(1, 6):
        stores, devs, fails = pair(GUEST, cfg, run, express)
        ids = np.arange(4000, dtype=np.int64)
        for a in (0, 520):                         # the handle arrays grow; 8 pages stay buffered
            both(stores, lambda st: st.swap_out(ids[a:a + 520 - a // 65], pages_for(ids[a:a + 520 - a // 65])))
        before = stores[0].fast_path["one_batch_calls"]
        assert stores[0].state.buffers[0].n == 8       # the next call: a buffered unit and the caller's
        declined = dict(stores[0]._express.declined) if express else None
        for f in fails:
            f.arm(at, 2 if at == 5 else 1)
        both(stores, lambda st: st.swap_out(ids[1032:1544], pages_for(ids[1032:1544])))
        if express:                                # the express path sent it; _land_sent landed it
            assert stores[0]._express.declined == declined
        if at <= 4:                                # its batch of four appends failed: not the usual landing
            assert stores[0].fast_path["one_batch_calls"] == before
        same(state(stores[0]), state(stores[1]))
        both(stores, lambda st: st.swap_out(ids[1544:2048], pages_for(ids[1544:2048])))   # (2048: no growth)
        same(state(stores[0]), state(stores[1]))
        assert stores[0].fast_path["one_batch_calls"] == before + express   # one of the two calls landed as usual
        for st in stores:
            st.check()
            assert np.array_equal(st.swap_in(ids[:2048]), pages_for(ids[:2048]))


def test_bad_calls_are_refused_the_same_way():
    stores, _, _ = pair(SMALL, StoreConfig())
    ok = np.arange(8, dtype=np.int64)
    both(stores, lambda st: st.swap_out(ok, pages_for(ok)))
    for ids, pages in [(np.array([3, -1], np.int64), pages_for([3, 4])),
                       (np.array([3, -1], np.int64), np.zeros((3, PS), np.uint8)),     # both bad: ids named
                       (np.array([1, 2, 2, 1], np.int64), pages_for([1, 2, 2, 1])),   # repeats: the last wins
                       (np.array([5, 1 << 62], np.int64), pages_for([5, 6])),
                       (np.array([[1, 2]], np.int64), pages_for([1, 2])),
                       (np.arange(40, 80, dtype=np.int64)[::2], pages_for(np.arange(40, 80, 2))),   # strided
                       (np.arange(80, 120, dtype=np.int32)[::2], pages_for(np.arange(80, 120, 2))),
                       ([120, 121, 122], pages_for([120, 121, 122]))]:
        both(stores, lambda st: st.swap_out(ids, pages))
        same(state(stores[0]), state(stores[1]))
    big = np.arange(100, 100 + stores[0].capacity_pages, dtype=np.int64)
    both(stores, lambda st: st.swap_out(big, np.zeros((big.size, PS), np.uint8)))   # SwapFullError
    same(state(stores[0]), state(stores[1]))
    assert np.array_equal(stores[0].swap_in(np.array([1, 2])), pages_for([1, 2]))
    for st in stores:
        st.close()
    neg = np.array([-1], np.int64)
    both(stores, lambda st: st.swap_out(neg, pages_for([1])))                 # closed, bad ids: ValueError
    both(stores, lambda st: st.swap_out(ok, pages_for(ok)))                   # closed


@pytest.mark.parametrize("book", [NativeBook, OracleBook])
def test_prepare_leaves_the_maps_as_it_found_them(book):
    """Both bookkeepers classify a batch the same way (the first bad id in batch order names the
    status) and leave the maps unchanged."""
    dev = open_device(SMALL)
    st = SwapStore(dev, StoreConfig(), book=book)
    ids = np.arange(0, 200, 2, dtype=np.int64)
    st.swap_out(ids, pages_for(ids))
    before = (st.state.idmap.direct.copy(), st.state.in_flight.copy())
    nat = st.book
    for probe, rc in [(np.array([4, 5, 4], np.int64), -3), (np.array([5, 7, 5], np.int64), -3),
                      (np.array([4, -2], np.int64), -1), (np.array([4, 1 << 50], np.int64), -2),
                      (np.array([4, 1 << 50, 4, -1], np.int64), -2), (np.array([9, 9, -1], np.int64), -3)]:
        assert nat.prepare(probe)[0] == rc
        assert np.array_equal(st.state.idmap.direct, before[0]) and np.array_equal(st.state.in_flight, before[1])
    rc, h, fresh, new, buffered = nat.prepare(np.array([4, 5, 6, 7], np.int64))
    assert rc == 0 and fresh == 2 and new == 2 and h[0] == st.state.idmap.lookup(np.array([4]))[0] and h[1] == -1


def test_check_append_batch_small_and_long_batches_agree():
    """The list-based check of a batch of units and the numpy one: same results, same errors."""
    from zswap_host.devices import request_checks
    g = open_device(SMALL).geometry
    data = np.arange(8 * PS, dtype=np.uint32).view(np.uint8)[:8 * PS]
    cases = [([0, 1], data[:2 * PS], [PS, PS]), ([0, 99], data[:2 * PS], [PS, PS]), ([0, -1], data[:2 * PS], [PS, PS]),
             ([0, 1], data[:2 * PS], [PS, 0]), ([0, 1], data[:PS + 512], [PS, 512]), ([0], data[:3 * PS], [3 * PS]),
             ([0, 1], data[:3 * PS], [PS, PS]), ([0, 0], [data[:PS], data[PS:3 * PS]], [PS, 2 * PS]),
             ([0, 0], [data[:PS], data[PS:3 * PS]], [PS, PS]), ([2], data[:100], [100]),
             ([0, 0, 1], [data[:PS], data[PS:3 * PS]], [PS, PS, PS]),           # buffers of several units
             ([0, 0, 1], [data[:PS], data[PS:3 * PS]], [PS, 2 * PS, PS]), ([0, 0], [data[:2 * PS]], [PS, 2 * PS]),
             ([0, 0], [data[:3 * PS], data[:0]], [PS, 2 * PS]), ([0, 0], [data[:3 * PS]], [2 * PS, 2 * PS])]
    for zones, d, lengths in cases:
        res = []
        for fn in (check_append_batch, lambda g, z, d, l: request_checks._check_append_batch_np(
                g, np.asarray(z, np.int64), d, np.asarray(l, np.int64))):
            try:
                z, l, units = fn(g, zones, d, lengths)
                res.append(("ok", z.tolist(), l.tolist(), [u.tobytes() for u in units]))
            except InvalidIOError as e:
                res.append(("err", str(e)))
        assert res[0] == res[1], (zones, lengths)
    z, l, view = check_append_batch(g, [0, 1], data[:2 * PS], [PS, PS], views=False)
    assert view.size == 2 * PS and view.base is not None


class _FakeRing:
    """An append engine that records the addresses it was given and lands each request at the
    zone's start plus what came before it (or fails the requests named in ``fail``)."""

    def __init__(self, fail=()):
        from zswap_host._native import ffi
        self._ffi, self.fail, self.seen = ffi, set(fail), None

    def address(self, buf):
        ffi = self._ffi
        return int(ffi.cast("uintptr_t", ffi.from_buffer("uint8_t[]", buf)))

    def append(self, ngfd, nsid, lba_size, zone_lbas, units, lengths, zones, nzones, qd, addrs=None):
        if addrs is None:
            addrs = [u.ctypes.data for u in units]
        self.seen = list(addrs)
        n = lengths.size
        res = np.array([-5 if k in self.fail else 0 for k in range(n)], np.int32)
        alba = (zones * zone_lbas + np.concatenate([[0], np.cumsum(lengths)[:-1]]) // lba_size).astype(np.uint64)
        return res, alba, np.zeros(n)

    def max_appends_per_zone(self):
        return 1


def _fake_linux_zoned(ring):
    from zswap_host.devices.io_counters import IoTally
    from zswap_host.devices.linux_zone_append import ZoneAppender
    from zswap_host.devices.linux_zoned import LinuxZonedDevice
    from zswap_host.devices.zone import ZoneGeometry
    d = object.__new__(LinuxZonedDevice)
    d.geometry = ZoneGeometry(nr_zones=4, zone_size=1 << 20, zone_capacity=1 << 20, block_size=4096,
                              max_open=4, max_active=4, max_append=128 << 10)
    d.path, d.nsid, d.tally = "/dev/fake", 1, IoTally()
    d.appender = ZoneAppender(d)
    d.appender.ngfd, d.appender.passthrough, d.appender.engine = 99, True, ring
    d.zone_error = lambda e, z, what, offset=None, length=0: OSError(e, what)
    return d


def _counters(d) -> tuple:
    """What a fake device counted: appends, most batches at once, batches running, bytes, sizes."""
    t = d.tally
    return d.appender.count, t.max_batches_at_once, t.in_flight_batches, t.io.write_bytes, t.io.write_hist


def test_linux_zoned_uring_append_of_one_buffer_addresses_each_unit_in_place():
    """``append_batch`` with one buffer on the uring-cmd path: no view per unit, each request's
    address is the buffer's plus the lengths before it; the same offsets, counters and failures as
    the per-unit path."""
    data = np.zeros(5 * PS, np.uint8)
    lengths = np.array([2 * PS, PS, 2 * PS], np.int64)
    ring = _FakeRing()
    d = _fake_linux_zoned(ring)
    offsets, failures = d.append_batch(np.array([1, 1, 2]), data, lengths)
    assert failures == [] and ring.seen == [data.ctypes.data, data.ctypes.data + 2 * PS, data.ctypes.data + 3 * PS]
    assert offsets.tolist() == [1 << 20, (1 << 20) + 2 * PS, (2 << 20) + 3 * PS]
    assert d.appender.count == 3 and d.tally.io.write_bytes == 5 * PS and d.tally.max_batches_at_once == 1 \
        and d.tally.in_flight_batches == 0
    ring2 = _FakeRing(fail={1})
    d2 = _fake_linux_zoned(ring2)
    units = [data[:2 * PS], data[2 * PS:3 * PS], data[3 * PS:]]
    ring1 = _FakeRing(fail={1})
    o1, f1 = _fake_linux_zoned(ring1).append_batch(np.array([1, 1, 2]), units, lengths)
    assert ring1.seen == [u.ctypes.data for u in units]
    o2, f2 = d2.append_batch(np.array([1, 1, 2]), data, lengths)
    assert o1.tolist() == o2.tolist() and [k for k, _ in f1] == [k for k, _ in f2] == [1]
    odd = np.zeros(5 * PS + 1, np.uint8)[1:]                 # not dword aligned: one aligned copy
    ring3 = _FakeRing()
    _fake_linux_zoned(ring3).append_batch(np.array([0, 0, 0]), odd, lengths)
    assert ring3.seen[0] % 4 == 0 and ring3.seen[1] - ring3.seen[0] == 2 * PS


class _FakeSmallRing(_FakeRing):
    """``_FakeRing`` with the engine's ``append_small`` (int lists in, results and LBAs out)."""

    SMALL = 64

    def __init__(self, fail=()):
        super().__init__(fail)
        self.small_calls = 0

    def append_small(self, ngfd, nsid, lba_size, zone_lbas, nzones, qd, zones, lengths, addrs):
        self.small_calls += 1
        res, alba, _ = self.append(ngfd, nsid, lba_size, zone_lbas, None, np.array(lengths, np.int64),
                                   np.array(zones, np.int64), nzones, qd, addrs)
        return res.tolist(), alba.astype(np.int64)


@pytest.mark.parametrize("fail", [(), (1,), (0, 3)])
def test_linux_zoned_lean_append_of_buffers_holding_several_units_agrees_with_the_general_path(fail):
    """The lean uring-cmd path (a few buffers, each holding whole units back to back: a write
    buffer's unit and the caller's units) gives each request its unit's address, and the same
    offsets, failures and counters as the general path given a buffer per unit."""
    data = np.zeros(6 * PS, np.uint8)
    head, rest = data[:PS], data[2 * PS:]                       # two separate buffers
    lengths = np.array([PS, 2 * PS, PS, PS], np.int64)
    zones = np.array([1, 1, 1, 2], np.int64)
    units = [head, rest[:2 * PS], rest[2 * PS:3 * PS], rest[3 * PS:]]
    lean, general = _FakeSmallRing(fail), _FakeRing(fail)
    d1, d2 = _fake_linux_zoned(lean), _fake_linux_zoned(general)
    o1, f1 = d1.append_batch(zones, (head, rest), lengths)
    o2, f2 = d2.append_batch(zones, units, lengths)
    assert lean.small_calls == 1
    assert lean.seen == general.seen == [u.ctypes.data for u in units]
    assert o1.tolist() == o2.tolist() and [k for k, _ in f1] == [k for k, _ in f2] == sorted(fail)
    assert [str(e) for _, e in f1] == [str(e) for _, e in f2]
    assert _counters(d1) == _counters(d2)


def test_linux_zoned_lean_append_leaves_other_batches_to_the_general_path():
    """Not dword aligned, not contiguous, or not adding up: the lean path does nothing and the
    general path copies, or names the error."""
    lengths = np.array([PS, PS], np.int64)
    odd = np.zeros(2 * PS + 1, np.uint8)[1:]
    ring = _FakeSmallRing()
    d = _fake_linux_zoned(ring)
    d.append_batch(np.array([0, 0]), odd, lengths)
    assert ring.small_calls == 0 and ring.seen[0] % 4 == 0
    d.append_batch(np.array([0, 0]), np.zeros((2, 2 * PS), np.uint8)[:, :PS], lengths)     # strided
    assert ring.small_calls == 0
    with pytest.raises(InvalidIOError):
        d.append_batch(np.array([0, 0]), np.zeros(3 * PS, np.uint8), lengths)
    with pytest.raises(InvalidIOError):
        d.append_batch(np.array([0, 9]), np.zeros(2 * PS, np.uint8), lengths)
    assert ring.small_calls == 0
    d.append_batch(np.array([0, 3]), np.zeros(2 * PS, np.uint8), lengths)
    assert ring.small_calls == 1


class _FakeRunRing(_FakeSmallRing):
    """``_FakeSmallRing`` with the engine's ``append_run``: the requests' addresses cut from the
    buffers, landed by ``append``, and 1 when they landed back to back from ``expect_lba``."""

    def __init__(self, fail=(), refuse=False):
        super().__init__(fail)
        self.run_calls, self.refuse = 0, refuse

    def append_run(self, ngfd, nsid, lba_size, zone_lbas, nzones, qd, segs, lengths, zones, expect_lba, max_len):
        self.run_calls += 1
        if self.refuse:
            return -22, None, None
        addrs, k = [], 0
        for s in segs:
            pos, left = s.ctypes.data, s.nbytes
            while left > 0:
                addrs.append(pos)
                pos, left, k = pos + int(lengths[k]), left - int(lengths[k]), k + 1
        res, alba, _ = self.append(ngfd, nsid, lba_size, zone_lbas, None, lengths, zones, nzones, qd, addrs)
        alba = alba.astype(np.int64)
        expect = expect_lba + np.concatenate(([0], np.cumsum(lengths)[:-1])) // lba_size
        if not res.any() and np.array_equal(alba, expect):
            return 1, None, None
        return 0, res.tolist(), alba


@pytest.mark.parametrize("fail", [(), (1,)])
@pytest.mark.parametrize("refuse", [False, True])
@pytest.mark.parametrize("expect_at", [0, 1])
def test_linux_zoned_append_run_agrees_with_append_batch(fail, refuse, expect_at):
    """``LinuxZonedDevice.append_run`` (the store's usual batch and where it expects it): True when
    the units landed back to back from ``expect``; otherwise, or when the engine's one call refuses
    the batch, the same offsets, failures and counters as ``append_batch``."""
    data = np.zeros(6 * PS, np.uint8)
    head, rest = data[:PS], data[2 * PS:]
    lengths = np.array([PS, 2 * PS, PS, PS], np.int64)
    zones = np.array([1, 1, 1, 1], np.int64)
    run_ring, ring = _FakeRunRing(fail, refuse), _FakeSmallRing(fail)
    d1, d2 = _fake_linux_zoned(run_ring), _fake_linux_zoned(ring)
    expect = (1 << 20) + expect_at * PS
    out = d1.append_run(zones, (head, rest), lengths, 8, expect)
    o2, f2 = d2.append_batch(zones, (head, rest), lengths)
    assert run_ring.run_calls == 1 and run_ring.small_calls == int(refuse)
    if not fail and not expect_at:
        assert out is True
    else:
        o1, f1 = out
        assert o1.tolist() == o2.tolist() and [(k, str(e)) for k, e in f1] == [(k, str(e)) for k, e in f2]
    assert run_ring.seen == ring.seen
    assert _counters(d1) == _counters(d2)
