"""The zone model: conditions, one zone's report entry, and a device's zone geometry.

All sizes and positions are in bytes, as in libzbd; ``wp`` is absolute. Condition values are the
kernel's ``BLK_ZONE_COND_*`` numbers so reports compare directly with ``blkzone report``.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass


class ZoneCond(enum.IntEnum):
    """Zone condition (NVMe ZNS zone state), numbered as in ``linux/blkzoned.h``."""

    NOT_WP = 0x0
    EMPTY = 0x1
    IMPLICIT_OPEN = 0x2
    EXPLICIT_OPEN = 0x3
    CLOSED = 0x4
    READ_ONLY = 0xD
    FULL = 0xE
    OFFLINE = 0xF

    @property
    def short(self) -> str:
        """The two-letter name ``blkzone report`` prints (``em``, ``oi``, ``oe``, ``cl``, ``fu``, ...)."""
        return _SHORT[self]

    @property
    def is_open(self) -> bool:
        return self in (ZoneCond.IMPLICIT_OPEN, ZoneCond.EXPLICIT_OPEN)

    @property
    def is_active(self) -> bool:
        """Open or closed: the zone holds one of the device's active-zone resources."""
        return self in (ZoneCond.IMPLICIT_OPEN, ZoneCond.EXPLICIT_OPEN, ZoneCond.CLOSED)


_SHORT = {
    ZoneCond.NOT_WP: "nw", ZoneCond.EMPTY: "em", ZoneCond.IMPLICIT_OPEN: "oi",
    ZoneCond.EXPLICIT_OPEN: "oe", ZoneCond.CLOSED: "cl", ZoneCond.READ_ONLY: "ro",
    ZoneCond.FULL: "fu", ZoneCond.OFFLINE: "of",
}


@dataclass(frozen=True)
class Zone:
    """One zone as a zone report gives it. ``wp`` is absolute; a FULL zone reports
    ``wp == start + len`` as Linux does."""

    index: int
    start: int
    len: int
    capacity: int
    wp: int
    cond: ZoneCond

    @property
    def written(self) -> int:
        """Bytes written into the zone (its write pointer relative to its start, capped at capacity)."""
        return min(self.wp - self.start, self.capacity)

    @property
    def remaining(self) -> int:
        """Bytes that can still be written before the zone is full (0 unless writable)."""
        if self.cond in (ZoneCond.FULL, ZoneCond.READ_ONLY, ZoneCond.OFFLINE):
            return 0
        return self.capacity - (self.wp - self.start)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["cond"] = self.cond.name
        return d


@dataclass(frozen=True)
class ZoneGeometry:
    """Shape and limits of a zoned device. ``max_open``/``max_active`` of 0 mean no limit."""

    nr_zones: int
    zone_size: int
    zone_capacity: int
    block_size: int = 4096
    max_open: int = 0
    max_active: int = 0
    max_append: int = 0

    def __post_init__(self) -> None:
        from ..errors import DeviceSpecError

        if self.block_size <= 0 or self.block_size & (self.block_size - 1):
            raise DeviceSpecError(f"block size {self.block_size} is not a power of two")
        if self.nr_zones <= 0:
            raise DeviceSpecError(f"a zoned device needs at least one zone, not {self.nr_zones}")
        if self.zone_size <= 0 or self.zone_size % self.block_size:
            raise DeviceSpecError(
                f"zone size {self.zone_size} is not a multiple of the block size {self.block_size}")
        if self.zone_capacity <= 0 or self.zone_capacity % self.block_size:
            raise DeviceSpecError(
                f"zone capacity {self.zone_capacity} is not a positive multiple of the block size {self.block_size}")
        if self.zone_capacity > self.zone_size:
            raise DeviceSpecError(
                f"zone capacity {self.zone_capacity} is larger than the zone size {self.zone_size}")
        if self.max_open < 0 or self.max_active < 0:
            raise DeviceSpecError("max_open and max_active must not be negative")
        if self.max_open and self.max_active and self.max_open > self.max_active:
            raise DeviceSpecError(
                f"max_open ({self.max_open}) cannot exceed max_active ({self.max_active})")
        if self.max_append and (self.max_append < self.block_size or self.max_append % self.block_size):
            raise DeviceSpecError(
                f"zone append limit {self.max_append} is not a multiple of the block size {self.block_size}")

    @property
    def size(self) -> int:
        """Addressable bytes (``nr_zones * zone_size``)."""
        return self.nr_zones * self.zone_size

    @property
    def capacity(self) -> int:
        """Writable bytes (``nr_zones * zone_capacity``)."""
        return self.nr_zones * self.zone_capacity

    def zone_start(self, zone: int) -> int:
        return zone * self.zone_size

    def zone_of(self, offset: int) -> int:
        return offset // self.zone_size

    def as_dict(self) -> dict:
        return asdict(self)
