"""The collector: how GC moves pages. It picks a victim zone through the registered victim policy
(``policies.py``), relocates the victim's valid pages into the GC write stream, resets the victim
once nothing valid is left, drains read-only zones, and keeps GC's accounting. *When* it runs is
the scheduler's business (``scheduler.py``); the store calls ``foreground``, ``background``,
``idle`` and ``step``.

Invariant: a zone is reset only when the slot map holds no valid page in it
(``StoreInvariantError`` otherwise, and the zone is left alone).
"""

from __future__ import annotations

import math
from typing import Callable, Protocol

import numpy as np

from ..errors import DeviceIOError, StoreInvariantError, SwapFullError, ZswapError
from .policies import ZoneTable, get_victim_policy, greedy
from .scheduler import GcScheduler


class GcHost(Protocol):
    """What the collector needs from the store it cleans (the store's write and read paths)."""

    def newer_copy(self, handles: np.ndarray) -> np.ndarray:
        """Per handle: a newer copy is on its way (in a write buffer, or in a swap-out being written)."""

    def read_slots(self, slots: np.ndarray) -> np.ndarray:
        """The pages in these distinct slots (rows, or what the host keeps of them: on a
        payload-free device their first words), bypassing the prefetch buffer; DeviceIOError.
        The collector only hands them on to ``queue_relocated``."""

    def start_read(self, slots: np.ndarray) -> Callable[[], np.ndarray]:
        """Start reading these distinct slots; the returned call waits for the pages (rows) and
        raises the read's DeviceIOError. A device that can read while it writes reads in the
        background; another reads here and now."""

    def read_chunk_pages(self) -> int:
        """Pages per relocation read when reads may overlap the GC stream's appends (0: the device
        cannot overlap them; one read per step, as the timing model expects)."""

    def queue_relocated(self, handles: np.ndarray, pages: np.ndarray) -> None:
        """Hand pages (as ``read_slots`` or ``start_read`` gave them) to the GC write stream
        (written once a write unit is full)."""

    def flush_relocated(self) -> None:
        """Write everything the GC stream holds."""

    def zone_trouble(self, z: int) -> bool:
        """Retire z if the device reports it read-only or offline; True if it did."""

    def now(self) -> float:
        """The device clock (seconds)."""


