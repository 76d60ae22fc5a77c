"""Criteo-shaped data, the DLRM model, and training over swap backends (equal losses)."""

import numpy as np
import pytest

from zswap_host import ConventionalSwap, SwapStore, open_device
from zswap_host.workloads import TraceBuilder, replay
from zswap_host.workloads.criteo import (KAGGLE_TABLES, MLPERF_TABLES, CriteoSynth, data_preset,
                                         scale_tables)
from zswap_host.workloads.paged_embedding import PagedEmbedding

torch = pytest.importorskip("torch")

from zswap_host.torch.training import train  # noqa: E402
from zswap_host.workloads.dlrm import DLRM, model_preset  # noqa: E402
from zswap_host.workloads.train import PRESETS, preset  # noqa: E402


# -- data ------------------------------------------------------------------------------------
def test_table_presets_and_scaling():
    assert data_preset("kaggle").tables == KAGGLE_TABLES and len(KAGGLE_TABLES) == 26
    assert abs(data_preset("kaggle").table_bytes(16) / 2**30 - 2.01) < 0.01
    assert abs(data_preset("mlperf").table_bytes(128) / 1e9 - 96.1) < 0.1
    assert max(MLPERF_TABLES) <= 40_000_000
    s = scale_tables(KAGGLE_TABLES, 0.01)
    assert s[2] == 101312 and s[8] == 3 and s[0] == 15 and min(s) >= 3
    assert data_preset("kaggle", 0.01).tables == s
    assert scale_tables(KAGGLE_TABLES, 2.0)[2] == 2 * KAGGLE_TABLES[2]


def test_batches_are_deterministic_by_seed():
    dc = data_preset("tiny")
    a = list(CriteoSynth(dc).batches(3, 64, seed=5))
    b = list(CriteoSynth(dc).batches(3, 64, seed=5))
    c = list(CriteoSynth(dc).batches(3, 64, seed=6))
    for x, y in zip(a, b):
        assert np.array_equal(x.sparse, y.sparse) and np.array_equal(x.dense, y.dense)
        assert np.array_equal(x.labels, y.labels)
    assert not np.array_equal(a[0].sparse, c[0].sparse)
    x = a[0]
    assert x.dense.shape == (64, 13) and x.dense.dtype == np.float32
    assert x.sparse.shape == (26, 64, 1) and x.labels.dtype == np.float32
    assert (x.sparse >= 0).all() and (x.sparse.max(axis=(1, 2)) < np.array(dc.tables)).all()
    assert 0.05 < np.mean([bb.labels.mean() for bb in a]) < 0.6
    # the dataset seed changes the layout and the hidden labels, not the batch seed's draws
    d = list(CriteoSynth(data_preset("tiny", seed=1)).batches(1, 64, seed=5))[0]
    assert not np.array_equal(d.sparse, x.sparse)


