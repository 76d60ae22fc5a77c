"""zswap_host.torch: the swapped embedding-bag modules against nn.EmbeddingBag + torch's optimizers
(bit for bit at budget=1.0), the same runs swapped through every backend at a small budget, the
collection, checkpoints with a budget smaller than the tables, errors; and the PagedEmbedding
features they stand on (per-table dims, gather_tables, read_array/write_array)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from torch_reference import RowwiseAdagrad  # noqa: E402
from zswap_host import ConventionalSwap, SwapStore, open_device  # noqa: E402
from zswap_host.devices import ZonedBlockView  # noqa: E402
from zswap_host.torch import (  # noqa: E402
    EmbeddingIndexError, FusedOptimizer, KeyedJagged, SwappedEmbeddingBag, SwappedEmbeddingBagCollection)
from zswap_host.verify import VerifyingBackend  # noqa: E402
from zswap_host.workloads.paged_embedding import PagedEmbedding  # noqa: E402

torch.set_num_threads(1)


def zns():
    return SwapStore(open_device("emu://?zones=64&zone_size=1MiB&preset=none"))


def zns_timed():
    return SwapStore(open_device("emu://?zones=64&zone_size=1MiB&preset=thesis-ssd"))


def conv():
    return ConventionalSwap(open_device("emu-conv://?size=64MiB&preset=none"))


def conv_batched():
    return ConventionalSwap(open_device("emu-conv://?size=64MiB&preset=none"), faults="batched")


def store_on_conv():
    return SwapStore(ZonedBlockView(open_device("emu-conv://?size=64MiB&preset=none"), 1 << 20))


def verified():
    return VerifyingBackend(zns())


BACKENDS = {"zns-store": zns, "linux-swap": conv, "linux-swap-batched": conv_batched,
            "store-on-conventional": store_on_conv, "verified-zns": verified}


# -- references ------------------------------------------------------------------------------------
def reference(module, mode, optimizer, lr, include_last_offset=False):
    """An nn.EmbeddingBag with the module's current rows, and the torch optimizer it must equal."""
    n, d = module.num_embeddings, module.embedding_dim
    sparse = optimizer == "adam"
    ref = nn.EmbeddingBag(n, d, mode=mode, sparse=sparse, include_last_offset=include_last_offset)
    with torch.no_grad():
        ref.weight.copy_(module.read_rows(torch.arange(n)))
    if optimizer == "sgd":
        opt = torch.optim.SGD(ref.parameters(), lr=lr)
    elif optimizer == "adam":
        opt = torch.optim.SparseAdam(ref.parameters(), lr=lr)
    else:
        opt = RowwiseAdagrad(ref.parameters(), lr=lr)
    return ref, opt


def batch(rng, n, form, B=24, hot=5, zipf=1.2, uniform=0.0):
    """(input, offsets) in one of the input forms; lookups zipf-skewed, a share ``uniform`` of them
    uniform over the table (so that a small budget keeps faulting)."""
    def draw(k):
        idx = np.minimum(rng.zipf(zipf, k) - 1, n - 1)
        u = rng.random(k) < uniform
        idx[u] = rng.integers(0, n, int(u.sum()))
        return idx
    if form == "2d":
        return torch.from_numpy(draw(B * hot).reshape(B, hot)), None
    lens = rng.integers(0, 2 * hot, B)
    lens[0] = 0                                           # an empty bag
    idx = draw(int(lens.sum()))
    offs = np.concatenate([[0], np.cumsum(lens)[:-1]])
    if form == "1d-last":
        offs = np.concatenate([offs, [lens.sum()]])
    return torch.from_numpy(idx), torch.from_numpy(offs)


