"""Lookahead (workloads/lookahead.py, PagedEmbedding.prefetch): the next batches' pages faulted in
while a step computes — the same losses, the overlap on the modeled clock, the budget respected,
queued pages never evicted, the wall-clock worker, the trace's overlap marker, and the bench's
linux-swap-lookahead run and chain step."""

import numpy as np
import pytest

from zswap_host import ConventionalSwap, SwapStore, open_device
from zswap_host.workloads import TraceBuilder, replay
from zswap_host.workloads.criteo import CriteoSynth, data_preset
from zswap_host.workloads.lookahead import Lookahead
from zswap_host.workloads.paged_embedding import PagedEmbedding

torch = pytest.importorskip("torch")

from zswap_host.bench import BenchSpec, run_bench  # noqa: E402
from zswap_host.torch.training import train  # noqa: E402

ZNS = "emu://?zones=64&zone_size=1MiB&preset=thesis-ssd"


def _zns(url=ZNS):
    d = open_device(url)
    return SwapStore(d), d


def _conv():
    d = open_device("emu-conv://?size=64MiB&preset=thesis-ssd")
    return ConventionalSwap(d, faults="batched"), d


@pytest.mark.parametrize("make", [_zns, _conv])
@pytest.mark.parametrize("k", [1, 2])
def test_losses_equal_with_and_without_lookahead(make, k):
    """Rows updated by batch i and read by batch i+1 live in one frame: prefetching i+1 before i's
    update changes nothing (the same losses, bit for bit)."""
    ref_b, ref_d = make()
    ref = train("tiny", "tiny", ref_b, 0.2, 30, 32, seed=4, clock=ref_d.now)
    b, d = make()
    r = train("tiny", "tiny", b, 0.2, 30, 32, seed=4, clock=d.now, lookahead=k)
    assert r.paging["faults"] > 0 and r.paging["prefetched"] > 0 and r.lookahead == k
    assert r.loss.tolist() == ref.loss.tolist()
    b.check() if hasattr(b, "check") else None


def test_modeled_step_costs_max_of_compute_and_prefetch():
    """Per step: stall = demand faults + max(0, prefetch - compute); the device's idle window is
    max(0, compute - prefetch); the device clock ends where the training time says."""
    n = 25
    for compute in (0.0, 1e-4, 1.0):                      # prefetch never / sometimes / always hidden
        b, d = _zns()
        idles = []
        charged = np.full(n, compute)
        r = train("tiny", "tiny", b, 0.2, n, 32, seed=2, clock=d.now, lookahead=1, charged_compute_s=charged,
                  on_idle=lambda s: (idles.append(s), b.idle(s)))
        pf = r.prefetch_io_s
        assert pf.sum() > 0
        np.testing.assert_allclose(idles, np.maximum(0.0, compute - pf), atol=1e-12)
        assert r.train_time_s == pytest.approx(d.now(), rel=1e-9)
        if compute == 1.0:                                # every prefetch hidden: only demand faults stall
            assert (pf < compute).all()
        if compute == 0.0:                                # nothing hides it: the step pays the whole prefetch
            assert r.io_stall_time_s >= pf.sum()


def test_prefetched_batch_is_all_hits_and_queued_pages_survive_the_next_gather():
    dc = data_preset("tiny")
    b, d = _zns()
    emb = PagedEmbedding(dc.tables, 16, backend=b, budget=0.3, seed=1, clock=d.now)
    batches = list(CriteoSynth(dc).batches(4, 32, seed=9))
    emb.gather(batches[0].sparse)
    io, brought = emb.prefetch([batches[1].sparse, batches[2].sparse])
    assert brought > 0 and io == emb.io_overlap_s and emb.io_stall_s == 0.0
    need1, need2 = emb.layout.batch_pages(batches[1].sparse), emb.layout.batch_pages(batches[2].sparse)
    assert (emb.cache.page_frame[need1] >= 0).all() and (emb.cache.page_frame[need2] >= 0).all()
    assert emb.resident_pages <= emb.budget_pages
    f0 = emb.counters.faults
    emb.gather(batches[1].sparse)                          # everything was prefetched
    assert emb.counters.faults == f0
    assert (emb.cache.page_frame[need2] >= 0).all()              # batch 2's pages still queued
    assert emb.cache.pin[emb.cache.page_frame[need2]].all()


