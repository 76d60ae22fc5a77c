"""``SwappedEmbeddingBagCollection``: many tables in one DRAM budget over one backend (one stream
per table), looked up together, keyed like TorchRec's ``EmbeddingBagCollection``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch

from ..backend import SwapBackend
from .base import SwappedModule
from .inputs import KeyedJagged, bags
from .optim import FusedOptimizer


class SwappedEmbeddingBagCollection(SwappedModule):
    """Tables given as ``(num_embeddings, embedding_dim)`` pairs, or as ``num_embeddings`` with one
    ``embedding_dim`` for all; named ``keys`` (default ``t0``, ``t1``, ...). One ``PagedEmbedding``
    holds them all: one DRAM ``budget`` (of all the tables' bytes), one ``backend``, table t's pages
    on stream t; one step gathers every table's rows at once. Other arguments as
    ``SwappedEmbeddingBag`` (``mode`` defaults to ``"sum"``, as DLRM and TorchRec pool).

    ``forward(features, concat=False)``: ``features`` a ``KeyedJagged`` (keys, values, lengths,
    weights) or a mapping key -> lookups, each a ``(values, offsets)`` or ``(values, offsets,
    per_sample_weights)`` tuple (1-D, offsets with one start per bag) or a 2-D ``(B, N)`` tensor.
    Returns key -> pooled (B, dim) for the keys given (a key left out is not looked up, and its
    table takes no optimizer step), or with ``concat=True`` one (B, sum of dims) tensor in the order
    of ``keys`` (every key needed). ``KeyError`` for an unknown key.
    """

    def __init__(self, tables: Sequence, embedding_dim: int | None = None, mode: str = "sum", *,
                 keys: Sequence[str] | None = None, backend: SwapBackend | None = None, budget=1.0,
                 optimizer: str | FusedOptimizer = "sgd", lr: float = 0.01, eps: float = 1e-8,
                 betas: tuple[float, float] = (0.9, 0.999), seed: int = 0, page_size: int = 4096,
                 clock="device", discard_dirty: bool = False, trace=None, pack_hot_rows=False) -> None:
        rows, dims = [], []
        for spec in tables:
            if isinstance(spec, (tuple, list)):
                n, d = spec
            elif embedding_dim is None:
                raise ValueError(f"table {spec!r}: give (num_embeddings, embedding_dim) or embedding_dim=")
            else:
                n, d = spec, embedding_dim
            rows.append(int(n))
            dims.append(int(d))
        if not rows:
            raise ValueError("no tables")
        keys = [f"t{i}" for i in range(len(rows))] if keys is None else [str(k) for k in keys]
        if len(keys) != len(rows) or len(set(keys)) != len(keys):
            raise ValueError(f"keys must name each of the {len(rows)} tables once: {keys}")
        super().__init__(keys, rows, dims, mode, backend=backend, budget=budget, optimizer=optimizer, lr=lr,
                         eps=eps, betas=betas, seed=seed, page_size=page_size, clock=clock,
                         discard_dirty=discard_dirty, trace=trace,
                         pack_hot_rows=pack_hot_rows)
        self._index = {k: t for t, k in enumerate(keys)}
        self.embedding_dims = dict(zip(keys, dims))
        self.num_embeddings = dict(zip(keys, rows))

    @property
    def keys(self) -> list[str]:
        return list(self._keys)

    def forward(self, features, concat: bool = False):
        if isinstance(features, KeyedJagged):
            features = features.to_dict()
        if not isinstance(features, Mapping):
            raise TypeError(f"features must be a KeyedJagged or a mapping of key -> lookups, not {type(features).__name__}")
        per_table = [None] * len(self._keys)
        for key, x in features.items():
            if key not in self._index:
                raise KeyError(f"no table {key!r} (tables: {', '.join(self._keys)})")
            if isinstance(x, torch.Tensor):
                per_table[self._index[key]] = bags(x, None, None, mode=self.mode)
            else:
                per_table[self._index[key]] = bags(*x, mode=self.mode)
        outs = self._lookup(per_table)
        if concat:
            missing = [k for k, o in zip(self._keys, outs) if o is None]
            if missing:
                raise ValueError(f"concat=True needs every key; missing {missing}")
            return torch.cat(outs, dim=1)
        return {k: o for k, o in zip(self._keys, outs) if o is not None}

    def _indices(self, features) -> list:
        if isinstance(features, KeyedJagged):
            features = features.to_dict()
        out = [None] * len(self._keys)
        for key, x in features.items():
            if key not in self._index:
                raise KeyError(f"no table {key!r} (tables: {', '.join(self._keys)})")
            v = x if isinstance(x, torch.Tensor) else x[0]
            out[self._index[key]] = np.asarray(v.detach().cpu(), np.int64).reshape(-1)
        return out

    def read_rows(self, key: str, indices) -> torch.Tensor:
        """Current values of rows ``indices`` of table ``key``: float32 (*indices.shape, dim), read
        past the cache."""
        if key not in self._index:
            raise KeyError(f"no table {key!r}")
        return self._read_rows(self._index[key], indices)

    def _entry(self, t: int) -> str:
        return f"embedding_bags.{self._keys[t]}."

    def extra_repr(self) -> str:
        st = self._tables.store
        tabs = ", ".join(f"{k}: {n}x{d}" for k, n, d in zip(self._keys, st.tables, st.dims.tolist()))
        return (f"[{tabs}], mode={self.mode!r}, optimizer={self.optimizer.name!r}, "
                f"budget_pages={st.nframes}/{st.total_pages}")
