"""Hot rows packed together (issue 32, lever 1): ``pack_hot_rows`` re-maps rows to slots by measured
access frequency while training. Repacks move rows' values and optimizer state, never change them:
every forward, update, state dict, checkpoint and loss equals nn.EmbeddingBag + the torch optimizer
bit for bit, repacks or not; a device error in a repack moves nothing and training goes on."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch_reference import RowwiseAdagrad, reference  # noqa: E402
from zswap_host import StoreConfig, SwapStore, open_device  # noqa: E402
from zswap_host.errors import DeviceIOError  # noqa: E402
from zswap_host.torch import SwappedEmbeddingBag, SwappedEmbeddingBagCollection  # noqa: E402
from zswap_host.workloads.paged_embedding import PagedEmbedding  # noqa: E402
from zswap_host.workloads.row_packing import RowPacker, RowPacking, packing, tiers  # noqa: E402

torch.set_num_threads(1)


def zns():
    return SwapStore(open_device("emu://?zones=64&zone_size=1MiB&preset=none"))


def skewed(rng, n, shape, a=1.2, salt=7):
    """Zipf-skewed rows, the popular ones scattered (the ``hashed`` layout's point)."""
    perm = np.random.default_rng(salt).permutation(n)
    return torch.from_numpy(perm[np.minimum(rng.zipf(a, shape) - 1, n - 1)])


def assert_bijection(pc):
    pk = pc.packer
    for t in range(len(pc.tables)):
        lo, hi = pk.base[t], pk.base[t + 1]
        s, r = pk.slot_of[lo:hi].astype(np.int64), pk.row_of[lo:hi].astype(np.int64)
        assert np.array_equal(np.sort(s), np.arange(hi - lo)), "a slot lost or held twice"
        assert np.array_equal(r[s], np.arange(hi - lo))


# -- the packer on its own -------------------------------------------------------------------------
def test_tiers_are_page_aligned_and_grow():
    b = tiers(10_000, 64, 1.25)
    assert b[0] == 0 and b[-1] == 10_000 and b[1] == 64
    assert (np.diff(b)[:-1] % 64 == 0).all() and (np.diff(b)[:-1] >= np.diff(b)[:1]).all()
    assert tiers(50, 64, 1.25).tolist() == [0, 50]


def test_plans_are_permutations_within_the_cap_and_converge_to_the_tiers():
    R, n = 16, 2000                                  # counts up to 2000: exact in float16
    pk = RowPacker([n, 10], [R, R], RowPacking(decay=1.0))
    rng = np.random.default_rng(1)
    hot = rng.permutation(n)
    pk.counts[hot] = np.arange(n, 0, -1)                           # row hot[0] the hottest
    b = pk.tiers[0]
    for _ in range(200):
        plan = pk.plan(300)
        if not plan:
            break
        assert sum(r.size for _, r, _, _ in plan) <= 300
        for t, rows, src, dst in plan:
            assert t == 0                                            # table 1 fits one page
            assert np.array_equal(np.sort(src), np.sort(dst)) and np.unique(rows).size == rows.size
            assert np.array_equal(pk.slot_of[rows], src) and not (src == dst).any()
        pk.commit(plan)
    else:
        pytest.fail("no convergence")
    rank = np.empty(n, np.int64)
    rank[hot] = np.arange(n)
    tier = lambda x: np.searchsorted(b, x, side="right") - 1           # noqa: E731
    assert np.array_equal(tier(pk.slot_of[:n].astype(np.int64)), tier(rank))
    assert pk.slot_of[hot[0]] < R                                      # the hottest rows on page 0


def test_options():
    assert packing(False) is None and packing(None) is None and packing(True) == RowPacking()
    with pytest.raises(TypeError):
        packing("yes")
    for bad in (dict(every=0), dict(decay=1.5), dict(growth=1.0), dict(max_rows=-1)):
        with pytest.raises(ValueError):
            RowPacking(**bad)


# -- equal to nn.EmbeddingBag, repacks or not --------------------------------------------------------
@pytest.mark.parametrize("budget", [0.2, 16 * 4096], ids=["20%", "16-pages-streamed"])
@pytest.mark.parametrize("optimizer,mode", [("sgd", "sum"), ("adagrad", "mean"), ("adam", "sum")])
def test_training_with_repacks_equals_embedding_bag(optimizer, mode, budget):
    n, d, lr = 20_000, 16, 0.05
    m = SwappedEmbeddingBag(n, d, mode, backend=zns(), budget=budget, optimizer=optimizer, lr=lr, seed=2,
                            pack_hot_rows=RowPacking(every=3))
    plain = SwappedEmbeddingBag(n, d, mode, backend=zns(), budget=budget, optimizer=optimizer, lr=lr, seed=2)
    ref, opt = reference(m.read_rows(torch.arange(n)), mode, optimizer, lr)
    rng = np.random.default_rng(0)
    head = torch.linspace(-1, 1, d)
    for _ in range(16):
        x = skewed(rng, n, (64, 8))
        outs, losses = [], []
        for mod in (m, plain, ref):
            y = mod(x)
            loss = ((y * head).sum(1) - 1).pow(2).mean()
            loss.backward()
            outs.append(y.detach())
            losses.append(loss.item())
        opt.step()
        opt.zero_grad()
        assert torch.equal(outs[0], outs[2]) and losses[0] == losses[1] == losses[2]
    s = m.stats()
    assert s["repacks"] >= 3 and s["rows_moved"] > 0 and s["repack_errors"] == 0, s
    assert_bijection(m.page_cache)
    assert torch.equal(m.read_rows(torch.arange(n)), ref.weight.detach())
    assert torch.equal(m.state_dict()["weight"], ref.weight.detach())
    a, b = m.optimizer_state_dict()["state"]["weight"], plain.optimizer_state_dict()["state"]["weight"]
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_a_collection_of_mixed_dims_checkpoints_in_row_order(tmp_path):
    """Tables of 8, 16 and 32 floats, Adam; save / load and state dicts are in row order, so a
    packed module's checkpoint loads into an unpacked one and back."""
    tabs = [(3000, 8), (50, 16), (5000, 32)]
    kw = dict(optimizer="adam", lr=0.05, budget=0.3, seed=4)
    m = SwappedEmbeddingBagCollection(tabs, backend=zns(), pack_hot_rows=RowPacking(every=2), **kw)
    plain = SwappedEmbeddingBagCollection(tabs, backend=zns(), **kw)
    rng = np.random.default_rng(5)
    for _ in range(10):
        feats = {k: skewed(rng, n, (32, 4)) for k, (n, _) in zip(m.keys, tabs)}
        ys = [mod(feats, concat=True) for mod in (m, plain)]
        assert torch.equal(ys[0], ys[1])
        for y in ys:
            y.pow(2).sum().backward()
    assert m.stats()["rows_moved"] > 0
    sd, psd = m.state_dict(), plain.state_dict()
    assert all(torch.equal(sd[k], psd[k]) for k in psd)
    m.save(str(tmp_path / "ck"))
    fresh = SwappedEmbeddingBagCollection(tabs, backend=zns(), **kw)
    fresh.load(str(tmp_path / "ck"))
    again = SwappedEmbeddingBagCollection(tabs, backend=zns(), pack_hot_rows=True, **kw)
    again.load_state_dict(psd)
    again.load_optimizer_state_dict(plain.optimizer_state_dict())
    for k, (n, _) in zip(m.keys, tabs):
        want = plain.read_rows(k, torch.arange(n))
        assert torch.equal(fresh.read_rows(k, torch.arange(n)), want)
        assert torch.equal(again.read_rows(k, torch.arange(n)), want)
    o, p = fresh.optimizer_state_dict()["state"], plain.optimizer_state_dict()["state"]
    assert all(torch.equal(o[k][a], p[k][a]) for k in p for a in p[k])
    # and a packed module's load, streamed in its page order, into rows it has moved
    m.load(str(tmp_path / "ck"))
    for k, (n, _) in zip(m.keys, tabs):
        assert torch.equal(m.read_rows(k, torch.arange(n)), plain.read_rows(k, torch.arange(n)))


# -- what it buys ------------------------------------------------------------------------------------
def test_hot_rows_end_up_sharing_pages_and_the_budget_holds_them():
    """Scattered popular rows, a budget of 10%: packed, the 64 hottest rows share a few pages and
    fewer pages are swapped in per step (a hit rate per page reference would mislead: packing
    makes the hot rows need fewer pages, so what is left to reference is mostly the cold tail)."""
    n, d = 64_000, 16                        # 64 rows a page, 1000 pages
    faults = {}
    for pack in (False, True):
        pc = PagedEmbedding([n], d, backend=zns(), budget=0.1, seed=1,
                            pack=RowPacking() if pack else None)
        rng = np.random.default_rng(3)
        for i in range(300):
            if i == 200:
                f0 = pc.counters.faults
            rows, _ = pc.gather_tables([skewed(rng, n, 128, a=1.1).numpy()])[0]
            pc.apply_tables([np.zeros_like(rows)])
        faults[pack] = pc.counters.faults - f0
        if pack:
            top = np.random.default_rng(7).permutation(n)[:64]      # skewed()'s 64 most popular rows
            assert np.unique(pc.page_of(0, top)).size <= 4
            assert_bijection(pc)
    assert faults[True] < 0.85 * faults[False], faults


# -- a device error in a repack ----------------------------------------------------------------------
N, D = 20_000, 16
WRITES_TO_FAIL = 5                 # more than the store's retries absorb: swap_out raises


class Pair:
    """A packed module over the store on an emulated ZNS device, and its reference trained alike."""

    def __init__(self, optimizer="adagrad", warm=12, flush=True):
        self.dev = open_device("emu://?zones=64&zone_size=1MiB&preset=none")
        self.m = SwappedEmbeddingBag(N, D, "sum", backend=SwapStore(self.dev, StoreConfig(write_size=128 << 10)),
                                     budget=0.2, optimizer=optimizer, lr=0.05, pack_hot_rows=RowPacking(every=4))
        self.ref, self.opt = reference(self.m.read_rows(torch.arange(N)), "sum", optimizer, 0.05)
        self.rng = np.random.default_rng(0)
        self.w = torch.linspace(0.5, 1.5, D)
        for _ in range(warm):         # repacks at gathers 5 and 9; the phase's first gather repacks
            self.step()
        if flush:                     # on the device, not in the store's write buffer: reads reach it
            self.m.flush()

    def step(self):
        x = skewed(self.rng, N, (16, 4))
        try:
            y = self.m(x)
        except DeviceIOError:
            return False
        (y * self.w).sum().backward()
        self.opt.zero_grad()
        (self.ref(x) * self.w).sum().backward()
        self.opt.step()
        return True


@pytest.mark.parametrize("kind,optimizer", [("read", "sgd"), ("read", "adagrad"), ("write", "adagrad")])
def test_a_fault_at_every_request_of_a_repack_moves_nothing_and_training_goes_on(kind, optimizer):
    """The k-th read (write) after the warm-up fails, for every k the step reaches: whether it hits
    the repack (counted, nothing moved, retried at the next step) or the forward (the step fails and
    is skipped, as the reference skips it), the rows equal the reference's, none lost or doubled.
    (Writes: the store's write buffer is left as the warm-up leaves it, so that the repack's
    evictions complete one of its 128 KiB write units.)"""
    hit = 0
    for k in range(200):
        p = Pair(optimizer, flush=kind == "read")
        before = p.m.stats()
        if kind == "read":
            p.dev.inject_read_failures(1, after=k)
        else:
            p.dev.inject_write_failures(WRITES_TO_FAIL, after=k)
        p.step()                                           # its gather repacks first
        r, w = p.dev.injected_failures()
        p.dev.inject_read_failures(0)
        p.dev.inject_write_failures(0)
        s = p.m.stats()
        if s["repack_errors"]:
            hit += 1
            assert s["rows_moved"] == before["rows_moved"] and "DeviceIOError" in s["last_repack_error"]
            assert p.m.page_cache.packer.due()            # tried again at the next step
        pc = p.m.page_cache
        assert not pc.cache.pin.any() and int((pc.cache.frame_page >= 0).sum()) + pc.cache.nfree == pc.nframes
        assert_bijection(pc)
        assert torch.equal(p.m.read_rows(torch.arange(N)), p.ref.weight.detach())
        for _ in range(2):
            assert p.step()
        assert p.m.stats()["repacks"] > s["repacks"] or not s["repack_errors"]
        assert torch.equal(p.m.read_rows(torch.arange(N)), p.ref.weight.detach())
        if (r >= 1) if kind == "read" else (w >= WRITES_TO_FAIL):
            break                                          # the step no longer reached request k
    assert hit >= 1


# -- the bench's option --------------------------------------------------------------------------------
def test_bench_packs_the_packed_runs_linux_included():
    """With --pack-hot-rows the bench adds linux-swap-packed (Linux given the same lever) and packs the
    store runs; the Linux runs before it stay unpacked, so packing is its own step of the chain."""
    from zswap_host.bench import BenchSpec, run_bench

    r = run_bench(BenchSpec(preset="tiny", iterations=60, lookahead=0, pack_hot_rows=True,
                            runs=("linux-swap-batched", "linux-swap-packed", "store-on-zns")))
    assert r["pack_hot_rows"] is True and r["ratios"]["losses_match"]
    swap = {x["name"]: x for x in r["runs"] if x["name"] != "dram-only"}
    assert set(swap) == {"linux-swap-batched", "linux-swap-packed", "store-on-zns"}
    assert all(swap[n]["paging"]["repacks"] >= 1 and swap[n]["paging"]["pack_bytes"] > 0
               for n in ("linux-swap-packed", "store-on-zns"))
    assert swap["linux-swap-batched"]["paging"]["repacks"] == 0
