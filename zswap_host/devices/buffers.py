"""The buffers devices take: ``write``/``append`` accept any of them (bytes, bytearray,
memoryview, numpy array) and work on a flat ``uint8`` view of it."""

from __future__ import annotations

import numpy as np

Buffer = bytes | bytearray | memoryview | np.ndarray


_U8 = np.dtype(np.uint8)


def as_bytes_view(data: Buffer) -> np.ndarray:
    """A flat uint8 view of any buffer, without copying."""
    if type(data) is np.ndarray and data.dtype is _U8 and data.ndim == 1 and data.flags.c_contiguous:
        return data                              # already one (a unit of a batch): no new view
    if isinstance(data, np.ndarray):
        return data.reshape(-1).view(np.uint8) if data.flags.c_contiguous else np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    return np.frombuffer(data, dtype=np.uint8)
