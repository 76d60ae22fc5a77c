"""The zone states of an emulated ZNS namespace: each zone's write pointer and condition (a table
the device keeps in memory, or memory-mapped beside its data as ``PATH.zones``), and the rules that
change them.

The state machine and resource accounting follow QEMU's ``hw/nvme`` ``nvme_zrm_*`` functions: an
implicit or explicit open of an EMPTY or CLOSED zone first auto-closes the oldest implicitly open
zone when the open limit is reached, then checks the active limit (EOVERFLOW) and the open limit
(ETOOMANYREFS).
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from ..errors import DeviceIOError, DeviceSpecError, ZoneStateError
from .zone import ZoneCond, ZoneGeometry

_CONDS = (ZoneCond.EMPTY, ZoneCond.IMPLICIT_OPEN, ZoneCond.EXPLICIT_OPEN, ZoneCond.CLOSED,
          ZoneCond.READ_ONLY, ZoneCond.FULL, ZoneCond.OFFLINE)


def check_zone_file(zpath: str, g: ZoneGeometry) -> None:
    """Refuse a ``PATH.zones`` that this device could not have written: wrong size, unknown
    conditions, write pointers outside [0, capacity] or off the block size, EMPTY with data, FULL
    short of capacity, more active/open zones than the limits allow."""
    import os

    want = g.nr_zones * 16
    have = os.path.getsize(zpath)
    if have != want:
        raise DeviceSpecError(f"{zpath} is corrupt: {have} bytes, a {g.nr_zones}-zone device keeps {want}")
    st = np.fromfile(zpath, dtype="<i8").reshape(g.nr_zones, 2)
    wp, cond = st[:, 0], st[:, 1]
    bad = ~np.isin(cond, _CONDS)
    if bad.any():
        z = int(np.flatnonzero(bad)[0])
        raise DeviceSpecError(f"{zpath} is corrupt: zone {z} has condition {int(cond[z])}")
    bad = (wp < 0) | (wp > g.zone_capacity) | (wp % g.block_size != 0) | \
        ((cond == ZoneCond.EMPTY) & (wp != 0)) | ((cond == ZoneCond.FULL) & (wp != g.zone_capacity)) | \
        (np.isin(cond, (ZoneCond.IMPLICIT_OPEN, ZoneCond.EXPLICIT_OPEN, ZoneCond.CLOSED)) & (wp >= g.zone_capacity))
    if bad.any():
        z = int(np.flatnonzero(bad)[0])
        raise DeviceSpecError(f"{zpath} is corrupt: zone {z} ({ZoneCond(int(cond[z])).name}) has its write "
                              f"pointer at {int(wp[z])} (capacity {g.zone_capacity}, block {g.block_size})")
    active = int(np.isin(cond, (ZoneCond.IMPLICIT_OPEN, ZoneCond.EXPLICIT_OPEN, ZoneCond.CLOSED)).sum())
    if g.max_active and active > g.max_active:
        raise DeviceSpecError(f"{zpath} is corrupt: {active} active zones, the device allows {g.max_active}")


class ZoneStates:
    """The zones of an ``EmulatedZonedDevice`` with ``geometry``: ``table`` holds a row per zone,
    (write pointer relative to the zone's start, ``ZoneCond`` value), seen as ``wp`` and ``cond``
    (views, written in place); ``nr_open``, ``nr_active`` and ``nr_offline`` count the open, active
    and OFFLINE zones. A
    ``fresh`` table starts EMPTY, a reopened one goes through a power cycle. The device holds its
    lock around every call."""

    def __init__(self, geometry: ZoneGeometry, table: np.ndarray, fresh: bool) -> None:
        self.geometry = geometry
        self.wp = table[:, 0]       # write pointer relative to zone start
        self.cond = table[:, 1]     # ZoneCond value
        if fresh:
            self.cond[:] = ZoneCond.EMPTY
        else:
            self.power_cycle()
        self._imp_open: OrderedDict[int, None] = OrderedDict()   # implicitly open zones, oldest first
        self.recount()

    def power_cycle(self) -> None:
        """Reopening a file-backed device is a controller reset: open zones become CLOSED, and open
        or closed zones holding no data EMPTY (as QEMU's namespace does at power-on)."""
        live = np.isin(self.cond, (ZoneCond.IMPLICIT_OPEN, ZoneCond.EXPLICIT_OPEN, ZoneCond.CLOSED))
        self.cond[live & (self.wp != 0)] = ZoneCond.CLOSED
        self.cond[live & (self.wp == 0)] = ZoneCond.EMPTY

    def recount(self) -> None:
        c = self.cond
        self.nr_open = int(np.isin(c, (ZoneCond.IMPLICIT_OPEN, ZoneCond.EXPLICIT_OPEN)).sum())
        self.nr_active = self.nr_open + int((c == ZoneCond.CLOSED).sum())
        self.nr_offline = int((c == ZoneCond.OFFLINE).sum())    # a read checks its zones only when > 0

    def set(self, z: int, cond: ZoneCond) -> None:
        """Zone ``z`` becomes ``cond``, the open and active counts with it."""
        old = ZoneCond(int(self.cond[z]))
        self.nr_open += int(cond.is_open) - int(old.is_open)
        self.nr_active += int(cond.is_active) - int(old.is_active)
        self.nr_offline += int(cond == ZoneCond.OFFLINE) - int(old == ZoneCond.OFFLINE)
        if old == ZoneCond.IMPLICIT_OPEN:
            self._imp_open.pop(z, None)
        if cond == ZoneCond.IMPLICIT_OPEN:
            self._imp_open[z] = None
        self.cond[z] = cond

    def cond_of(self, z: int) -> ZoneCond:
        return ZoneCond(int(self.cond[z]))

    def open(self, z: int, implicit: bool) -> None:
        g = self.geometry
        cond = self.cond_of(z)
        if cond in (ZoneCond.EMPTY, ZoneCond.CLOSED):
            if g.max_open and self.nr_open == g.max_open and self._imp_open:
                self.set(next(iter(self._imp_open)), ZoneCond.CLOSED)  # auto-transition
            act = 1 if cond == ZoneCond.EMPTY else 0
            if g.max_active and self.nr_active + act > g.max_active:
                raise ZoneStateError(
                    f"zone {z}: opening it would exceed the device's {g.max_active} active zones",
                    zone=z, errno_name="EOVERFLOW")
            if g.max_open and self.nr_open + 1 > g.max_open:
                raise ZoneStateError(
                    f"zone {z}: opening it would exceed the device's {g.max_open} open zones",
                    zone=z, errno_name="ETOOMANYREFS")
            self.set(z, ZoneCond.IMPLICIT_OPEN if implicit else ZoneCond.EXPLICIT_OPEN)
        elif cond == ZoneCond.IMPLICIT_OPEN:
            if not implicit:
                self.set(z, ZoneCond.EXPLICIT_OPEN)
        elif cond == ZoneCond.EXPLICIT_OPEN:
            pass
        else:
            raise self.bad_state(z, cond, "open")

    def bad_state(self, z: int, cond: ZoneCond, action: str) -> Exception:
        """The error for ``action`` on zone ``z`` in condition ``cond``, which does not allow it."""
        if cond == ZoneCond.OFFLINE:
            return DeviceIOError(f"zone {z} is offline", offset=self.geometry.zone_start(z))
        if cond == ZoneCond.READ_ONLY and action in ("write", "append"):
            return DeviceIOError(f"zone {z} is read-only", offset=self.geometry.zone_start(z))
        return ZoneStateError(f"zone {z}: cannot {action} a zone that is {cond.name}", zone=z)

    def close(self, z: int) -> None:
        cond = self.cond_of(z)
        if cond.is_open:
            self.set(z, ZoneCond.CLOSED)
        elif cond != ZoneCond.CLOSED:
            raise self.bad_state(z, cond, "close")

    def finish(self, z: int) -> bool:
        """Zone ``z`` becomes FULL, its write pointer at the capacity: True when it was not FULL."""
        cond = self.cond_of(z)
        if cond in (ZoneCond.EMPTY, ZoneCond.IMPLICIT_OPEN, ZoneCond.EXPLICIT_OPEN, ZoneCond.CLOSED):
            self.set(z, ZoneCond.FULL)
            self.wp[z] = self.geometry.zone_capacity
            return True
        if cond != ZoneCond.FULL:
            raise self.bad_state(z, cond, "finish")
        return False

    def reset(self, z: int) -> int | None:
        """Zone ``z`` becomes EMPTY, its write pointer at its start: the bytes it held, None when it
        was EMPTY already."""
        cond = self.cond_of(z)
        if cond in (ZoneCond.READ_ONLY, ZoneCond.OFFLINE):
            raise self.bad_state(z, cond, "reset")
        if cond == ZoneCond.EMPTY:
            return None
        written = int(self.wp[z])
        self.set(z, ZoneCond.EMPTY)
        self.wp[z] = 0
        return written
