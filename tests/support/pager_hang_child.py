"""One call of the pager's hang list (issue 33) over a paged array, run as a child process by
tests/pager/test_pager_hang_list.py: ``python pager_hang_child.py CASE``. The array is 8x the budget and
written through ``Pager.copy`` first, so most of its pages are in the backend when the call starts
and the call must fault them back. ``python pager_hang_child.py CASE process``: the same with the
backend served from a process of its own (``Pager.process``). Prints ``result ok`` when the call's result equals the same call
on plain memory (``result WRONG`` otherwise); a call that deadlocks ends in the abort timer."""

from __future__ import annotations

import functools
import sys
import threading
import time

import numpy as np

from zswap_host import SwapStore, open_device
from zswap_host.pager import Pager

PS = 4096
BUDGET = 64 * PS
N = 256 * 1024                          # int64: 2 MiB, 512 pages, 8x the budget
THREADS = 8
MODE = "thread"                         # or "process": Pager.process


def make_store():
    return SwapStore(open_device("emu://?zones=16&zone_size=1MiB&preset=none"))


def make_slow_store():
    return SlowReads(make_store())


def open_pager(factory_name: str) -> Pager:
    """A pager over the backend ``factory_name`` builds, served as ``MODE`` says (the factory is
    taken from this module imported by name, so a backend process can unpickle it)."""
    import pager_hang_child as me
    factory = getattr(me, factory_name)
    if MODE == "process":
        return Pager.process(functools.partial(factory), BUDGET)
    return Pager(factory(), BUDGET)


def setup():
    pager = open_pager("make_store")
    ref = np.arange(N, dtype=np.int64) * 7 % 1000
    a = pager.alloc(N, np.int64)
    pager.copy(a, ref)
    return pager, a, ref