class Collector:
    """GC over a ``SlotMap`` and a ``ZoneAllocator``.

    State: the current victim (``victim``), how far its relocation got (``cursor``, in data pages),
    the bytes it moved so far, whether it is a read-only zone being drained (drained zones are
    retired, never reset) and the queue of zones waiting to be drained. ``write_bytes`` counts the
    bytes GC wrote (the store reports it as ``gc_write_bytes``).

    ``victim`` names a registered victim policy: ``ValueError`` if none is registered so.
    """

    MAX_READ_FAILURES = 3          # a victim whose reads fail this often in a row is given up

    def __init__(self, host: GcHost, slots, zones, scheduler: GcScheduler, victim: str, page_size: int,
                 step_pages: int) -> None:
        self.host = host
        self.slots = slots
        self.zones = zones
        self.scheduler = scheduler
        self.policy = get_victim_policy(victim)
        self.page_size = page_size
        self.step_pages = step_pages            # background GC moves this much per step (a write unit)
        self.victim: int | None = None
        self.cursor = 0
        self.draining = False
        self.moved = 0
        self.read_failures = 0
        self.drain_queue: list[int] = []
        self.write_bytes = 0
        self._held: dict[str, float] | None = None   # within a step: clock seconds its reads / resets took

    # -- what the store tells the collector ------------------------------------------------------
    def wrote(self, nbytes: int) -> None:
        """GC's stream wrote ``nbytes`` to the device."""
        self.write_bytes += nbytes

    def queue_drain(self, z: int) -> None:
        """z went read-only: relocate its valid pages (it is never reset)."""
        self.drain_queue.append(z)

    def zone_lost(self, z: int) -> None:
        """z went offline: nothing there to drain or relocate any more."""
        if z in self.drain_queue:
            self.drain_queue.remove(z)
        if self.victim == z:
            self.victim = None

    # -- victim choice ---------------------------------------------------------------------------
    def table(self) -> ZoneTable:
        """The candidates a victim policy sees: full zones other than the current victim."""
        cand = self.zones.full_zones()
        if self.victim is not None:
            cand = cand[cand != self.victim]
        ps = self.page_size
        last_write, opened_at, resets = self.zones.history(cand)
        return ZoneTable(zone=cand, valid_bytes=self.slots.valid_counts(cand) * ps,
                         capacity_bytes=np.full(cand.size, self.zones.data_slots * ps, np.int64),
                         last_write=last_write, opened_at=opened_at, resets=resets, now=self.zones.clock)

    def pick(self) -> bool:
        """Choose the next victim: a zone waiting to be drained if a free zone is to spare, else the
        policy's choice (greedy when that one would free nothing). False when nothing is worth it."""
        self.read_failures = 0
        # draining a read-only zone frees no zone: start one only with a free zone to spare, so
        # GC relocations can never be left without a zone
        if self.drain_queue and self.zones.free_count() >= 2:
            self._start(self.drain_queue.pop(0), draining=True)
            return True
        table = self.table()
        if not len(table):
            return False
        v = self.policy(table)
        if v is None:
            return False
        # resetting a full zone frees all its data slots; relocating costs its valid pages
        full = self.zones.data_slots
        if self.slots.valid(v) >= full:                  # nothing to gain there: take the best zone instead
            v = greedy(table)
            if self.slots.valid(v) >= full:
                return False
        self._start(int(v), draining=False)
        return True

    def _start(self, z: int, draining: bool) -> None:
        self.victim, self.cursor, self.draining, self.moved = z, 0, draining, 0

    # -- relocation ------------------------------------------------------------------------------
    def step(self, max_bytes: int | None, why: str) -> int:
        """Relocate up to ``max_bytes`` (None: all) of the victim's valid pages, picking a victim
        first if there is none; reset the victim once it holds nothing valid. Returns the bytes
        relocated, or -1 when there is nothing to reclaim. ``why`` is the accounting bucket
        (``foreground``, ``background``, ``idle``, ``manual``, ``drain``).

        Raises ``StoreInvariantError`` (the zone is kept) if the victim still holds valid pages when
        it should be empty; device errors of the GC writes (``DeviceIOError``, ``SwapFullError``)."""
        if self.victim is None and not self.pick():
            return -1
        t0 = self.host.now()
        outer, self._held = self._held, {"read": 0.0, "reset": 0.0, "nested": 0.0}
        try:
            return self._step(max_bytes, why, t0)
        finally:
            held, self._held = self._held, outer
            total = self.host.now() - t0
            sched = self.scheduler
            sched.clocked(why, "read", held["read"])
            sched.clocked(why, "reset", held["reset"])
            sched.clocked(why, "write", max(0.0, total - held["read"] - held["reset"] - held["nested"]))
            if outer is not None:                     # a step inside a step: the outer one does not count it again
                outer["nested"] += total

    def _step(self, max_bytes: int | None, why: str, t0: float) -> int:
        host, ps = self.host, self.page_size
        v = self.victim
        s0 = self.slots.first_slot(v)
        end = self.zones.written(v)
        start = self.cursor
        most = None if max_bytes is None else max(1, max_bytes // ps)
        pos = self.slots.valid_offsets(v, start, end, None if most is None else most + 1)
        if most is not None and pos.size > most:
            pos = pos[:most]
            self.cursor = start + int(pos[-1]) + 1
        else:
            self.cursor = end
        moved = self.relocate(s0 + start + pos) if pos.size else 0
        if moved < 0:
            self.cursor = start
            return 0 if self.victim is not None or self.read_failures < self.MAX_READ_FAILURES else -1
        self.moved += moved
        # (below: a GC write that needed a zone may have reset the victim once it held nothing
        # valid, reclaim_empty; then it is done and must not be reset again)
        if self.cursor >= end and self.victim == v:
            host.flush_relocated()
            # pages behind the cursor whose GC copy a newer swap-out replaced in the meantime
            rest = s0 + self.slots.valid_offsets(v, 0, end) if self.victim == v else np.zeros(0, np.int64)
            if rest.size:
                if self.relocate(rest) < 0:
                    return 0
                host.flush_relocated()
        if self.cursor >= end and self.victim == v:
            left = self.slots.valid(v)
            if left != 0:                                 # never reset a zone that holds data
                self.victim = None
                raise StoreInvariantError(f"zone {v} still holds {left} valid pages after GC; not resetting it")
            if not self.draining:
                try:
                    self._reset(v)
                except ZswapError:
                    if not host.zone_trouble(v):
                        raise
            self.scheduler.reclaimed(why, 0 if self.draining else end * ps - self.moved)
            self.victim = None
        self.scheduler.relocated(moved, host.now() - t0)
        return moved

    def _reset(self, z: int) -> None:
        """Reset zone z, its clock time held as a reset (the step's, or a foreground one)."""
        t0 = self.host.now()
        try:
            self.zones.reset(z)
        finally:
            dt = self.host.now() - t0
            if self._held is not None:
                self._held["reset"] += dt
            else:
                self.scheduler.clocked("foreground", "reset", dt)

    def _read(self, slots: np.ndarray) -> np.ndarray:
        t0 = self.host.now()
        try:
            return self.host.read_slots(slots)
        finally:
            if self._held is not None:
                self._held["read"] += self.host.now() - t0

    def relocate(self, slots: np.ndarray) -> int:
        """Copy the pages in these victim slots into the GC stream; a page with a newer copy on its
        way is just invalidated. Returns bytes queued, -1 if reading the zone failed."""
        handles = self.slots.owners(slots)
        newer = self.host.newer_copy(handles)
        if newer.any():
            self.slots.invalidate(handles[newer])
            handles, slots = handles[~newer], slots[~newer]
        if handles.size == 0:
            return 0
        chunk = self.host.read_chunk_pages()
        if chunk <= 0 or handles.size <= chunk:
            try:
                data = self._read(slots)
            except DeviceIOError:
                return self._read_failed()
            self.read_failures = 0
            self.host.queue_relocated(handles, data)
            return handles.size * self.page_size
        return self._relocate_overlapped(handles, slots, chunk)

    def _relocate_overlapped(self, handles: np.ndarray, slots: np.ndarray, chunk: int) -> int:
        """Chunk k+1 is read while chunk k's pages go to the GC stream (its appends): the device's
        read and write queues busy at once. Returns bytes queued, -1 if a read failed (the chunks
        queued before it stay queued: their pages belong to the victim's GC buffer)."""
        bounds = list(range(0, handles.size, chunk)) + [handles.size]

        def start(k: int):
            try:
                return self.host.start_read(slots[bounds[k]:bounds[k + 1]])
            except DeviceIOError as e:                    # a read that failed at once: at its wait
                err = e

                def failed():
                    raise err
                return failed

        pending = start(0)
        queued = 0
        try:
            for k in range(len(bounds) - 1):
                try:
                    data, pending = pending(), None
                except DeviceIOError:
                    return self._read_failed()
                if k + 2 < len(bounds):
                    pending = start(k + 1)
                self.host.queue_relocated(handles[bounds[k]:bounds[k + 1]], data)
                queued += bounds[k + 1] - bounds[k]
        finally:
            if pending is not None:                       # a write failed: let the read finish first
                try:
                    pending()
                except DeviceIOError:
                    pass
        self.read_failures = 0
        return queued * self.page_size

    def _read_failed(self) -> int:
        # keep the victim (its pages already in the GC buffer belong to it): a later step resumes
        # it; after three failures in a row it is given up
        self.read_failures += 1
        if self.read_failures >= self.MAX_READ_FAILURES:
            self.victim = None
        return -1

    def reclaim_empty(self) -> bool:
        """Reset full zones that hold no valid page (abandoned after a failed write, or emptied by
        overwrites): free zones without relocating anything. True if one was freed."""
        done = False
        for z in self.zones.reclaimable(self.slots.valid_counts()).tolist():
            written = self.zones.written(z) * self.page_size
            try:
                self._reset(z)
            except ZswapError:
                self.host.zone_trouble(z)
                continue
            if self.victim == z:                          # a victim emptied by GC writes or overwrites
                self.victim = None
                written -= self.moved
            self.zones.forget(z)
            self.scheduler.reclaimed("foreground", written)
            done = True
        return done

    # -- when the store calls ----------------------------------------------------------------------
    def foreground(self) -> bool:
        """Reclaim until a user stream may take a zone; False when GC can do nothing more."""
        self.scheduler.foreground_runs += 1
        while not self.zones.can_take(False):
            if self.step(None, "foreground") < 0:
                return False
        return True

    def background(self) -> None:
        """After an operation: drain read-only zones, then GC from the low to the high watermark
        within the rate limit. Best effort: the caller's operation is complete, so a device error
        here only stops GC until the next operation. With the scheduler's ``yield_to_reads``
        nothing: the caller's reads come next (counted in ``yielded`` when GC was due)."""
        zones, sched = self.zones, self.scheduler
        if sched.yield_to_reads:        # the caller's next reads wait for nothing GC does: idle windows do it
            if self.drain_queue or self.victim is not None or zones.free_count() < sched.low:
                sched.yielded += 1
            return
        try:
            while self.drain_queue or (self.victim is not None and self.draining):
                if not (self.victim is not None and self.draining) and zones.free_count() < 2:
                    break                                  # later, once GC has made room
                if self.step(None, "drain") < 0:
                    break
            if zones.free_count() < sched.low:
                budget = sched.background_budget()
                unit = self.step_pages * self.page_size if sched.step_bytes is None else sched.step_bytes or math.inf
                while budget > 0 and (zones.free_count() < sched.high or self.victim is not None):
                    most = min(budget, unit)
                    moved = self.step(None if most == math.inf else int(most), "background")
                    if moved < 0:
                        break
                    budget -= max(moved, self.page_size)
                    sched.charge(max(moved, self.page_size))
        except (DeviceIOError, SwapFullError):
            pass

    def idle(self, seconds: float, clocked: bool, bandwidth: float) -> None:
        """Spend a window of ``seconds`` on GC up to the idle watermark: until the device clock has
        moved by the window (``clocked``), else until ``seconds * bandwidth`` bytes are relocated.
        Each step moves at most one write unit."""
        host = self.host
        t0 = host.now()
        step = self.step_pages * self.page_size
        budget = math.inf if clocked else seconds * bandwidth
        moved = 0
        target = self.scheduler.idle_target
        while self.zones.free_count() < target or self.victim is not None:
            if clocked and host.now() - t0 >= seconds:
                break
            if moved >= budget:
                break
            try:
                m = self.step(int(max(self.page_size, min(step, budget - moved))), "idle")
            except (DeviceIOError, SwapFullError):
                break
            if m < 0:
                break
            moved += max(m, self.page_size)

    def counters(self) -> dict:
        return self.scheduler.counters()
