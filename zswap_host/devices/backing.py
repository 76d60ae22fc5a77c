"""Where an emulated device keeps its bytes: anonymous memory, or a sparse file with a JSON
sidecar (``PATH.json``) describing the device so a later run can reopen it as it was left."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from ..errors import DeviceSpecError


def _anonymous(size: int) -> np.ndarray:
    """``size`` zero bytes that cost memory only where written: an anonymous mapping without swap
    reservation, so a device of a real drive's size (terabytes) opens on a small machine."""
    import mmap

    flags = mmap.MAP_PRIVATE | getattr(mmap, "MAP_ANONYMOUS", 0x20) | getattr(mmap, "MAP_NORESERVE", 0x4000)
    try:
        m = mmap.mmap(-1, size, flags=flags)
    except (OSError, OverflowError, ValueError) as e:
        raise DeviceSpecError(f"cannot reserve {size} bytes of address space for an in-memory device: {e}") from None
    return np.frombuffer(m, dtype=np.uint8), m


class Backing:
    """A flat byte array of ``size`` bytes. Untouched regions cost neither memory nor disk.
    ``readonly`` (file-backed only): the file must exist with that size and is never written.
    ``new``: the caller is creating the device (no description of it exists), so an existing empty
    file is grown like an absent one; otherwise an empty image is a truncated device."""

    def __init__(self, size: int, path: str | None = None, readonly: bool = False, new: bool = False) -> None:
        self.size = size
        self.path = path
        self._map = None
        if path is None:
            self.data, self._map = _anonymous(size)      # pages appear on first touch
        else:
            p = Path(path)
            if p.exists() and not p.is_file():
                raise DeviceSpecError(f"{path} is not a regular file")
            empty = new and not readonly and p.exists() and p.stat().st_size == 0
            if p.exists() and p.stat().st_size != size and not empty:
                raise DeviceSpecError(f"{path} holds {p.stat().st_size} bytes, expected {size} (truncated or "
                                      f"not this device's image)")
            if readonly:
                if not p.exists():
                    raise DeviceSpecError(f"{path}: no such emulated device (a read-only open creates nothing)")
                self.data = np.memmap(p, dtype=np.uint8, mode="r", shape=(size,))
                return
            if not p.exists() or empty:
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
        n = int(lengths[0])
        if n % bs == 0 and not (lengths != n).any() and not (offsets % n).any():
            # equal, aligned ranges (a page each, the usual swap-in): whole rows, one take
            rows = self.data[:self.size - self.size % n].reshape(-1, n)
            return np.take(rows, offsets // n, axis=0).reshape(-1)
        rows = self.data[:self.size - self.size % bs].reshape(-1, bs)
        return np.take(rows, self._block_index(offsets, lengths, bs), axis=0).reshape(-1)

    def gather_words(self, offsets: np.ndarray, lengths: np.ndarray, bs: int) -> np.ndarray:
        """The first 64-bit word of every block of the ranges, back to back (uint64): ``gather``'s
        blocks without their other bytes."""
        rows = self.data[:self.size - self.size % bs].reshape(-1, bs)
        return np.ascontiguousarray(rows[self._block_index(offsets, lengths, bs), :8]).view(np.uint64).reshape(-1)

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

    def scatter_words(self, offsets: np.ndarray, lengths: np.ndarray, words: np.ndarray, bs: int) -> None:
        """Write ranges of blocks, each holding the next of ``words`` (uint64) followed by zeros."""
        rows = self.data[:self.size - self.size % bs].reshape(-1, bs)
        idx = self._block_index(offsets, lengths, bs)
        rows[idx] = 0
        rows[idx, :8] = np.ascontiguousarray(words, np.uint64).view(np.uint8).reshape(-1, 8)

    def zero(self, offset: int, length: int) -> None:
        """Drop a range (TRIM / zone reset): later reads return zeros."""
        if self.path is None:
            import mmap

            lo = -(-offset // mmap.PAGESIZE) * mmap.PAGESIZE
            hi = (offset + length) // mmap.PAGESIZE * mmap.PAGESIZE
            if hi > lo and hasattr(self._map, "madvise"):  # give the memory back (reads as zeros)
                self.data[offset:lo] = 0
                self.data[hi:offset + length] = 0
                self._map.madvise(mmap.MADV_DONTNEED, lo, hi - lo)
            else:
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
        self._map = None


_LIBC = None


def _libc():
    global _LIBC
    if _LIBC is None:                   # find_library runs ldconfig: once, not per zone reset
        import ctypes
        import ctypes.util

        _LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return _LIBC


def punch_hole(path: str, offset: int, length: int) -> None:
    """Release a file range's blocks (fallocate PUNCH_HOLE|KEEP_SIZE); silently skipped where the
    file system cannot, since the range already reads as zeros."""
    import ctypes

    libc = _libc()
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
            meta = json.load(f)
    except (OSError, ValueError) as e:
        raise DeviceSpecError(f"cannot read the device description {sc}: {e}") from None
    except RecursionError:              # json nests without limit; Python's stack does not
        raise DeviceSpecError(f"cannot read the device description {sc}: nested too deeply") from None
    if not isinstance(meta, dict):
        raise DeviceSpecError(f"{sc} is not a device description (a JSON object expected)")
    return meta


def sidecar_field(meta: dict, key: str, path: str, kind=int, optional: bool = False):
    """A field of a device description, checked: ints are ints (not bools) and not negative."""
    sc = sidecar_path(path)
    if key not in meta or (optional and meta[key] is None):
        if optional:
            return None
        raise DeviceSpecError(f"{sc} is corrupt: it has no {key!r}")
    v = meta[key]
    if kind is int:
        ok = isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 62
    elif kind is float:
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and 0.0 <= v < 1.0
    else:
        ok = isinstance(v, kind)
    if not ok:
        raise DeviceSpecError(f"{sc} is corrupt: {key} = {v!r}")
    return v


def save_sidecar(path: str, meta: dict) -> None:
    tmp = sidecar_path(path) + ".tmp"
    with open(tmp, "w") as f:
        json.dump(meta, f, indent=1)
    os.replace(tmp, sidecar_path(path))


class PersistedState:
    """Flush, close and the context manager of an emulated device whose data is a ``Backing``
    (``self._backing``) and whose per-zone or per-chunk state is a numpy table (``_persisted``),
    memory-mapped beside a file-backed device's data. Needs ``self._lock`` and ``self.readonly``."""

    _persisted: np.ndarray

    def flush(self) -> None:
        """Make the data and the state table durable (nothing to do read-only)."""
        with self._lock:
            if self.readonly:
                return
            self._backing.flush()
            if isinstance(self._persisted, np.memmap):
                self._persisted.flush()

    def close(self) -> None:
        """Flush and release the data."""
        with self._lock:
            self.flush()
            self._backing.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
