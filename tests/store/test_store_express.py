"""The express ``swap_out`` (issue 12, store/express.py, native/store_out.c): the usual call planned,
staged, written and committed in C. Checked against two references on identical devices: the same
store without its express path (the C helpers' steps) and the store on the oracle's bookkeeping (``book=OracleBook``) —
what each call returned or raised, the maps, the buffers, the zones, the stats, the bytes read back,
and the fast-path counters. Then that every reason to decline sends the call to the general path
with nothing changed, that a batch that did not land back to back continues there, and the device
write inside the C call (``st_out_call`` handing a neutral, versioned ``zs_run`` to the device's
``zs_run_writer``, native/append_run.h) through a run writer that does on an emulated device what
the ring does on a namespace."""

from __future__ import annotations

import numpy as np
import pytest

from zswap_host import StoreConfig, SwapStore, open_device
from zswap_host.errors import StoreClosedError, SwapFullError
from zswap_host.store.placement import Placement, register_placement

from book_oracle import OracleBook
from store_pages import pages_for
from store_twins import GUEST, GUEST_504, PS, SMALL, FailAt, both, same, state, with_append_run

# zones large enough for every call of the decline test but the last ones (no zone end on the way)
BIG_ZONES = "emu://?zones=16&zone_size=32MiB&zone_capacity=32MiB&max_open=14&max_active=14&max_append=504KiB&preset=none"



class FakePort:
    """A device's run writer (``zs_run_writer``, native/append_run.h) on an emulated device, through
    cffi callbacks, as ``UringRunWriter`` is on a namespace: the store's ``st_out_call`` checks the
    run (a run of another version is refused) and has it appended: its units cut from the run's two
    buffers and sent with ``append_batch`` (status 1 when they landed back to back from ``expect``,
    else 2 with ``results`` the device's (offsets, failures)); ``refuse``: status 3 (nothing sent).
    ``runs``: what the device was handed (version, units) — it reads the run, never the store's struct."""

    def __init__(self, dev, run_addr: int, refuse: bool = False) -> None:
        from zswap_host._native import ffi
        self.ffi = ffi
        self.dev, self.refuse = dev, refuse
        self.status: list[int] = []
        self.runs: list[tuple] = []
        self.checked = 0
        self.run = ffi.cast("zs_run *", run_addr)
        self._cb = (ffi.callback("int(void *, const zs_run *)", self._check, onerror=self._error),
                    ffi.callback("int(void *, const zs_run *)", self._append, onerror=self._error))
        w = self._w = ffi.new("zs_run_writer *")
        w.check, w.append, w.ctx = self._cb[0], self._cb[1], ffi.NULL
        self.writer = int(ffi.cast("uintptr_t", w))
        self.errors: list = []

    def _error(self, exc, value, tb):
        self.errors.append(value)
        return 2

    version = 1                     # the run layout this device knows

    def _check(self, ctx, r) -> int:
        self.checked += 1
        return 0 if r.version == self.version else -11

    def _append(self, ctx, r) -> int:
        ffi, k = self.ffi, r.nunits
        lens = np.array(ffi.unpack(r.lens, k), np.int64)
        self.runs.append((r.version, k, lens.tolist()))
        status = 3
        if not self.refuse:
            segs = [np.frombuffer(ffi.buffer(r.seg0, r.seg0_len), np.uint8)] if r.seg0_len else []
            segs.append(np.frombuffer(ffi.buffer(r.seg1, r.seg1_len), np.uint8))
            offsets, failures = self.dev.append_batch(np.array(ffi.unpack(r.zones, k), np.int64), segs, lens, self.qd)
            starts = r.expect + np.concatenate(([0], np.cumsum(lens)[:-1]))
            status = 1 if not failures and np.array_equal(offsets, starts) else 2
            self.out = (offsets, failures)
        self.status.append(status)
        return status

    def __call__(self, qd: int, call) -> int:
        self.qd = qd
        rc = call()
        assert not self.errors, self.errors
        return rc

    def results(self, rc: int, qd: int, segs: tuple):
        return self.out