def train_pair(module, ref, opt, optimizer, mode, form, steps=6, psw=False, seed=0):
    """Train the module and the reference side by side with a linear head (torch SGD on both);
    assert outputs, losses and rows equal after every step."""
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    d = module.embedding_dim
    heads = [nn.Linear(d, 1), nn.Linear(d, 1)]
    heads[1].load_state_dict(heads[0].state_dict())
    hopt = [torch.optim.SGD(h.parameters(), lr=0.05) for h in heads]
    n = module.num_embeddings
    for _ in range(steps):
        x, off = batch(rng, n, form)
        w = torch.from_numpy(rng.uniform(0.5, 1.5, tuple(x.shape)).astype(np.float32)) if psw else None
        outs, losses = [], []
        for m, h, ho in zip((module, ref), heads, hopt):
            y = m(x, off, per_sample_weights=w)
            loss = (h(y).squeeze(1) - 1.0).pow(2).mean()
            ho.zero_grad()
            loss.backward()
            ho.step()
            outs.append(y.detach())
            losses.append(float(loss.detach()))
        opt.step()
        opt.zero_grad()
        assert torch.equal(outs[0], outs[1])
        assert losses[0] == losses[1]
        assert torch.equal(module.read_rows(torch.arange(n)), ref.weight.detach())


# -- budget = 1.0: bit-identical to torch ----------------------------------------------------------
@pytest.mark.parametrize("form", ["1d", "2d", "1d-last"])
@pytest.mark.parametrize("mode", ["sum", "mean"])
@pytest.mark.parametrize("optimizer", ["sgd", "adagrad", "adam"])
def test_budget_one_equals_embedding_bag_and_its_optimizer(optimizer, mode, form):
    lr = 0.05
    m = SwappedEmbeddingBag(300, 8, mode, optimizer=optimizer, lr=lr, seed=1,
                            include_last_offset=form == "1d-last")
    ref, opt = reference(m, mode, optimizer, lr, include_last_offset=form == "1d-last")
    train_pair(m, ref, opt, optimizer, mode, form)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_per_sample_weights_and_their_gradients(optimizer):
    m = SwappedEmbeddingBag(200, 8, "sum", optimizer=optimizer, lr=0.05)
    ref, opt = reference(m, "sum", optimizer, 0.05)
    train_pair(m, ref, opt, optimizer, "sum", "1d", psw=True)
    rng = np.random.default_rng(5)
    x, off = batch(rng, 200, "1d")
    w0 = torch.from_numpy(rng.uniform(0.5, 1.5, x.shape[0]).astype(np.float32))
    grads = []
    for mod in (m, ref):
        w = w0.clone().requires_grad_(True)
        mod(x, off, per_sample_weights=w).sum().backward()
        grads.append(w.grad)
    assert torch.equal(grads[0], grads[1])


def test_fused_optimizer_object_and_lr_schedule():
    m = SwappedEmbeddingBag(100, 4, "sum", optimizer=FusedOptimizer("sgd", lr=0.5))
    ref, opt = reference(m, "sum", "sgd", 0.5)
    train_pair(m, ref, opt, "sgd", "sum", "2d", steps=2)
    m.lr = 0.1
    for g in opt.param_groups:
        g["lr"] = 0.1
    train_pair(m, ref, opt, "sgd", "sum", "2d", steps=2, seed=1)
    assert m.optimizer.lr == 0.1 and m.stats()["lr"] == 0.1


def test_no_grad_reads_without_updating():
    m = SwappedEmbeddingBag(100, 4, "sum", lr=1.0)
    before = m.read_rows(torch.arange(100)).clone()
    x = torch.arange(10).view(5, 2)
    with torch.no_grad():
        y = m(x)
    assert not y.requires_grad
    assert torch.equal(y, before[x].sum(1))
    assert torch.equal(m.read_rows(torch.arange(100)), before)


# -- a small budget over every backend: the same numbers --------------------------------------------
TABLES = [(20000, 16), (7000, 16), (30000, 16), (64, 16)]


