"""What the pager's tests share: the backends they page to (and the ``backend`` fixture over both),
wrappers that keep a ledger or fail on purpose, threads of random reads and writes checked against
an oracle, and the checks every pager must pass."""

from __future__ import annotations

import ctypes
import os
import threading
import time
from typing import TYPE_CHECKING

import numpy as np
import pytest

from zswap_host import ConventionalSwap, SwapStore, open_device

if TYPE_CHECKING:
    from zswap_host.pager import Pager

SUPPORT_DIR = os.path.dirname(os.path.abspath(__file__))  # on a child's sys.path, to import this
PS = 4096
BUDGET_PAGES = 64
RSS_SLACK_PAGES = 0  # by construction: mapped + being-read pages never exceed the budget


def make_backend(kind: str):
    if kind == "store":
        return SwapStore(open_device("emu://?zones=16&zone_size=1MiB&preset=none"))
    return ConventionalSwap(open_device("emu-conv://?size=16MiB&preset=none"))


@pytest.fixture(params=["store", "conv"])
def backend(request):
    b = make_backend(request.param)
    yield b
    b.close()


def memmove(dst: np.ndarray, src: np.ndarray) -> None:
    """A copy that releases the GIL (ctypes foreign calls do), like Pager.copy."""
    ctypes.memmove(dst.ctypes.data, src.ctypes.data, dst.nbytes)


def read_all(pager: Pager, a: np.ndarray) -> np.ndarray:
    out = np.empty_like(a)
    pager.copy(out, a)
    return out


def check_stats(pager: Pager) -> None:
    s = pager.stats()
    assert s.uffd_errors == 0 and s.backend_errors == 0
    assert s.max_resident <= pager.budget_pages
    assert s.rearm_faults <= s.rearms and (pager.rearm_wp or s.rearms == 0)  # only re-armed pages fault so


