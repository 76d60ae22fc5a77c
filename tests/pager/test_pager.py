"""The userfaultfd pager (zswap_host.pager, native/pager.c): every byte of a region 4x its budget
survives random reads and writes from several threads over both backends, with and without
discard_on_write; a discard never hits a copy written after it was queued; the region's RSS stays
within the budget; a failed backend read is SIGBUS in the faulting thread only, with a line naming
the error; a GIL deadlock ends in the abort timer's message (on by default, 0 off, bad values
refused); close() leaves no mapping, thread or fd behind; torch tensors and adopted modules compute
as in plain memory. The correctness tests run again with Pager(rearm_wp=) the other way (the
reruns at the end; test_pager_rearm.py tests the setting itself)."""

from __future__ import annotations

import inspect
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from pager_harness import (BUDGET_PAGES, PS, RSS_SLACK_PAGES, SUPPORT_DIR, FlakyBackend, Ledger, _resident, backend, check_stats,  # noqa: F401 - backend: the fixture
                           current_thread_trace, random_reads_and_writes, read_all, stored_by_pager,
                           train_side_by_side, open_fds, settled_tasks, tasks_reach)

pager_mod = pytest.importorskip("zswap_host.pager")
Pager, range_rss = pager_mod.Pager, pager_mod.range_rss

if not os.path.exists("/dev/userfaultfd") and os.geteuid() != 0:
    pytest.skip("userfaultfd needs root here", allow_module_level=True)