def trio(url: str, cfg: StoreConfig, run: bool = False, port: str | None = None):
    """Express store, the same store without express, the numpy store, on identical devices
    (``run``: the express device has ``append_run``; ``port``: it has a ``FakePort``, "refuse" one
    that sends nothing)."""
    devs = [open_device(url) for _ in range(3)]
    fails = [FailAt(d) for d in devs]
    if run:
        with_append_run(devs[0])
    ports = []
    if port is not None:
        def make(addr, dev=devs[0]):
            ports.append(FakePort(dev, addr, refuse=port == "refuse"))
            return ports[-1]
        devs[0].run_writer = make
    stores = [SwapStore(devs[0], cfg), SwapStore(devs[1], cfg), SwapStore(devs[2], cfg, book=OracleBook)]
    stores[1]._express = None
    assert stores[0]._express is not None and stores[0]._express.in_one_call == (port is not None)
    return stores, devs, fails, ports


def counts(stores):
    """The fast-path counters: the general path's the same with the C bookkeeping and the oracle's;
    the express store's commits the same as the general path's (its usual calls it alone counts)."""
    fp = [st.fast_path for st in stores]
    assert fp[1] == fp[2] and fp[1]["one_batch_calls"] == 0
    assert fp[0]["prepared"] == fp[1]["prepared"], fp
    assert fp[0]["one_commit_batches"] == fp[1]["one_commit_batches"], fp


def all_three(stores, fn):
    """Run ``fn`` once on each store; they must return or raise the same (``both``'s comparison)."""
    outs = []
    for st in stores:
        try:
            outs.append(("ok", fn(st)))
        except Exception as e:              # noqa: BLE001 - compared below
            outs.append(("raise", type(e), str(e), getattr(e, "page_ids", None)))
    for other in outs[1:]:
        both([_Replay(outs[0]), _Replay(other)], lambda r: r())


class _Replay:
    """An outcome of ``all_three`` replayed through ``both``'s comparison."""

    def __init__(self, out) -> None:
        self.out = out

    def __call__(self):
        if self.out[0] == "ok":
            return self.out[1]
        e = self.out[1](self.out[2])
        if self.out[3] is not None:
            e.page_ids = self.out[3]
        raise e


def agree(stores) -> None:
    a = state(stores[0])
    same(a, state(stores[1]))
    same(a, state(stores[2]))


