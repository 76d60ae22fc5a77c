"""A full or failing backend fails the faulting access, never hangs (issue 33): when the backend
refuses every write-out that would make room (a full SwapStore), a fault waiting for room ends in
SIGBUS in the faulting thread with a line naming the backend's error, instead of waiting forever;
while writes fail, the clean pages still make room, so other regions stay usable, and once the
backend recovers every byte is there. Children in subprocesses with timeouts: the signal ends the
process, and a regression would hang."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("zswap_host.pager")
if not os.path.exists("/dev/userfaultfd") and os.geteuid() != 0:
    pytest.skip("userfaultfd needs root here", allow_module_level=True)

from pager_harness import current_thread_trace, SUPPORT_DIR as TESTS  # noqa: E402 - the children import pager_harness from there


def run_child(code: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code).format(tests=TESTS)],
                          capture_output=True, text=True, timeout=timeout)


FULL_CHILD = """
    import faulthandler, sys, threading
    import numpy as np
    sys.path.insert(0, {tests!r})
    from pager_harness import PS, BUDGET_PAGES
    from zswap_host import SwapStore, open_device
    from zswap_host.pager import Pager

    faulthandler.enable()
    store = SwapStore(open_device("emu://?zones=8&zone_size=1MiB&preset=none"))
    pager = Pager(store, BUDGET_PAGES * PS)
    other = pager.alloc((BUDGET_PAGES, PS), np.uint8)          # a region of its own, never touched
    a = pager.alloc((2 * store.capacity_pages, PS), np.uint8)  # twice what the store holds
    print("capacity", store.capacity_pages, flush=True)

    def toucher():
        pager.copy(a, np.ones(a.shape, np.uint8))   # the store fills up half-way: SIGBUS here
        print("not reached", flush=True)

    t = threading.Thread(target=toucher, name="toucher")
    t.start()
    t.join()
    print("survived", flush=True)
"""


def test_a_full_store_is_sigbus_in_the_faulting_thread_naming_the_error():
    r = run_child(FULL_CHILD)
    assert r.returncode == -signal.SIGBUS, (r.returncode, r.stdout, r.stderr[-3000:])
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("zswap pager: SIGBUS to thread")]
    assert len(lines) == 1, r.stderr[-3000:]    # one thread waited for room: one line
    assert "needs room in the budget" in lines[0] and "SwapFullError: swap store full" in lines[0], lines
    current = current_thread_trace(r.stderr)
    assert "in toucher" in current, r.stderr[-3000:]
    assert "capacity" in r.stdout and "not reached" not in r.stdout and "survived" not in r.stdout


FAILING_WRITES_CHILD = """
    import sys
    import numpy as np
    sys.path.insert(0, {tests!r})
    from pager_harness import FlakyBackend, make_backend, read_all, PS, BUDGET_PAGES
    from zswap_host.pager import Pager

    rng = np.random.default_rng(5)
    flaky = FlakyBackend(make_backend("store"))
    pager = Pager(flaky, BUDGET_PAGES * PS)
    b = pager.alloc((4 * BUDGET_PAGES, PS), np.uint8)
    bdata = rng.integers(0, 256, b.shape, dtype=np.uint8)
    pager.copy(b, bdata)                               # b is in the backend now
    assert np.array_equal(read_all(pager, b), bdata)   # and its resident pages are clean
    a = pager.alloc((BUDGET_PAGES // 4, PS), np.uint8)
    adata = rng.integers(0, 256, a.shape, dtype=np.uint8)
    pager.copy(a, adata)                               # a quarter of the budget dirty, resident
    flaky.fail_out = 10 ** 9                           # from now on every write-out fails
    print("b while writes fail", np.array_equal(read_all(pager, b), bdata), flush=True)
    s = pager.stats()
    print("aborts", s.evict_aborts > 0, "clean drops", s.clean_drops > 0, "sigbus", s.sigbus, flush=True)
    flaky.fail_out = 0                                 # the backend recovers
    print("b again", np.array_equal(read_all(pager, b), bdata), flush=True)   # a is written out now
    print("a", np.array_equal(read_all(pager, a), adata), flush=True)
    print("a written out", pager.stats().pages_out >= a.shape[0], flush=True)
    pager.close()
    print("closed", flush=True)
"""


def test_failing_writes_leave_other_regions_usable_and_lose_nothing():
    """Every write-out fails while a region is dirty: another region's clean pages still make room
    (reads of it complete, no SIGBUS, since no fault is left without room); after the backend
    recovers the dirty region is written out and reads back intact."""
    r = run_child(FAILING_WRITES_CHILD)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr[-3000:])
    assert r.stdout.split("\n")[:-1] == ["b while writes fail True", "aborts True clean drops True sigbus 0",
                                         "b again True", "a True", "a written out True", "closed"], r.stdout
    assert "SIGBUS" not in r.stderr, r.stderr[-3000:]
