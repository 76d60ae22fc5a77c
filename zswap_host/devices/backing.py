"""Where an emulated device keeps its bytes: anonymous memory, or a sparse file with a JSON
sidecar (``PATH.json``) describing the device so a later run can reopen it as it was left."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from ..errors import DeviceSpecError


class Backing:
    """A flat byte array of ``size`` bytes. Untouched regions cost neither memory nor disk."""

    def __init__(self, size: int, path: str | None = None) -> None:
        self.size = size
        self.path = path
        if path is None:
            self.data = np.zeros(size, dtype=np.uint8)  # calloc: pages appear on first touch
        else:
            p = Path(path)
            if p.exists() and p.stat().st_size != size:
                raise DeviceSpecError(f"{path} holds {p.stat().st_size} bytes, expected {size}")
            if not p.exists():
                if not p.parent.is_dir():
                    raise DeviceSpecError(f"cannot create {path}: {p.parent} is not a directory")
                with open(p, "wb") as f:
                    f.truncate(size)
            self.data = np.memmap(p, dtype=np.uint8, mode="r+", shape=(size,))

    def read(self, offset: int, length: int) -> np.ndarray:
        return self.data[offset:offset + length].copy()

    def write(self, offset: int, view: np.ndarray) -> None:
        self.data[offset:offset + view.size] = view

    def _block_index(self, offsets: np.ndarray, lengths: np.ndarray, bs: int) -> np.ndarray:
        nb = lengths // bs
        before = np.cumsum(nb) - nb
        return np.arange(int(nb.sum())) + np.repeat(offsets // bs - before, nb)

    def gather(self, offsets: np.ndarray, lengths: np.ndarray, bs: int) -> np.ndarray:
        """Many block-aligned ranges, back to back, in one copy."""
        if offsets.size <= 4:                              # a fault's few requests: slices beat indexing
            return np.concatenate([self.data[o:o + n] for o, n in zip(offsets.tolist(), lengths.tolist())]) \
                if offsets.size else np.zeros(0, np.uint8)
        rows = self.data[:self.size - self.size % bs].reshape(-1, bs)
        return rows[self._block_index(offsets, lengths, bs)].reshape(-1)

    def scatter(self, offsets: np.ndarray, lengths: np.ndarray, view: np.ndarray, bs: int) -> None:
        """Write ranges whose bytes lie back to back in ``view``."""
        if offsets.size <= 4:
            pos = 0
            for o, n in zip(offsets.tolist(), lengths.tolist()):
                self.data[o:o + n] = view[pos:pos + n]
                pos += n
            return
        rows = self.data[:self.size - self.size % bs].reshape(-1, bs)
        rows[self._block_index(offsets, lengths, bs)] = view.reshape(-1, bs)

    def zero(self, offset: int, length: int) -> None:
        """Drop a range (TRIM / zone reset): later reads return zeros."""
        if self.path is None:
            self.data[offset:offset + length] = 0
            return
        self.data[offset:offset + length] = 0  # keeps memmap and file coherent; then give the space back
        punch_hole(self.path, offset, length)

    def flush(self) -> None:
        if isinstance(self.data, np.memmap):
            self.data.flush()

    def close(self) -> None:
        self.flush()
        self.data = np.zeros(0, dtype=np.uint8)


def punch_hole(path: str, offset: int, length: int) -> None:
    """Release a file range's blocks (fallocate PUNCH_HOLE|KEEP_SIZE); silently skipped where the
    file system cannot, since the range already reads as zeros."""
    import ctypes
    import ctypes.util

    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    fd = os.open(path, os.O_RDWR)
    try:
        libc.fallocate(fd, 0x01 | 0x02, ctypes.c_long(offset), ctypes.c_long(length))
    finally:
        os.close(fd)


def sidecar_path(path: str) -> str:
    return path + ".json"


def load_sidecar(path: str) -> dict | None:
    sc = sidecar_path(path)
    if not os.path.exists(sc):
        return None
    try:
        with open(sc) as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise DeviceSpecError(f"cannot read the device description {sc}: {e}") from e


def save_sidecar(path: str, meta: dict) -> None:
    tmp = sidecar_path(path) + ".tmp"
    with open(tmp, "w") as f:
        json.dump(meta, f, indent=1)
    os.replace(tmp, sidecar_path(path))
