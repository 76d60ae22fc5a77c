"""``Pager.prefetch`` (issue 33): rows announced are read in before they are touched — their pages
are mapped (mincore) after the pager is quiet, with no fault, read back intact, and count as read-ahead
(a hit once a write names one); pages mapped or never written are skipped; it never takes more than
the free room; bad rows and foreign memory are refused. In both serving modes, and for an adopted
torch tensor's rows."""

from __future__ import annotations

import functools
import os

import numpy as np
import pytest

from pager_harness import BUDGET_PAGES, PS, FlakyBackend, _resident, check_stats, make_backend, read_all

pager_mod = pytest.importorskip("zswap_host.pager")
Pager = pager_mod.Pager

if not os.path.exists("/dev/userfaultfd") and os.geteuid() != 0:
    pytest.skip("userfaultfd needs root here", allow_module_level=True)


def open_pager(mode: str) -> Pager:
    if mode == "thread":
        return Pager(make_backend("store"), BUDGET_PAGES * PS)
    return Pager.process(functools.partial(make_backend, "store"), BUDGET_PAGES * PS)


def page_addr(a: np.ndarray, row: int) -> int:
    return int(a.__array_interface__["data"][0] + int(row) * a.strides[0])


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_prefetched_rows_are_mapped_before_they_are_touched(mode):
    with open_pager(mode) as pager:
        a = pager.alloc((4 * BUDGET_PAGES, PS), np.uint8)            # one page a row
        data = np.random.default_rng(2).integers(0, 256, a.shape, dtype=np.uint8)
        pager.copy(a, data)
        assert pager.quiesce(timeout=120)
        out = [r for r in range(a.shape[0]) if not _resident(page_addr(a, r))]
        rows = np.array(out[:3])        # quiet: used <= budget - headroom/2, so >= 4 pages of room
        s0 = pager.stats()
        assert pager.prefetch(a, rows) == 3
        assert pager.quiesce(timeout=120)
        assert all(_resident(page_addr(a, r)) for r in rows)
        s1 = pager.stats()
        assert s1.spec_pages_in - s0.spec_pages_in == 3 and s1.pages_in - s0.pages_in == 3
        assert s1.faults_missing == s0.faults_missing                    # nothing faulted
        got = np.empty((3, PS), np.uint8)
        for k, r in enumerate(rows):
            pager.copy(got[k], a[r])
        assert np.array_equal(got, data[rows])
        assert pager.stats().faults_missing == s0.faults_missing          # reads of mapped pages: no fault
        pager.copy(a[rows[0], :8], np.zeros(8, np.uint8))                 # a write names it: a hit
        assert pager.stats().spec_hits - s0.spec_hits == 1
        assert pager.prefetch(a, rows) == 0                               # mapped now: skipped
        check_stats(pager)


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_prefetch_takes_only_the_free_room(mode):
    with open_pager(mode) as pager:
        a = pager.alloc((4 * BUDGET_PAGES, PS), np.uint8)
        pager.copy(a, np.full(a.shape, 3, np.uint8))
        assert pager.quiesce(timeout=120)
        s0 = pager.stats()
        k = pager.prefetch(a)                                             # every row: far beyond the budget
        assert 0 < k <= BUDGET_PAGES - s0.resident
        assert pager.quiesce(timeout=120)
        s = pager.stats()
        assert s.max_resident <= BUDGET_PAGES and s.faults_missing == s0.faults_missing
        same = np.array_equal(read_all(pager, a), np.full(a.shape, 3, np.uint8))
        assert same
        b = pager.alloc((8, PS), np.uint8)
        assert pager.prefetch(b) == 0                                     # never written: nothing to read
        check_stats(pager)


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_prefetch_make_room_reads_a_batch_beyond_the_free_room_in_few_swap_ins(mode):
    """make_room: the pages beyond the free room wait for it (eviction makes it, no thread waits), so
    more than the free room is read, several pages per swap_in, without a fault, within the budget."""
    with open_pager(mode) as pager:
        a = pager.alloc((4 * BUDGET_PAGES, PS), np.uint8)
        data = np.random.default_rng(5).integers(0, 256, a.shape, dtype=np.uint8)
        pager.copy(a, data)
        assert pager.quiesce(timeout=120)
        rows = np.array([r for r in range(a.shape[0]) if not _resident(page_addr(a, r))][:3 * BUDGET_PAGES // 4])
        s0 = pager.stats()
        assert pager.prefetch(a, rows) <= BUDGET_PAGES - s0.resident      # without make_room: the room only
        assert pager.quiesce(timeout=120)
        s1 = pager.stats()
        rows = np.array([r for r in rows if not _resident(page_addr(a, r))])
        k = pager.prefetch(a, rows, make_room=True)
        assert k > BUDGET_PAGES - s1.resident                             # beyond the free room
        assert pager.quiesce(timeout=120)
        s = pager.stats()
        assert s.pages_in - s1.pages_in == k and s.spec_pages_in - s1.spec_pages_in == k
        assert s.fetch_batches - s1.fetch_batches < k                     # batched: several pages a swap_in
        assert s.faults_missing == s0.faults_missing and s.max_resident <= BUDGET_PAGES
        assert np.array_equal(read_all(pager, a), data)
        check_stats(pager)


def test_prefetch_make_room_of_a_page_the_backend_fails_signals_no_thread_and_ends():
    """A failed read of an announced page has no thread to fail: the pager ends quiet (no hang, no
    SIGBUS), the page stays in the backend and the other pages of the batch are read."""
    backend = FlakyBackend(make_backend("store"), bad_in=[5])
    with Pager(backend, BUDGET_PAGES * PS) as pager:
        a = pager.alloc((4 * BUDGET_PAGES, PS), np.uint8)
        pager.copy(a, np.full(a.shape, 7, np.uint8))
        assert pager.quiesce(timeout=120) and not _resident(page_addr(a, 5))
        rows = np.arange(0, BUDGET_PAGES)                                  # page 5 among them
        s0 = pager.stats()
        k = pager.prefetch(a, rows, make_room=True)
        assert pager.quiesce(timeout=120)
        s = pager.stats()
        assert s.fetch_failures - s0.fetch_failures >= 1 and s.sigbus == s0.sigbus
        assert s.pages_in - s0.pages_in >= k - (s.fetch_failures - s0.fetch_failures) > 0
        assert not _resident(page_addr(a, 5)) and s.max_resident <= BUDGET_PAGES


def test_prefetch_refuses_bad_rows_and_foreign_memory():
    with open_pager("thread") as pager:
        a = pager.alloc((16, PS), np.uint8)
        with pytest.raises(ValueError, match="out of range"):
            pager.prefetch(a, [16])
        with pytest.raises(ValueError, match="out of range"):
            pager.prefetch(a, [-1])
        with pytest.raises(ValueError, match="not in a region"):
            pager.prefetch(np.zeros((16, PS), np.uint8))
        with pytest.raises(ValueError, match="contiguous"):
            pager.prefetch(a[:, ::2])
        assert pager.prefetch(a, []) == 0
    with pytest.raises(ValueError, match="closed"):
        pager.prefetch(a)


def test_prefetch_rows_of_an_adopted_tensor():
    """An adopted EmbeddingBag's weight (rows of 256 B, 4x the budget): the pages of the rows named
    are read in; rows are looked up without a fault."""
    torch = pytest.importorskip("torch")
    emb = torch.nn.EmbeddingBag(4 * BUDGET_PAGES * PS // 256, 64, mode="sum")
    want = emb.weight.detach().clone()
    with open_pager("process") as pager:
        pager.adopt(emb.weight)
        assert pager.quiesce(timeout=120)
        base = emb.weight.data_ptr()
        rows = [r for r in range(0, emb.weight.shape[0], 16) if not _resident(base + r * 256)][:3]
        s0 = pager.stats()
        assert pager.prefetch(emb.weight, rows) == 3                      # 16 rows a page: 3 pages
        assert pager.quiesce(timeout=120)
        with torch.no_grad():
            got = emb.weight[rows].clone()
        assert torch.equal(got, want[rows])
        assert pager.stats().faults_missing == s0.faults_missing