def test_zipf_and_layouts():
    n = 200_000
    base = dict(tables=(n,), zipf_a=1.05)
    from zswap_host.workloads.criteo import DataConfig
    hashed = CriteoSynth(DataConfig(layout="hashed", **base))
    srt = CriteoSynth(DataConfig(layout="sorted", **base))
    rng = np.random.default_rng(0)
    u = rng.random(100_000)
    ranks = hashed.ranks(0, u)
    assert np.array_equal(ranks, srt.ranks(0, u))
    counts = np.bincount(ranks, minlength=n)
    assert counts[0] > counts[1] > counts[10] > counts[1000]          # Zipf: popularity falls with rank
    # sorted: the most popular rows fill the first pages
    rows_s = srt.rank_to_row(0, ranks)
    rows_h = hashed.rank_to_row(0, ranks)
    first_pages = lambda rows: np.mean(rows < 64 * 16)                 # share of lookups in pages 0..15
    assert first_pages(rows_s) > 0.3 and first_pages(rows_h) < 0.05
    # hashed is a bijection that scatters the top ranks over different pages
    top = hashed.rank_to_row(0, np.arange(64))
    assert np.unique(top // 64).size >= 60
    allr = np.arange(n)
    assert np.array_equal(np.sort(hashed.rank_to_row(0, allr)), allr)
    assert np.array_equal(hashed.row_to_rank(0, hashed.rank_to_row(0, allr)), allr)
    # in pages: the hot pages of the sorted layout cover far more lookups than any hashed pages
    pages_s = np.bincount(rows_s // 64)
    pages_h = np.bincount(rows_h // 64)
    cover = lambda pc: int(np.searchsorted(np.cumsum(np.sort(pc)[::-1]), 0.8 * pc.sum())) + 1
    assert cover(pages_s) * 3 < cover(pages_h)     # pages holding 80% of the lookups


def test_multi_hot_batches():
    b = next(CriteoSynth(data_preset("tiny", hot=4)).batches(1, 16, seed=0))
    assert b.sparse.shape == (26, 16, 4)


# -- model -----------------------------------------------------------------------------------
def test_dlrm_shapes_follow_facebookresearch_dlrm():
    m = DLRM(model_preset("mlperf"), 26)
    assert m.top[0].in_features == 479                    # 128 + 27*26/2, as MLPerf's top MLP
    assert [l.out_features for l in m.bot if hasattr(l, "out_features")] == [512, 256, 128]
    k = DLRM(model_preset("kaggle"), 26)
    assert k.top[0].in_features == 16 + 351
    p = k(torch.randn(4, 13), torch.randn(4, 26, 16))
    assert p.shape == (4,) and ((p > 0) & (p < 1)).all()          # a click probability (top sigmoid)


# -- training --------------------------------------------------------------------------------
def _zns():
    d = open_device("emu://?zones=64&zone_size=1MiB&preset=none")
    return SwapStore(d), d


def _conv():
    d = open_device("emu-conv://?size=64MiB&preset=none")
    return ConventionalSwap(d), d


@pytest.mark.parametrize("optimizer", ["sgd", "adagrad"])
def test_equal_losses_dram_zns_conventional(optimizer):
    mc = model_preset("tiny", emb_optimizer=optimizer, emb_lr=0.1 if optimizer == "sgd" else 0.05)
    dc = data_preset("tiny")
    ref = train(mc, dc, None, 1.0, 40, 32, seed=3)
    assert ref.clock == "none" and ref.paging["faults"] == 0
    runs = []
    for make in (_zns, _conv):
        b, _ = make()
        r = train(mc, dc, b, 0.2, 40, 32, seed=3)
        assert r.paging["faults"] > 0 and r.paging["pages_written"] > 0
        assert r.budget_pages < r.total_pages // 4
        np.testing.assert_allclose(r.loss, ref.loss, rtol=1e-6)
        runs.append(r)
    # the paging decisions do not depend on the backend either
    strip = lambda d: {k: v for k, v in d.items() if not k.endswith("_s")}     # times differ
    assert strip(runs[0].paging) == strip(runs[1].paging)
    assert np.isfinite(ref.loss).all()


def test_loss_falls_and_result_fields():
    r = train("tiny", "tiny", None, 1.0, 150, 64, seed=0)
    assert r.loss[-30:].mean() < r.loss[:10].mean() - 0.05
    n = 150
    for a in (r.compute_s, r.io_stall_s, r.loss, r.pages_in, r.pages_out, r.data_s):
        assert a.shape == (n,)
    # no backend: no stall, and with no charged compute given the run is charged what it measured
    assert not r.io_stall_s.any() and (r.compute_s > 0).all()
    assert r.train_time_s == pytest.approx(r.compute_s.sum())
    d = r.as_dict()
    assert d["iterations"] == n and len(d["loss"]) == n and d["clock"] == "none"


def test_clock_on_idle_progress_and_trace():
    b, dev = _zns()

    class FakeClock:                   # every read advances by 1 ms: each backend call costs 1 ms
        t = 0.0

        def __call__(self):
            self.t += 0.001
            return self.t

    idles, prog = [], []
    tb = TraceBuilder()
    r = train("tiny", "tiny", b, 0.2, 15, 32, seed=1, on_idle=idles.append, clock=FakeClock(),
              progress=lambda i, n: prog.append((i, n)), trace=tb)
    calls = r.paging["swap_in_calls"] + r.paging["swap_out_calls"]
    assert r.clock == "modeled"
    assert r.io_stall_s.sum() == pytest.approx(0.001 * calls)
    assert idles == pytest.approx(r.compute_s.tolist())
    assert prog[-1] == (15, 15) and len(prog) == 15
    t = tb.build()
    c = t.counts()
    assert c["swap_in_pages"] == r.paging["faults"] and c["swap_out_pages"] == r.paging["pages_written"]
    assert c["idle_s"] == pytest.approx(r.compute_s.sum())
    assert t.meta["kind"] == "dlrm" and t.meta["batch_size"] == 32
    fresh, _ = _zns()
    replay(fresh, t)                                       # replays without torch
    assert fresh.stats().host_write_bytes == b.stats().host_write_bytes
    assert fresh.stats().host_read_bytes == b.stats().host_read_bytes


@pytest.mark.parametrize("name", list(PRESETS))
def test_presets_fit_their_budget(name):
    from zswap_host.workloads import footprint
    p = preset(name)
    assert p.data_config().num_tables == 26
    f = footprint(p.model_config(), p.data_config(), p.budget, batch_size=p.batch_size, probe=2)
    # the DRAM budget holds every page a batch needs, and is short of the tables: the run swaps
    assert f["batch_pages_max"] <= f["budget_pages"] < f["total_pages"]


def test_footprint_matches_the_paged_embedding():
    from zswap_host.workloads import footprint
    for opt in ("sgd", "adagrad"):
        mc = model_preset("tiny", emb_optimizer=opt)
        dc = data_preset("tiny")
        f = footprint(mc, dc, "25%", batch_size=64, probe=2)
        e = PagedEmbedding(dc.tables, mc.dim, backend=_zns()[0], budget=0.25, optimizer=opt)
        assert f["total_pages"] == e.total_pages and f["budget_pages"] == e.budget_pages
        for b in CriteoSynth(dc).batches(2, 64, seed=0):
            before = e.counters.page_refs
            e.gather(b.sparse)
            assert e.counters.page_refs - before <= f["batch_pages_max"]
        assert f["fits"]
    with pytest.raises(ValueError):
        footprint("tiny", "tiny", 1.5)
    assert not footprint("tiny", "tiny", 8 * 4096, batch_size=64)["fits"]
