"""One rank's training step. Every rank reads the whole batch (the same seed gives every rank the same
batches: it stands for the input all-to-all of the indices) and owns samples ``[lo_r, hi_r)`` for the
dense part.

1. Its shards' lookups for the whole batch through its own ``SwappedEmbeddingBagCollection`` (own
   budget, backend, clock). A row shard sees only the lookups in its rows (renumbered from 0); its
   pooled sums are partial and the sample's rank adds them up.
2. All-to-all: rank j gets every shard's pooled rows of its samples; it assembles (samples, T, dim).
3. The dense model forward/backward on its samples, the loss scaled by samples / batch so that the
   sum over ranks is the whole batch's mean (what the 1-rank run minimises); dense gradients summed
   with one all-reduce, then torch SGD, as data-parallel training does.
4. All-to-all back: each shard gets the gradients of its pooled rows for the whole batch; its
   backward applies the fused optimizer (the rows' update, as in the 1-rank run).
So a 2-rank run computes the 1-rank run's sums in another order: equal losses within float tolerance.
"""

from __future__ import annotations

import time

import numpy as np


def sample_bounds(batch: int, ranks: int) -> np.ndarray:
    """Rank r owns samples ``[b[r], b[r+1])``: as even as the batch allows."""
    return (np.arange(ranks + 1, dtype=np.int64) * batch) // ranks


def _exchange(send: list, shapes: list) -> list:
    """All-to-all of tensors of different shapes: ``send[j]`` goes to rank j, the tensor from rank i
    comes back with ``shapes[i]``. gloo's list ``all_to_all`` wants equal shapes, so one flat
    ``all_to_all_single`` with split sizes (gloo's alltoallv) carries them."""
    import torch
    import torch.distributed as dist

    flat = torch.cat([t.reshape(-1) for t in send])
    sizes = [int(np.prod(s)) for s in shapes]
    out = torch.empty(sum(sizes))
    dist.all_to_all_single(out, flat, output_split_sizes=sizes, input_split_sizes=[t.numel() for t in send])
    return [c.view(*s) for c, s in zip(torch.split(out, sizes), shapes)]


class RankTrainer:
    """Rank ``rank`` of a ``ShardPlan``: the dense DLRM (same init on every rank), torch SGD, and its
    shards' tables over ``backend`` within ``budget`` (of the shards' bytes when a fraction).
    ``step(batch)`` needs the process group up (every rank steps together)."""

    def __init__(self, mc, dc, shard_plan, rank: int, backend, budget, seed: int, *, clock=None) -> None:
        import torch

        from ..torch import SwappedEmbeddingBagCollection
        from ..workloads.dlrm import DLRM

        self.mc, self.dc, self.plan, self.rank = mc, dc, shard_plan, int(rank)
        self.shards = shard_plan.by_rank[self.rank]
        self.model = DLRM(mc, dc.num_tables, seed=seed)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=mc.lr)
        self.tables = SwappedEmbeddingBagCollection(
            [s.rows for s in self.shards], mc.dim, "sum", backend=backend, budget=budget,
            optimizer=mc.emb_optimizer, lr=mc.emb_lr, seed=seed, clock=clock)
        self.emb = self.tables.page_cache
        self.emb.init_as([s.first_page for s in self.shards], [shard_plan.table_rows[s.table] for s in self.shards])
        self.keys = self.tables.keys

    def _features(self, b) -> dict:
        import torch
        out = {}
        for k, s in zip(self.keys, self.shards):
            idx = b.sparse[s.table]
            if s.lo == 0 and s.hi == self.plan.table_rows[s.table]:
                out[k] = torch.from_numpy(idx)          # whole table: the 1-rank run's own bags
                continue
            mine = (idx >= s.lo) & (idx < s.hi)
            ends = np.cumsum(mine.sum(axis=1))
            out[k] = (torch.from_numpy(idx[mine] - s.lo), torch.from_numpy(np.concatenate([[0], ends[:-1]])))
        return out

    def step(self, b) -> tuple[float, float, float, float]:
        """One iteration on batch ``b`` (every rank the same batch): returns (the whole batch's loss,
        this rank's compute wall s excluding backend calls, its demand I/O stall s, its wall s
        inside backend calls)."""
        import torch
        import torch.distributed as dist

        from ..workloads.dlrm import bce

        N, r, D = self.plan.ranks, self.rank, self.mc.dim
        bounds = sample_bounds(b.size, N)
        lo, hi = int(bounds[r]), int(bounds[r + 1])
        emb = self.emb
        w0, s0 = emb.io_wall_s, emb.io_stall_s
        t0 = time.perf_counter()
        K = len(self.shards)
        pooled = self.tables(self._features(b), concat=True).view(b.size, K, D)
        send = [pooled[bounds[j]:bounds[j + 1]].detach() for j in range(N)]
        recv = _exchange(send, [(hi - lo, len(self.plan.by_rank[i]), D) for i in range(N)])
        x = torch.zeros(hi - lo, self.dc.num_tables, D)
        for i in range(N):                       # partial sums of a split table added in rank order
            for k, s in enumerate(self.plan.by_rank[i]):
                x[:, s.table] += recv[i][:, k]
        x.requires_grad_(True)
        prob = self.model(torch.from_numpy(b.dense[lo:hi]), x)
        part = bce(prob, torch.from_numpy(b.labels[lo:hi])) * ((hi - lo) / b.size)
        self.opt.zero_grad(set_to_none=False)
        part.backward()
        back = [torch.stack([x.grad[:, s.table] for s in self.plan.by_rank[i]], dim=1).contiguous()
                for i in range(N)]
        grads = _exchange(back, [(int(bounds[j + 1] - bounds[j]), K, D) for j in range(N)])
        pooled.backward(torch.cat(grads, dim=0))     # the fused optimizer updates this rank's rows
        params = [p for p in self.model.parameters()]
        flat = torch.cat([p.grad.reshape(-1) for p in params] + [part.detach().reshape(1)])
        dist.all_reduce(flat)                    # dense gradients and the loss, summed over ranks
        off = 0
        for p in params:
            p.grad.copy_(flat[off:off + p.numel()].view_as(p))
            off += p.numel()
        self.opt.step()
        t1 = time.perf_counter()
        iowall = emb.io_wall_s - w0
        return float(flat[-1]), (t1 - t0) - iowall, emb.io_stall_s - s0, iowall