def test_prefetch_leaves_out_what_does_not_fit_beside_the_pinned_batch():
    dc = data_preset("tiny")
    b, d = _zns()
    batches = list(CriteoSynth(dc).batches(6, 32, seed=3))
    need = max(PagedEmbedding(dc.tables, 16).layout.batch_pages(x.sparse).size for x in batches)
    emb = PagedEmbedding(dc.tables, 16, backend=b, budget=int(2.2 * need) * 4096, seed=1)
    emb.gather(batches[0].sparse)
    emb.prefetch([x.sparse for x in batches[1:]])          # five batches cannot all fit
    assert emb.counters.prefetch_cut >= 1
    assert emb.resident_pages <= emb.budget_pages


def test_wall_clock_lookahead_runs_on_a_worker_and_reraises_its_errors():
    b, d = _zns("emu://?zones=64&zone_size=1MiB&preset=none")
    ref_b, _ = _zns("emu://?zones=64&zone_size=1MiB&preset=none")
    ref = train("tiny", "tiny", ref_b, 0.2, 20, 32, seed=5)
    r = train("tiny", "tiny", b, 0.2, 20, 32, seed=5, lookahead=2)      # no clock: wall, threaded
    assert r.loss.tolist() == ref.loss.tolist() and r.paging["prefetched"] > 0
    assert r.clock == "wall" and not r.prefetch_io_s.any()

    class Boom:
        clock, backend = None, object()

        def prefetch(self, batches):
            raise OSError("device gone")

    la = Lookahead(Boom(), 1)
    assert la.threaded
    la.start([np.zeros((1, 1), np.int64)])
    with pytest.raises(OSError, match="device gone"):
        la.wait()
    with pytest.raises(RuntimeError, match="without start"):
        la.wait()
    with pytest.raises(ValueError, match=">= 0"):
        Lookahead(Boom(), -1)


def test_trace_overlap_marker_replays_the_overlap_on_a_clock():
    n = 20
    b, d = _zns()
    tb = TraceBuilder()
    charged = np.full(n, 0.02)
    r = train("tiny", "tiny", b, 0.2, n, 32, seed=6, clock=d.now, lookahead=1, charged_compute_s=charged,
              trace=tb, on_idle=b.idle)
    t = tb.build()
    assert t.meta["lookahead"] == 1 and (t.ops == 4).sum() == n
    fresh, fd = _zns()
    replay(fresh, t, clock=fd.now)
    assert fd.now() == pytest.approx(d.now(), rel=1e-9)      # the same timeline as the training
    serial, sd = _zns()
    replay(serial, t)                                         # without a clock: overlap not modeled
    assert sd.now() > fd.now()


def test_bench_lookahead_adds_its_run_and_chain_step():
    rep = run_bench(BenchSpec(preset="tiny", iterations=20, lookahead=1, jobs=1))
    names = [r["name"] for r in rep["runs"]]
    assert names == ["dram-only", "linux-swap", "linux-swap-batched", "linux-swap-lookahead",
                     "store-on-conventional", "store-on-zns"]
    by = {r["name"]: r for r in rep["runs"]}
    assert [by[n]["lookahead"] for n in names[1:]] == [0, 0, 1, 1, 1]
    assert by["linux-swap-lookahead"]["prefetch_io_time_s"] > 0 == by["linux-swap-batched"]["prefetch_io_time_s"]
    steps = [(c["step"], c["from"], c["to"]) for c in rep["chain"]]
    assert steps == [("batching", "linux-swap", "linux-swap-batched"),
                     ("lookahead", "linux-swap-batched", "linux-swap-lookahead"),
                     ("aggregation", "linux-swap-lookahead", "store-on-conventional"),
                     ("zns", "store-on-conventional", "store-on-zns")]
    assert rep["ratios"]["losses_match"] and rep["lookahead"] == 1
    for r in rep["runs"][1:]:           # the device's clock also ran the final flush of the buffers
        assert r["train_time_s"] <= r["device_time_s"] + 1e-12


