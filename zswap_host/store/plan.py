"""The write planner: what a device write will do, decided before any device call.

A swap-out batch (its stream's buffered unit and the caller's pages), a buffer flush and a GC
relocation (the GC buffer's pages) all become a ``WritePlan``: the jobs (whose pages), the units
(which job's span goes into which zone), the zone and byte-length arrays the device takes, the zone
owners (who seals a zone that fills) and the slot where the units must land back to back. The
committer (``store/commit.py``) sends it and lands it. Planning changes nothing: it reads the
zones' cursors and rooms only (choosing or opening a zone is the committer's, ``zone_for``). How
many pages go into which unit is the store's write rule's (``StoreState.rule``, store/write_rule.py:
one implementation, in C, which the express path's C calls too); the planner only lays the rule's
units out as jobs' spans and the device's arrays.
"""

from __future__ import annotations

import numpy as np

from .state import StoreState
from .write_rule import BatchPlan

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
        self._runs: dict = {}                  # (buffer pages, caller's pages) -> a one-batch run's units, bytes

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
        """Pages per unit of ``n`` pages into zone ``z``: the write rule's ``cut`` (whole write
        units while at least ``least`` pages remain and the zone has room, the last one cut at the
        zone's end)."""
        return self._st.rule.cut(n, least, self._st.zones.room(z))

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
        job's units cut by the write rule into what its zone has left after the jobs before it."""
        st = self._st
        cut = st.rule.cut
        units, room, owners = [], {}, {}
        for j, (k, handles, _, least, _, _) in enumerate(jobs):
            z = zone_of[j]
            owners.setdefault(z, st.zones.owner_of(z, st.group_of[k]))
            r = room.setdefault(z, st.zones.room(z))
            a = 0
            for m in cut(handles.size, least, r):
                units.append((j, z, a, m))
                a += m
            room[z] = r - a
        zones, nbytes = self.arrays(tuple((z, m) for _, z, _, m in units))
        first = self._cursor(units[0][1]) if units and len({u[1] for u in units}) == 1 else -1
        return WritePlan(jobs, units, zones, nbytes, owners, first)

    # -- the usual swap-out call (the express path's run): the buffer's unit and the caller's ------
    def one_batch_units(self, z: int, b: int, w: int) -> tuple:
        """(zones, byte lengths, pages) of a one-batch run's units into zone ``z``: the buffer's
        ``b`` pages, then the caller's ``w`` in write units (the rule's ``cut``; cached per run,
        the lengths shared by every zone: never written)."""
        key = ("one", z, b, w)
        arrays = self._cache.get(key)
        if arrays is None:
            run = self._runs.get((b, w))
            if run is None:
                if len(self._runs) > 256:
                    self._runs.clear()
                lens = ([b] if b else []) + self._st.rule.cut(w, 1, w)
                run = self._runs[b, w] = (lens, np.array(lens, np.int64) * self._st.page_size)
            if len(self._cache) > 256:
                self._cache.clear()
            arrays = self._cache[key] = (np.array([z] * len(run[0]), np.int64), run[1], run[0])
        return arrays

    def one_batch_plan(self, k: int, plan: BatchPlan, buffer_job: Job | None, caller: Job) -> WritePlan:
        """``plan``'s units as a ``WritePlan`` of the buffer's job (when ``plan.b``) and the
        caller's, for landing a batch that did not land back to back."""
        z, b = plan.zone, plan.b
        zarr, lbytes, lens = self.one_batch_units(z, b, plan.w)
        units, a, j = [], 0, 0
        if b:
            units.append((0, z, 0, b))
            j = 1
        for m in (lens[1:] if b else lens):
            units.append((j, z, a, m))
            a += m
        jobs = [buffer_job, caller] if b else [caller]
        return WritePlan(jobs, units, zarr, lbytes, {z: self._st.group_of[k]}, self._cursor(z))
