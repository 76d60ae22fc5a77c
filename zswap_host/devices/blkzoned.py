"""The kernel's zoned block interface through ``zswap_host._zoned`` (``native/zoned.c``): the
extension loader, zone reports in sector units, and errno names. The zone management and NVMe
passthrough calls themselves are made by :class:`~.linux_zoned.LinuxZonedDevice`."""

from __future__ import annotations

import errno
import os

import numpy as np

from ..errors import DeviceIOError, DeviceSpecError
from .sysfs import SECTOR

# zd_zone_mgmt's op codes (BLKRESETZONE, BLKOPENZONE, BLKCLOSEZONE, BLKFINISHZONE)
ZONE_OPS = {"reset": 0, "open": 1, "close": 2, "finish": 3}


def zoned_lib():
    """``(ffi, lib)`` of the zoned-ioctl extension; ``DeviceSpecError`` with the fix when it is not built."""
    try:
        from .._zoned import ffi, lib
    except ImportError as e:  # pragma: no cover - the extension is built by pip install
        raise DeviceSpecError(f"the zoned-device extension zswap_host._zoned is missing ({e}); run "
                              f"`pip install -e .` or `python native/build_native.py`") from None
    return ffi, lib


def errname(e: int) -> str:
    """``EIO`` for 5, and so on (the number itself when it has no name)."""
    return errno.errorcode.get(e, str(e))


def report_fd(fd: int, path: str, chunk: int, first: int, n: int):
    """Zones ``first`` .. ``first + n - 1`` of the zoned device open as ``fd`` (``chunk``: zone size
    in sectors). Returns start, len, wp, capacity (sector units), condition and type arrays, as many
    zones as the device has from ``first`` on (at most ``n``). ``DeviceIOError`` if the report fails."""
    ffi, lib = zoned_lib()
    start = np.zeros(n, np.uint64)
    ln, wp, cap = np.zeros_like(start), np.zeros_like(start), np.zeros_like(start)
    cond, typ = np.zeros(n, np.uint8), np.zeros(n, np.uint8)
    flags = ffi.new("uint32_t *")
    got = 0
    while got < n:
        p = lambda a: ffi.cast(f"{'uint64_t' if a.dtype == np.uint64 else 'uint8_t'} *", a[got:].ctypes.data)
        r = lib.zd_report_zones(fd, (first + got) * chunk, n - got, p(start), p(ln), p(wp), p(cap),
                                p(cond), p(typ), flags)
        if r < 0:
            raise DeviceIOError(f"{path}: zone report failed: {os.strerror(-r)} ({errname(-r)})")
        if r == 0:
            break
        got += r
    return start[:got], ln[:got], wp[:got], cap[:got], cond[:got], typ[:got]


def first_zone_capacity(path: str, zone_sectors: int) -> int | None:
    """Zone 0's capacity in bytes from the zone report, through a read-only open (no exclusive claim,
    nothing written); None when the report is refused."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        cap = report_fd(fd, path, zone_sectors, 0, 1)[3]
        return int(cap[0]) * SECTOR if cap.size else None
    except (DeviceIOError, DeviceSpecError):
        return None
    finally:
        os.close(fd)