@pytest.mark.parametrize("port", [None, "ok", "refuse"])
@pytest.mark.parametrize("url", [GUEST, GUEST_504])
@pytest.mark.parametrize("run", [False, True])
def test_express_agrees_with_the_general_path_on_2mib_calls(run, url, port):
    """The guest's shape: 2 MiB calls of fresh ids over half the device, then 2 MiB calls replacing
    pages on the device, then a flush: same state, same bytes, same fast-path counters; the
    express path took most calls (not those at a zone's end or widening the id map)."""
    stores, _, _, ports = trio(url, StoreConfig(placement="temporal", prefetch=False), run, port)
    ids = np.arange(64 * 3072 // 2)
    calls = 0
    for i in range(0, ids.size, 512):
        all_three(stores, lambda st: st.swap_out(ids[i:i + 512], pages_for(ids[i:i + 512])))
        calls += 1
    rng = np.random.default_rng(3)
    for v in range(12):
        again = rng.permutation(ids.size)[:512].astype(np.int64)
        all_three(stores, lambda st: st.swap_out(again, pages_for(again, 2 + v)))
        calls += 1
    agree(stores)
    ex = stores[0]._express
    counts(stores)
    assert ex.taken >= calls - calls // 5 - 12, ex.declined
    assert ex.split >= calls // 8, ex.declined                  # zone ends: two runs
    if port == "refuse":                                       # staged, then sent from Python between the C steps
        assert len(ports[0].status) >= calls - calls // 5 - 12 and set(ports[0].status) == {3}
    if port == "ok":
        assert ports[0].status.count(1) == ex.taken + ex.split
    all_three(stores, lambda st: st.flush())
    agree(stores)
    for st in stores:
        st.check()
    got = [st.swap_in(ids[::53]) for st in stores]
    assert np.array_equal(got[0], got[1]) and np.array_equal(got[0], got[2])


@pytest.mark.parametrize("port", [None, "ok"])
@pytest.mark.parametrize("run", [False, True])
def test_a_failed_append_in_an_express_call_continues_on_the_general_path(run, port):
    """The 1st..5th append of an express call fails (once, or twice in a row): the call goes on as
    the general path's from its device write (``_land``'s commits and retries): same state."""
    cfg = StoreConfig(placement="temporal", prefetch=False)
    for at in range(1, 6):
        stores, _, fails, _ = trio(GUEST, cfg, run, port)
        ids = np.arange(4000, dtype=np.int64)
        for a in range(0, 1560, 520):            # the first calls open a zone and widen the id map
            all_three(stores, lambda st: st.swap_out(ids[a:a + 520], pages_for(ids[a:a + 520])))
        taken = stores[0]._express.taken
        assert taken >= 1 and 0 < stores[0].state.buffers[0].n < 32     # a tail stays buffered
        for f in fails:
            f.arm(at, 2 if at == 5 else 1)
        all_three(stores, lambda st: st.swap_out(ids[1560:2048], pages_for(ids[1560:2048])))
        assert stores[0]._express.taken == taken + (at == 5)       # accepted, not landed as usual
        agree(stores)
        all_three(stores, lambda st: st.swap_out(ids[:512], pages_for(ids[:512], 1)))
        agree(stores)
        for st in stores:
            st.check()
            assert np.array_equal(st.swap_in(ids[512:2048]), pages_for(ids[512:2048]))
            assert np.array_equal(st.swap_in(ids[:512]), pages_for(ids[:512], 1))


def test_every_reason_to_decline_leaves_the_call_to_the_general_path():
    """Each st_out_plan reason (and the checks before it) sends the call to the general path with
    nothing changed: the same results, errors and state as the references."""
    stores, _, _, _ = trio(BIG_ZONES, StoreConfig(placement="temporal", prefetch=False))
    ex = stores[0]._express

    def call(ids, pages=None, stream=0):
        """The reason the express path declined the call (None: it took it or looked no further)."""
        before, taken = dict(ex.declined), ex.taken
        pages = pages_for(np.asarray(ids).ravel()) if pages is None else pages
        all_three(stores, lambda st: st.swap_out(ids, pages, stream))
        agree(stores)
        grew = [r for r in ex.declined if ex.declined[r] != before.get(r, 0)]
        assert len(grew) + (ex.taken - taken) <= 1
        return grew[0] if grew else ("taken" if ex.taken > taken else None)

    assert call(np.arange(512, dtype=np.int64)) is None        # no open zone yet
    assert call(np.arange(4096, 4608, dtype=np.int64)) == -2   # the id map's direct array widens
    assert call(np.arange(512, 1024, dtype=np.int64)) == -6    # the handle arrays grow
    assert call(np.arange(1024, 1536, dtype=np.int64)) == "taken"
    assert call(np.arange(2000, 2010, dtype=np.int64)) == -7   # fits the buffer: no plan
    assert call(np.concatenate([np.arange(2005, 2010), np.arange(3000, 3507)]).astype(np.int64)) == -4   # buffered
    neg = np.arange(1536, 2048, dtype=np.int64)
    neg[3] = -1
    assert call(neg) == -1                                     # ValueError
    far = np.arange(2010, 2522, dtype=np.int64)
    far[0] = 1 << 40
    assert call(far) == -2                                     # beyond the direct array: hashed
    rep = np.arange(2522, 3034, dtype=np.int64)
    rep[7] = rep[9]
    assert call(rep) == -3                                     # a repeated id: the last copy wins
    assert call(np.arange(3507, 4019, dtype=np.int64)) == "taken"
    assert call(np.arange(4608, 7000, dtype=np.int64)) in (-6, -2, "taken")
    assert call(np.arange(7000, 7512, dtype=np.int64)) == "taken"
    gone = np.arange(1024, 1324, dtype=np.int64)               # discarded: 300 handles wait for reuse
    all_three(stores, lambda st: st.discard(gone))
    assert stores[0].state.idmap.reusable == 300
    assert call(np.arange(8600, 9112, dtype=np.int64)) == "taken"   # st_insert reuses them first
    assert all(st.state.idmap.reusable == 0 for st in stores)
    assert call(np.arange(1024, 1536, dtype=np.int64)) == "taken"   # the discarded ids again: fresh
    taken = ex.taken
    call(np.arange(20000, 21024, dtype=np.int64)[::2])        # strided ids
    call(np.arange(21024, 21536, dtype=np.int32))              # int32 ids
    call([int(i) for i in range(22000, 22512)])                # a list
    pages = pages_for(np.arange(23000, 23512))
    call(np.arange(23000, 23512, dtype=np.int64), np.asfortranarray(pages))   # pages not C-contiguous
    call(np.arange(24000, 24512, dtype=np.int64), stream=np.int64(0))         # a numpy stream number
    assert ex.taken == taken
    assert call(np.arange(7512, 8000, dtype=np.int64), pages_for(np.arange(7512, 8000)), 7) == "taken"
    assert call(np.arange(8000, 8512, dtype=np.int64), stream="x") is None   # ValueError from all three
    # fill up until the call's new pages do not fit: SwapFullError (ST_OUT_FULL)
    left = stores[0].capacity_pages - stores[0].state.live
    assert call(np.arange(30000, 30000 + left - 100, dtype=np.int64), np.zeros((left - 100, PS), np.uint8)) is not None
    last = np.arange(30000 + left - 100, 30000 + left + 412, dtype=np.int64)
    reason = call(last, np.zeros((512, PS), np.uint8))
    assert reason in (-5, -7, -2)                              # -7: the open zone ran out first; -2: ids too far
    with pytest.raises(SwapFullError):
        stores[0].swap_out(last, np.zeros((512, PS), np.uint8))
    for st in stores:
        st.check()
        st.close()
    call(np.arange(512, dtype=np.int64))                       # closed: StoreClosedError
    with pytest.raises(StoreClosedError):
        stores[0].swap_out(np.arange(512, dtype=np.int64), pages_for(np.arange(512)))


def test_placements_that_look_at_the_pages_have_no_express_path():
    class ByParity(Placement):
        def user_streams(self, max_streams, open_limit):
            return 2

        def assign(self, handles, stream, swap_counts, n_streams, hot_threshold):
            return (handles & 1).astype(np.int64)

    register_placement("test-express-parity", ByParity())
    for name, has in [("hotness", False), ("test-express-parity", False), ("temporal", True), ("single", True),
                      ("stream", True)]:
        st = SwapStore(open_device(SMALL), StoreConfig(placement=name))
        assert (st._express is not None) == has, name
    st = SwapStore(open_device(SMALL), StoreConfig(placement="temporal"), book=OracleBook)
    assert st._express is None                      # the express path is C's own


@pytest.mark.parametrize("port", [None, "ok"])
def test_streams_go_to_their_own_zones_and_agree(port):
    """The ``stream`` placement: each call's stream picks its buffer and zone (stream % streams);
    with GC under pressure and overwrites, the same state as the references."""
    cfg = StoreConfig(placement="stream", write_size=128 << 10, prefetch=False)
    stores, _, _, _ = trio(SMALL, cfg, port=port)
    rng = np.random.default_rng(11)
    universe = stores[0].capacity_pages * 3 // 4
    for step in range(150):
        n = int(rng.choice([64, 100, 160]))
        ids = rng.choice(universe, n, replace=False).astype(np.int64)
        s = int(rng.integers(0, 9))
        all_three(stores, lambda st: st.swap_out(ids, pages_for(ids, step), s))
        if step % 17 == 0:
            all_three(stores, lambda st: st.gc_step(8 * PS))
        agree(stores)
    assert stores[0]._express.taken > 10
    counts(stores)


@pytest.mark.parametrize("port", [None, "ok"])
@pytest.mark.parametrize("url", [GUEST, GUEST_504])
def test_a_failed_append_in_either_run_of_a_zone_end_call_agrees(url, port):
    """A call at a zone's end is two runs (the zone filled, sealed, the rest in a fresh zone); the
    1st..7th append of the call fails (once, or twice in a row): the first run's failure goes on
    as the general path's (``_land``, then ``_write_one`` of the rest), the second run's likewise
    from its write: same state, same bytes."""
    cfg = StoreConfig(placement="temporal", prefetch=False)
    for at in range(0, 8):                        # 0: no failure
        stores, _, fails, _ = trio(url, cfg, port=port)
        ids = np.arange(8000, dtype=np.int64)
        all_three(stores, lambda st: st.swap_out(ids[-1:], pages_for(ids[-1:])))   # the id map covers them all
        a = 0
        while True:                               # up to the call that ends the first zone
            st = stores[0]
            z = st.state.zones.current(0)
            if z is not None and a > 1024 and 256 <= st.state.zones.room(z) < 1024:
                break
            all_three(stores, lambda st: st.swap_out(ids[a:a + 512], pages_for(ids[a:a + 512])))
            a += 512
        ex = stores[0]._express
        split, declined = ex.split, dict(ex.declined)
        for f in fails:
            if at:
                f.arm(at, 2 if at % 3 == 0 else 1)
        m = st.state.zones.room(z) + 200               # a rest of 200 pages for the fresh zone
        all_three(stores, lambda st: st.swap_out(ids[a:a + m], pages_for(ids[a:a + m])))
        a += m - 512
        for f in fails:
            f.at = None
        agree(stores)
        assert ex.declined == declined                     # planned as two runs (then failed or not)
        if at == 0:
            assert ex.split == split + 1
        all_three(stores, lambda st: st.swap_out(ids[a + 512:a + 1024], pages_for(ids[a + 512:a + 1024])))
        all_three(stores, lambda st: st.flush())
        agree(stores)
        for st in stores:
            st.check()
            assert np.array_equal(st.swap_in(ids[:a + 1024]), pages_for(ids[:a + 1024]))


def test_a_zone_that_cannot_be_opened_between_the_two_runs_fails_as_the_general_path_does():
    """The fresh zone of a split call's second run fails to open (``place_zone`` raises): the call
    raises the same error as the general path, with the rest of the batch in the buffer."""
    from zswap_host.errors import DeviceIOError
    stores, devs, _, _ = trio(GUEST, StoreConfig(placement="temporal", prefetch=False))
    ids = np.arange(8000, dtype=np.int64)
    all_three(stores, lambda st: st.swap_out(ids[-1:], pages_for(ids[-1:])))
    a = 0
    while True:
        z = stores[0].state.zones.current(0)
        if z is not None and a > 1024 and 256 <= stores[0].state.zones.room(z) < 1024:
            break
        all_three(stores, lambda st: st.swap_out(ids[a:a + 512], pages_for(ids[a:a + 512])))
        a += 512
    for d in devs:
        orig = d.place_zone

        def once(z, group, for_gc, d=d, orig=orig):
            d.place_zone = orig
            raise DeviceIOError("zone could not be opened")
        d.place_zone = once
    m = stores[0].state.zones.room(stores[0].state.zones.current(0)) + 200
    split = stores[0]._express.split
    all_three(stores, lambda st: st.swap_out(ids[a:a + m], pages_for(ids[a:a + m])))
    assert stores[0]._express.split == split          # the second run never started
    agree(stores)
    all_three(stores, lambda st: st.flush())
    agree(stores)
    for st in stores:
        st.check()
        assert np.array_equal(st.swap_in(ids[:a + m]), pages_for(ids[:a + m]))


def test_the_device_gets_a_versioned_run_and_one_of_another_version_declines():
    """The run writer sees only the ``zs_run`` (version 1, the units the store planned); a device
    that knows another version refuses it at its check: the call is declined (ST_OUT_DEVICE, -9)
    with nothing changed or sent, and the general path writes it with the same result."""
    cfg = StoreConfig(placement="temporal", prefetch=False)
    stores, _, _, ports = trio(GUEST, cfg, port="ok")
    ids = np.arange(4096, dtype=np.int64)
    for a in range(0, 2048, 512):
        all_three(stores, lambda st: st.swap_out(ids[a:a + 512], pages_for(ids[a:a + 512])))
    ex, port = stores[0]._express, ports[0]
    assert ex.taken >= 2 and port.runs and {r[0] for r in port.runs} == {1}
    assert all(sum(lens) % PS == 0 and len(lens) == k for _, k, lens in port.runs)
    taken, sent, declined = ex.taken, len(port.runs), ex.declined.get(-9, 0)
    port.version = 2
    for a in range(2048, 4096, 512):
        all_three(stores, lambda st: st.swap_out(ids[a:a + 512], pages_for(ids[a:a + 512])))
    assert ex.taken == taken and len(port.runs) == sent and ex.declined[-9] >= declined + 2
    agree(stores)
    for st in stores:
        st.check()
        assert np.array_equal(st.swap_in(ids), pages_for(ids))
