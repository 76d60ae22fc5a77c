"""The tables' fused optimizers: applied to the looked-up rows inside ``backward``, as FBGEMM's
table-batched embeddings do, so that no gradient tensor of a whole table ever exists.

Each one equals a torch configuration bit for bit (tested at ``budget=1.0``):

- ``"sgd"``: ``row += -lr * grad`` with torch's own kernel (one fused multiply-add), as
  ``nn.EmbeddingBag(sparse=False)`` + ``torch.optim.SGD(lr)`` (no momentum, no weight decay).
- ``"adagrad"``: row-wise Adagrad (FBGEMM's ``EXACT_ROWWISE_ADAGRAD``): one accumulator per row,
  ``acc += mean(grad ** 2)``, ``row -= lr * grad / (sqrt(acc) + eps)``; no torch equivalent. The
  arithmetic is ``PagedEmbedding``'s (numpy), the bench's.
- ``"adam"``: ``torch.optim.SparseAdam`` with ``nn.EmbeddingBag(sparse=True)``: only the rows looked
  up in a step have their moments updated (lazy Adam), and the bias correction uses the table's step
  count — one per backward the table took part in, SparseAdam's per-parameter ``state["step"]``
  (global, not per row). ``exp_avg`` and ``exp_avg_sq`` are paged like the weights. Torch's own
  operations in SparseAdam's order (torch's sqrt rounds differently from numpy's).

The row gradients come from torch's own embedding-bag backward: dense for sgd and adagrad, sparse
and coalesced for adam (each as its torch configuration: the two sum a row's lookups in different
orders).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

OPTIMIZERS = ("sgd", "adagrad", "adam")


@dataclass(frozen=True)
class FusedOptimizer:
    """``name`` (``OPTIMIZERS``), learning rate ``lr``, ``eps`` (adagrad, adam), ``betas`` (adam)."""

    name: str = "sgd"
    lr: float = 0.01
    eps: float = 1e-8
    betas: tuple[float, float] = (0.9, 0.999)

    def __post_init__(self) -> None:
        if self.name not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}, not {self.name!r}")
        if not (math.isfinite(self.lr) and self.lr >= 0):
            raise ValueError(f"invalid learning rate: {self.lr}")
        if not self.eps >= 0:
            raise ValueError(f"invalid epsilon: {self.eps}")
        b1, b2 = self.betas
        if not (0.0 <= b1 < 1.0 and 0.0 <= b2 < 1.0):
            raise ValueError(f"invalid betas: {self.betas}")

    @property
    def sparse_grad(self) -> bool:
        """Whether the row gradients are taken as torch's sparse (coalesced) ones."""
        return self.name == "adam"

    def rule(self, steps: np.ndarray):
        """The update for ``PagedEmbedding.apply_tables`` (None: its built-in one); ``steps``: the
        tables' step counts, read when the rule runs."""
        lr = float(self.lr)
        if self.name == "sgd":
            def sgd(t, rows, grad, states):
                return torch.add(torch.from_numpy(rows), torch.from_numpy(grad), alpha=-lr).numpy(), ()
            return sgd
        if self.name == "adagrad":
            return None
        b1, b2 = self.betas
        eps = float(self.eps)

        def adam(t, rows, grad, states):
            # torch/optim/_functional.py sparse_adam, over the step's rows (all of them are in its grad)
            g = torch.from_numpy(grad)
            m, v = torch.from_numpy(states[0]), torch.from_numpy(states[1])
            mu = g.sub(m).mul_(1 - b1)
            m_new = m + mu
            vu = g.pow(2).sub_(v).mul_(1 - b2)
            v_new = v + vu
            numer = mu.add_(m)
            denom = vu.add_(v).sqrt_().add_(eps)
            step = int(steps[t])
            size = lr * math.sqrt(1 - b2 ** step) / (1 - b1 ** step)
            w = torch.from_numpy(rows) + (-size * numer.div_(denom))
            return w.numpy(), (m_new.numpy(), v_new.numpy())
        return adam


def fused(optimizer, lr: float, eps: float, betas) -> FusedOptimizer:
    """An optimizer given by name (with these hyper-parameters) or as a ``FusedOptimizer``."""
    if isinstance(optimizer, FusedOptimizer):
        return optimizer
    return FusedOptimizer(str(optimizer), float(lr), float(eps), (float(betas[0]), float(betas[1])))
