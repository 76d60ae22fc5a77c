"""The write planner: what a device write will do, decided before any device call.

A swap-out batch (its stream's buffered unit and the caller's pages), a buffer flush and a GC
relocation (the GC buffer's pages) all become a ``WritePlan``: the jobs (whose pages), the units
(which job's span goes into which zone), the zone and byte-length arrays the device takes, the zone
owners (who seals a zone that fills) and the slot where the units must land back to back. The
committer (``store/commit.py``) sends it and lands it. Planning changes nothing: it reads the
zones' cursors and rooms only (choosing or opening a zone is the committer's, ``zone_for``).
"""

from __future__ import annotations

import numpy as np

from .state import StoreState

# a job: (write buffer k, handles, page rows (or first words), least pages per unit, buffered,
# done: a bool per page the committer sets as pages are committed)
Job = tuple


class WritePlan:
    """One device write, decided: ``jobs``; ``units``, one ``(job, zone, start, pages)`` per device
    append (the job's pages ``start:start + pages``), in send order; ``zones`` / ``nbytes``, the same
    as int64 arrays for the device (cached: never written); ``owners``, zone -> write group that
    seals it; ``first``, the slot the first unit lands at when all units go into one zone back to
    back from its cursor (-1: several zones); ``written``, pages planned per job."""

    __slots__ = ("jobs", "units", "zones", "nbytes", "owners", "first", "written")

    def __init__(self, jobs: list, units: list, zones: np.ndarray, nbytes: np.ndarray, owners: dict,
                 first: int) -> None:
        self.jobs, self.units, self.zones, self.nbytes = jobs, units, zones, nbytes
        self.owners, self.first = owners, first
        written = [0] * len(jobs)
        for j, _, _, m in units:
            written[j] += m
        self.written = written

    def expected(self, page_size: int) -> list[int]:
        """Each unit's byte offset when the units land back to back from ``first``."""
        out, at = [], self.first * page_size
        for _, _, _, m in self.units:
            out.append(at)
            at += m * page_size
        return out


