"""The transparent DLRM (experiments/transparent_dlrm.py's code path, workloads.transparent): plain
nn.EmbeddingBag tables adopted by the pager train to the plain in-DRAM run's losses bit for bit on
both backends (with and without rearm_wp), within the pager's budget, with real swap-outs and swap-ins; the plain model with
dense gradients is the bench's module bit for bit."""

from __future__ import annotations

import os

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("zswap_host.pager")

from zswap_host.bench import BenchSpec, plan  # noqa: E402
from zswap_host.bench.plan import backend_factories  # noqa: E402
from zswap_host.bench.runs import DISCARD_DIRTY  # noqa: E402
from zswap_host.torch.training import train  # noqa: E402
from zswap_host.workloads.transparent import PlainDLRM, initial_weights, train_plain  # noqa: E402

if not os.path.exists("/dev/userfaultfd") and os.geteuid() != 0:
    pytest.skip("userfaultfd needs root here", allow_module_level=True)

ITER = 12


@pytest.fixture(scope="module")
def pl():
    return plan(BenchSpec(preset="tiny", iterations=ITER, runs=("linux-swap", "store-on-zns")))


@pytest.fixture(scope="module")
def plain(pl):
    return train_plain(pl.model, pl.data, ITER, pl.batch_size, 0)


def test_plain_dense_equals_module_and_sparse_is_close(pl, plain):
    """sparse=False is the module's arithmetic; sparse=True rounds repeated lookups differently."""
    module = train(pl.model, pl.data, None, 1.0, ITER, pl.batch_size, 0)
    dense = train_plain(pl.model, pl.data, ITER, pl.batch_size, 0, sparse=False)
    assert np.array_equal(dense.loss, module.loss)
    assert np.allclose(plain.loss, module.loss, rtol=0, atol=1e-5)


def test_initial_weights_are_the_modules_first_touch(pl):
    net = PlainDLRM(pl.model, pl.data, 3)
    for t in (0, 2):
        w = initial_weights(pl.model, pl.data, 3, t)
        assert np.array_equal(net.tables[t].weight.detach().numpy(), w)
        assert np.abs(w).max() <= 1 / np.sqrt(pl.data.tables[t])


@pytest.mark.parametrize("rearm_wp,announce", [(False, False), (True, False), (True, True)])
@pytest.mark.parametrize("run", ["store-on-zns", "linux-swap"])
def test_transparent_run_equals_plain_within_budget(pl, plain, run, rearm_wp, announce):
    spec = BenchSpec(preset="tiny", iterations=ITER, runs=(run,))
    backend, dev = backend_factories(pl, spec)[run]()
    charged = np.full(ITER, pl.compute.us_per_sample * 1e-6 * pl.batch_size)
    idles = []

    def on_idle(s: float) -> None:
        idles.append(s)
        backend.idle(s)

    try:
        r = train_plain(pl.model, pl.data, ITER, pl.batch_size, 0, backend=backend, budget_bytes=pl.budget_bytes,
                        clock=dev.now, on_idle=on_idle, charged_compute_s=charged,
                        on_start=lambda: backend.stats(), on_end=lambda: backend.stats(),
                        discard_on_write=DISCARD_DIRTY[run], rearm_wp=rearm_wp, announce=announce)
    finally:
        backend.close()
        dev.close()
    assert np.array_equal(r.loss, plain.loss)                       # the pager changes no value
    p = r.pager
    assert p["budget_pages"] == pl.budget_pages and r.budget_bytes == pl.budget_bytes
    assert p["max_resident"] <= p["budget_pages"]
    assert r.table_bytes == pl.table_bytes                          # the module's pages, one region a table
    assert p["uffd_errors"] == 0 and p["backend_errors"] == 0 and p["fetch_failures"] == 0
    assert r.init_pages_out > 0 and r.pages_out.sum() > 0 and r.pages_in.sum() > 0
    assert p["pages_in"] == r.pages_in.sum() and p["pages_out"] == r.init_pages_out + r.pages_out.sum()
    assert r.start.host_write_bytes == r.init_pages_out * 4096      # the tables' initial values, written out
    assert r.end.host_read_bytes == p["pages_in"] * 4096             # every fault read through the backend
    assert r.end.host_write_bytes >= p["pages_out"] * 4096 > r.start.host_write_bytes
    assert idles == list(charged)
    # the store forgets a dirtied page's copy at once (as the bench's discard_dirty), Linux keeps it
    assert (p["discards"] > 0) == DISCARD_DIRTY[run] and (p["stale_copies"] > 0) == DISCARD_DIRTY[run]
    assert (r.io_stall_s > 0).all() and r.init_io_s > 0 and r.clock == "modeled"
    # Pager(rearm_wp=True): the CLOCK hand write-protected dirty pages again, and writes hit some
    assert (p["rearms"] > 0) == rearm_wp and (p["rearm_faults"] > 0) == rearm_wp
    # announced steps: their rows read ahead in batches (prefetch), most of them used, fewer faults
    assert (p["spec_pages_in"] > 0) == announce
    if announce:
        assert p["spec_hits"] > p["spec_pages_in"] // 2 and p["fetch_batches"] < p["pages_in"] // 2
