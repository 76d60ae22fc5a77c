"""``StoreState``: everything one swap store knows, in one object.

``SwapStore`` (the API), the committer (``store/commit.py``), the planner (``store/plan.py``), the
collector's port and the C helpers (``store/native.py``, ``store/express.py``) all read and write the
store through this object and its rooms' public members; none reaches into another's private
attributes. The C helpers keep pointers into the per-handle arrays (and the rooms' arrays): an
array is *replaced* only by ``grow`` (compare by identity to refresh a pointer), otherwise changed
in place.

Layout (what C reads, by name and dtype):

========================  ==========  ============================================================
per handle (grown together with ``slots``; an id's handle comes from ``idmap``)
--------------------------------------------------------------------------------------------------
``buffer_of``             uint8       write buffer + 1 holding the page's newest copy (0: none)
``in_flight``             bool        in a ``swap_out`` batch not written or buffered yet
``lost``                  bool        its only copy was in a zone that went offline
``swap_outs``             uint16      times swapped out (placements that count them)
``prefetch_pos``          int32       prefetch ring slot + 1 (0: not prefetched)
========================  ==========  ============================================================

Rooms: ``idmap`` (``IdMap``: ``direct`` int64, ``ids`` int64 per handle), ``slots`` (``SlotMap``:
``arrays`` = location uint32 per handle, reverse int64 per slot, valid int64 per zone), ``zones``
(``ZoneAllocator``: ``cursors`` int64 per zone), ``buffers`` (one ``WriteBuffer`` per user stream,
then GC's: ``ids`` int64, ``data`` uint8 rows, ``n``), ``prefetch`` (``PrefetchBuffer``).

Counters: ``live`` (pages stored, buffered or on the device), ``capacity`` (pages guaranteed),
``lost_count`` (handles flagged lost now), ``lost_total`` (pages ever lost), ``lost_unreported``
(page-id arrays not reported yet), ``host_write_bytes``, ``fast_path`` (which steps were taken:
tests look). Settings fixed for the store's life: ``config``, ``device``, ``page_size``,
``n_user`` / ``n_groups`` (user streams; open-zone groups), ``gc_buffer`` (GC's write buffer),
``group_of`` (write buffer -> write group), ``unit_pages`` / ``min_write_pages`` (pages per device
write; the smallest but on flush, at a zone's end, or a GC tail), ``rule`` (the write rule on those:
``WriteRule``, store/write_rule.py, in C; tests put its Python oracle here).
"""

from __future__ import annotations

import threading

import numpy as np

from ..errors import StoreInvariantError
from .buffers import PrefetchBuffer, WriteBuffer
from .config import StoreConfig
from .idmap import IdMap
from .placement import Placement
from .slotmap import SlotMap
from .write_rule import NativeWriteRule, WriteRule
from .zones import ZoneAllocator

# the per-handle arrays and their dtypes (``grow`` extends them all)
PER_HANDLE = (("buffer_of", np.uint8), ("prefetch_pos", np.int32), ("swap_outs", np.uint16),
              ("lost", bool), ("in_flight", bool))


