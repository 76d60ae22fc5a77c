"""The backend served from a process of its own (``Pager.process``, issue 33): every byte survives
random reads and writes from several threads over both backends, with and without discard_on_write
and fault-around, and no read misses a copy; the data and the losses of an adopted EmbeddingBag equal
the thread mode's and plain memory's; a failed read is SIGBUS in the faulting thread naming the
error; a full store is SIGBUS naming SwapFullError; failed writes lose nothing and their errors come
back from the child; a child killed mid-copy is SIGBUS in the copying thread naming the signal, and
a child killed while idle leaves resident and new memory usable and close() working; a factory that
fails or cannot be pickled is an error that leaves no process, thread or fd behind; close() leaves
none either, and close(timeout) kills a backend process stuck in its final discard; a stuck backend ends in the abort timer naming the backend process; a resolver that dies
in the child ends it (status 70) and fails the fault; the child exits when the pager's process dies. The hang list in process mode is in test_pager_hang_list.py. Children in subprocesses
with timeouts where a signal ends the process (a regression would hang, not pass)."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from pager_harness import (current_thread_trace, BUDGET_PAGES, PS, SUPPORT_DIR, check_stats, flaky_backend, ledger_backend, stuck_backend,
                           ledger_state, make_backend, random_reads_and_writes, read_all, stored_by_pager,
                           train_side_by_side, open_fds, settled_tasks, tasks_reach)

pager_mod = pytest.importorskip("zswap_host.pager")
Pager = pager_mod.Pager

if not os.path.exists("/dev/userfaultfd") and os.geteuid() != 0:
    pytest.skip("userfaultfd needs root here", allow_module_level=True)



def run_child(code: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code).format(tests=SUPPORT_DIR)],
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("kind", ["store", "conv"])
@pytest.mark.parametrize("discard_on_write,fault_around", [(False, 0), (True, 0), (False, 8)])
def test_random_reads_and_writes_from_threads(kind, discard_on_write, fault_around):
    """4 threads of random reads and writes over a region 4x the budget (the smallest budget the
    harness uses: writes race evictions); every byte checked; once quiet the backend (in the
    child) holds exactly the pages the pager counts as stored and no read missed a copy."""
    npages = 4 * BUDGET_PAGES
    with Pager.process(functools.partial(ledger_backend, kind), BUDGET_PAGES * PS, evict_batch=8,
                       discard_on_write=discard_on_write, fault_around=fault_around) as pager:
        assert pager.serve == "process" and pager.backend is None and pager.backend_pid != os.getpid()
        a = pager.alloc(npages * PS, np.uint8)
        oracle = np.zeros(npages * PS, np.uint8)
        failures = random_reads_and_writes(pager, a, oracle, 4, 4 * PS, seed=300)
        assert not failures, failures[:3]
        same = np.array_equal(read_all(pager, a), oracle)
        assert same
        assert pager.quiesce(timeout=120)
        s = pager.stats()
        assert s.pages_out > 0 and s.pages_in > 0 and s.evictions > 0
        bad_reads, held, stored, discard_calls = pager.backend_call(ledger_state)
        assert not bad_reads
        assert stored == held == stored_by_pager(pager)
        if discard_on_write:
            assert s.stale_copies > 0 and s.discards > 0 and discard_calls > 0
        check_stats(pager)


def test_same_data_as_the_thread_mode():
    """One thread, the same writes and reads in both modes: the same bytes, and both equal the oracle."""
    rng = np.random.default_rng(7)
    data = rng.integers(0, 256, (4 * BUDGET_PAGES, PS), dtype=np.uint8)
    rows = rng.integers(0, data.shape[0], 300)
    out = {}
    for mode in ("thread", "process"):
        if mode == "thread":
            pager = Pager(make_backend("store"), BUDGET_PAGES * PS)
        else:
            pager = Pager.process(functools.partial(make_backend, "store"), BUDGET_PAGES * PS)
        with pager:
            a = pager.alloc(data.shape, np.uint8)
            pager.copy(a, data)
            for k, r in enumerate(rows):              # rewrite one byte of random pages
                pager.copy(a[r, k % PS:k % PS + 1], np.array([k % 251], np.uint8))
            out[mode] = read_all(pager, a)
            check_stats(pager)
    want = data.copy()
    for k, r in enumerate(rows):
        want[r, k % PS] = k % 251
    assert np.array_equal(out["thread"], want) and np.array_equal(out["process"], want)


def test_adopted_module_trains_like_plain_memory():
    """An EmbeddingBag adopted by a process-mode pager (4x the budget) trains to the same losses and
    weights as in plain memory, bit for bit."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    plain = torch.nn.EmbeddingBag(1000, 256, mode="sum")
    paged = torch.nn.EmbeddingBag(1000, 256, mode="sum")
    paged.load_state_dict(plain.state_dict())
    with Pager.process(functools.partial(make_backend, "store"), BUDGET_PAGES * PS, discard_on_write=True) as pager:
        pager.adopt(paged.weight)
        train_side_by_side(plain, paged)
        s = pager.stats()
        assert s.pages_in > 0 and s.pages_out > 0
        check_stats(pager)