def collection_run(backend, budget, optimizer, steps=16, tables=TABLES, clock=None):
    m = SwappedEmbeddingBagCollection(tables, keys=["a", "b", "c", "d"][:len(tables)], backend=backend,
                                      budget=budget, optimizer=optimizer, lr=0.05, seed=3, clock=clock)
    rng = np.random.default_rng(7)
    torch.manual_seed(0)
    head = nn.Linear(sum(d for _, d in tables), 1)
    hopt = torch.optim.Adam(head.parameters(), lr=0.01)
    losses = []
    for _ in range(steps):
        feats = {}
        for k, (n, _) in zip(m.keys, tables):
            x, off = batch(rng, n, "1d", B=8, hot=3, uniform=0.7)
            feats[k] = (x, off)
        y = m(feats, concat=True)
        loss = (head(y).squeeze(1) - 1.0).pow(2).mean()
        hopt.zero_grad()
        loss.backward()
        hopt.step()
        losses.append(float(loss.detach()))
    rows = {k: m.read_rows(k, torch.arange(n)) for k, (n, _) in zip(m.keys, tables)}
    return m, losses, rows


@pytest.mark.parametrize("name", list(BACKENDS))
@pytest.mark.parametrize("optimizer", ["sgd", "adagrad", "adam"])
def test_small_budget_over_every_backend_trains_bit_identically(name, optimizer):
    _, l0, r0 = collection_run(None, 1.0, optimizer)
    m, l1, r1 = collection_run(BACKENDS[name](), 0.1, optimizer)
    s = m.stats()
    assert s["faults"] > 50 and s["pages_written"] > 50 and not s["dram_only"]
    assert s["resident_pages"] <= s["budget_pages"] == int(0.1 * s["total_pages"])
    assert l0 == l1
    for k in r0:
        assert torch.equal(r0[k], r1[k])
    m.close()


def test_budget_one_over_a_backend_never_swaps_and_the_clock_is_modeled():
    m, _, _ = collection_run(zns_timed(), 1.0, "sgd", steps=3)
    assert m.stats()["faults"] == 0 and m.stats()["pages_written"] == 0 and m.stats()["dram_only"]
    b = zns_timed()
    dev = b.device
    t0 = dev.now()
    m, _, _ = collection_run(b, 0.1, "sgd", steps=6, clock=dev.now)
    stall = m.stats()["io_stall_s"]
    assert stall > 0 and stall == pytest.approx(dev.now() - t0, rel=1e-9)     # only its calls moved the clock


def test_modules_sharing_one_backend_do_not_collide():
    b = zns()
    runs = [collection_run(b, 0.1, "adagrad", steps=8) for _ in range(2)]
    _, l0, r0 = collection_run(None, 1.0, "adagrad", steps=8)
    for m, l1, r1 in runs:
        assert l1 == l0
        for k in r0:
            assert torch.equal(r0[k], r1[k])
    s = b.stats()
    assert s.pages_stored > 0
    for m, _, _ in runs:
        m.close()
    assert b.stats().pages_stored == 0                    # close discards the module's pages


