"""``SwappedEmbeddingBag``: ``nn.EmbeddingBag`` (modes sum and mean) whose rows live in the paged
store, within a DRAM budget, over any ``SwapBackend``."""

from __future__ import annotations

import numpy as np
import torch

from ..backend import SwapBackend
from .base import SwappedModule
from .inputs import bags
from .optim import FusedOptimizer


class SwappedEmbeddingBag(SwappedModule):
    """``num_embeddings`` rows of ``embedding_dim`` fp32, pooled by ``mode`` (``"sum"`` or ``"mean"``,
    ``nn.EmbeddingBag``'s default ``"mean"``), kept in pages over ``backend`` (a ``SwapBackend``; None:
    DRAM only) with a DRAM cache of ``budget`` (a fraction of the table's bytes with its optimizer
    state, bytes, or ``"25%"`` / ``"64MiB"``; 1.0: no swapping).

    ``forward(input, offsets=None, per_sample_weights=None)`` as ``nn.EmbeddingBag``'s: a 1-D
    ``input`` with ``offsets`` (bag starts; with ``include_last_offset`` one more, the end), or a 2-D
    ``(B, N)`` input of B bags of N; ``per_sample_weights`` only with ``mode="sum"``. Returns (B, dim).
    With grad enabled, the backward after the forward updates the looked-up rows with the fused
    ``optimizer`` (``"sgd"``, row-wise ``"adagrad"``, ``"adam"``; ``optim``) at ``lr`` — call
    backward once per forward (another forward first: ``RuntimeError`` at that backward). Under
    ``torch.no_grad()`` rows are only read.

    Initial rows: uniform in (-1/sqrt(num_embeddings), 1/sqrt(num_embeddings)) (DLRM's), created on
    first touch from ``seed`` (nothing is initialised up front). ``load_state_dict`` sets them.

    Any budget that holds one row and its optimizer state works: a batch needing more pages than the
    budget streams through it in pieces, with equal results. ``clock``: ``"device"`` (default: the
    backend device's modeled clock if it has one, else wall), ``"wall"``/None, or a callable
    (``clocks``). Device errors cost one step, never the module (``SwappedModule``).
    ``pack_hot_rows``: False, True or a ``RowPacking`` — rows re-mapped to pages by measured access
    frequency every ``RowPacking.every`` steps, so that the budget holds pages of hot rows; no value
    changes (the package's docstring: cost and guarantees).

    Errors (as torch raises them): ``ValueError`` for a bad mode or input shape, or a budget below
    one row and its optimizer state, ``NotImplementedError`` for ``per_sample_weights`` with
    ``"mean"``, ``EmbeddingIndexError`` (an ``IndexError`` and a ``RuntimeError``) for an index
    outside ``[0, num_embeddings)``; the backend's ``DeviceIOError`` from a forward whose I/O failed.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, mode: str = "mean", *,
                 include_last_offset: bool = False, backend: SwapBackend | None = None, budget=1.0,
                 optimizer: str | FusedOptimizer = "sgd", lr: float = 0.01, eps: float = 1e-8,
                 betas: tuple[float, float] = (0.9, 0.999), seed: int = 0, page_size: int = 4096,
                 clock="device", discard_dirty: bool = False, trace=None, pack_hot_rows=False) -> None:
        super().__init__(["weight"], [int(num_embeddings)], [int(embedding_dim)], mode, backend=backend,
                         budget=budget, optimizer=optimizer, lr=lr, eps=eps, betas=betas, seed=seed,
                         page_size=page_size, clock=clock, discard_dirty=discard_dirty, trace=trace,
                         pack_hot_rows=pack_hot_rows)
        self.num_embeddings = int(num_embeddings)
        self.embedding_dim = int(embedding_dim)
        self.include_last_offset = bool(include_last_offset)

    def forward(self, input: torch.Tensor, offsets: torch.Tensor | None = None,
                per_sample_weights: torch.Tensor | None = None) -> torch.Tensor:
        b = bags(input, offsets, per_sample_weights, mode=self.mode, include_last_offset=self.include_last_offset)
        return self._lookup([b])[0]

    def _indices(self, step) -> list:
        x = step[0] if isinstance(step, (tuple, list)) else step      # (input, offsets, ...) or input
        return [np.asarray(torch.as_tensor(x).detach().cpu(), np.int64).reshape(-1)]

    def read_rows(self, indices) -> torch.Tensor:
        """Current values of rows ``indices`` (any shape): float32 (*indices.shape, dim), read past
        the cache (nothing made resident or evicted)."""
        return self._read_rows(0, indices)

    def _entry(self, t: int) -> str:
        return ""

    def extra_repr(self) -> str:
        st = self._tables.store
        return (f"{self.num_embeddings}, {self.embedding_dim}, mode={self.mode!r}, "
                f"optimizer={self.optimizer.name!r}, budget_pages={st.nframes}/{st.total_pages}, "
                f"backend={type(st.backend).__name__ if st.backend is not None else None}")
