"""The two device protocols every backend implements, and the statistics they report.

``read`` returns a ``numpy.ndarray`` of ``uint8`` (the store works on numpy page batches);
``write``/``append`` take any buffer (bytes, bytearray, memoryview, numpy array).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from ..errors import InvalidIOError, ZoneStateError
from .zone import Zone, ZoneGeometry

Buffer = bytes | bytearray | memoryview | np.ndarray


@dataclass
class DeviceStats:
    """What a device saw. ``clock`` says which clock ``device_time_s`` uses: ``"modeled"`` (the SSD
    timing model of an emulated device), ``"wall"`` (real I/O) or ``"none"`` (timing model off)."""

    clock: str
    device_time_s: float = 0.0
    device_write_bytes: int = 0
    device_read_bytes: int = 0
    discard_bytes: int = 0
    media_write_bytes: int = 0
    gc_write_bytes: int = 0
    erase_count: int = 0
    write_size_histogram: dict[int, int] = field(default_factory=dict)
    read_size_histogram: dict[int, int] = field(default_factory=dict)

    @property
    def write_amplification(self) -> float:
        """Media writes over writes the device received (1.0 when nothing was written)."""
        return self.media_write_bytes / self.device_write_bytes if self.device_write_bytes else 1.0

    def as_dict(self) -> dict:
        return {
            "clock": self.clock, "device_time_s": self.device_time_s,
            "device_write_bytes": self.device_write_bytes, "device_read_bytes": self.device_read_bytes,
            "discard_bytes": self.discard_bytes, "media_write_bytes": self.media_write_bytes,
            "gc_write_bytes": self.gc_write_bytes, "erase_count": self.erase_count,
            "write_amplification": self.write_amplification,
            "write_size_histogram": dict(sorted(self.write_size_histogram.items())),
            "read_size_histogram": dict(sorted(self.read_size_histogram.items())),
        }


class IoCounters:
    """Request counting shared by the backends: bytes and a request-size histogram per direction."""

    def __init__(self) -> None:
        self.write_bytes = 0
        self.read_bytes = 0
        self.discard_bytes = 0
        self.write_hist: Counter[int] = Counter()
        self.read_hist: Counter[int] = Counter()

    def wrote(self, n: int) -> None:
        self.write_bytes += n
        self.write_hist[n] += 1

    def read(self, n: int) -> None:
        self.read_bytes += n
        self.read_hist[n] += 1

    def wrote_many(self, lengths: np.ndarray) -> None:
        self.write_bytes += int(lengths.sum())
        _count(self.write_hist, lengths)

    def read_many(self, lengths: np.ndarray) -> None:
        self.read_bytes += int(lengths.sum())
        _count(self.read_hist, lengths)

    def fill(self, stats: DeviceStats) -> DeviceStats:
        stats.device_write_bytes = self.write_bytes
        stats.device_read_bytes = self.read_bytes
        stats.discard_bytes = self.discard_bytes
        stats.write_size_histogram = dict(self.write_hist)
        stats.read_size_histogram = dict(self.read_hist)
        return stats


class ModelClock:
    """What the emulated devices share: charging requests to the SSD model (``self.model``,
    None = timing off) and its clock."""

    model = None

    def _charge(self, op: int, offset: int, length: int) -> None:
        if self.model is not None:
            self.model.submit(np.array([op], np.uint8), np.array([offset], np.int64),
                              np.array([length], np.int64), 1)

    def _charge_batch(self, op: int, offsets: np.ndarray, lengths: np.ndarray, qd: int) -> np.ndarray:
        if self.model is None or offsets.size == 0:
            return np.zeros(offsets.size)
        return self.model.submit(np.full(offsets.size, op, np.uint8), offsets, lengths, qd)

    def now(self) -> float:
        """The device clock: modeled seconds (0 with the timing model off)."""
        return float(self.model.now) if self.model is not None else 0.0

    def advance(self, seconds: float) -> None:
        """Let host idle time pass on the modeled clock (a model with idle-time GC works in it)."""
        if self.model is not None and seconds > 0:
            self.model.advance(seconds)

    def timing_options(self) -> dict:
        """The SSD model's optional behaviours (``suspend``, ``idle_gc``) for ``describe()``."""
        return dict(self.model.options) if self.model is not None else {}


