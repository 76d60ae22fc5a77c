"""An unmodified torch.nn.EmbeddingBag over swap: a 200k x 64 table (49 MiB) under a 16 MiB DRAM
budget, its pages on an emulated ZNS store through zswap_host.pager, trained side by side with the
same table in DRAM; the losses must match bit for bit. Prints ms per step of both and the paging.
``--serve process`` serves the store from a process of its own (``Pager.process``).

    python examples/pager_torch.py [--rows 200000] [--dim 64] [--budget-mib 16] [--steps 50]
                                   [--serve thread|process]
"""
import argparse
import functools
import time

import numpy as np
import torch

from zswap_host import SwapStore, open_device
from zswap_host.pager import Pager


def open_store(url: str) -> SwapStore:
    return SwapStore(open_device(url))


def train(emb, batches, head):
    """Losses and ms per step (step 0, torch's warm-up, not timed) of SGD on ``emb``."""
    opt, losses = torch.optim.SGD(emb.parameters(), lr=0.05), []
    for i, x in enumerate(batches):
        if i == 1:
            t0 = time.perf_counter()
        loss = ((emb(x) * head).sum(1) - 1).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    return losses, (time.perf_counter() - t0) / (len(batches) - 1) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--budget-mib", type=float, default=16)
    ap.add_argument("--steps", type=int, default=50, help="at least 2 (the first is not timed)")
    ap.add_argument("--batch", type=int, default=2048, help="bags per step (8 lookups each)")
    ap.add_argument("--device", default="emu://?zones=64&zone_size=4MiB&preset=none", help="ZNS device (in memory)")
    ap.add_argument("--serve", choices=["thread", "process"], default="thread",
                    help="the store in a thread of this process, or in a process of its own")
    args = ap.parse_args()
    if args.steps < 2:
        ap.error("--steps must be at least 2")
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    hot = rng.permutation(args.rows)                    # skewed, hot rows scattered over the pages
    batches = [torch.from_numpy(hot[np.minimum(rng.zipf(1.1, (args.batch, 8)), args.rows) - 1])
               for _ in range(args.steps)]
    head = torch.linspace(-1, 1, args.dim)

    def table():
        torch.manual_seed(0)
        return torch.nn.EmbeddingBag(args.rows, args.dim, mode="mean", sparse=True)

    budget = int(args.budget_mib * 2**20)
    if args.serve == "process":   # the factory runs in the backend process (this script is imported there)
        pager = Pager.process(functools.partial(open_store, args.device), budget)
    else:
        pager = Pager(open_store(args.device), budget)
    with pager:
        paged, dram = table(), table()
        pager.adopt(paged.weight)                       # the only change to the training code
        l_dram, ms_dram = train(dram, batches, head)
        before = pager.stats()
        l_paged, ms_paged = train(paged, batches, head)
        s = pager.stats()
        print(f"{args.rows:,} x {args.dim} table ({args.rows * args.dim * 4 / 2**20:.0f} MiB) under "
              f"{args.budget_mib:g} MiB, {args.steps} steps of {args.batch} bags: {ms_paged:.1f} ms/step paged "
              f"({args.serve} mode), {ms_dram:.1f} in DRAM ({ms_paged / ms_dram:.1f}x); "
              f"{s.faults_missing + s.faults_wp - before.faults_missing - before.faults_wp:,} faults, "
              f"{s.pages_in - before.pages_in:,} pages in, {s.pages_out - before.pages_out:,} out; "
              f"resident <= budget: {s.max_resident <= pager.budget_pages}; "
              f"losses equal: {l_paged == l_dram} (last {l_paged[-1]:.4f})")


if __name__ == "__main__":
    main()