# -- the collection ----------------------------------------------------------------------------------
def test_collection_with_mixed_dims_equals_separate_embedding_bags():
    tables = [(20000, 8), (6000, 24), (30000, 4)]
    m = SwappedEmbeddingBagCollection(tables, keys=["x", "y", "z"], backend=zns(), budget=0.3, optimizer="adam",
                                      lr=0.02)
    refs = {}
    for k, (n, d) in zip(m.keys, tables):
        e = nn.EmbeddingBag(n, d, mode="sum", sparse=True)
        with torch.no_grad():
            e.weight.copy_(m.read_rows(k, torch.arange(n)))
        refs[k] = (e, torch.optim.SparseAdam(e.parameters(), lr=0.02))
    rng = np.random.default_rng(1)
    for step in range(8):
        feats = {k: batch(rng, n, "1d", B=8, uniform=0.3) for k, (n, _) in zip(m.keys, tables)}
        if step == 3:
            del feats["y"]                               # y not looked up: no step for it
        out = m(feats)
        assert set(out) == set(feats)
        loss = sum((o * (i + 1)).sum() for i, o in enumerate(out.values()))
        loss.backward()
        for i, (k, (x, off)) in enumerate(feats.items()):
            e, opt = refs[k]
            y = e(x, off)
            assert torch.equal(y, out[k].detach())
            opt.zero_grad()
            (y * (i + 1)).sum().backward()
            opt.step()
    for k, (n, _) in zip(m.keys, tables):
        assert torch.equal(m.read_rows(k, torch.arange(n)), refs[k][0].weight.detach())
    assert m.stats()["steps"] == [8, 7, 8] and m.stats()["faults"] > 0


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_dlrm_shaped_collection_equals_embedding_bags_and_sgd(mode):
    """What the bench trains: tables of one dim, 2-D bags of one shape, looked up together with
    concat=True, over a backend at a small budget: outputs and rows equal separate nn.EmbeddingBags
    + torch SGD bit for bit (each table pooled by its own call: one call over all the tables' rows
    stacked would sum a row's gradient in another order)."""
    tables, lr = [20000, 300, 40000], 0.05
    m = SwappedEmbeddingBagCollection(tables, 8, mode, backend=zns(), budget=0.3, lr=lr, seed=4)
    refs = [nn.EmbeddingBag(n, 8, mode=mode) for n in tables]
    for i, (e, n) in enumerate(zip(refs, tables)):
        with torch.no_grad():
            e.weight.copy_(m.read_rows(f"t{i}", torch.arange(n)))
    ropt = torch.optim.SGD([e.weight for e in refs], lr=lr)
    rng = np.random.default_rng(5)
    for _ in range(6):
        feats = {f"t{i}": batch(rng, n, "2d", B=16, hot=3, uniform=0.4)[0] for i, n in enumerate(tables)}
        y = m(feats, concat=True)
        r = torch.cat([e(feats[f"t{i}"]) for i, e in enumerate(refs)], 1)
        assert torch.equal(r.detach(), y.detach())
        coef = torch.arange(1, y.shape[1] + 1, dtype=torch.float32)
        (y * coef).pow(2).sum().backward()
        ropt.zero_grad()
        (r * coef).pow(2).sum().backward()
        ropt.step()
    for i, (e, n) in enumerate(zip(refs, tables)):
        assert torch.equal(m.read_rows(f"t{i}", torch.arange(n)), e.weight.detach())
    assert m.stats()["faults"] > 0


def test_keyed_jagged_input_and_concat():
    tables = [(100, 4), (50, 4)]
    m = SwappedEmbeddingBagCollection([100, 50], embedding_dim=4, keys=["u", "v"])
    # B = 3: u gets [1, 2], [], [3]; v gets [4], [5, 6, 7], []
    kjt = KeyedJagged(["u", "v"], torch.tensor([1, 2, 3, 4, 5, 6, 7]), torch.tensor([2, 0, 1, 1, 3, 0]))
    with torch.no_grad():
        a = m(kjt)
        b = m({"u": (torch.tensor([1, 2, 3]), torch.tensor([0, 2, 2])),
               "v": (torch.tensor([4, 5, 6, 7]), torch.tensor([0, 1, 4]))})
        c = m(kjt, concat=True)
    assert torch.equal(a["u"], b["u"]) and torch.equal(a["v"], b["v"])
    assert c.shape == (3, 8) and torch.equal(c, torch.cat([a["u"], a["v"]], 1))
    w = m.read_rows("u", torch.tensor([1, 2, 3]))
    assert torch.equal(a["u"][0], w[0] + w[1]) and torch.equal(a["u"][1], torch.zeros(4))
    kw = KeyedJagged(["u", "v"], kjt.values, kjt.lengths, weights=torch.full((7,), 2.0))
    with torch.no_grad():
        assert torch.equal(m(kw)["u"], 2 * a["u"])
    with pytest.raises(KeyError):
        m({"nope": torch.zeros(2, 2, dtype=torch.long)})
    with pytest.raises(ValueError, match="needs every key"):
        m({"u": torch.zeros(2, 2, dtype=torch.long)}, concat=True)
    with pytest.raises(ValueError):
        SwappedEmbeddingBagCollection([100, 50])          # no dim
    with pytest.raises(ValueError):
        SwappedEmbeddingBagCollection([100, 50], 4, keys=["a", "a"])


# -- checkpoints -------------------------------------------------------------------------------------
CK_TABLES = [(60000, 16), (20000, 32)]