@pytest.mark.parametrize("discard_on_write", [False, True])
@pytest.mark.parametrize("nthreads,budget", [(2, BUDGET_PAGES), (8, 16)])
def test_random_reads_and_writes_from_threads(backend, nthreads, budget, discard_on_write):
    """Random reads and writes (spanning pages) over a region 4x the budget from several threads,
    each owning interleaved 4-page chunks so that its own reads check against its own oracle
    while faults from all threads interleave on the same region; every byte checked at the end.
    The 8-thread case on the smallest budget races writes against evictions of their pages (and,
    with discard_on_write, discards against write-outs of the same pages). Once quiet, the backend
    holds exactly the pages the pager counts as stored, and no read ever missed a copy."""
    npages = 4 * budget
    chunk = 4 * PS
    ledger = Ledger(backend)
    with Pager(ledger, budget * PS, evict_batch=max(4, budget // 8), discard_on_write=discard_on_write) as pager:
        a = pager.alloc(npages * PS, np.uint8)
        oracle = np.zeros(npages * PS, np.uint8)
        failures = random_reads_and_writes(pager, a, oracle, nthreads, chunk, seed=100)
        assert not failures, failures[:3]
        assert np.array_equal(read_all(pager, a), oracle)
        assert pager.quiesce(timeout=60)
        s = pager.stats()
        assert s.pages_out > 0 and s.pages_in > 0 and s.evictions > 0
        assert not ledger.bad_reads
        assert backend.stats().pages_stored == len(ledger.held) == stored_by_pager(pager)
        if discard_on_write:
            assert s.stale_copies > 0 and s.discards > 0
            assert s.stale_copies == s.discards + s.discards_skipped  # quiet: none queued
        else:
            assert s.stale_copies == s.discards == s.discards_skipped == ledger.discard_calls == 0
        if pager.rearm_wp:  # the default: dirty pages were re-armed, and writes hit some of them
            assert s.rearms > 0 and s.rearm_faults > 0
        check_stats(pager)


def test_rss_stays_within_budget(backend):
    """Write then read a region 4x the budget: after each sweep the region's Rss (smaps) is at
    most the budget plus RSS_SLACK_PAGES, and the pager never had more pages mapped than that."""
    with Pager(backend, BUDGET_PAGES * PS) as pager:
        a = pager.alloc((4 * BUDGET_PAGES, PS), np.uint8)
        r = pager.regions[0]
        data = np.random.default_rng(1).integers(0, 256, a.shape, dtype=np.uint8)
        limit = (BUDGET_PAGES + RSS_SLACK_PAGES) * PS
        pager.copy(a, data)
        assert 0 < range_rss(r.addr, r.nbytes) <= limit
        assert np.array_equal(read_all(pager, a), data)
        assert 0 < range_rss(r.addr, r.nbytes) <= limit
        check_stats(pager)


def test_clean_pages_are_dropped_without_io(backend):
    """Reading a region back twice: the second sweep's evictions are clean drops (no writes)."""
    with Pager(backend, BUDGET_PAGES * PS) as pager:
        a = pager.alloc(3 * BUDGET_PAGES * PS, np.uint8)
        data = np.random.default_rng(2).integers(0, 256, a.size, dtype=np.uint8)
        pager.copy(a, data)
        read_all(pager, a)
        out_before = pager.stats().pages_out
        assert np.array_equal(read_all(pager, a), data)
        s = pager.stats()
        assert s.pages_out == out_before and s.clean_drops > 0


def test_quiesce_leaves_the_backend_to_the_caller(backend):
    """After a write sweep that sets off evictions, quiesce() returns once nothing is queued, read,
    waiting or due: the backend then sees no call from the pager until the next fault."""
    calls = []
    swap_out, swap_in = backend.swap_out, backend.swap_in
    backend.swap_out = lambda *a, **k: (calls.append("out"), swap_out(*a, **k))[1]
    backend.swap_in = lambda *a, **k: (calls.append("in"), swap_in(*a, **k))[1]
    with Pager(backend, BUDGET_PAGES * PS, evict_batch=8) as pager:
        a = pager.alloc(3 * BUDGET_PAGES * PS, np.uint8)
        data = np.random.default_rng(4).integers(0, 256, a.size, dtype=np.uint8)
        for _ in range(3):
            pager.copy(a, data)
            assert pager.quiesce(timeout=30)
            s, n = pager.stats(), len(calls)
            assert s.in_flight == 0 and s.waiting == 0 and s.resident <= pager.budget_pages
            threading.Event().wait(0.05)
            assert len(calls) == n and pager.stats().evict_batches == s.evict_batches
            backend.idle(0.001)          # the caller's own backend call, between "steps"
        assert "out" in calls and np.array_equal(read_all(pager, a), data)
        check_stats(pager)
    with pytest.raises(ValueError):
        pager.quiesce()


@pytest.mark.parametrize("discard_on_write", [False, True])
def test_discard_on_write_drops_stale_copies(backend, discard_on_write):
    """Pages read back from the backend and then written while resident: with discard_on_write the
    backend forgets each one's copy (pages_stored drops by their number), without it the stale copies stay; every byte reads back either way, and at close nothing is
    left in the backend."""
    k = BUDGET_PAGES // 4
    with Pager(backend, BUDGET_PAGES * PS, discard_on_write=discard_on_write) as pager:
        a = pager.alloc((4 * BUDGET_PAGES, PS), np.uint8)
        rng = np.random.default_rng(5)
        data = rng.integers(0, 256, a.shape, dtype=np.uint8)
        pager.copy(a, data)
        read_all(pager, a[k:])                    # the first k pages: in the backend only
        read_all(pager, a[:k])                    # mapped again, clean, their copies valid
        assert pager.quiesce(timeout=30)
        stored, s0 = backend.stats().pages_stored, pager.stats()
        new = rng.integers(0, 256, (k, PS), dtype=np.uint8)
        pager.copy(a[:k], new)                    # first writes: no fault-in, no eviction
        data[:k] = new
        assert pager.quiesce(timeout=30)
        s = pager.stats()
        assert s.pages_in == s0.pages_in and s.evictions == s0.evictions and s.faults_wp == s0.faults_wp + k
        if discard_on_write:  # (a write racing an eviction in the first sweep may have made one before)
            assert backend.stats().pages_stored == stored - k
            assert s.stale_copies - s0.stale_copies == s.discards - s0.discards == k
            assert 1 <= s.discard_batches - s0.discard_batches <= k  # batched as the faults came
        else:
            assert backend.stats().pages_stored == stored
            assert s.stale_copies == s.discards == 0
        assert backend.stats().pages_stored == stored_by_pager(pager)
        assert np.array_equal(read_all(pager, a), data)   # evicts the dirtied pages: written again
        assert np.array_equal(read_all(pager, a), data)
        check_stats(pager)
    assert backend.stats().pages_stored == 0


def test_discard_never_hits_a_later_write_out(backend):
    """The race the protocol orders: page X is dirtied (its copy queued for discard) and evicted —
    written out afresh — before the discard runs; then dirtied, evicted, faulted in and dirtied
    again. The resolver's discards are held back by a gate meanwhile, so the evictions surely come
    first: a queued discard whose page was written out since must be skipped (the new copy kept),
    and one whose page went stale again must drop only that copy. Contents and the backend's
    holdings checked after each step; no timing involved."""
    ledger = Ledger(backend)
    budget = 16
    with Pager(ledger, budget * PS, evict_batch=2, discard_on_write=True) as pager:
        a = pager.alloc((4 * budget, PS), np.uint8)
        rng = np.random.default_rng(6)
        data = rng.integers(0, 256, a.shape, dtype=np.uint8)
        pager.copy(a, data)
        assert pager.quiesce(timeout=30)
        res = pager._resolver
        real, gate = res._discard, threading.Event()
        res._discard = lambda: real() if gate.is_set() else time.sleep(0.001)
        X, addr = 0, pager.regions[0].addr

        def evict_x() -> None:
            for _ in range(50):               # sweeps of other pages until X is unmapped
                if not _resident(addr):
                    return
                read_all(pager, a[2 * budget:])
            raise AssertionError("X never evicted")

        def dirty_x(v: int) -> None:
            got = np.empty(PS, np.uint8)
            pager.copy(got, a[X])                 # fault in (unless mapped): clean, its copy valid
            assert np.array_equal(got, data[X]) and _resident(addr)
            stale = pager.stats().stale_copies
            data[X] = v
            pager.copy(a[X], data[X])             # first write: the copy is stale, discard queued
            assert pager.stats().stale_copies == stale + 1

        def check_x() -> None:
            got = np.empty(PS, np.uint8)
            pager.copy(got, a[X])
            assert np.array_equal(got, data[X]) and not ledger.bad_reads

        held = lambda: X + pager.id_base in ledger.held  # noqa: E731
        evict_x()                                 # X in the backend only, whatever the first sweep did
        s0 = pager.stats()
        for round_, v in enumerate((1, 2)):
            gate.clear()
            dirty_x(v)
            evict_x()                             # written out (copy v) while its discard waits
            assert pager.stats().discards_skipped - s0.discards_skipped == 2 * round_ + 1
            gate.set()
            assert pager.quiesce(timeout=30)      # the queued discard must not drop copy v
            assert held() and pager.stats().discards == s0.discards + round_
            check_x()                             # faulted in: clean, copy v valid
            gate.clear()
            dirty_x(v + 10)
            evict_x()                             # copy v+10, its discard skipped again
            dirty_x(v + 20)                       # faulted in and dirtied again: copy v+10 stale
            gate.set()
            assert pager.quiesce(timeout=30)
            s = pager.stats()
            assert s.discards - s0.discards == round_ + 1 and not held()
            assert s.discards_skipped - s0.discards_skipped == 2 * round_ + 2
            assert s.stale_copies - s0.stale_copies == 3 * (round_ + 1)
            evict_x()                             # copy v+20 written
            assert held()
            check_x()
        assert np.array_equal(read_all(pager, a), data) and not ledger.bad_reads
        assert pager.quiesce(timeout=30)
        assert backend.stats().pages_stored == len(ledger.held) == stored_by_pager(pager)
        check_stats(pager)


def test_failed_discards_leave_the_copy_for_close(backend):
    """backend.discard failing: counted as backend errors, the stale copies stay (no retry loop)
    until the pages are written out over them, every byte reads back, and close() still discards
    every page the pager put in the backend."""
    flaky = FlakyBackend(backend, fail_discard=10**9)
    k = BUDGET_PAGES // 4
    with Pager(flaky, BUDGET_PAGES * PS, discard_on_write=True) as pager:
        a = pager.alloc((4 * BUDGET_PAGES, PS), np.uint8)
        data = np.random.default_rng(7).integers(0, 256, a.shape, dtype=np.uint8)
        pager.copy(a, data)
        read_all(pager, a[k:])
        read_all(pager, a[:k])
        assert pager.quiesce(timeout=30)
        stored, s0 = backend.stats().pages_stored, pager.stats()
        data[:k] = data[:k][::-1].copy()
        pager.copy(a[:k], data[:k])
        assert pager.quiesce(timeout=30)
        s = pager.stats()
        assert s.backend_errors >= 1 and s.stale_copies - s0.stale_copies == k and s.discards == s0.discards
        assert backend.stats().pages_stored == stored == stored_by_pager(pager)
        flaky.fail_discard = 0
        assert np.array_equal(read_all(pager, a), data)
        assert pager.quiesce(timeout=30)
        assert pager.stats().discards_skipped - s0.discards_skipped == k  # written over on eviction
        assert backend.stats().pages_stored == stored_by_pager(pager)
    assert backend.stats().pages_stored == 0


def test_untouched_memory_is_zero_and_free(backend):
    with Pager(backend, BUDGET_PAGES * PS) as pager:
        a = pager.alloc((8 * BUDGET_PAGES, 512), np.float64)
        assert not read_all(pager, a).any()
        s = pager.stats()
        assert s.pages_in == 0 and s.pages_out == 0 and s.zero_fills == 8 * BUDGET_PAGES


# ---------------------------------------------------------------- partial failure
def test_failed_writes_lose_nothing(backend):
    """swap_out failing for a while: the victims stay resident (evictions undone), the pager
    retries, and every byte survives."""
    flaky = FlakyBackend(backend, fail_out=5)
    with Pager(flaky, BUDGET_PAGES * PS) as pager:
        a = pager.alloc(4 * BUDGET_PAGES * PS, np.uint8)
        data = np.random.default_rng(3).integers(0, 256, a.size, dtype=np.uint8)
        pager.copy(a, data)
        assert np.array_equal(read_all(pager, a), data)
        s = pager.stats()
        assert s.evict_aborts == 5 and s.backend_errors == 5 and len(pager.errors) == 5
        assert s.max_resident <= pager.budget_pages and s.uffd_errors == 0


SIGBUS_CHILD = textwrap.dedent("""
    import faulthandler, sys, threading
    import numpy as np
    sys.path.insert(0, {tests!r})
    from pager_harness import FlakyBackend, make_backend, PS, BUDGET_PAGES
    from zswap_host.pager import Pager

    faulthandler.enable()
    BAD = 3
    backend = FlakyBackend(make_backend({kind!r}), bad_in=[BAD])
    pager = Pager(backend, BUDGET_PAGES * PS)
    a = pager.alloc((4 * BUDGET_PAGES, PS), np.uint8)
    data = np.random.default_rng(4).integers(0, 256, a.shape, dtype=np.uint8)
    pager.copy(a, data)                     # page BAD is evicted to the backend
    if {check_others}:
        out = np.empty_like(a)
        for p in range(a.shape[0]):         # every other page reads back intact
            if p != BAD:
                pager.copy(out[p], a[p])
        ok = all(np.array_equal(out[p], data[p]) for p in range(a.shape[0]) if p != BAD)
        print("intact", ok, flush=True)

    def toucher():
        buf = np.empty(PS, np.uint8)
        pager.copy(buf, a[BAD])             # SIGBUS here, in this thread
        print("not reached", flush=True)

    t = threading.Thread(target=toucher, name="toucher")
    t.start()
    t.join()
    print("survived", flush=True)
""")


@pytest.mark.parametrize("check_others", [False, True])
def test_backend_read_failure_is_sigbus_in_the_faulting_thread(check_others):
    kind = "store" if check_others else "conv"
    code = SIGBUS_CHILD.format(tests=SUPPORT_DIR, kind=kind, check_others=check_others)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == -signal.SIGBUS, (r.returncode, r.stdout, r.stderr[-2000:])
    assert "Bus error" in r.stderr
    # one line naming the backend's error, before the signal
    assert "zswap pager: SIGBUS to thread" in r.stderr and "OSError: [Errno 5] injected read failure" in r.stderr
    # faulthandler prints the thread that took the signal first, as "Current thread"
    current = current_thread_trace(r.stderr)
    assert "in toucher" in current, r.stderr[-2000:]
    assert "not reached" not in r.stdout and "survived" not in r.stdout
    if check_others:
        assert "intact True" in r.stdout, r.stdout


GIL_CHILD = textwrap.dedent("""
    import os, sys
    import numpy as np
    sys.path.insert(0, {tests!r})
    from pager_harness import make_backend, PS, BUDGET_PAGES
    import zswap_host.pager.abort as pager_module
    from zswap_host.pager import Pager

    pager_module.DEFAULT_ABORT_S = {default}    # the default, shortened for the test (it is 60 s)
    pager = Pager(make_backend("conv"), BUDGET_PAGES * PS)
    a = pager.alloc((4 * BUDGET_PAGES, PS), np.uint8)
    pager.copy(a, np.ones(a.shape, np.uint8))   # three quarters of the pages are in the backend
    print("touching", pager.abort_s, flush=True)
    # scalar accesses hold the GIL: the first one to an evicted page waits for a resolver that cannot run
    print(sum(int(a[p, 0]) for p in range(a.shape[0])))
""")


def gil_deadlock(abort_env: str | None, default: float = 60, timeout: float = 120) -> subprocess.CompletedProcess:
    code = GIL_CHILD.format(tests=SUPPORT_DIR, default=default)
    env = {k: v for k, v in os.environ.items() if k != "ZSWAP_PAGER_ABORT_S"}
    if abort_env is not None:
        env["ZSWAP_PAGER_ABORT_S"] = abort_env
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.parametrize("abort_env, default", [("3", 60), (None, 3)])
def test_a_gil_deadlock_aborts_with_a_clear_message(abort_env, default):
    """The documented limit (docs/design.md, "The GIL contract"): the abort timer, set or by default,
    ends the deadlock with a message saying what happened and what to do."""
    r = gil_deadlock(abort_env, default)
    assert r.returncode == -signal.SIGABRT, (r.returncode, r.stdout, r.stderr[-2000:])
    assert "touching 3.0" in r.stdout
    msg = [ln for ln in r.stderr.splitlines() if ln.startswith("zswap pager: aborting: page faults have waited")]
    assert len(msg) == 1, r.stderr[-2000:]
    assert "holds the GIL" in msg[0] and "only from calls that release the GIL" in msg[0]
    assert "ZSWAP_PAGER_ABORT_S=3 set this limit (0: never abort)" in msg[0]


def test_abort_timer_zero_is_off():
    """ZSWAP_PAGER_ABORT_S=0: the deadlock is not ended (the child is still there after 3 s past the
    point a 1 s timer would have fired; killed by the timeout)."""
    with pytest.raises(subprocess.TimeoutExpired) as e:
        gil_deadlock("0", default=1, timeout=8)
    assert b"touching 0.0" in (e.value.stdout or b"")


@pytest.mark.parametrize("value", ["abc", "-1", "nan", "inf"])
def test_bad_abort_timer_is_refused(monkeypatch, backend, value):
    monkeypatch.setenv("ZSWAP_PAGER_ABORT_S", value)
    with pytest.raises(ValueError, match="ZSWAP_PAGER_ABORT_S"):
        Pager(backend, BUDGET_PAGES * PS)
    monkeypatch.delenv("ZSWAP_PAGER_ABORT_S")
    with Pager(backend, BUDGET_PAGES * PS) as pager:
        assert pager.abort_s == 60


# ---------------------------------------------------------------- lifetime

def test_close_leaves_nothing_registered(backend):
    fds, tasks = open_fds(), settled_tasks()
    pager = Pager(backend, BUDGET_PAGES * PS)
    a = pager.alloc(4 * BUDGET_PAGES * PS, np.uint8)
    b = pager.alloc(BUDGET_PAGES * PS, np.uint8)
    pager.copy(a, np.full(a.size, 7, np.uint8))
    regions = pager.regions
    assert open_fds() > fds and tasks_reach(tasks + 2) == tasks + 2  # the uffd and eventfd; handler and resolver
    assert all(range_rss(r.addr, r.nbytes) is not None for r in regions)
    stored = pager.stats().pages_out
    assert stored > 0 and backend.stats().pages_stored > 0
    pager.close()
    del a, b
    assert open_fds() == fds and tasks_reach(tasks) == tasks
    assert all(range_rss(r.addr, r.nbytes) is None for r in regions)
    assert backend.stats().pages_stored == 0  # the pager's pages were discarded
    pager.close()  # a no-op
    with pytest.raises(ValueError):
        pager.alloc(10)
    assert pager.stats().pages_out == stored


def test_arguments_are_checked(backend):
    with pytest.raises(ValueError):
        Pager(backend, 15 * PS)
    with pytest.raises(ValueError):
        Pager(backend, BUDGET_PAGES * PS, page_size=8192)
    with Pager(backend, BUDGET_PAGES * PS) as pager:
        with pytest.raises(ValueError):
            pager.alloc(0)
        with pytest.raises(ValueError):
            pager.alloc(3, object)
        with pytest.raises(ValueError):
            pager.copy(pager.alloc(10, np.uint8), np.zeros(11, np.uint8))


# ---------------------------------------------------------------- torch
def test_tensor_and_adopted_module_train_like_plain_memory(backend):
    """An EmbeddingBag whose weight is adopted into paged memory (4x the budget) trains to the
    same losses and weights as the same module in plain memory."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    plain = torch.nn.EmbeddingBag(1000, 256, mode="sum")
    paged = torch.nn.EmbeddingBag(1000, 256, mode="sum")
    paged.load_state_dict(plain.state_dict())
    with Pager(backend, BUDGET_PAGES * PS) as pager:
        weight = paged.weight
        assert pager.adopt(paged.weight) is weight and paged.weight.data_ptr() == pager.regions[0].addr
        t = pager.tensor((300, 1024), torch.float32)
        t.fill_(0.5)
        assert float(t.sum()) == 0.5 * 300 * 1024
        train_side_by_side(plain, paged)
        s = pager.stats()
        assert s.pages_in > 0 and s.pages_out > 0
        check_stats(pager)


@pytest.mark.parametrize("shape", [(-2, -3), -5, (2**31 + 1, 2**33), (2**32, 2**32), (2**63,), (1 << 48,)])
def test_a_rejected_alloc_registers_nothing(backend, shape):
    """Negative dimensions, shapes whose size overflows int64 (np.prod wraps) and sizes beyond the
    address space are refused before a region is mapped or registered (issue 34)."""
    with Pager(backend, BUDGET_PAGES * PS) as pager:
        with pytest.raises(ValueError):
            pager.alloc(shape, np.uint8)
        with pytest.raises(ValueError):
            pager.tensor(shape)
        assert pager.regions == () and pager.stats().regions == 0
        a = pager.alloc(10, np.uint8)                      # the pager still works
        assert a.shape == (10,) and pager.regions[0].first_page == 0


def test_id_base_is_checked_against_the_id_range(backend):
    """Backend ids are int64 in [0, 2**63 - 1]: an id_base past it is refused, and an alloc whose
    pages' ids would pass it is refused before anything is registered (ids would wrap negative)."""
    with pytest.raises(ValueError):
        Pager(backend, BUDGET_PAGES * PS, id_base=2**63)
    with Pager(backend, BUDGET_PAGES * PS, id_base=2**63 - 10) as pager:
        a = pager.alloc(10 * PS, np.uint8)                 # ids up to 2**63 - 1: fine
        with pytest.raises(ValueError, match="id"):
            pager.alloc(PS, np.uint8)
        assert len(pager.regions) == 1
        pager.copy(a, np.full(a.size, 3, np.uint8))
        assert (read_all(pager, a) == 3).all()


# ---------------------------------------------------------------- rearm_wp the other way
# the tests above, run again with every Pager(...) defaulting to rearm_wp=True
RERUN = ["test_random_reads_and_writes_from_threads", "test_rss_stays_within_budget",
         "test_clean_pages_are_dropped_without_io", "test_quiesce_leaves_the_backend_to_the_caller",
         "test_discard_on_write_drops_stale_copies", "test_discard_never_hits_a_later_write_out",
         "test_failed_discards_leave_the_copy_for_close", "test_untouched_memory_is_zero_and_free",
         "test_failed_writes_lose_nothing", "test_close_leaves_nothing_registered"]
# of those, the ones whose dirty pages surely meet the hand (re-arms must happen), and the one whose
# random writes surely hit a re-armed page (re-arm faults must happen)
MUST_REARM = {"test_random_reads_and_writes_from_threads", "test_quiesce_leaves_the_backend_to_the_caller"}
MUST_REARM_FAULT = {"test_random_reads_and_writes_from_threads"}


DEFAULT = inspect.signature(Pager.__init__).parameters["rearm_wp"].default
OTHER = not DEFAULT  # the tests above run with the default; their reruns the other way


@pytest.fixture
def rearm_on(monkeypatch):
    """Every Pager the tests above make defaults to rearm_wp=OTHER; yields the pagers made."""
    made: list = []

    class RearmPager(Pager):
        def __init__(self, *a, **k):
            k.setdefault("rearm_wp", OTHER)
            super().__init__(*a, **k)
            made.append(self)

    monkeypatch.setattr(sys.modules[__name__], "Pager", RearmPager)
    yield made


def _rerun(name):
    fn = globals()[name]

    names = list(inspect.signature(fn).parameters)

    def test(rearm_on, **kwargs):
        fn(**kwargs)
        assert rearm_on and all(p.rearm_wp == OTHER for p in rearm_on)
        stats = [p.stats() for p in rearm_on]
        assert all(s.uffd_errors == 0 for s in stats)
        assert all(s.rearm_faults <= s.rearms for s in stats)
        if not OTHER:
            assert all(s.rearms == s.rearm_faults == 0 for s in stats)
        if OTHER and name in MUST_REARM:
            assert sum(s.rearms for s in stats) > 0
        if OTHER and name in MUST_REARM_FAULT:
            assert sum(s.rearm_faults for s in stats) > 0

    test.__name__ = f"{name}_rearm"
    test.__doc__ = f"{name} with rearm_wp={OTHER}: {fn.__doc__}"
    test.__signature__ = inspect.Signature(
        [inspect.Parameter("rearm_on", inspect.Parameter.POSITIONAL_OR_KEYWORD)] +
        [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY) for n in names])
    test.pytestmark = list(getattr(fn, "pytestmark", []))  # the same parametrization
    return test


for _name in RERUN:
    globals()[f"{_name}_rearm"] = _rerun(_name)