def test_failed_writes_lose_nothing_and_their_errors_come_back():
    """The first 5 swap_outs fail (set in the child through backend_call): the dirty pages stay,
    are written later, every byte reads back; the child's exceptions are the pager's errors."""
    with Pager.process(functools.partial(flaky_backend, "store"), BUDGET_PAGES * PS) as pager:
        pager.backend_call(setattr, "fail_out", 5)
        a = pager.alloc((4 * BUDGET_PAGES, PS), np.uint8)
        data = np.random.default_rng(3).integers(0, 256, a.shape, dtype=np.uint8)
        pager.copy(a, data)
        same = np.array_equal(read_all(pager, a), data)
        assert same
        s = pager.stats()
        assert s.evict_aborts >= 5 and s.backend_errors == 5 and s.sigbus == 0
        assert len(pager.errors) == 5 and all("injected write failure" in str(e) for e in pager.errors)
        assert pager.backend_call(getattr, "fail_out") == 0
        with pytest.raises(AttributeError):          # fn's exception is raised here
            pager.backend_call(getattr, "no_such_attribute")


SIGBUS_READ_CHILD = """
    import faulthandler, functools, sys, threading
    import numpy as np
    sys.path.insert(0, {tests!r})
    from pager_harness import flaky_backend, PS, BUDGET_PAGES
    from zswap_host.pager import Pager

    faulthandler.enable()
    BAD = 3
    pager = Pager.process(functools.partial(flaky_backend, "store", bad_in=[BAD]), BUDGET_PAGES * PS)
    a = pager.alloc((4 * BUDGET_PAGES, PS), np.uint8)
    data = np.random.default_rng(4).integers(0, 256, a.shape, dtype=np.uint8)
    pager.copy(a, data)                     # page BAD is evicted to the backend
    out = np.empty_like(a)
    for p in range(a.shape[0]):             # every other page reads back intact
        if p != BAD:
            pager.copy(out[p], a[p])
    print("intact", all(np.array_equal(out[p], data[p]) for p in range(a.shape[0]) if p != BAD), flush=True)

    def toucher():
        print(int(a[BAD, 0]))               # a scalar read (holds the GIL): SIGBUS here
        print("not reached", flush=True)

    t = threading.Thread(target=toucher, name="toucher")
    t.start()
    t.join()
    print("survived", flush=True)
"""


def test_a_failed_read_is_sigbus_in_the_faulting_thread():
    r = run_child(SIGBUS_READ_CHILD)
    assert r.returncode == -signal.SIGBUS, (r.returncode, r.stdout, r.stderr[-3000:])
    assert "zswap pager: SIGBUS to thread" in r.stderr and "OSError: [Errno 5] injected read failure" in r.stderr
    current = current_thread_trace(r.stderr)
    assert "in toucher" in current, r.stderr[-3000:]
    assert "intact True" in r.stdout and "not reached" not in r.stdout and "survived" not in r.stdout


