"""PagedEmbedding: paging correctness against a DRAM-only reference, CLOCK, budget, first touch,
trace record/replay. No torch needed."""

import numpy as np
import pytest

from zswap_host import ConventionalSwap, SwapStore, open_device
from zswap_host.workloads import PagedEmbedding, TraceBuilder, replay
from zswap_host.workloads.criteo import CriteoSynth, data_preset
from zswap_host.workloads.page_cache import parse_budget
from zswap_host.workloads.trace import IDLE, SWAP_IN, SWAP_OUT

TABLES = (5, 30000, 7000, 640, 20000, 1)        # 6 tables, rows not page-aligned; 900 pages


def zns():
    return SwapStore(open_device("emu://?zones=64&zone_size=1MiB&preset=none"))


def conv():
    return ConventionalSwap(open_device("emu-conv://?size=64MiB&preset=none"))


class Spy:
    """A backend wrapper that checks the cache while the backend is being called."""

    def __init__(self, inner):
        self.inner = inner
        self.page_size = inner.page_size
        self.emb = None
        self.needed = np.zeros(0, np.int64)
        self.out_calls = []
        self.in_calls = []

    def swap_out(self, ids, pages, stream=0):
        assert not np.isin(ids, self.needed).any(), "evicted a page the current batch needs"
        assert self.emb.resident_pages <= self.emb.budget_pages
        t = self.emb.table_of_page(ids)
        assert (t == stream).all(), "one swap_out call per table, stream = table"
        self.out_calls.append(np.array(ids))
        return self.inner.swap_out(ids, pages, stream)

    def swap_in(self, ids):
        assert self.emb.resident_pages <= self.emb.budget_pages
        assert np.all(np.diff(ids) > 0)
        self.in_calls.append(np.array(ids))
        return self.inner.swap_in(ids)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def random_batches(rng, n, batch, tables=TABLES, a=1.1):
    for _ in range(n):
        sp = np.stack([np.minimum(rng.zipf(a, batch) - 1, t - 1) if t > 1 else np.zeros(batch, np.int64)
                       for t in tables])
        yield sp[:, :, None]


def needed_pages(emb, sp):
    return np.unique(np.concatenate([emb.page_of(t, sp[t].reshape(-1)) for t in range(len(emb.tables))]))


@pytest.mark.parametrize("make", [zns, conv], ids=["zns-store", "conventional"])
@pytest.mark.parametrize("optimizer", ["sgd", "adagrad"])
def test_rows_survive_eviction_and_fault_cycles(make, optimizer):
    ref = PagedEmbedding(TABLES, 16, backend=None, seed=3, optimizer=optimizer, lr=0.5)
    spy = Spy(make())
    emb = PagedEmbedding(TABLES, 16, backend=spy, budget=0.2, seed=3, optimizer=optimizer, lr=0.5)
    spy.emb = emb
    assert ref.dram_only and not emb.dram_only and emb.budget_pages == int(0.2 * emb.total_pages)
    rng = np.random.default_rng(0)
    for sp in random_batches(rng, 60, 40):
        spy.needed = needed_pages(emb, sp)
        if optimizer == "adagrad":
            r = np.concatenate([sp[t].reshape(-1) for t in range(len(TABLES))])
            t = np.repeat(np.arange(len(TABLES)), sp.shape[1])
            states = emb.state_base[t] + r // emb.states_per_page
            spy.needed = np.union1d(spy.needed, states)
        a, ia = ref.gather(sp)
        b, ib = emb.gather(sp)
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(ia, ib)
        assert emb.resident_pages <= emb.budget_pages
        assert (emb.cache.page_frame[spy.needed] >= 0).all()
        g = rng.normal(size=a.shape).astype(np.float32)
        ref.apply(g)
        emb.apply(g)
    c = emb.counters
    assert c.faults > 100 and c.pages_written > 100 and c.swap_in_calls == len(spy.in_calls)
    assert c.swap_out_calls == len(spy.out_calls)
    # every row, read back through more fault cycles, equals the reference
    spy.needed = np.zeros(0, np.int64)
    for t, n in enumerate(TABLES):
        for lo in range(0, n, 64 * 100):
            rows = np.arange(lo, min(n, lo + 64 * 100))
            np.testing.assert_array_equal(ref.read_rows(t, rows), emb.read_rows(t, rows))


