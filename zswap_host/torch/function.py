"""``PooledLookup``: the autograd function of one step of swapped embedding bags.

forward: the step's rows are gathered (every table at once, pinned until the backward) and each
table's bags are pooled by torch's own ``F.embedding_bag`` over its gathered unique rows, with the
lookups renumbered to those rows (renumbering keeps their order, so pooling and its backward sum in
torch's order: the result equals ``nn.EmbeddingBag`` bit for bit). The pooling is recorded on a
private graph whose leaves are the gathered rows (and the per-sample weights).

backward: that graph's backward (torch's own embedding-bag backward) gives each table's unique-row
gradients — dense, or sparse and coalesced for Adam — which go straight to the fused optimizer; no
table-sized gradient exists, and the module's rows are not parameters. The per-sample weights get
their gradients as usual.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .inputs import Bags
from .tables import SwappedTables


def _pool(rows, inverse, bag: Bags, mode: str, sparse: bool, psw):
    inv = torch.from_numpy(inverse).view(bag.input.shape)
    return F.embedding_bag(inv, rows, bag.offsets, mode=mode, sparse=sparse, per_sample_weights=psw,
                           include_last_offset=bag.include_last_offset)


def pooled_lookup(tables: SwappedTables, bags: list[Bags | None], mode: str,
                  anchor: torch.Tensor) -> list[torch.Tensor | None]:
    """Pooled embeddings of each table's bags (None where ``bags[t]`` is None). With grad enabled
    the step's backward applies the fused optimizer; without, the rows are only read."""
    psws = [b.per_sample_weights if b is not None else None for b in bags]
    if torch.is_grad_enabled():
        outs = PooledLookup.apply(anchor, tables, bags, mode, *psws)
        return [o if b is not None else None for b, o in zip(bags, outs)]
    _, res = tables.gather([b.indices() if b is not None else None for b in bags])
    tables.end_step()
    return [_pool(torch.from_numpy(r[0]), r[1], b, mode, False, p) if b is not None else None
            for b, r, p in zip(bags, res, psws)]


class PooledLookup(torch.autograd.Function):
    """``apply(anchor, tables, bags, mode, *per_sample_weights)`` -> one pooled tensor per table
    (empty (0, 0) for a table not in the step). ``anchor``: a tensor that requires grad, so that the
    backward runs even when nothing else does."""

    @staticmethod
    def forward(ctx, anchor, tables: SwappedTables, bags, mode: str, *psws):
        step, res = tables.gather([b.indices() if b is not None else None for b in bags])
        sparse = tables.optimizer.sparse_grad
        outs, rows, wleaves = [], [], []
        with torch.enable_grad():
            for b, r, p in zip(bags, res, psws):
                if b is None:
                    outs.append(None)
                    rows.append(None)
                    wleaves.append(None)
                    continue
                w = torch.from_numpy(r[0]).requires_grad_(True)
                pl = p.detach().requires_grad_(True) if p is not None and p.requires_grad else None
                outs.append(_pool(w, r[1], b, mode, sparse, pl if pl is not None else p))
                rows.append(w)
                wleaves.append(pl)
        ctx.tables, ctx.step, ctx.graph = tables, step, (outs, rows, wleaves)
        return tuple(o.detach() if o is not None else torch.zeros(0, 0) for o in outs)

    @staticmethod
    def backward(ctx, *grads):
        ctx.tables.check_step(ctx.step)
        outs, rows, wleaves = ctx.graph
        ctx.graph = None
        ys = [o for o in outs if o is not None]
        gys = [g for o, g in zip(outs, grads) if o is not None]
        xs = [w for w in rows if w is not None] + [p for p in wleaves if p is not None]
        with torch.enable_grad():
            gx = list(torch.autograd.grad(ys, xs, gys, allow_unused=True)) if ys else []
        row_grads = []
        for w in rows:
            if w is None:
                row_grads.append(None)
                continue
            g = gx.pop(0)
            row_grads.append(_dense(g, w).numpy())
        ctx.tables.update(ctx.step, row_grads)
        psw_grads = [gx.pop(0) if p is not None else None for p in wleaves]
        return (None, None, None, None, *psw_grads)


def _dense(g, w: torch.Tensor) -> torch.Tensor:
    """A row gradient as a dense (U, dim) tensor: zeros if unused; a sparse one coalesced, its
    values placed at their rows (every gathered row is among them)."""
    if g is None:
        return torch.zeros_like(w)
    if not g.is_sparse:
        return g
    c = g.coalesce()
    out = torch.zeros_like(w)
    out[c.indices()[0]] = c.values()
    return out