FULL_CHILD = """
    import faulthandler, functools, sys, threading
    import numpy as np
    sys.path.insert(0, {tests!r})
    from pager_harness import store_backend, PS, BUDGET_PAGES
    from zswap_host.pager import Pager

    faulthandler.enable()
    pager = Pager.process(functools.partial(store_backend, "emu://?zones=8&zone_size=1MiB&preset=none"),
                          BUDGET_PAGES * PS)
    capacity = pager.backend_call(getattr, "capacity_pages")
    a = pager.alloc((2 * capacity, PS), np.uint8)  # twice what the store holds
    print("capacity", capacity, flush=True)

    def toucher():
        a[:] = 1                            # numpy fill: SIGBUS once the store is full
        print("not reached", flush=True)

    t = threading.Thread(target=toucher, name="toucher")
    t.start()
    t.join()
    print("survived", flush=True)
"""


def test_a_full_store_is_sigbus_naming_the_error():
    r = run_child(FULL_CHILD)
    assert r.returncode == -signal.SIGBUS, (r.returncode, r.stdout, r.stderr[-3000:])
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("zswap pager: SIGBUS to thread")]
    assert len(lines) == 1, r.stderr[-3000:]
    assert "needs room in the budget" in lines[0] and "SwapFullError: swap store full" in lines[0], lines
    current = current_thread_trace(r.stderr)
    assert "in toucher" in current, r.stderr[-3000:]
    assert "capacity" in r.stdout and "not reached" not in r.stdout and "survived" not in r.stdout


KILLED_CHILD = """
    import faulthandler, functools, os, signal, sys, threading, time
    import numpy as np
    sys.path.insert(0, {tests!r})
    import pager_hang_child
    from pager_harness import PS, BUDGET_PAGES
    from zswap_host.pager import Pager

    faulthandler.enable()
    pager = Pager.process(functools.partial(pager_hang_child.make_slow_store), BUDGET_PAGES * PS)
    a = pager.alloc((8 * BUDGET_PAGES, PS), np.uint8)
    pager.copy(a, np.ones(a.shape, np.uint8))   # most pages in the backend; reads take 50 ms each
    started = threading.Event()

    def toucher():
        started.set()
        print(int(a.sum(dtype=np.float64)))     # ~450 slow reads: still reading at the kill
        print("not reached", flush=True)

    t = threading.Thread(target=toucher, name="toucher")
    before = pager.stats().pages_in
    t.start()
    started.wait()
    while pager.stats().pages_in == before:     # the copy is under way
        time.sleep(0.01)
    print("killing", flush=True)
    os.kill(pager.backend_pid, signal.SIGKILL)
    t.join()
    print("survived", flush=True)
"""


def test_a_child_killed_mid_run_is_sigbus_in_the_faulting_thread():
    r = run_child(KILLED_CHILD)
    assert r.returncode == -signal.SIGBUS, (r.returncode, r.stdout, r.stderr[-3000:])
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("zswap pager: SIGBUS to thread")]
    assert lines and all("was killed by signal 9" in ln for ln in lines), r.stderr[-3000:]
    current = current_thread_trace(r.stderr)
    assert "in toucher" in current, r.stderr[-3000:]
    assert "killing" in r.stdout and "not reached" not in r.stdout and "survived" not in r.stdout


IDLE_KILL_CHILD = """
    import functools, os, signal, sys, time
    import numpy as np
    sys.path.insert(0, {tests!r})
    from pager_harness import make_backend, PS, BUDGET_PAGES
    from zswap_host.pager import Pager

    pager = Pager.process(functools.partial(make_backend, "store"), BUDGET_PAGES * PS)
    b = pager.alloc((BUDGET_PAGES // 2, PS), np.uint8)    # fits: stays resident, never evicted
    b[:] = 9
    a = None
    if {touch_stored}:
        a = pager.alloc((4 * BUDGET_PAGES, PS), np.uint8)
        pager.copy(a, np.full(a.shape, 5, np.uint8))        # most of a in the backend
        b[:] = 9                                           # (b may have been evicted: in again)
    assert pager.quiesce(timeout=120)
    os.kill(pager.backend_pid, signal.SIGKILL)
    end = time.monotonic() + 120
    while not pager.backend_gone and time.monotonic() < end:
        time.sleep(0.01)
    print("gone", pager.backend_gone, flush=True)
    if {touch_stored}:
        print(int(a[0, 0]), flush=True)                    # page 0 is in the dead backend: SIGBUS
        print("not reached", flush=True)
    print("resident intact", bool((b == 9).all()), flush=True)
    c = pager.alloc((8, PS), np.uint8)
    c[:] = 3
    print("new region", bool((c == 3).all()), flush=True)
    pager.close()
    print("closed", pager.stats().sigbus, flush=True)
"""