def trained(budget, backend, optimizer="adam", steps=6):
    m = SwappedEmbeddingBagCollection(CK_TABLES, keys=["p", "q"], backend=backend, budget=budget,
                                      optimizer=optimizer, lr=0.05, seed=11)
    rng = np.random.default_rng(2)
    for _ in range(steps):
        feats = {k: batch(rng, n, "1d", B=16, uniform=0.3) for k, (n, _) in zip("pq", CK_TABLES)}
        m(feats, concat=True).pow(2).sum().backward()
    return m


def continue_training(m, steps=4):
    rng = np.random.default_rng(9)
    losses = []
    for _ in range(steps):
        feats = {k: batch(rng, n, "1d", B=16, uniform=0.3) for k, (n, _) in zip("pq", CK_TABLES)}
        loss = m(feats, concat=True).pow(2).sum()
        loss.backward()
        losses.append(float(loss.detach()))
    return losses, [m.read_rows(k, torch.arange(n)) for k, (n, _) in zip("pq", CK_TABLES)]


@pytest.mark.parametrize("optimizer", ["adagrad", "adam"])
def test_save_and_load_stream_tables_larger_than_the_budget(tmp_path, optimizer):
    m = trained(0.1, zns(), optimizer)
    st = m._tables.store
    assert st.nframes < st.total_pages // 5
    before = m.stats()
    m.save(str(tmp_path / "ck"), chunk_bytes=64 << 10)
    after = m.stats()
    # the cache was neither filled nor evicted by the save
    assert after["resident_pages"] == before["resident_pages"]
    assert after["evictions"] == before["evictions"] and after["faults"] == before["faults"]
    files = sorted(p.name for p in (tmp_path / "ck").iterdir())
    arrays = {"adagrad": ["sum", "weight"], "adam": ["exp_avg", "exp_avg_sq", "weight"]}[optimizer]
    assert files == ["meta.json"] + [f"t{t}.{a}.npy" for t in (0, 1) for a in arrays]
    w = np.load(tmp_path / "ck" / "t1.weight.npy", mmap_mode="r")
    assert w.shape == (20000, 32)
    assert np.array_equal(w[:300], m.read_rows("q", torch.arange(300)).numpy())
    # another module (other seed, other backend, small budget) loads it and trains on identically
    m2 = SwappedEmbeddingBagCollection(CK_TABLES, keys=["p", "q"], backend=conv(), budget=0.1,
                                       optimizer=optimizer, lr=0.05, seed=99)
    m2.load(str(tmp_path / "ck"), chunk_bytes=64 << 10)
    assert m2.stats()["steps"] == m.stats()["steps"]
    l1, r1 = continue_training(m)
    l2, r2 = continue_training(m2)
    assert l1 == l2
    assert all(torch.equal(a, b) for a, b in zip(r1, r2))


def test_load_refuses_other_tables_and_unfinished_saves(tmp_path):
    m = trained(1.0, None, "sgd", steps=1)
    m.save(str(tmp_path / "ck"))
    other = SwappedEmbeddingBagCollection([(60000, 16), (20000, 16)], keys=["p", "q"])
    with pytest.raises(ValueError, match="not these"):
        other.load(str(tmp_path / "ck"))
    (tmp_path / "ck" / "meta.json").unlink()
    with pytest.raises(FileNotFoundError):
        m.load(str(tmp_path / "ck"))