# ---------------------------------------------------------------- correctness under concurrency
class Ledger:
    """Delegates to ``inner`` and keeps the set of ids it holds: ``swap_in`` of an id not held (never
    written, or discarded) does not reach ``inner`` but returns pages of 0xEE and is noted in
    ``bad_reads``, so a lost copy shows as wrong bytes instead of SIGBUS. Counts discard calls."""

    def __init__(self, inner) -> None:
        self.inner, self.page_size = inner, inner.page_size
        self.held: set[int] = set()
        self.bad_reads: list[int] = []
        self.discard_calls = 0

    def swap_out(self, ids, pages, stream=0):
        self.inner.swap_out(ids, pages, stream)
        self.held.update(int(i) for i in ids)

    def swap_in(self, ids):
        missing = [int(i) for i in ids if int(i) not in self.held]
        if missing:
            self.bad_reads += missing
            out = np.full((len(ids), self.page_size), 0xEE, np.uint8)
            ok = [k for k, i in enumerate(ids) if int(i) in self.held]
            if ok:
                out[ok] = self.inner.swap_in(np.asarray(ids)[ok])
            return out
        return self.inner.swap_in(ids)

    def discard(self, ids):
        self.discard_calls += 1
        self.inner.discard(ids)
        self.held.difference_update(int(i) for i in ids)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def random_reads_and_writes(pager: Pager, a: np.ndarray, oracle: np.ndarray, nthreads: int, chunk: int,
                            seed: int, ops: int = 400) -> list[str]:
    """``nthreads`` threads each doing ``ops`` random reads and writes (spanning pages) of paged ``a``,
    thread t owning the interleaved ``chunk``-byte chunks t, t + nthreads, ...; writes go to
    ``oracle`` too and reads are checked against it. Even threads copy with ``Pager.copy``, odd ones
    with ``memmove`` (both without the GIL). Returns the mismatches found (a thread stops at its
    first)."""
    failures: list[str] = []

    def worker(t: int) -> None:
        rng = np.random.default_rng(seed + t)
        copy = pager.copy if t % 2 == 0 else memmove
        chunks = np.arange(t, a.nbytes // chunk, nthreads)
        for op in range(ops):
            c = int(rng.choice(chunks))
            off = c * chunk + int(rng.integers(0, chunk - 1))
            n = int(rng.integers(1, c * chunk + chunk - off + 1))
            if rng.random() < 0.5:
                data = rng.integers(0, 256, n, dtype=np.uint8)
                copy(a[off:off + n], data)
                oracle[off:off + n] = data
            else:
                got = np.empty(n, np.uint8)
                copy(got, a[off:off + n])
                if not np.array_equal(got, oracle[off:off + n]):
                    failures.append(f"thread {t} op {op}: bytes {off}..{off + n} differ")
                    return

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(nthreads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return failures


def stored_by_pager(pager: Pager) -> int:
    """How many pages the pager's core counts as having a backend copy (valid or stale)."""
    return int(pager._lib.pg_stored_pages(pager._h, pager._ffi.NULL, 0))


def _resident(addr: int) -> bool:
    """Whether the page at addr is mapped (mincore; does not touch the page)."""
    vec = (ctypes.c_ubyte * 1)()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mincore(ctypes.c_void_p(addr), ctypes.c_size_t(PS), vec) != 0:
        raise OSError(ctypes.get_errno(), "mincore")
    return bool(vec[0] & 1)


class FlakyBackend:
    """Delegates to ``inner``; ``swap_in`` of an id in ``bad_in`` raises; the first ``fail_out``
    ``swap_out`` calls raise, and the first ``fail_discard`` ``discard`` calls."""

    def __init__(self, inner, bad_in=(), fail_out: int = 0, fail_discard: int = 0) -> None:
        self.inner, self.bad_in, self.fail_out = inner, np.asarray(list(bad_in), np.int64), fail_out
        self.fail_discard = fail_discard
        self.page_size = inner.page_size

    def discard(self, ids):
        if self.fail_discard > 0:
            self.fail_discard -= 1
            raise OSError(5, "injected discard failure")
        return self.inner.discard(ids)

    def swap_in(self, ids):
        if np.isin(ids, self.bad_in).any():
            raise OSError(5, "injected read failure")
        return self.inner.swap_in(ids)

    def swap_out(self, ids, pages, stream=0):
        if self.fail_out > 0:
            self.fail_out -= 1
            raise OSError(5, "injected write failure")
        return self.inner.swap_out(ids, pages, stream)

    def __getattr__(self, name):
        return getattr(self.inner, name)


# ---------------------------------------------------------------- backend factories (Pager.process)
# module-level, so a backend process can unpickle them (functools.partial of one)
def ledger_backend(kind: str) -> Ledger:
    return Ledger(make_backend(kind))


def flaky_backend(kind: str, **kw) -> FlakyBackend:
    return FlakyBackend(make_backend(kind), **kw)


def store_backend(url: str):
    return SwapStore(open_device(url))


def ledger_state(ledger: Ledger) -> tuple[list[int], int, int, int]:
    """(bad reads, ids held, pages the inner backend stores, discard calls) of a ``Ledger``."""
    return ledger.bad_reads, len(ledger.held), ledger.inner.stats().pages_stored, ledger.discard_calls


class StuckReads:
    """Delegates to ``inner``; ``stuck`` (default ``swap_in``) never returns (a backend that hangs)."""

    def __init__(self, inner, stuck: str = "swap_in") -> None:
        self.inner, self.page_size, self._stuck = inner, inner.page_size, stuck

    def _hang(self, *args):
        threading.Event().wait()

    def __getattr__(self, name):
        return self._hang if name == self._stuck else getattr(self.inner, name)


def stuck_backend(kind: str, stuck: str = "swap_in") -> StuckReads:
    return StuckReads(make_backend(kind), stuck)


class InterruptedReads:
    """Delegates to ``inner``; ``swap_in`` raises ``KeyboardInterrupt``, which is no backend error
    (not an ``Exception``): it ends the resolver thread."""

    def __init__(self, inner) -> None:
        self.inner, self.page_size = inner, inner.page_size

    def swap_in(self, ids):
        raise KeyboardInterrupt("injected into the resolver")

    def __getattr__(self, name):
        return getattr(self.inner, name)


def interrupted_backend(kind: str) -> InterruptedReads:
    return InterruptedReads(make_backend(kind))


def train_side_by_side(plain, paged, steps: int = 20) -> None:
    """Train two EmbeddingBag(1000, dim) modules with SGD on the same batches; each step's losses and
    the final weights must be equal bit for bit."""
    import torch

    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (plain, paged)]
    gen = torch.Generator().manual_seed(1)
    for _ in range(steps):
        idx = torch.randint(0, 1000, (64,), generator=gen)
        offs = torch.arange(0, 64, 8)
        losses = []
        for m, opt in zip((plain, paged), opts):
            opt.zero_grad()
            loss = m(idx, offs).pow(2).mean()
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
        assert losses[0] == losses[1]
    assert torch.equal(plain.weight, paged.weight)


def current_thread_trace(stderr: str) -> str:
    """The faulthandler dump's "Current thread" block of a child that died of a signal."""
    return stderr.split("Current thread", 1)[1].split("\n\n", 1)[0]


# ---------------------------------------------------------------- what a process holds
def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def live_tasks() -> int:
    return len(os.listdir("/proc/self/task"))


def settled_tasks(timeout: float = 30.0) -> int:
    """The thread count once it stops changing: a thread joined by Python (its state lock released)
    can still be in /proc for a moment, so a count taken right after another test is one too high."""
    deadline = time.monotonic() + timeout
    last, same = live_tasks(), 0
    while same < 5 and time.monotonic() < deadline:
        time.sleep(0.02)
        now = live_tasks()
        same = same + 1 if now == last else 0
        last = now
    return last


def tasks_reach(expected: int, timeout: float = 30.0) -> int:
    """The thread count, waited for until it equals ``expected`` (threads start and exit
    asynchronously); returned as found at the deadline otherwise, for the assertion to show."""
    deadline = time.monotonic() + timeout
    while live_tasks() != expected and time.monotonic() < deadline:
        time.sleep(0.01)
    return live_tasks()
