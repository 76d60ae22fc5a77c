"""The slot map: where each page's current copy lives on the device, and who owns each slot.

Three numpy arrays kept consistent with one another:

* ``location`` (uint32 per handle): the device slot of the handle's current copy, ``UNMAPPED``
  when it has none (never written, only in a host buffer, discarded or lost);
* the reverse map (int64 per slot): handle + 1 of the page whose current copy is there, 0 for a
  slot holding nothing valid (never written, overwritten, or relocated);
* per-zone valid counts: how many slots of each zone the reverse map holds.

A slot is ``zone * slots_per_zone + page index in the zone`` (the device offset / page size).

Invariants (``check``): ``location[h] == s`` exactly when ``reverse[s] == h + 1``; a zone's valid
count is its number of non-zero reverse entries. A commit (the store's ``Bookkeeper``,
store/book.py: ``st_commit`` in native/store.c) keeps them in one step: a page's entry moves only
when its new copy is written, and the old slot is invalidated in the same step.
"""

from __future__ import annotations

import numpy as np

from ..errors import StoreInvariantError

UNMAPPED = np.uint32(0xFFFFFFFF)


class SlotMap:
    """Handle -> slot, slot -> handle, and valid pages per zone (vectorised; no per-page loop).

    Handles are dense integers (``IdMap``); ``grow`` makes room for new ones. Slots fit uint32,
    so a device holds at most 2**32 - 1 pages of the store's page size.
    """

    def __init__(self, nr_zones: int, slots_per_zone: int) -> None:
        if nr_zones * slots_per_zone >= int(UNMAPPED):
            raise ValueError(f"{nr_zones} zones x {slots_per_zone} slots do not fit 32-bit slot numbers")
        self.slots_per_zone = slots_per_zone
        self._loc = np.full(0, UNMAPPED, np.uint32)
        self._rmap = np.zeros(nr_zones * slots_per_zone, np.int64)
        self._valid = np.zeros(nr_zones, np.int64)
        # (loc, rmap, valid) themselves, for C code that commits in place (store/native.py; read on
        # every call, so a plain attribute): handle -> slot (uint32, UNMAPPED: none), slot -> handle
        # + 1 (0: none), valid pages per zone. Replaced with loc when it grows: compare by identity
        self.arrays = (self._loc, self._rmap, self._valid)

    # -- growth ----------------------------------------------------------------------------------
    @property
    def handles(self) -> int:
        """Handles the map has room for."""
        return self._loc.size

    def grow(self, size: int) -> None:
        """Room for handles ``0..size-1`` (new ones unmapped)."""
        n = self._loc.size
        if size > n:
            self._loc = np.concatenate([self._loc, np.full(size - n, UNMAPPED, np.uint32)])
            self.arrays = (self._loc, self._rmap, self._valid)

    # -- updates ---------------------------------------------------------------------------------
    def invalidate(self, handles: np.ndarray) -> None:
        """Drop the handles' device copies (their slots become garbage); unmapped ones are skipped."""
        old = self._loc[handles]
        has = old != UNMAPPED
        if np.count_nonzero(has):
            o = old[has].astype(np.int64)
            self._rmap[o] = 0
            self._valid -= np.bincount(o // self.slots_per_zone, minlength=self._valid.size)
            self._loc[handles[has]] = UNMAPPED

    def lose_zone(self, z: int) -> np.ndarray:
        """The zone's contents are gone (offline): unmap every page whose copy was there and clear
        the zone. Returns those handles."""
        s0 = z * self.slots_per_zone
        r = self._rmap[s0:s0 + self.slots_per_zone]
        gone = r[r != 0] - 1
        self._loc[gone] = UNMAPPED
        r[:] = 0
        self._valid[z] = 0
        return gone

    # -- lookups ---------------------------------------------------------------------------------
    def slots(self, handles: np.ndarray) -> np.ndarray:
        """Slot of each handle (uint32, ``UNMAPPED`` where none)."""
        return self._loc[handles]

    def mapped(self, handles: np.ndarray) -> np.ndarray:
        """Whether each handle has a copy on the device."""
        return self._loc[handles] != UNMAPPED

    def owners(self, slots: np.ndarray) -> np.ndarray:
        """Handle whose current copy is in each slot, -1 for a slot holding nothing valid."""
        return self._rmap[slots] - 1

    def valid_offsets(self, z: int, start: int, end: int, limit: int | None = None) -> np.ndarray:
        """Offsets (from ``start``) of the valid slots among the zone's pages ``start..end-1``; with
        ``limit``, the first ``limit`` of them only (GC's step scans as far as it needs, not to the
        zone's end every time)."""
        s0 = z * self.slots_per_zone
        r = self._rmap[s0 + start:s0 + end]
        if limit is None or limit >= r.size:
            return np.flatnonzero(r)
        got, at, span = [], 0, max(256, 2 * limit)
        while at < r.size and limit > 0:
            pos = np.flatnonzero(r[at:at + span])[:limit]
            got.append(pos + at)
            limit -= pos.size
            at += span
            span *= 2
        return np.concatenate(got) if len(got) > 1 else got[0] if got else np.zeros(0, np.int64)

    def zone_handles(self, z: int) -> np.ndarray:
        """Handles whose current copy is in zone z, in slot order."""
        s0 = z * self.slots_per_zone
        r = self._rmap[s0:s0 + self.slots_per_zone]
        return r[r != 0] - 1

    def zone_of(self, slots: np.ndarray) -> np.ndarray:
        return slots // self.slots_per_zone

    def first_slot(self, z: int) -> int:
        return z * self.slots_per_zone

    def valid(self, z: int) -> int:
        """Valid pages in zone ``z``."""
        return int(self._valid[z])

    def valid_counts(self, zones: np.ndarray | None = None) -> np.ndarray:
        """Valid pages per zone (a copy; all zones when ``zones`` is None)."""
        return self._valid.copy() if zones is None else self._valid[zones]

    def mapped_handles(self) -> np.ndarray:
        """Every handle with a device copy, ascending."""
        return np.flatnonzero(self._loc != UNMAPPED)

    def mapped_mask(self) -> np.ndarray:
        """Per handle: has a device copy."""
        return self._loc != UNMAPPED

    # -- invariants ------------------------------------------------------------------------------
    def check(self, written: np.ndarray | None = None) -> None:
        """Raise ``StoreInvariantError`` unless the three arrays agree (and, given each zone's written
        data pages, no zone holds more valid pages than written)."""
        hs = self.mapped_handles()
        slots = self._loc[hs].astype(np.int64)
        if not np.array_equal(self._rmap[slots], hs + 1):
            raise StoreInvariantError("swap store invariant broken: slot map and reverse map disagree")
        if np.count_nonzero(self._rmap) != hs.size:
            raise StoreInvariantError("swap store invariant broken: reverse map holds stale entries")
        per_zone = np.bincount(np.flatnonzero(self._rmap) // self.slots_per_zone, minlength=self._valid.size)
        if not np.array_equal(per_zone, self._valid):
            raise StoreInvariantError("swap store invariant broken: valid counts are off")
        if written is not None and not ((self._valid >= 0) & (self._valid <= written)).all():
            raise StoreInvariantError("swap store invariant broken: a zone holds more valid pages than written")