def test_state_dicts_round_trip_and_interoperate_with_embedding_bag(tmp_path):
    m = trained(0.1, zns(), "adam")
    sd = m.state_dict()
    assert sorted(sd) == ["embedding_bags.p.weight", "embedding_bags.q.weight"]
    osd = m.optimizer_state_dict()
    assert osd["name"] == "adam" and sorted(osd["state"]["p"]) == ["exp_avg", "exp_avg_sq", "step"]
    torch.save({"model": sd, "opt": osd}, tmp_path / "ck.pt")
    loaded = torch.load(tmp_path / "ck.pt", mmap=True)          # file-backed: streamed into the store
    m2 = SwappedEmbeddingBagCollection(CK_TABLES, keys=["p", "q"], backend=zns(), budget=0.1,
                                       optimizer="adam", lr=0.05, seed=5)
    m2.load_state_dict(loaded["model"])
    m2.load_optimizer_state_dict(loaded["opt"])
    l1, r1 = continue_training(m)
    l2, r2 = continue_training(m2)
    assert l1 == l2 and all(torch.equal(a, b) for a, b in zip(r1, r2))
    # a single table loads nn.EmbeddingBag's state dict and gives one it can load (strict)
    e = nn.EmbeddingBag(300, 8, mode="sum")
    s = SwappedEmbeddingBag(300, 8, "sum", backend=zns(), budget=0.5)
    s.load_state_dict(e.state_dict())
    assert torch.equal(s.read_rows(torch.arange(300)), e.weight.detach())
    e2 = nn.EmbeddingBag(300, 8, mode="sum")
    e2.load_state_dict(s.state_dict())
    assert torch.equal(e2.weight, e.weight)
    with pytest.raises(RuntimeError, match="size mismatch"):
        s.load_state_dict({"weight": torch.zeros(10, 8)})
    with pytest.raises(RuntimeError, match="Unexpected"):
        s.load_state_dict({"weight": e.weight.detach(), "bias": torch.zeros(1)})
    with pytest.raises(ValueError):
        m2.load_optimizer_state_dict({**osd, "name": "sgd"})
    # nested in a model: prefixed keys
    model = nn.Sequential(s)
    assert list(model.state_dict()) == ["0.weight"]
    model.load_state_dict(model.state_dict())


# -- errors --------------------------------------------------------------------------------------------
def test_errors_are_torchs_types():
    with pytest.raises(ValueError):
        SwappedEmbeddingBag(10, 4, "max")
    with pytest.raises(ValueError):
        SwappedEmbeddingBag(10, 4, optimizer="rmsprop")
    m = SwappedEmbeddingBag(10, 4, "mean")
    e = nn.EmbeddingBag(10, 4, mode="mean")
    cases = [
        ((torch.tensor([1, 2]), torch.tensor([0])), {"per_sample_weights": torch.ones(2)}, NotImplementedError),
        ((torch.tensor([1, 12]), torch.tensor([0])), {}, RuntimeError),
        ((torch.tensor([1, -1]), torch.tensor([0])), {}, RuntimeError),
        ((torch.tensor([[1, 2]]), torch.tensor([0])), {}, ValueError),
        ((torch.tensor([1, 2]),), {}, ValueError),
        ((torch.tensor([[[1]]]),), {}, ValueError),
        ((torch.tensor([1.0, 2.0]), torch.tensor([0])), {}, RuntimeError),
        ((torch.tensor([1, 2]), torch.tensor([1])), {}, RuntimeError),       # offsets[0] != 0 (torch's check)
    ]
    for args, kw, exc in cases:
        with pytest.raises(exc):
            e(*args, **kw)
        with pytest.raises(exc):
            m(*args, **kw)
    with pytest.raises(IndexError):                       # also an IndexError, as nn.Embedding's
        m(torch.tensor([10]), torch.tensor([0]))
    with pytest.raises(EmbeddingIndexError):
        m.read_rows(torch.tensor([10]))
    s = SwappedEmbeddingBag(10, 4, "sum")
    with pytest.raises(ValueError):
        s(torch.tensor([1, 2, 3]), torch.tensor([0]), per_sample_weights=torch.ones(2))


def test_one_backward_per_forward_and_close(tmp_path):
    m = SwappedEmbeddingBag(10000, 4, "sum", backend=zns(), budget=0.5)
    y1 = m(torch.tensor([[1, 2]]))
    y2 = m(torch.tensor([[3, 4]]))
    y2.sum().backward()
    with pytest.raises(RuntimeError, match="no longer pinned"):
        y1.sum().backward()
    # reading (rows, state dict, a streamed save) between forward and backward keeps the step
    y0 = m(torch.tensor([[5, 6]]))
    w56 = m.read_rows(torch.tensor([5, 6])).clone()
    assert torch.equal(m.state_dict()["weight"][5:7], w56)
    m.save(str(tmp_path / "mid"))
    y0.sum().backward()
    assert torch.equal(m.read_rows(torch.tensor([5, 6])), w56 - 0.01)      # sgd, lr 0.01, grad 1
    # a load between them ends it
    y0 = m(torch.tensor([[5, 6]]))
    m.load(str(tmp_path / "mid"))
    with pytest.raises(RuntimeError, match="no longer pinned"):
        y0.sum().backward()
    assert torch.equal(m.read_rows(torch.tensor([5, 6])), w56)
    y3 = m(torch.tensor([[1, 2]]))
    y3.sum().backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="no longer pinned"):
        y3.sum().backward()
    m.flush()
    m.close()
    m.close()
    with pytest.raises(RuntimeError, match="closed"):
        m(torch.tensor([[1, 2]]))