class StoreState:
    """One store's state (see the module docstring for the layout)."""

    def __init__(self, device, config: StoreConfig, zones: ZoneAllocator, placement: Placement,
                 n_user: int, n_groups: int, unit_pages: int, gc_words: bool = False) -> None:
        self.config, self.device, self.page_size = config, device, config.page_size
        self.lock = threading.RLock()
        self.closed = False
        self.zones, self.placement = zones, placement
        self.n_user, self.n_groups = n_user, n_groups
        self.gc_buffer = n_user                             # write buffer (stream) index of GC
        # write group (open zone) of each buffer: user stream k writes group k, GC its own or 0
        self.group_of = list(range(n_user)) + [n_user if placement.gc_own_stream else 0]
        self.unit_pages = unit_pages
        self.min_write_pages = min(unit_pages, max(1, (128 << 10) // config.page_size))
        self.rule: WriteRule = NativeWriteRule(unit_pages, self.min_write_pages, zones.data_slots)
        # GC's buffer holds words on a payload-free device (``gc_words``: GC moves first words only)
        self.buffers = [WriteBuffer(unit_pages, config.page_size, words=gc_words and k == n_user)
                        for k in range(n_user + 1)]
        self.slots = SlotMap(device.geometry.nr_zones, zones.slots_per_zone)
        self.idmap = IdMap(direct=config.id_space)          # page id -> handle
        self.prefetch = PrefetchBuffer(config.prefetch_buffer_pages if config.prefetch else 0, config.page_size)
        for name, dtype in PER_HANDLE:
            setattr(self, name, np.zeros(0, dtype))
        self.live = 0
        self.capacity = 0
        self.lost_unreported: list[np.ndarray] = []
        self.lost_count = 0
        self.lost_total = 0
        self.host_write_bytes = 0
        self.fast_path = {"prepared": 0, "one_commit_batches": 0, "one_batch_calls": 0}

    def landed_batch(self, phase: int, zone_end: bool, units: int) -> None:
        """A one-batch run (a ``BatchPlan``'s ``phase``, ``zone_end`` and unit count) landed back to
        back and was committed as one run: ``fast_path`` counts a one-batch call when the general
        path writes such a run as one batch too (phase 1, not to the zone's end; else it writes it
        with ``_write_jobs`` / ``_write_one``), and a commit of several units as ``_land`` counts one."""
        fp = self.fast_path
        usual = phase == 1 and not zone_end
        if usual:
            fp["one_batch_calls"] += 1
        if usual or units > 1:
            fp["one_commit_batches"] += 1

    def update_capacity(self) -> None:
        """Usable zones minus one open zone per write group and the GC reserve, in pages."""
        z = self.zones
        self.capacity = (z.usable() - self.n_groups - z.reserve) * z.data_slots

    def grow(self, handles: int) -> None:
        """Make the handle-indexed arrays hold ``handles`` entries (they double; each is replaced)."""
        n = self.slots.handles
        if handles <= n:
            return
        new = max(handles, 2 * n, 1024)
        self.slots.grow(new)
        for name, _ in PER_HANDLE:
            a = getattr(self, name)
            setattr(self, name, np.concatenate([a, np.zeros(new - n, a.dtype)]))

    def room(self) -> int:
        """Pages the store may still take; -1 when only the general path may write now (what the
        express path asks): closed, over capacity (zones were retired), or pages flagged lost or
        prefetched."""
        if self.closed or self.live > self.capacity or self.lost_count or self.prefetch.size:
            return -1
        return self.capacity - self.live

    def stored(self, pages: int, nbytes: int) -> None:
        """A call past its commit point stored ``pages`` new pages from ``nbytes`` of the caller's."""
        self.live += pages
        self.host_write_bytes += nbytes

    def unbuffer(self, handles: np.ndarray) -> None:
        """Take these handles' pages out of the write buffers (a newer copy, or discarded)."""
        b = self.buffer_of[handles]
        if b.any():
            m = b != 0
            for k in np.unique(b[m]):
                self.buffers[int(k) - 1].remove(handles[b == k])
            self.buffer_of[handles[m]] = 0

    def take_lost(self) -> np.ndarray:
        """Page ids lost since the last report, sorted; the report is then cleared."""
        if not self.lost_unreported:
            return np.zeros(0, np.int64)
        lost = np.unique(np.concatenate(self.lost_unreported))
        self.lost_unreported.clear()
        return lost

    def newer_copy(self, handles: np.ndarray) -> np.ndarray:
        """Whether a newer copy than the device's is on its way (buffered, or a swap_out writing it)."""
        return (self.buffer_of[handles] != 0) | self.in_flight[handles]

    def check(self) -> None:
        """The map invariants (``SwapStore.check``): StoreInvariantError naming the first one broken."""
        def need(ok, what: str) -> None:
            if not ok:
                raise StoreInvariantError(f"swap store invariant broken: {what}")
        self.slots.check(self.zones.written_at(np.arange(self.device.geometry.nr_zones)))
        mapped = self.slots.mapped_mask()
        hs = np.flatnonzero(mapped)
        buffered = np.flatnonzero(self.buffer_of)
        need(sum(b.n for b in self.buffers) == buffered.size, "buffer index is off")
        need(np.union1d(hs, buffered).size == self.live, "live page count is off")
        need(not (self.lost & (mapped | (self.buffer_of != 0))).any(), "a page is both lost and stored")
        need(int(self.lost.sum()) == self.lost_count, "lost page count is off")
        keys, vals = self.idmap.items()
        need(np.array_equal(self.idmap.ids[vals], keys), "id map and handle table disagree")
        if not self.placement.counts_swap_outs:
            held = np.zeros(mapped.size, bool)
            held[vals] = True
            stored = mapped | (self.buffer_of != 0) | self.lost
            need(np.array_equal(held, stored), "id map holds ids not stored, or misses some")
