"""The pages that hold given rows of a paged numpy array or torch tensor (``Pager.prefetch``)."""

from __future__ import annotations

import numpy as np


def row_layout(obj) -> tuple[int, int, int, int]:
    """(address, rows, row stride in bytes, bytes per row) of a C-contiguous numpy array or torch
    tensor (a 0-d or 1-d one: rows of one element); ``ValueError`` if it is not contiguous."""
    if hasattr(obj, "data_ptr"):  # torch
        if not obj.is_contiguous():
            raise ValueError("prefetch needs a contiguous tensor")
        shape, item = tuple(obj.shape), obj.element_size()
        addr = obj.data_ptr()
    else:
        a = np.asarray(obj)
        if not a.flags.c_contiguous:
            raise ValueError("prefetch needs a C-contiguous array")
        shape, item = a.shape, a.itemsize
        addr = a.__array_interface__["data"][0]
    shape = shape or (1,)
    row = item * int(np.prod(shape[1:], dtype=np.int64))
    return addr, shape[0], row, row


def row_page_addrs(addr: int, stride: int, row_bytes: int, rows: np.ndarray, page_size: int) -> np.ndarray:
    """The page-aligned addresses (sorted, unique, int64) of the pages the bytes of ``rows`` touch:
    row ``r`` is ``[addr + r * stride, + row_bytes)``."""
    rows = np.asarray(rows, np.int64).reshape(-1)
    if rows.size == 0 or row_bytes <= 0:
        return np.zeros(0, np.int64)
    start = addr + rows * stride
    first, last = start // page_size, (start + row_bytes - 1) // page_size
    counts = last - first + 1
    offsets = np.cumsum(counts) - counts
    pages = np.repeat(first, counts) + np.arange(int(counts.sum())) - np.repeat(offsets, counts)
    return np.unique(pages) * page_size