# -- the PagedEmbedding features underneath --------------------------------------------------------------
def test_gather_tables_equals_gather_for_one_dim():
    tables = (5000, 700, 30000)
    a = PagedEmbedding(tables, 16, seed=4, optimizer="adagrad", lr=0.3)
    b = PagedEmbedding(tables, 16, seed=4, optimizer="adagrad", lr=0.3, backend=zns(), budget=0.3)
    rng = np.random.default_rng(0)
    for _ in range(10):
        sp = np.stack([rng.integers(0, n, 40) for n in tables])
        rows, inv = a.gather(sp)
        res = b.gather_tables(list(sp))
        g = rng.normal(size=rows.shape).astype(np.float32)
        gs, lo = [], 0
        for t, (r, i) in enumerate(res):
            np.testing.assert_array_equal(r[i], rows[inv[t * 40:(t + 1) * 40]])
            gs.append(g[lo:lo + r.shape[0]])
            lo += r.shape[0]
        a.apply(g)
        b.apply_tables(gs)
    for t, n in enumerate(tables):
        np.testing.assert_array_equal(a.read_array(t, "weight"), b.read_array(t, "weight"))
        np.testing.assert_array_equal(a.read_array(t, "sum"), b.read_array(t, "sum"))


def test_mixed_dims_first_touch_and_arrays():
    e = PagedEmbedding((1000, 300), (48, 8), seed=2, backend=zns(), budget=0.5)
    assert e.rows_per_page is None and e.rpp.tolist() == [21, 128]
    r0 = e.peek_rows(0, np.arange(1000))
    np.testing.assert_array_equal(r0[200:300], e.read_rows(0, np.arange(200, 300)))   # through the cache
    assert r0.shape == (1000, 48) and np.abs(r0).max() <= 1 / np.sqrt(1000) + 1e-7 and r0.std() > 0.005
    # the same rows as a one-dim table of that dim (first touch depends on the page, not the others)
    one = PagedEmbedding((1000,), 48, seed=2)
    np.testing.assert_array_equal(r0, one.read_rows(0, np.arange(1000)))
    np.testing.assert_array_equal(e.read_array(1, "weight", 5, 260), e.peek_rows(1, np.arange(5, 260)))
    # write part of a page, read it back through the cache and around it
    v = np.arange(13 * 48, dtype=np.float32).reshape(13, 48)
    e.write_array(0, "weight", 100, v)
    got = e.peek_rows(0, np.arange(1000))
    np.testing.assert_array_equal(got[90:120], e.read_rows(0, np.arange(90, 120)))
    np.testing.assert_array_equal(got[100:113], v)
    np.testing.assert_array_equal(np.delete(got, np.arange(100, 113), 0), np.delete(r0, np.arange(100, 113), 0))
    with pytest.raises(ValueError):
        e.gather(np.zeros((2, 4), np.int64))
    with pytest.raises(KeyError):
        e.read_array(0, "sum")


# -- clocks: which one the stall figures use ---------------------------------------------------------
def _clock_run(backend, depth=0, clock="device", steps=12):
    from zswap_host.torch import prefetching
    m = SwappedEmbeddingBag(20000, 16, "sum", backend=backend, budget=0.2, clock=clock)
    rng = np.random.default_rng(0)
    batches = [torch.from_numpy(rng.integers(0, 20000, (8, 4))) for _ in range(steps)]
    for x in prefetching(batches, m, depth):
        m(x).sum().backward()
    return m.stats()


