"""Lookups as ``nn.EmbeddingBag`` takes them, checked before any paging, and TorchRec-style keyed
jagged input (``KeyedJagged``) for a collection of tables.

Only what must be known before the rows are gathered is checked here (the exception types are
torch's); everything else about ``offsets`` (``offsets[0] == 0``, ``offsets[-1] <= len(input)``) is
checked by ``F.embedding_bag`` itself when the gathered rows are pooled.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

MODES = ("sum", "mean")


class EmbeddingIndexError(IndexError, RuntimeError):
    """An index outside ``[0, num_embeddings)``. A ``RuntimeError`` as ``nn.EmbeddingBag`` raises,
    and an ``IndexError`` as ``nn.Embedding`` raises."""


@dataclass
class Bags:
    """One table's lookups, ready to gather and pool: ``input`` 1-D (with ``offsets``) or 2-D
    (fixed-size bags, ``offsets`` None), ``per_sample_weights`` of ``input``'s shape or None."""

    input: torch.Tensor
    offsets: torch.Tensor | None
    per_sample_weights: torch.Tensor | None
    include_last_offset: bool

    def indices(self) -> np.ndarray:
        """The rows to gather, int64, in ``input``'s (flattened) order."""
        return self.input.detach().reshape(-1).to(torch.int64).numpy()


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"mode has to be one of {', '.join(MODES)}, not {mode!r} ('max' is not supported)")
    return mode


def bags(input, offsets=None, per_sample_weights=None, *, mode: str = "mean",
         include_last_offset: bool = False) -> Bags:
    """``nn.EmbeddingBag.forward``'s arguments, checked: ``RuntimeError`` for indices (with
    1-D indices: indices and offsets promoted to one type, as torch does) that are not int32/int64,
    ``ValueError`` for a bad shape or a 2-D input with offsets, ``NotImplementedError`` for
    ``per_sample_weights`` with a mode other than ``"sum"``. With ``include_last_offset`` the
    lookups past the last offset (which pool into no bag) are dropped."""
    if not isinstance(input, torch.Tensor):
        raise TypeError(f"input must be a Tensor, not {type(input).__name__}")
    # as torch: 1-D indices and offsets of different types are promoted to a common one (int16
    # indices with int64 offsets are int64), which must be int32 or int64
    common = input.dtype
    if input.dim() == 1 and isinstance(offsets, torch.Tensor) and offsets.dtype != input.dtype:
        common = torch.promote_types(input.dtype, offsets.dtype)
    if common not in (torch.int64, torch.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar "
                           f"types: Long, Int; but got {common} instead")
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                      f"supported for mode='sum' (got mode='{mode}')")
        if per_sample_weights.shape != input.shape:
            raise ValueError(f"embedding_bag: If per_sample_weights ({tuple(per_sample_weights.shape)}) is not None, "
                             f"then it must have the same shape as the input ({tuple(input.shape)})")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             "fixed length sequences")
    elif input.dim() == 1:
        if not isinstance(offsets, torch.Tensor) or offsets.dim() != 1:
            raise ValueError(f"offsets has to be a 1D Tensor but got {offsets if offsets is None else offsets.shape}")
        offsets = offsets.to(torch.int64)
        if include_last_offset and offsets.numel() and int(offsets[-1]) < input.numel():
            end = int(offsets[-1])
            input = input[:end]
            if per_sample_weights is not None:
                per_sample_weights = per_sample_weights[:end]
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    return Bags(input, offsets, per_sample_weights, bool(include_last_offset))


@dataclass
class KeyedJagged:
    """TorchRec's ``KeyedJaggedTensor``, lightly: ``values`` holds every key's lookups, key after key
    and sample after sample; ``lengths`` (``len(keys) * B``) the number of lookups of each (key,
    sample); ``weights`` optional per-lookup weights (``per_sample_weights``, mode ``"sum"``).
    ``ValueError`` for a key given twice, or lengths and values that do not fit."""

    keys: list[str]
    values: torch.Tensor
    lengths: torch.Tensor
    weights: torch.Tensor | None = None

    def __post_init__(self) -> None:
        self.keys = list(self.keys)
        dup = next((k for i, k in enumerate(self.keys) if k in self.keys[:i]), None)
        if dup is not None:                 # to_dict would keep only its last lookups
            raise ValueError(f"key {dup!r} appears twice in keys {self.keys}")
        if self.values.dim() != 1 or self.lengths.dim() != 1:
            raise ValueError("values and lengths must be 1-D")
        if self.keys and self.lengths.numel() % len(self.keys):
            raise ValueError(f"lengths ({self.lengths.numel()}) is not a multiple of the {len(self.keys)} keys")
        if int(self.lengths.sum()) != self.values.numel():
            raise ValueError(f"lengths sum to {int(self.lengths.sum())}, values has {self.values.numel()}")
        if self.weights is not None and self.weights.shape != self.values.shape:
            raise ValueError("weights must have values' shape")

    @property
    def stride(self) -> int:
        """The batch size B."""
        return self.lengths.numel() // len(self.keys) if self.keys else 0

    def to_dict(self) -> dict[str, tuple]:
        """key -> (values, offsets[, weights]), offsets with B entries (no last offset)."""
        B = self.stride
        lengths = self.lengths.to(torch.int64).view(len(self.keys), B) if self.keys else self.lengths
        ends = torch.cumsum(lengths.reshape(-1), 0).view_as(lengths) if self.keys else lengths
        out = {}
        for k, key in enumerate(self.keys):
            lo = int(ends[k, 0] - lengths[k, 0]) if B else 0
            hi = int(ends[k, -1]) if B else lo
            offsets = ends[k] - lengths[k] - lo
            vals = self.values[lo:hi]
            out[key] = (vals, offsets) if self.weights is None else (vals, offsets, self.weights[lo:hi])
        return out