def _count(hist: Counter, lengths: np.ndarray) -> None:
    if lengths.size <= 8:
        for n in lengths.tolist():
            hist[n] += 1
        return
    for size, count in zip(*np.unique(lengths, return_counts=True)):
        hist[int(size)] += int(count)


@runtime_checkable
class ZonedDevice(Protocol):
    """A host-managed zoned device (libzbd-shaped; all sizes in bytes; ``z`` is a zone index)."""

    geometry: ZoneGeometry

    def report_zones(self) -> list[Zone]: ...
    def reset_zone(self, z: int) -> None: ...
    def open_zone(self, z: int) -> None: ...
    def close_zone(self, z: int) -> None: ...
    def finish_zone(self, z: int) -> None: ...
    def write(self, offset: int, data: Buffer) -> None:
        """Write at the zone's write pointer only."""
    def append(self, z: int, data: Buffer) -> int:
        """Zone append: the device picks the position (the write pointer) and returns its offset."""
    def read(self, offset: int, length: int) -> np.ndarray: ...
    def stats(self) -> DeviceStats: ...
    def describe(self) -> dict: ...
    def close(self) -> None: ...


@runtime_checkable
class BlockDevice(Protocol):
    """A conventional block device: read, write and discard at any block-aligned offset."""

    size: int
    block_size: int

    def read(self, offset: int, length: int) -> np.ndarray: ...
    def write(self, offset: int, data: Buffer) -> None: ...
    def discard(self, offset: int, length: int) -> None: ...
    def flush(self) -> None: ...
    def stats(self) -> DeviceStats: ...
    def describe(self) -> dict: ...
    def close(self) -> None: ...


def as_bytes_view(data: Buffer) -> np.ndarray:
    """A flat uint8 view of any buffer, without copying."""
    if isinstance(data, np.ndarray):
        return data.reshape(-1).view(np.uint8) if data.flags.c_contiguous else np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    return np.frombuffer(data, dtype=np.uint8)


def check_zone_write(g: ZoneGeometry, offset: int, length: int) -> int:
    """The zone a write lands in: aligned, inside the device, not crossing a zone's end."""
    check_aligned(offset, length, g.block_size, g.size, "write")
    z = g.zone_of(offset)
    if g.zone_of(offset + length - 1) != z:
        raise ZoneStateError(f"write at {offset} of {length} bytes crosses the end of zone {z}", zone=z)
    return z


def check_append(g: ZoneGeometry, length: int) -> None:
    """A zone append's size: whole blocks, at most a zone, within the device's append limit."""
    check_aligned(0, length, g.block_size, g.zone_size, "zone append")
    if g.max_append and length > g.max_append:
        raise InvalidIOError(f"zone append of {length} bytes exceeds the device's append limit {g.max_append}")


def check_batch(offsets: np.ndarray, lengths: np.ndarray, block_size: int, limit: int, what: str) -> None:
    """check_aligned for many ranges at once (the per-range check only runs to name the bad one)."""
    if offsets.size <= 4:
        for o, n in zip(offsets.tolist(), lengths.tolist()):
            check_aligned(o, n, block_size, limit, what)
        return
    bad = (offsets < 0) | (lengths <= 0) | (offsets + lengths > limit) | ((offsets | lengths) % block_size != 0)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        check_aligned(int(offsets[k]), int(lengths[k]), block_size, limit, what)


def check_aligned(offset: int, length: int, block_size: int, limit: int, what: str = "I/O") -> None:
    """Raise InvalidIOError unless [offset, offset+length) is block aligned and inside [0, limit)."""
    if offset < 0 or length <= 0 or offset + length > limit:
        raise InvalidIOError(f"{what} [{offset}, {offset + length}) is outside the device (size {limit})")
    if offset % block_size or length % block_size:
        raise InvalidIOError(f"{what} at {offset} of {length} bytes is not aligned to the {block_size}-byte block size")
