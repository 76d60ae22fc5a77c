"""Unmodified numpy over swap: a 256 MiB int64 array under a 64 MiB DRAM budget, its pages on an
emulated ZNS store through zswap_host.pager; random reads and writes, then faults/s and MB/s.
``--serve process`` serves the store from a process of its own (``Pager.process``): then any call,
``a[i]`` or ``a.sum(dtype=np.float64)`` included, is safe from any thread.

    python examples/pager_numpy.py [--size-mib 256] [--budget-mib 64] [--seconds 30] [--device emu://...]
                                   [--serve thread|process]
"""
import argparse
import functools
import time

import numpy as np

from zswap_host import SwapStore, open_device
from zswap_host.pager import Pager


def open_store(url: str) -> SwapStore:
    return SwapStore(open_device(url))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--budget-mib", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=30, help="how long to run the random reads and writes")
    ap.add_argument("--device", default="emu://?zones=96&zone_size=4MiB&preset=none", help="ZNS device (in memory)")
    ap.add_argument("--serve", choices=["thread", "process"], default="thread",
                    help="the store in a thread of this process, or in a process of its own")
    args = ap.parse_args()
    budget = args.budget_mib << 20
    if args.serve == "process":   # the factory runs in the backend process (this script is imported there)
        pager = Pager.process(functools.partial(open_store, args.device), budget)
    else:
        pager = Pager(open_store(args.device), budget)
    with pager:
        a = pager.alloc((args.size_mib << 20) // 8, np.int64)       # a plain numpy array, paged
        for lo in range(0, a.size, 1 << 17):                        # fill it, 1 MiB at a time: 4x the
            a[lo:lo + (1 << 17)] = np.arange(lo, min(lo + (1 << 17), a.size))   # budget, most goes out
        rng, want, ops, t0 = np.random.default_rng(0), int(a.sum()), 0, time.perf_counter()
        before = pager.stats()
        while time.perf_counter() - t0 < args.seconds:             # calls that release the GIL: safe
            idx = np.unique(rng.integers(0, a.size, 4096))
            a[idx] = a[idx] + 1                                     # a random read and a random write
            want, ops = want + idx.size, ops + 1
        wall, s = time.perf_counter() - t0, pager.stats()
        faults = s.faults_missing + s.faults_wp - before.faults_missing - before.faults_wp
        paged = (s.pages_in + s.pages_out - before.pages_in - before.pages_out) * pager.page_size
        print(f"{ops} batches of 4096 random read-modify-writes in {wall:.1f} s: {faults / wall:,.0f} faults/s, "
              f"{paged / wall / 1e6:.1f} MB/s of paging ({s.pages_in - before.pages_in:,} pages in, "
              f"{s.pages_out - before.pages_out:,} out), resident <= budget: {s.max_resident <= pager.budget_pages}, "
              f"sum checks: {int(a.sum()) == want}")


if __name__ == "__main__":
    main()