def in_threads(fn) -> None:
    ts = [threading.Thread(target=fn, args=(k,)) for k in range(THREADS)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


# ---------------------------------------------------------------- numpy
def np_sum(pager, a, ref, rng):
    return a.sum() == ref.sum()


def np_sum_float64(pager, a, ref, rng):         # the script: a reduction that casts
    return a.sum(dtype=np.float64) == ref.sum(dtype=np.float64)


def np_mean(pager, a, ref, rng):                # accumulates in float64: a cast as well
    return a.mean() == ref.mean()


def np_sum_float_array(pager, a, ref, rng):     # the same sum without a cast
    f = pager.alloc(N, np.float64)
    pager.copy(f, ref.astype(np.float64))
    return f.sum() == ref.astype(np.float64).sum()


def np_dot(pager, a, ref, rng):
    f = pager.alloc(N, np.float64)
    pager.copy(f, ref.astype(np.float64))
    r = ref.astype(np.float64)
    return np.dot(f, f) == np.dot(r, r)


def np_copy(pager, a, ref, rng):
    return np.array_equal(a.copy(), ref)


def np_astype(pager, a, ref, rng):
    return np.array_equal(a.astype(np.float64), ref.astype(np.float64))


def np_take(pager, a, ref, rng):
    idx = rng.integers(0, N, 10000)
    return np.array_equal(np.take(a, idx), ref[idx])


def np_fancy_index(pager, a, ref, rng):
    idx = rng.integers(0, N, 10000)
    return np.array_equal(a[idx], ref[idx])


def np_fancy_write(pager, a, ref, rng):        # a[idx] = v, as examples/pager_numpy.py writes
    idx = rng.integers(0, N, 10000)
    v = rng.integers(0, 1000, idx.size)
    a[idx] = v
    ref[idx] = v
    return np.array_equal(a.copy(), ref)


def np_slice_assign(pager, a, ref, rng):       # a[lo:hi] = b in 1 MiB chunks, as examples/pager_numpy.py fills
    for lo in range(0, N, 1 << 17):
        a[lo:lo + (1 << 17)] = np.arange(lo, lo + (1 << 17))
    return np.array_equal(a.copy(), np.arange(N))


def np_copyto(pager, a, ref, rng):              # one large write
    ones = np.ones(N, np.int64)
    np.copyto(a, ones)
    return np.array_equal(a.copy(), ones)


def scalar_loop(pager, a, ref, rng):            # a[i] in a tight loop
    idx = rng.integers(0, N, 2000)
    return sum(int(a[i]) for i in idx) == int(ref[idx].sum())


def small_slice_writes(pager, a, ref, rng):     # a[lo:lo + 8] = 1 in a loop
    for lo in rng.integers(0, N - 8, 2000):
        a[lo:lo + 8] = 1
        ref[lo:lo + 8] = 1
    return np.array_equal(a.copy(), ref)


# ---------------------------------------------------------------- many threads
def threads_copy(pager, a, ref, rng):           # 8 threads, Pager.copy of random 8 KiB ranges
    bad = []

    def work(k):
        r = np.random.default_rng(k)
        buf = np.empty(1024, np.int64)
        for lo in r.integers(0, N - 1024, 200):
            pager.copy(buf, a[lo:lo + 1024])
            bad.append(not np.array_equal(buf, ref[lo:lo + 1024]))
    in_threads(work)
    return not any(bad)


def threads_sum(pager, a, ref, rng):            # 8 threads, each a numpy sum of its eighth
    out = [0] * THREADS

    def work(k):
        out[k] = a[k * N // THREADS:(k + 1) * N // THREADS].sum()
    in_threads(work)
    return sum(out) == ref.sum()


def threads_scalar(pager, a, ref, rng):         # 8 threads, each a[i] in a loop
    out = [0] * THREADS
    idx = rng.integers(0, N, (THREADS, 500))

    def work(k):
        out[k] = sum(int(a[i]) for i in idx[k])
    in_threads(work)
    return sum(out) == int(ref[idx].sum())


# ---------------------------------------------------------------- torch
def torch_sum(pager, a, ref, rng):
    import torch
    return torch.from_numpy(a).sum().item() == int(ref.sum())


def torch_double_sum(pager, a, ref, rng):       # a cast, as in np_sum_float64
    import torch
    return torch.from_numpy(a).double().sum().item() == torch.from_numpy(ref).double().sum().item()


def torch_index(pager, a, ref, rng):
    import torch
    idx = torch.from_numpy(rng.integers(0, N, 10000))
    return torch.equal(torch.from_numpy(a)[idx], torch.from_numpy(ref)[idx])


def torch_matmul(pager, a, ref, rng):
    import torch
    r = torch.from_numpy((ref[:512 * 512] % 13).astype(np.float32).reshape(512, 512))
    w = pager.tensor((512, 512), torch.float32)
    w.copy_(r)
    return torch.equal(w @ w, r @ r)


def torch_embedding_bag(pager, a, ref, rng):    # an adopted table, forward and backward
    import torch
    torch.manual_seed(0)
    emb = torch.nn.EmbeddingBag(20000, 64, mode="sum")     # 5 MiB: 20x the budget
    plain = torch.nn.EmbeddingBag(20000, 64, mode="sum")
    plain.weight.data.copy_(emb.weight.data)
    pager.adopt(emb.weight)
    idx = torch.from_numpy(rng.integers(0, 20000, 4096))
    off = torch.arange(0, 4096, 8)
    out, want = emb(idx, off), plain(idx, off)
    out.sum().backward()
    want.sum().backward()
    return torch.equal(out, want) and torch.equal(emb.weight.grad, plain.weight.grad)


# ---------------------------------------------------------------- lifetime
class SlowReads:
    """A backend whose reads take 50 ms each, so a copy of the array takes many seconds."""

    def __init__(self, inner) -> None:
        self.inner, self.page_size = inner, inner.page_size

    def swap_in(self, ids):
        time.sleep(0.05)
        return self.inner.swap_in(ids)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def close_during_faults(pager, a, ref, rng):    # the caller breaks the contract: close() mid-copy
    pager.close()
    pager = open_pager("make_slow_store")
    a = pager.alloc(N, np.int64)
    pager.copy(a, ref)                          # the budget is full, most pages in the backend
    done = []

    def work():
        buf = np.empty(N, np.int64)
        pager.copy(buf, a)                      # ~450 reads of 50 ms: still copying at close()
        done.append(np.array_equal(buf, ref))
    t = threading.Thread(target=work, name="toucher")
    t.start()
    time.sleep(0.2)
    pager.close()                               # no eviction after stop: the copy waits for room
    t.join()
    print("closed after the copy", done, flush=True)
    return done == [True]


CASES = {f.__name__: f for f in [
    np_sum, np_sum_float64, np_mean, np_sum_float_array, np_dot, np_copy, np_astype, np_take, np_fancy_index,
    np_fancy_write, np_slice_assign, np_copyto, scalar_loop, small_slice_writes, threads_copy, threads_sum, threads_scalar, torch_sum,
    torch_double_sum, torch_index, torch_matmul, torch_embedding_bag, close_during_faults]}


if __name__ == "__main__":
    case = CASES[sys.argv[1]]
    MODE = sys.argv[2] if len(sys.argv) > 2 else "thread"
    pager, a, ref = setup()
    print("start", sys.argv[1], flush=True)
    ok = case(pager, a, ref, np.random.default_rng(1))
    print("result", "ok" if ok else "WRONG", flush=True)
    if not pager.closed:
        pager.close()