def test_first_touch_is_deterministic_and_lazy():
    a = PagedEmbedding(TABLES, 16, seed=7)
    b = PagedEmbedding(TABLES, 16, seed=7, backend=zns(), budget=0.5)
    c = PagedEmbedding(TABLES, 16, seed=8)
    assert a.resident_pages == 0                     # nothing initialised up front
    ra = a.read_rows(1, [0, 5, 29999])
    assert a.resident_pages == 2 and a.counters.first_touch == 2
    np.testing.assert_array_equal(ra, b.read_rows(1, [0, 5, 29999]))
    assert not np.array_equal(ra, c.read_rows(1, [0, 5, 29999]))
    # DLRM init: uniform in (-1/sqrt(rows), 1/sqrt(rows)), not constant
    for t, n in enumerate(TABLES):
        r = a.read_rows(t, np.arange(n))
        assert np.abs(r).max() <= 1 / np.sqrt(n) + 1e-7
        assert r.std() > 0.2 / np.sqrt(n)
    # first touch of a page does not depend on which other pages were touched first
    d = PagedEmbedding(TABLES, 16, seed=7)
    d.read_rows(4, [1999])
    np.testing.assert_array_equal(d.read_rows(1, [5]), ra[1:2])


def test_mlperf_sized_tables_cost_no_upfront_memory():
    dc = data_preset("mlperf")
    emb = PagedEmbedding(dc.tables, 128, backend=zns(), budget=64 << 20)
    assert emb.total_bytes > 90e9 and emb.budget_pages == 16384
    r = emb.read_rows(0, [39884405])
    assert r.shape == (1, 128) and emb.resident_pages == 1


@pytest.mark.parametrize("optimizer", ["sgd", "adagrad"])
def test_a_batch_larger_than_the_budget_streams_through_it(optimizer):
    """A batch of 2 x 40 pages through a 3-page budget (2 for adagrad's row + state) gathers and
    updates piece by piece, equal to the DRAM-only reference; the cache never holds more than the
    budget and nothing stays pinned."""
    ref = PagedEmbedding(TABLES, 16, backend=None, seed=3, optimizer=optimizer, lr=0.5)
    emb = PagedEmbedding(TABLES, 16, backend=zns(), budget=3 * 4096, seed=3, optimizer=optimizer, lr=0.5)
    rng = np.random.default_rng(1)
    for sp in random_batches(rng, 6, 40):
        a, ia = ref.gather(sp)
        b, ib = emb.gather(sp)
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(ia, ib)
        assert emb.resident_pages <= 3 and not emb.cache.pin.any()
        g = rng.normal(size=a.shape).astype(np.float32)
        ref.apply(g)
        emb.apply(g)
    assert emb.counters.faults > 50
    for t, n in enumerate(TABLES):
        rows = rng.integers(0, n, 200)
        np.testing.assert_array_equal(ref.read_rows(t, rows), emb.read_rows(t, rows))
    np.testing.assert_array_equal(ref.steps, emb.steps)
    with pytest.raises(ValueError, match="one row with its adagrad state needs 2"):
        PagedEmbedding(TABLES, 16, backend=zns(), budget=4096, optimizer="adagrad").gather(next(random_batches(rng, 1, 1)))


def test_budget_parsing():
    assert parse_budget(0.25, 4000) == 1000
    assert parse_budget("25%", 4000) == 1000
    assert parse_budget("64MiB", 1 << 40) == 64 << 20
    assert parse_budget(8192, 4000) == 8192
    with pytest.raises(ValueError):
        parse_budget(1.5, 4000)
    with pytest.raises(ValueError):
        parse_budget(0, 4000)
    e = PagedEmbedding(TABLES, 16, backend=zns(), budget=1.0)
    assert e.dram_only


def _reference_clock(frame_page, ref, pin, hand, k):
    """One-frame-at-a-time CLOCK."""
    ref = ref.copy()
    n = frame_page.size
    out = []
    while len(out) < k:
        f = hand
        hand = (hand + 1) % n
        if frame_page[f] < 0 or pin[f] or f in out:
            continue
        if ref[f]:
            ref[f] = False
        else:
            out.append(f)
    return out, hand, ref


@pytest.mark.parametrize("seed", range(5))
def test_vectorised_clock_matches_one_frame_at_a_time(seed):
    rng = np.random.default_rng(seed)
    emb = PagedEmbedding([640000], 16, backend=zns(), budget=5000 * 4096)
    assert emb.nframes == 5000
    n = emb.nframes
    emb.cache.frame_page[:] = np.where(rng.random(n) < 0.9, np.arange(n), -1)
    for _ in range(6):
        emb.cache.ref[:] = rng.random(n) < rng.uniform(0.2, 0.99)
        emb.cache.pin[:] = rng.random(n) < 0.1
        k = int(rng.integers(1, 3000))
        hand0 = emb.cache.hand
        want, hand, ref = _reference_clock(emb.cache.frame_page, emb.cache.ref, emb.cache.pin, hand0, k)
        got = emb.cache.clock_select(k)
        assert got.tolist() == want
        assert emb.cache.hand == hand
        emb.cache.pin[got] = False
        np.testing.assert_array_equal(emb.cache.ref, ref)


