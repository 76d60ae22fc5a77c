"""References the torch module's tests compare against: optimizers as ``zswap_host/torch/optim.py``
documents them, over dense gradients (tests/torch/test_torch_module.py, tests/torch/test_torch_budget.py)."""

import numpy as np
import torch
from torch import nn


class RowwiseAdagrad(torch.optim.Optimizer):
    """The reference row-wise Adagrad, over a dense gradient, in numpy as documented: per row
    acc += mean(g ** 2), row -= lr * g / (sqrt(acc) + eps). Rows with a zero gradient are left
    unchanged by it (acc + 0, row - 0), so every row is updated."""

    def __init__(self, params, lr, eps=1e-8):
        super().__init__(params, dict(lr=lr, eps=eps))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                acc = self.state[p].setdefault("sum", np.zeros(p.shape[0], np.float32))
                g, w = p.grad.numpy(), p.numpy()
                acc += (g * g).mean(axis=1)
                step = (np.float32(group["lr"]) / (np.sqrt(acc) + np.float32(group["eps"]))).astype(np.float32)
                w[:] = w - step[:, None] * g


def reference(rows: torch.Tensor, mode: str, optimizer: str, lr: float):
    """``nn.EmbeddingBag`` holding ``rows`` and its optimizer (``sgd``, ``adam``: SparseAdam, ``adagrad``:
    the row-wise reference above)."""
    ref = nn.EmbeddingBag(*rows.shape, mode=mode, sparse=optimizer == "adam")
    with torch.no_grad():
        ref.weight.copy_(rows)
    opt = {"sgd": lambda p: torch.optim.SGD(p, lr=lr), "adam": lambda p: torch.optim.SparseAdam(p, lr=lr),
           "adagrad": lambda p: RowwiseAdagrad(p, lr=lr)}[optimizer](ref.parameters())
    return ref, opt