def test_the_stall_is_on_the_devices_modeled_clock_by_default_and_says_so():
    b = zns_timed()
    s = _clock_run(b)
    assert s["clock"] == "modeled" and s["io_stall_s"] > 0
    assert s["io_stall_s"] == pytest.approx(b.device.now(), rel=1e-9)     # the device's seconds
    assert _clock_run(zns_timed())["io_stall_s"] == s["io_stall_s"]        # deterministic
    lin = ConventionalSwap(open_device("emu-conv://?size=64MiB&preset=thesis-ssd"))
    assert _clock_run(VerifyingBackend(lin), steps=3)["clock"] == "modeled"  # through a wrapper
    assert _clock_run(zns(), steps=3)["clock"] == "wall"                 # timing off: its clock stands still
    assert _clock_run(zns_timed(), clock="wall", steps=3)["clock"] == "wall"
    b = zns_timed()
    assert _clock_run(b, clock=b.device.now, steps=3)["clock"] == "caller"
    assert SwappedEmbeddingBag(100, 4).stats()["clock"] == "none"
    with pytest.raises(ValueError, match="clock must be one of"):
        SwappedEmbeddingBag(100, 4, backend=zns(), clock="modeled")


def test_with_prefetch_the_device_busy_time_and_the_slowdown_are_reported():
    """The issue: with prefetch the demand stall reads 0 while the device worked; now the device's
    busy time is all of its I/O, and the prefetch's uncovered part counts as stall."""
    b0, b1 = zns_timed(), zns_timed()
    s0, s1 = _clock_run(b0, depth=0), _clock_run(b1, depth=1)
    assert s1["prefetched"] > 0 and s1["io_stall_s"] < s0["io_stall_s"]
    assert s1["device_busy_s"] == pytest.approx(b1.device.now(), rel=1e-9)
    assert s1["device_busy_s"] > s1["io_stall_s"]
    assert s1["device_busy_s"] == pytest.approx(s1["io_stall_s"] + s1["io_overlap_s"], rel=1e-12)
    assert 0 <= s1["prefetch_stall_s"] <= s1["io_overlap_s"]
    assert s1["stall_s"] == s1["io_stall_s"] + s1["prefetch_stall_s"]
    for s in (s0, s1):
        assert s["compute_s"] > 0 and s["slowdown_vs_dram"] == (s["compute_s"] + s["stall_s"]) / s["compute_s"]
    assert s0["slowdown_vs_dram"] > 1 and s1["slowdown_vs_dram"] >= 1
    assert SwappedEmbeddingBag(100, 4).stats()["slowdown_vs_dram"] is None


@pytest.mark.parametrize("idx,off", [(torch.int16, torch.int64), (torch.int64, torch.int16), (torch.uint8, torch.int32),
                                     (torch.int16, torch.int16), (torch.int16, None), (torch.float32, torch.int64)])
def test_index_dtypes_are_nn_embedding_bags(idx, off):
    """Issue 34 item 8: indices and offsets of other integer types are taken exactly when
    nn.EmbeddingBag takes them (their promoted type int32 or int64), with the same rows."""
    m = SwappedEmbeddingBag(10, 4, "sum")
    e = nn.EmbeddingBag(10, 4, mode="sum")
    with torch.no_grad():
        e.weight.copy_(m.read_rows(torch.arange(10)))
    args = (torch.tensor([1, 2, 3, 7], dtype=idx), torch.tensor([0, 1], dtype=off)) if off is not None \
        else (torch.tensor([[1, 2], [3, 7]], dtype=idx),)
    try:
        want = e(*args)
    except RuntimeError:
        with pytest.raises(RuntimeError):
            m(*args)
        return
    with torch.no_grad():
        assert torch.equal(m(*args), want)


def test_keyed_jagged_refuses_duplicate_keys():
    """Issue 34 item 8: a key given twice would have its first lookups silently dropped."""
    with pytest.raises(ValueError, match="'u'"):
        KeyedJagged(["u", "u"], torch.tensor([1, 2, 3]), torch.tensor([2, 1]))