class Planner:
    """Plans one store's writes (``state``: its ``StoreState``)."""

    def __init__(self, state: StoreState) -> None:
        self._st = state
        self._cache: dict = {}                 # plan of write units -> (zones, byte lengths) arrays

    def arrays(self, key: tuple) -> tuple[np.ndarray, np.ndarray]:
        """(zone, bytes) of each planned unit as int64 arrays (``key``: ``(zone, pages)`` per unit),
        cached: a stream writes the same plan again and again. The arrays are never written."""
        arrays = self._cache.get(key)
        if arrays is None:
            if len(self._cache) > 256:
                self._cache.clear()
            arrays = self._cache[key] = (np.array([z for z, _ in key], np.int64),
                                         np.array([m for _, m in key], np.int64) * self._st.page_size)
        return arrays

    def _cursor(self, z: int) -> int:
        return z * self._st.slots.slots_per_zone + self._st.zones.written(z)

    # -- one stream into its zone (a flush, a GC relocation, the general swap-out steps) -----------
    def stream_lengths(self, z: int, n: int, least: int) -> list[int]:
        """Pages per unit of ``n`` pages into zone ``z``: whole write units while at least ``least``
        pages remain and the zone has room (its last one cut at the zone's end)."""
        st = self._st
        r = st.zones.room(z)
        unit, rem = st.unit_pages, n
        lens = []
        while rem >= least and r > 0:
            m = min(unit, rem, r)
            lens.append(m)
            rem, r = rem - m, r - m
        return lens

    def stream(self, job: Job, z: int, group: int, lens: list[int]) -> WritePlan:
        """The plan of one job's ``lens`` (``stream_lengths``) into zone ``z`` of ``group``."""
        key = (z, *lens)
        arrays = self._cache.get(key)
        if arrays is None:
            arrays = self._cache[key] = self.arrays(tuple((z, m) for m in lens))
        units, a = [], 0
        for m in lens:
            units.append((0, z, a, m))
            a += m
        return WritePlan([job], units, arrays[0], arrays[1], {z: self._st.zones.owner_of(z, group)}, self._cursor(z))

    # -- several streams, each into its own zone ---------------------------------------------------
    def jobs(self, jobs: list, zone_of: list[int]) -> WritePlan:
        """The plan of several jobs (``zone_of``: each job's zone, chosen by the committer): each
        job's units while at least its ``least`` pages remain and its zone has room."""
        st = self._st
        units, room, owners = [], {}, {}
        for j, (k, handles, _, least, _, _) in enumerate(jobs):
            z = zone_of[j]
            owners.setdefault(z, st.zones.owner_of(z, st.group_of[k]))
            r = room.setdefault(z, st.zones.room(z))
            a, rem = 0, handles.size
            while rem >= least and r > 0:
                m = min(st.unit_pages, rem, r)
                units.append((j, z, a, m))
                a, rem, r = a + m, rem - m, r - m
            room[z] = r
        zones, nbytes = self.arrays(tuple((z, m) for _, z, _, m in units))
        first = self._cursor(units[0][1]) if units and len({u[1] for u in units}) == 1 else -1
        return WritePlan(jobs, units, zones, nbytes, owners, first)

    # -- the usual swap-out call: the buffer's unit and the caller's, one batch --------------------
    def one_batch(self, k: int, n: int) -> tuple | None:
        """The plan of a user stream's usual call of ``n`` pages, or None: the buffer's pages (topped
        up to a write unit when fewer than ``min_write_pages``) as one unit and the caller's pages
        in whole units after it (while ``min_write_pages`` remain), at least two units, all into
        the stream's open zone, which has room for them all. These are the units, in the same
        order, that the general steps (``Committer``'s ``_write_buffer_and`` / ``_write_one``)
        would write; None leaves the call to them. Returns ``(zone, top-up pages, buffer unit
        pages, caller pages written, cache key)`` (``native/store_out.c``'s ``st_out_plan`` makes
        the same decision for the express path); changes nothing."""
        st = self._st
        if k >= st.n_user:
            return None
        unit, least = st.unit_pages, st.min_write_pages
        r = st.buffers[k].n
        if r > unit:
            return None
        z = st.zones.current(st.group_of[k])
        if z is None:
            return None
        top = unit - r if 0 < r < least else 0
        rest = n - top
        tail = rest % unit
        w = rest - tail if tail < least else rest    # whole units, and a last one of >= least pages
        b = r + top
        if (b and rest < least) or (not b and w <= unit) or b + w > st.zones.room(z):
            return None
        return z, top, b, w, ("one", z, b, w)

    def one_batch_units(self, z: int, b: int, w: int) -> tuple:
        """(zones, byte lengths, pages) of ``one_batch``'s units: the buffer's ``b`` pages, then the
        caller's ``w`` in write units (cached per plan)."""
        key = ("one", z, b, w)
        arrays = self._cache.get(key)
        if arrays is None:
            unit = self._st.unit_pages
            lens = ([b] if b else []) + [unit] * (w // unit) + ([w % unit] if w % unit else [])
            zarr, lbytes = self.arrays(tuple((z, m) for m in lens))
            arrays = self._cache[key] = (zarr, lbytes, lens)
        return arrays

    def one_batch_plan(self, k: int, z: int, b: int, w: int, buffer_job: Job | None, caller: Job) -> WritePlan:
        """``one_batch``'s units as a ``WritePlan`` of the buffer's job (when ``b``) and the
        caller's, for landing a batch that did not land back to back."""
        zarr, lbytes, lens = self.one_batch_units(z, b, w)
        units, a, j = [], 0, 0
        if b:
            units.append((0, z, 0, b))
            j = 1
        for m in (lens[1:] if b else lens):
            units.append((j, z, a, m))
            a += m
        jobs = [buffer_job, caller] if b else [caller]
        return WritePlan(jobs, units, zarr, lbytes, {z: self._st.group_of[k]}, self._cursor(z))
