"""zswap_host.torch at any budget (issue 30): a batch needing more pages than the DRAM budget holds
streams through it in pieces — the forward's gather and the fused optimizer's update alike — and
equals nn.EmbeddingBag + the same torch optimizer bit for bit, at budgets down to the few pages one
row and its optimizer state need."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch_reference import RowwiseAdagrad, reference  # noqa: E402
from zswap_host import SwapStore, open_device  # noqa: E402
from zswap_host.torch import SwappedEmbeddingBag, SwappedEmbeddingBagCollection  # noqa: E402

torch.set_num_threads(1)


def zns():
    return SwapStore(open_device("emu://?zones=64&zone_size=1MiB&preset=none"))


@pytest.mark.parametrize("budget", [0.1, 16 * 4096, 3 * 4096], ids=["10%", "16-pages", "3-pages"])
@pytest.mark.parametrize("optimizer,mode", [("sgd", "sum"), ("adagrad", "mean"), ("adam", "sum")])
def test_a_batch_larger_than_the_budget_streams_and_equals_embedding_bag(optimizer, mode, budget):
    """The issue's case: a 20k x 16 table, 64 bags of 8 (about 250 pages a batch, with Adam's
    state three times that) at a budget of 10% (31 pages; 93 with Adam), 16 pages and 3."""
    n, d, lr = 20_000, 16, 0.05
    m = SwappedEmbeddingBag(n, d, mode, backend=zns(), budget=budget, optimizer=optimizer, lr=lr, seed=2)
    ref, opt = reference(m.read_rows(torch.arange(n)), mode, optimizer, lr)
    rng = np.random.default_rng(0)
    head = torch.linspace(-1, 1, d)
    for _ in range(3):
        x = torch.from_numpy(rng.integers(0, n, (64, 8)))
        outs = []
        for mod in (m, ref):
            y = mod(x)
            ((y * head).sum(1) - 1).pow(2).mean().backward()
            outs.append(y.detach())
        opt.step()
        opt.zero_grad()
        assert torch.equal(outs[0], outs[1])
        assert m.page_cache.resident_pages <= m.page_cache.budget_pages
        assert not m.page_cache.cache.pin.any()
    assert torch.equal(m.read_rows(torch.arange(n)), ref.weight.detach())
    s = m.stats()
    assert s["steps"] == [3] and s["faults"] > 0 and s["budget_pages"] < 300


@pytest.mark.parametrize("optimizer,pages", [("sgd", 1), ("adagrad", 2), ("adam", 3)])
def test_the_smallest_budget_one_row_and_its_state_needs_still_equals_embedding_bag(optimizer, pages):
    """The floor design.md names: 1 page for SGD, 2 for Adagrad, 3 for Adam."""
    n, d, lr = 4000, 16, 0.05
    m = SwappedEmbeddingBag(n, d, "sum", backend=zns(), budget=pages * 4096, optimizer=optimizer, lr=lr, seed=5)
    assert m.page_cache.budget_pages == pages
    ref, opt = reference(m.read_rows(torch.arange(n)), "sum", optimizer, lr)
    rng = np.random.default_rng(7)
    for _ in range(2):
        x = torch.from_numpy(rng.integers(0, n, (16, 4)))
        outs = []
        for mod in (m, ref):
            y = mod(x)
            y.pow(2).sum().backward()
            outs.append(y.detach())
        opt.step()
        opt.zero_grad()
        assert torch.equal(outs[0], outs[1])
    assert torch.equal(m.read_rows(torch.arange(n)), ref.weight.detach())


def test_per_sample_weights_and_no_grad_under_a_tiny_budget():
    n, d = 5000, 8
    m = SwappedEmbeddingBag(n, d, "sum", backend=zns(), budget=2 * 4096, lr=0.1)
    ref, opt = reference(m.read_rows(torch.arange(n)), "sum", "sgd", 0.1)
    rng = np.random.default_rng(3)
    x = torch.from_numpy(rng.integers(0, n, 300))
    off = torch.arange(0, 300, 10)
    w0 = torch.from_numpy(rng.uniform(0.5, 1.5, 300).astype(np.float32))
    grads = []
    for mod in (m, ref):
        w = w0.clone().requires_grad_(True)
        mod(x, off, per_sample_weights=w).pow(2).sum().backward()
        grads.append(w.grad)
    opt.step()
    assert torch.equal(grads[0], grads[1])
    with torch.no_grad():
        assert torch.equal(m(x, off), ref(x, off))
    assert torch.equal(m.read_rows(torch.arange(n)), ref.weight.detach())


def test_a_collection_of_mixed_dims_streams_across_its_tables():
    """Pieces that span tables of different dims (8, 16 and 32 floats a row)."""
    tables = [(3000, 8), (5000, 16), (2000, 32)]
    m = SwappedEmbeddingBagCollection(tables, keys=["a", "b", "c"], backend=zns(), budget=5 * 4096,
                                      optimizer="adagrad", lr=0.1, seed=4)
    refs = [reference(m.read_rows(k, torch.arange(n)), "sum", "adagrad", 0.1) for k, (n, _) in zip(m.keys, tables)]
    rng = np.random.default_rng(1)
    for _ in range(3):
        feats = {k: (torch.from_numpy(rng.integers(0, n, 200)), torch.arange(0, 200, 5))
                 for k, (n, _) in zip(m.keys, tables)}
        y = m(feats, concat=True)
        y.pow(2).sum().backward()
        yr = torch.cat([r(*feats[k]) for k, (r, _) in zip(m.keys, refs)], dim=1)
        yr.pow(2).sum().backward()
        for _, o in refs:
            o.step()
            o.zero_grad()
        assert torch.equal(y.detach(), yr.detach())
    for k, (r, _) in zip(m.keys, refs):
        assert torch.equal(m.read_rows(k, torch.arange(r.num_embeddings)), r.weight.detach())


def test_a_budget_below_one_row_and_its_state_is_a_clear_error():
    with pytest.raises(ValueError, match="holds 2 page.*one row with its adam state needs 3"):
        SwappedEmbeddingBag(20_000, 16, backend=zns(), budget=2 * 4096, optimizer="adam")
    SwappedEmbeddingBag(20_000, 16, backend=zns(), budget=3 * 4096, optimizer="adam").close()
