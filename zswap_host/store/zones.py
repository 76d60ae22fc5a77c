"""The zone allocator: which zone each write group fills, where its write cursor is, the free /
open / full / retired sets, and the zone-level device operations (take over, seal with a summary
footer, reset, finish). GC victim policies decide from the per-zone history it keeps."""

from __future__ import annotations

from collections import deque

import numpy as np

from ..devices.zone import ZoneCond
from ..errors import StoreInvariantError, ZswapError
from .summary import data_slots as summary_data_slots
from .summary import encode, footer_pages

FREE, OPEN, FULL, RETIRED = 0, 1, 2, 3


class ZoneAllocator:
    """Hands free zones to write groups (a user stream, or the GC stream) and takes reclaimed ones
    back; keeps each zone's write cursor and the page ids written there (for its summary footer).

    A group holds at most one open zone, so the device's open/active limits hold as long as the
    number of groups does (checked by the store). ``reserve`` free zones are GC headroom: user
    groups may not take them, so GC can always make progress.

    Time is the *write clock*: bytes the store has written (``clock``), so victim policies behave
    the same with or without a timing model.

    Raises: ``ValueError`` when the page size does not fit the device's blocks and zones;
    ``StoreInvariantError`` from ``record`` when the device wrote somewhere else than the cursor;
    the device's errors (``DeviceIOError``, ``ZoneStateError``) from the zone operations.
    """

    def __init__(self, device, page_size: int, reserve: int = 1) -> None:
        g = device.geometry
        if page_size % g.block_size or g.zone_size % page_size or g.zone_capacity % page_size:
            raise ValueError(f"page size {page_size} does not fit the device's blocks ({g.block_size}) and zones")
        self.device = device
        self.page_size = page_size
        self.nr_zones = g.nr_zones
        self.slots_per_zone = g.zone_size // page_size          # slot numbers per zone (the slot map's stride)
        self.data_slots = summary_data_slots(g.zone_capacity, page_size)  # data pages per zone, footer excluded
        self.reserve = reserve
        self.clock = 0.0                                          # bytes the store has written
        self._state = np.zeros(g.nr_zones, np.int8)
        self._written = np.zeros(g.nr_zones, np.int64)            # data pages written (the write cursor)
        self._last_write = np.zeros(g.nr_zones, np.float64)
        self._opened_at = np.zeros(g.nr_zones, np.float64)
        self._resets = np.zeros(g.nr_zones, np.int64)
        self._seq = np.zeros(g.nr_zones, np.int64)
        self._next_seq = 1
        self._free: deque[int] = deque(range(g.nr_zones))
        self._owner: dict[int, int] = {}                          # group -> open zone
        self._zone_ids: dict[int, list[np.ndarray]] = {}          # zone -> page ids written, in slot order

    def take_over(self) -> None:
        """Start from the device as found: read-only and offline zones are retired, zones holding
        data are reset (the store owns the device)."""
        for z in self.device.report_zones():
            if z.cond in (ZoneCond.READ_ONLY, ZoneCond.OFFLINE):
                self.retire(z.index)
            elif z.cond != ZoneCond.EMPTY:
                self.device.reset_zone(z.index)

    # -- which zone a group writes ---------------------------------------------------------------
    def free_count(self) -> int:
        return len(self._free)

    def current(self, group: int) -> int | None:
        """The group's open zone, if it has one."""
        return self._owner.get(group)

    def can_take(self, for_gc: bool) -> bool:
        """A free zone is there for this kind of writer (user writers leave ``reserve`` zones)."""
        return len(self._free) > (0 if for_gc else self.reserve)

    def take(self, group: int) -> int:
        """Open the next free zone for ``group`` (callers check ``can_take`` first)."""
        z = self._free.popleft()
        self._state[z] = OPEN
        self._written[z] = 0
        self._opened_at[z] = self.clock
        self._last_write[z] = self.clock
        self._seq[z] = self._next_seq
        self._next_seq += 1
        self._owner[group] = z
        return z

    def owner_of(self, z: int, group: int) -> int:
        """The group whose open zone z is (GC may borrow a user stream's zone); ``group`` if none."""
        if self._owner.get(group) == z:
            return group
        return next((g for g, oz in self._owner.items() if oz == z), group)

    def borrow(self, group: int) -> int | None:
        """Another group's open zone with room left (GC's last resort when no zone is free)."""
        for g, oz in self._owner.items():
            if g != group and self._written[oz] < self.data_slots:
                return oz
        return None

    def open_zones(self) -> list[int]:
        return list(self._owner.values())

    # -- write cursor ----------------------------------------------------------------------------
    def room(self, z: int) -> int:
        """Data pages zone z still takes."""
        return self.data_slots - int(self._written[z])

    def written(self, z: int) -> int:
        return int(self._written[z])

    @property
    def cursors(self) -> np.ndarray:
        """Data pages written per zone (the write cursors): the array itself, for C code that plans
        a run in place (store/express.py). The same array for the allocator's life."""
        return self._written

    def states(self) -> np.ndarray:
        """Each zone's state (int8: free, open, full, retired), a copy."""
        return self._state.copy()

    def written_at(self, zones: np.ndarray) -> np.ndarray:
        """Data pages written per zone (vectorised)."""
        return self._written[zones]

    def record(self, z: int, first_slot: int, page_ids: np.ndarray) -> bool:
        """``page_ids`` were appended to zone z starting at slot ``first_slot``: move its cursor and
        the write clock. True when the zone's data area is now full (seal it).

        Raises ``StoreInvariantError`` (nothing recorded, the zone abandoned: its groups closed) if
        the device wrote anywhere else than at the cursor."""
        written = int(self._written[z])
        if first_slot != z * self.slots_per_zone + written:
            for group, oz in list(self._owner.items()):
                if oz == z:
                    self.close_group(group)
            self._zone_ids.pop(z, None)
            raise StoreInvariantError(f"zone {z}: the device wrote at slot {first_slot - z * self.slots_per_zone}, "
                                      f"the store expected +{written}; the zone is abandoned")
        n = page_ids.size
        self._written[z] = written + n
        self.clock += n * self.page_size
        self._last_write[z] = self.clock
        ids = self._zone_ids.get(z)
        if ids is None:
            self._zone_ids[z] = [page_ids]
        else:
            ids.append(page_ids)
        return written + n == self.data_slots

    # -- zone lifecycle --------------------------------------------------------------------------
    def close_group(self, group: int) -> int | None:
        """The group's zone is done (full, or abandoned after a failure): it becomes a GC candidate."""
        z = self._owner.pop(group, None)
        if z is not None and self._state[z] == OPEN:
            self._state[z] = FULL
        return z

    def abandon(self, group: int, z: int) -> None:
        """A write into z failed: the group stops writing there; z gets no summary."""
        self.close_group(group)
        self._zone_ids.pop(z, None)

    def forget(self, z: int) -> None:
        """Drop what the zone's summary would list (its pages are gone or relocated)."""
        self._zone_ids.pop(z, None)

    def seal(self, group: int, z: int) -> None:
        """The zone's data area is full: close the group and append its summary footer, ending at
        zone capacity. Raises the device's error (the zone is closed all the same)."""
        ids = np.concatenate(self._zone_ids.pop(z, [np.zeros(0, np.int64)]))
        g = self.device.geometry
        foot = encode(int(self._seq[z]), ids, self.page_size, g.zone_start(z))
        tail = g.zone_capacity - self.data_slots * self.page_size
        buf = np.zeros(tail, np.uint8)
        buf[tail - foot.size:] = foot
        self.close_group(group)
        self._append_all(z, buf)

    def write_summaries(self) -> None:
        """Leave a summary footer in every open zone with pages and room for it (``close``); a
        device error just leaves that zone without one."""
        cap = self.device.geometry.zone_capacity // self.page_size
        for z in self.open_zones():
            ids = self._zone_ids.pop(z, [])
            n = sum(a.size for a in ids)
            if n and self._written[z] + footer_pages(n, self.page_size) <= cap:
                try:
                    self._append_all(z, encode(int(self._seq[z]), np.concatenate(ids), self.page_size,
                                               self.device.geometry.zone_start(z)))
                except ZswapError:
                    pass

    def _append_all(self, z: int, buf: np.ndarray) -> None:
        step = self.device.geometry.max_append or buf.size
        for i in range(0, buf.size, step):
            self.device.append(z, buf[i:i + step])

    def reset(self, z: int) -> None:
        """Reset z on the device and put it on the free list. A device error leaves it where it was."""
        self.device.reset_zone(z)
        self.freed(z)

    def finish(self, z: int) -> None:
        self.device.finish_zone(z)

    def freed(self, z: int) -> None:
        self._state[z] = FREE
        self._written[z] = 0
        self._resets[z] += 1
        self._free.append(z)

    def retire(self, z: int) -> bool:
        """Never use z again (read-only or offline). False if it was retired already."""
        if self._state[z] == RETIRED:
            return False
        for g, oz in list(self._owner.items()):
            if oz == z:
                del self._owner[g]
        if self._state[z] == FREE:
            self._free.remove(z)
        self._state[z] = RETIRED
        return True

    # -- views -----------------------------------------------------------------------------------
    def is_retired(self, z: int) -> bool:
        return bool(self._state[z] == RETIRED)

    def full_zones(self) -> np.ndarray:
        """Zones done being written (GC candidates), ascending."""
        return np.flatnonzero(self._state == FULL)

    def reclaimable(self, valid_counts: np.ndarray) -> np.ndarray:
        """Full zones without a valid page: resetting them frees a zone with nothing to relocate."""
        return np.flatnonzero((self._state == FULL) & (valid_counts == 0))

    def history(self, zones: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(last write, opened at, resets) of these zones, on the write clock."""
        return self._last_write[zones], self._opened_at[zones], self._resets[zones]

    def usable(self) -> int:
        return int((self._state != RETIRED).sum())

    def counts(self) -> dict[str, int]:
        s = self._state
        return {"zones_free": int((s == FREE).sum()), "zones_open": int((s == OPEN).sum()),
                "zones_full": int((s == FULL).sum()), "zones_retired": int((s == RETIRED).sum())}