def test_hot_page_is_never_evicted_again():
    spy = Spy(zns())
    emb = PagedEmbedding(TABLES, 16, backend=spy, budget=0.2, seed=0)
    spy.emb = emb
    rng = np.random.default_rng(1)
    hot = emb.page_of(1, [0])[0]
    for sp in random_batches(rng, 40, 30, a=1.01):
        sp[1, 0, 0] = 0
        spy.needed = needed_pages(emb, sp)
        r, _ = emb.gather(sp)
        emb.apply(np.zeros_like(r))
    assert spy.out_calls and not any(hot in c for c in spy.out_calls)


def test_clean_victims_are_dropped_without_a_write():
    spy = Spy(zns())
    emb = PagedEmbedding(TABLES, 16, backend=spy, budget=0.2)
    spy.emb = emb
    def sweep():
        for t in (1, 4):                             # read only: no apply, so pages stay clean
            for r in range(0, TABLES[t], 64 * 8):
                emb.read_rows(t, np.arange(r, min(r + 64 * 8, TABLES[t])))
    sweep()                                          # first touch: every page written once evicted
    sweep()                                          # the last pass's dirty tail is written here
    w, f = emb.counters.pages_written, emb.counters.faults
    sweep()
    c = emb.counters
    assert c.faults > f and c.clean_drops > 0 and c.pages_written == w


def test_discard_dirty_discards_the_backend_copy():
    store = zns()
    emb = PagedEmbedding(TABLES, 16, backend=store, budget=0.2, discard_dirty=True)
    rng = np.random.default_rng(2)
    for sp in random_batches(rng, 30, 30):
        r, _ = emb.gather(sp)
        emb.apply(np.ones_like(r))
    c = emb.counters
    assert c.discards > 0
    assert store.stats().pages_stored == int((emb.cache.page_state == 2).sum())


@pytest.mark.parametrize("make", [zns, conv], ids=["zns-store", "conventional"])
def test_recorded_trace_replays_to_the_same_swap_counts(make, tmp_path):
    tb = TraceBuilder()
    b = make()
    emb = PagedEmbedding(TABLES, 16, backend=b, budget=0.25, trace=tb)
    rng = np.random.default_rng(3)
    for sp in random_batches(rng, 40, 40):
        r, _ = emb.gather(sp)
        emb.apply(r * 0.01)
        tb.add(IDLE, idle_s=0.001)
    trace = tb.build()
    path = tmp_path / "t.npz"
    trace.save(str(path))
    from zswap_host.workloads import SwapTrace
    trace = SwapTrace.load(str(path))
    cnt = trace.counts()
    c = emb.counters
    assert cnt["swap_in_pages"] == c.faults and cnt["swap_out_pages"] == c.pages_written
    assert (trace.ops == SWAP_IN).sum() == c.swap_in_calls and (trace.ops == SWAP_OUT).sum() == c.swap_out_calls
    # stream hints are the tables
    for k in np.flatnonzero(trace.ops == SWAP_OUT):
        assert (emb.table_of_page(trace.event_ids(k)) == trace.streams[k]).all()
    fresh = make()
    replay(fresh, trace)
    s, s0 = fresh.stats(), b.stats()
    assert s.host_write_bytes == s0.host_write_bytes == c.bytes_written
    assert s.host_read_bytes == s0.host_read_bytes == c.bytes_read
    assert s.pages_stored == s0.pages_stored


def test_gather_with_criteo_batches_and_multi_hot():
    dc = data_preset("tiny", hot=3)
    ds = CriteoSynth(dc)
    emb = PagedEmbedding(dc.tables, 16, backend=zns(), budget=0.3)
    ref = PagedEmbedding(dc.tables, 16)
    for b in ds.batches(5, 32, seed=1):
        assert b.sparse.shape == (26, 32, 3)
        r, inv = emb.gather(b.sparse)
        r2, inv2 = ref.gather(b.sparse)
        assert inv.size == 26 * 32 * 3 and r.shape[0] == np.unique(inv).size
        np.testing.assert_array_equal(r[inv], r2[inv2])
        emb.apply(r)
        ref.apply(r2)