# -- the PyTorch modules: prefetch() and the loader wrapper -------------------------------------------
def _module_run(backend, budget, depth, optimizer="adam", steps=14, clock=None):
    from torch import nn

    from zswap_host.torch import SwappedEmbeddingBagCollection, prefetching

    tables = [(20000, 16), (7000, 8), (30000, 16)]
    m = SwappedEmbeddingBagCollection(tables, keys=["a", "b", "c"], backend=backend, budget=budget,
                                      optimizer=optimizer, lr=0.05, seed=3, clock=clock)
    rng = np.random.default_rng(7)
    batches = []
    for _ in range(steps):
        feats = {}
        for k, (n, _) in zip(m.keys, tables):
            x = torch.from_numpy(np.minimum(rng.zipf(1.2, 24) - 1, n - 1).astype(np.int64))
            feats[k] = (x, torch.arange(0, 24, 3))
        batches.append(feats)
    torch.manual_seed(0)
    head = nn.Linear(40, 1)
    hopt = torch.optim.SGD(head.parameters(), lr=0.01)
    losses = []
    for feats in prefetching(batches, m, depth):
        loss = (head(m(feats, concat=True)).squeeze(1) - 1.0).pow(2).mean()
        hopt.zero_grad()
        loss.backward()
        hopt.step()
        losses.append(float(loss.detach()))
    rows = {k: m.read_rows(k, torch.arange(n)) for k, (n, _) in zip(m.keys, tables)}
    return m, losses, rows


@pytest.mark.parametrize("depth", [1, 3])
def test_module_prefetch_through_the_loader_wrapper_changes_no_value(depth):
    _, l0, r0 = _module_run(_zns()[0], 0.15, 0)
    b, d = _zns()
    m, l1, r1 = _module_run(b, 0.15, depth, clock=d.now)      # modeled clock: synchronous
    s = m.stats()
    assert s["prefetched"] > 0 and s["resident_pages"] <= s["budget_pages"]
    assert l0 == l1 and all(torch.equal(r0[k], r1[k]) for k in r0)
    m2, l2, _ = _module_run(_zns("emu://?zones=64&zone_size=1MiB&preset=none")[0], 0.15, depth)   # worker thread
    assert l2 == l0 and m2.stats()["prefetched"] > 0


def test_module_prefetch_between_forward_and_backward_and_its_errors():
    from zswap_host.torch import EmbeddingIndexError, SwappedEmbeddingBag, prefetching

    b, d = _zns()
    m = SwappedEmbeddingBag(5000, 16, mode="sum", backend=b, budget=0.4, clock=d.now)   # 31 of 79 pages
    x0, x1 = torch.arange(0, 640, 5).view(-1, 4), torch.arange(2000, 2640, 5).view(-1, 2)   # 10 pages each
    m(x1).sum().backward()                       # x1's pages created, then pushed out by others
    for lo in (3000, 3640, 4280):
        m(torch.arange(lo, lo + 640, 5).view(-1, 4)).sum().backward()
    y = m(x0)
    m.prefetch(x1)                               # during the step: at once (modeled: synchronous)
    assert m._tables.last_prefetch is None and m._tables._ahead is not None
    y.sum().backward()                           # waits for it
    assert m._tables.last_prefetch.pages > 0
    f = m.stats()["faults"]
    m(x1).sum().backward()
    assert m.stats()["faults"] == f              # x1 came in ahead
    with pytest.raises(EmbeddingIndexError):
        m.prefetch(torch.tensor([5000]))
    with pytest.raises(ValueError, match="depth"):
        list(prefetching([1], m, -1))
    assert list(prefetching([], m, 2)) == [] and list(prefetching([x0], m, 2)) == [x0]
    m.close()


def test_bench_on_a_file_device_prefetches_on_a_worker_thread(tmp_path):
    """A real (file) device has the wall clock: the lookahead runs on a worker thread, every page it
    brought in is verified at swap-in, and the losses equal DRAM-only's."""
    import json
    import os

    from click.testing import CliRunner

    from zswap_host.cli import main

    img = tmp_path / "swap.img"
    img.write_bytes(b"")
    os.truncate(img, 32 << 20)
    out = tmp_path / "bench.json"
    r = CliRunner().invoke(main, ["bench", "--model", "tiny", "--iterations", "12", "--compute-us-per-sample", "40",
                                  "--baseline-device", str(img), "--runs", "linux-swap-lookahead,store-on-conventional",
                                  "--verify", "--no-model-twin", "--lookahead", "2", "--json", str(out)])
    assert r.exit_code == 0, r.output
    d = json.loads(out.read_text())
    assert d["ratios"]["losses_match"] and d["lookahead"] == 2
    for run in d["runs"][1:]:
        assert run["clock"] == "wall" and run["lookahead"] == 2 and run["prefetch_io_time_s"] == 0.0
        assert run["paging"]["prefetched"] > 0
        assert run["verify"]["pages_checked"] == run["paging"]["faults"] > 0