@pytest.mark.parametrize("touch_stored", [False, True])
def test_a_child_killed_while_idle(touch_stored):
    """Killed while nothing waits: memory that needs no backend keeps working and close() ends; a
    touch of a page the dead backend held is SIGBUS naming the signal (never a hang)."""
    r = run_child(IDLE_KILL_CHILD.replace("{touch_stored}", str(touch_stored)))
    why = (r.returncode, r.stdout, r.stderr[-3000:])
    assert "gone True" in r.stdout, why
    if touch_stored:
        assert r.returncode == -signal.SIGBUS, why
        assert "was killed by signal 9: pages it holds cannot be read" in r.stderr, why
        assert "not reached" not in r.stdout, why
    else:
        assert r.returncode == 0, why
        assert r.stdout.split("\n")[1:-1] == ["resident intact True", "new region True", "closed 0"], why


def failing_factory():
    raise OSError(19, "no such device (on purpose)")


def test_a_factory_that_fails_leaves_nothing_behind():
    fds, tasks = open_fds(), settled_tasks()
    with pytest.raises(RuntimeError, match="could not build the backend: OSError: .*on purpose") as info:
        Pager.process(failing_factory, BUDGET_PAGES * PS)
    assert isinstance(info.value.__cause__, OSError)
    with pytest.raises(Exception):                   # a lambda cannot be pickled
        Pager.process(lambda: make_backend("store"), BUDGET_PAGES * PS)
    with pytest.raises(RuntimeError, match="backend page_size 8192 != pager page_size 4096"):
        Pager.process(big_pages, BUDGET_PAGES * PS)
    assert open_fds() == fds and tasks_reach(tasks) == tasks


class BigPages:
    page_size = 2 * PS


def big_pages():
    return BigPages()


def test_close_leaves_no_process_thread_or_fd():
    fds, tasks = open_fds(), settled_tasks()
    pager = Pager.process(functools.partial(ledger_backend, "conv"), BUDGET_PAGES * PS)
    a = pager.alloc((4 * BUDGET_PAGES, PS), np.uint8)
    pager.copy(a, np.full(a.shape, 7, np.uint8))
    assert pager.quiesce(timeout=120)
    assert pager.backend_call(ledger_state)[1] > 0
    pid = pager.backend_pid
    assert tasks_reach(tasks + 2) == tasks + 2                     # the fault handler and the bridge: no Python thread
    pager.close()
    del a
    assert open_fds() == fds and tasks_reach(tasks) == tasks
    assert not _running(pid)
    pager.close()                                    # a no-op
    with pytest.raises(ValueError):
        pager.backend_call(ledger_state)


def test_close_kills_a_backend_process_stuck_in_its_final_discard():
    """A backend call that never returns does not hang close(timeout): the process is killed, the
    memory released, and a BackendGone saying the pages were not discarded is counted."""
    fds, tasks = open_fds(), settled_tasks()
    pager = Pager.process(functools.partial(stuck_backend, "store", "discard"), BUDGET_PAGES * PS)
    a = pager.alloc((4 * BUDGET_PAGES, PS), np.uint8)
    pager.copy(a, np.full(a.shape, 3, np.uint8))     # most pages go to the backend
    assert pager.quiesce(timeout=120)
    pid = pager.backend_pid
    with pytest.raises(ValueError, match="seconds"):
        pager.close(timeout=-1)                      # refused: nothing done
    assert not pager.closed and int(a[0, 0]) == 3
    pager.close(timeout=2)
    del a
    assert pager.closed and not _running(pid) and open_fds() == fds and tasks_reach(tasks) == tasks
    assert pager.stats().backend_errors == 1
    assert isinstance(pager.errors[-1], pager_mod.BackendGone)
    assert "did not finish the final discard" in str(pager.errors[-1]) and "not discarded" in str(pager.errors[-1])


