"""Block-device facts from sysfs (``/sys/dev/block/MAJ:MIN``), shared by the Linux backends, the
safety checks and ``zswap-host devices``. Nothing here opens the device itself."""

from __future__ import annotations

import os
import re
import stat
from typing import NamedTuple

SECTOR = 512       # the kernel's sector: sysfs and the blkzoned ioctls count in it


def devnums(path: str) -> tuple[int, int]:
    """(major, minor) of the device node ``path`` (``OSError`` if it does not exist)."""
    st = os.stat(path)
    return os.major(st.st_rdev), os.minor(st.st_rdev)


def sysfs_dir_of(major: int, minor: int) -> str:
    """``/sys/dev/block/MAJ:MIN`` resolved (``/sys/devices/.../block/NAME[/PART]``)."""
    return os.path.realpath(f"/sys/dev/block/{major}:{minor}")


def sysfs_dir(path: str) -> str:
    """``/sys/dev/block/MAJ:MIN`` resolved, for a block device node."""
    return sysfs_dir_of(*devnums(path))


def queue_dir(path: str) -> str:
    """The ``queue`` folder of the disk that holds ``path`` (a partition's parent disk)."""
    d = sysfs_dir(path)
    if not os.path.isdir(os.path.join(d, "queue")) and os.path.exists(os.path.join(d, "partition")):
        d = os.path.dirname(d)
    return os.path.join(d, "queue")


def read_sysfs(path: str, default: str | None = None) -> str | None:
    """A sysfs attribute's text, stripped; ``default`` when it cannot be read."""
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def zoned_model(path: str) -> str:
    """``none``, ``host-aware`` or ``host-managed`` (``queue/zoned``)."""
    return read_sysfs(os.path.join(queue_dir(path), "zoned"), "none") or "none"


def is_nvme_namespace(path: str) -> bool:
    """True for an NVMe namespace (``nvmeXnY``): zone append can go through NVMe passthrough."""
    return os.path.basename(sysfs_dir(path)).startswith("nvme")


def generic_char_device(path: str) -> str | None:
    """The NVMe generic char device of namespace ``path`` (``/dev/nvme0n2`` -> ``/dev/ng0n2``, Linux
    >= 5.13), which takes io_uring passthrough commands; None when it does not exist."""
    m = re.fullmatch(r"nvme(\d+)n(\d+)", os.path.basename(sysfs_dir(path)))
    if not m:
        return None
    ng = f"/dev/ng{m.group(1)}n{m.group(2)}"
    try:
        return ng if stat.S_ISCHR(os.stat(ng).st_mode) else None
    except OSError:
        return None


class QueueZoneLimits(NamedTuple):
    """What a disk's ``queue`` folder says about its zones (0 where it says nothing or has no limit)."""

    block_size: int        # logical_block_size, bytes
    zone_sectors: int      # chunk_sectors: zone size in 512-byte sectors
    nr_zones: int
    max_open: int
    max_active: int
    max_append: int        # zone_append_max_bytes, rounded down to whole blocks


def queue_zone_limits(q: str) -> QueueZoneLimits:
    """Zone geometry from sysfs ``queue`` folder ``q`` (see :func:`queue_dir`)."""
    def num(name: str) -> int:
        return int(read_sysfs(os.path.join(q, name), "0") or 0)

    lbs = num("logical_block_size")
    append = num("zone_append_max_bytes")
    return QueueZoneLimits(lbs, num("chunk_sectors"), num("nr_zones"), num("max_open_zones"),
                           num("max_active_zones"), append - append % lbs if lbs else append)


def max_transfer_bytes(q: str) -> int:
    """``max_sectors_kb`` in bytes: the largest request before the block layer splits it (0: unknown)."""
    return int(read_sysfs(os.path.join(q, "max_sectors_kb"), "0") or 0) * 1024
