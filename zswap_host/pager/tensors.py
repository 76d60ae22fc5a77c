"""Torch views of paged memory (torch is imported only here, only when asked for)."""

from __future__ import annotations

import numpy as np


def tensor_over(raw: np.ndarray, shape: tuple[int, ...], dtype):
    """A torch tensor of ``shape``/``dtype`` sharing the uint8 array ``raw``'s memory (which must
    hold exactly that many bytes)."""
    import torch

    return torch.from_numpy(raw).view(dtype).reshape(shape)


def torch_itemsize(dtype) -> int:
    import torch

    return torch.empty((), dtype=dtype).element_size()


def move_into(tensor, paged) -> None:
    """Copy ``tensor``'s values into ``paged`` (same shape and dtype) and make ``tensor`` use
    ``paged``'s storage (``set_``), so every existing reference (a module's parameter, an
    optimizer's state) now reads and writes paged memory. Works for leaves that require grad
    (under ``no_grad``)."""
    import torch

    with torch.no_grad():
        paged.copy_(tensor)  # releases the GIL (faults in the paged memory must not hold it)
        tensor.set_(paged.untyped_storage(), 0, paged.shape, paged.stride())