def test_close_timeout_is_for_the_backend_process_only():
    backend = make_backend("store")
    pager = Pager(backend, BUDGET_PAGES * PS)
    a = pager.alloc(PS, np.uint8)
    a[:] = 5
    with pytest.raises(ValueError, match="thread-mode"):
        pager.close(timeout=1)
    assert not pager.closed and int(a[0]) == 5
    pager.close()
    del a
    backend.close()


def test_a_gil_holding_sweep_ends_in_process_mode():
    """The call that deadlocks the thread mode, in this process: a float64 sum of an int64 array
    whose pages are mostly in the backend, then scalar reads in a loop."""
    with Pager.process(functools.partial(make_backend, "store"), BUDGET_PAGES * PS) as pager:
        a = pager.alloc(8 * BUDGET_PAGES * PS // 8, np.int64)
        ref = np.arange(a.size, dtype=np.int64)
        pager.copy(a, ref)
        assert a.sum(dtype=np.float64) == ref.sum(dtype=np.float64)
        idx = np.random.default_rng(0).integers(0, a.size, 500)
        assert sum(int(a[i]) for i in idx) == int(ref[idx].sum())
        assert pager.stats().pages_in > 0


STUCK_CHILD = """
    import functools, sys
    import numpy as np
    sys.path.insert(0, {tests!r})
    from pager_harness import stuck_backend, PS, BUDGET_PAGES
    from zswap_host.pager import Pager

    pager = Pager.process(functools.partial(stuck_backend, "store"), BUDGET_PAGES * PS)
    a = pager.alloc((4 * BUDGET_PAGES, PS), np.uint8)
    a[:] = 1                                  # most pages go to the backend (writes work)
    print("touching", flush=True)
    print(int(a[0, 0]))                       # page 0 is in the backend, whose reads never return
"""


def test_a_stuck_backend_ends_in_the_abort_timer_naming_the_backend_process():
    env = {**os.environ, "ZSWAP_PAGER_ABORT_S": "3"}
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(STUCK_CHILD).format(tests=SUPPORT_DIR)],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == -signal.SIGABRT, (r.returncode, r.stdout, r.stderr[-3000:])
    assert "zswap pager: aborting: page faults have waited" in r.stderr
    assert "for the backend process's resolver" in r.stderr and "GIL" not in r.stderr, r.stderr[-3000:]
    assert "touching" in r.stdout


RESOLVER_DIES_CHILD = """
    import functools, sys
    import numpy as np
    sys.path.insert(0, {tests!r})
    from pager_harness import interrupted_backend, PS, BUDGET_PAGES
    from zswap_host.pager import Pager

    pager = Pager.process(functools.partial(interrupted_backend, "store"), BUDGET_PAGES * PS)
    a = pager.alloc((4 * BUDGET_PAGES, PS), np.uint8)
    a[:] = 1
    print("touching", flush=True)
    print(int(a[0, 0]))                       # its read kills the child's resolver: SIGBUS, not a hang
    print("not reached", flush=True)
"""


def test_a_resolver_that_dies_ends_the_child_and_fails_the_fault():
    r = run_child(RESOLVER_DIES_CHILD)
    assert r.returncode == -signal.SIGBUS, (r.returncode, r.stdout, r.stderr[-3000:])
    assert "the backend process's resolver failed: KeyboardInterrupt" in r.stderr, r.stderr[-3000:]
    assert "exited with status 70: pages it holds cannot be read" in r.stderr, r.stderr[-3000:]
    assert "touching" in r.stdout and "not reached" not in r.stdout


ORPHAN_CHILD = """
    import functools, os, signal, sys
    import numpy as np
    sys.path.insert(0, {tests!r})
    from pager_harness import make_backend, PS, BUDGET_PAGES
    from zswap_host.pager import Pager

    pager = Pager.process(functools.partial(make_backend, "store"), BUDGET_PAGES * PS)
    print(pager.backend_pid, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)      # the pager's process dies without close()
"""


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_the_backend_process_exits_when_the_pagers_process_dies():
    r = run_child(ORPHAN_CHILD)
    assert r.returncode == -signal.SIGKILL, (r.returncode, r.stdout, r.stderr[-3000:])
    pid = int(r.stdout.split()[0])
    end = time.monotonic() + 120           # a bound on the wait, not a speed check
    while _running(pid) and time.monotonic() < end:
        time.sleep(0.05)
    assert not _running(pid)
