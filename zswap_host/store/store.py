"""``SwapStore``: the host-managed swap store on a ZNS device.

The store composes one room per concept (docs/store.md):

* ``idmap.IdMap``: page id -> dense handle (every per-page array is indexed by handle, so memory
  follows the pages stored, not the largest page id);
* ``placement``: which write stream a swapped-out page joins;
* ``buffers``: per-stream write buffers and the prefetch buffer;
* ``slotmap.SlotMap``: handle -> device slot, slot -> handle, valid pages per zone;
* ``zones.ZoneAllocator``: open zone per write group, write cursors, free/full/retired zones,
  summary footers;
* ``gc.collector.Collector``: victim choice, relocation, draining, GC accounting;
* ``readpath``: device reads planned as coalesced requests;
* ``state.StoreState``: all of the above and the per-handle arrays and counters, in one object;
* ``plan.Planner`` / ``commit.Committer``: the one write path (a swap-out, a flush and a GC
  relocation planned as a ``WritePlan``, landed, committed, sealed, retried; zone failures);
* ``intake.accept``: a swap-out batch's handles, capacity check, commit point and bookkeeping;
* ``reader.Reader``: the read path (a swap-in's pages from buffers and device; GC's reads);
* ``gcport.GcPort``: the collector's view of the store (its reads, the committer for relocations).

What is left here is the public API: each call's argument checks and lock, inspection, statistics. Invariants: a page's map entry moves only after its new copy is written;
a zone is reset only when no entry points into it.

Errors (docs/store.md): a call refused before its commit point changes nothing; after it, what
the call committed is stated by the error (see ``swap_out``).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..backend import SwapStats
from ..devices.units import placement_units
from ..devices.zone import ZoneCond
from ..errors import StoreClosedError, SwapFullError
from ..gc.collector import Collector
from ..gc.scheduler import GcScheduler
from ..neighbours import check_limit, first_distinct, slots_near
from .commit import Committer
from .book import Bookkeeper
from .config import StoreConfig
from .express import Express
from .gcport import GcPort
from .idmap import as_page_ids, distinct_ids
from .intake import accept
from .native import NativeBook
from .placement import get_placement
from .plan import Planner
from .reader import Reader
from .state import StoreState
from .zones import ZoneAllocator


class SwapStore:
    """Host-managed swap store on any ``ZonedDevice``; implements ``SwapBackend`` plus
    ``gc_step(max_bytes=None)`` and ``idle(seconds)``.

    ``device``: any device ``open_device`` gives, taken as its placement units
    (``devices.placement_units``, each interface's defaults: zones, chunk stripes, or LBA ranges of
    ``default_unit_size``), or units made with other sizes (``placement_units(dev, zone_size)``).
    ``units`` says what its zones are; the store asks nothing else.
    ``device`` is then the units: close them (``store.device.close()``, which closes the SSD too)
    rather than the SSD alone, so a view's host-held data reaches it.

    On construction the store takes the device over: zones holding data are reset, read-only and
    offline zones are never used. ``capacity_pages`` is how many pages it guarantees to hold: the
    usable zones minus one open zone per write stream and one zone of GC headroom.

    Raises on construction: ``ValueError`` (the page size does not fit the device, or the
    placement needs more open zones than the device allows), ``SwapFullError`` (no capacity left).

    ``book``: a factory of the per-page bookkeeping (``Bookkeeper``, store/book.py) from the
    store's ``StoreState``; default ``NativeBook`` (C, the package's one implementation; ImportError
    when ``zswap_host._native`` is not built). Tests pass the pure-Python oracle
    (tests/support/book_oracle.py); the express path (store/express.py) runs only on ``NativeBook``.
    ``book``: the store's ``Bookkeeper`` (its ``calls`` count the calls that did work).

    Thread-safe: every public method holds one lock, so concurrent callers are serialised (the
    device sees one caller at a time). After ``close()`` every call but ``close()`` (a no-op),
    ``stats()``, ``check()`` and ``swap_in_latencies()`` raises ``StoreClosedError``.
    """

    def __init__(self, device, config: StoreConfig | None = None,
                 book: Callable[[StoreState], Bookkeeper] | None = None) -> None:
        self.config = cfg = config or StoreConfig()
        # any interface's placement units (devices/units.py): the store sees zones either way
        self.device = device = placement_units(device)
        self.units = device.unit_traits()
        g = device.geometry
        ps = self.page_size = cfg.page_size
        zones = ZoneAllocator(device, ps, reserve=1)   # ValueError: page size
        placement = get_placement(cfg.placement)
        limit = self.units.write_concurrency
        n_user = placement.user_streams(cfg.max_streams, limit)
        n_groups = n_user + (1 if placement.gc_own_stream else 0)
        if n_groups > limit:
            raise ValueError(f"placement {cfg.placement!r} needs {n_groups} open zones; the device allows {limit}")
        unit = min(cfg.write_size, g.max_append or cfg.write_size)
        # a payload-free device keeps a page's first word only: GC then moves words, not pages
        self._gc_words = bool(getattr(device, "word_reads", False)) and getattr(device, "payload", True) is False
        # everything the store knows (store/state.py)
        self.state = st = StoreState(device, cfg, zones, placement, n_user, n_groups, max(1, unit // ps),
                                     gc_words=self._gc_words)
        # the per-page bookkeeping (store/book.py): C, or a test's oracle
        self.book = bk = (book or NativeBook)(st)
        # the one write path: planner and committer (store/plan.py, store/commit.py)
        self._writer = writer = Committer(st, Planner(st), bk)
        self._read_pool: ThreadPoolExecutor | None = None
        # the read path (store/reader.py): swap-ins, and GC's reads of victim slots
        self.reads = Reader(st, writer.zone_trouble, self._now)
        port = GcPort(st, writer, self.reads.read_slots, lambda: self._reader(), self._now, self._gc_words)
        scheduler = GcScheduler(g.nr_zones, cfg, self._now)
        self._collector = writer.collector = Collector(port, st.slots, zones, scheduler, cfg.victim, ps, st.unit_pages)
        zones.take_over()
        st.update_capacity()
        if self.capacity_pages <= 0:
            raise SwapFullError(
                f"the device is too small for this configuration: {zones.usable()} usable zones, "
                f"{n_groups} write streams + 1 zone of GC headroom need more")
        self._clocked = device.stats().clock != "none"
        self._device_base = device.stats()
        self.fast_path = st.fast_path               # which steps were taken (tests look)
        # the usual call in one C call (store/express.py), or None
        self._express = Express.make(st, writer, bk) if type(bk) is NativeBook else None

    # -- set-up ----------------------------------------------------------------------------------
    @property
    def capacity_pages(self) -> int:
        """Pages the store guarantees to hold (drops when zones are retired)."""
        return self.state.capacity

    @property
    def host_write_bytes(self) -> int:
        """Bytes callers swapped out."""
        return self.state.host_write_bytes

    @property
    def gc_write_bytes(self) -> int:
        """Bytes GC relocations wrote."""
        return self._collector.write_bytes

    def _now(self) -> float:
        return float(self.device.now())

    # -- public API ------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self.state.closed:
            raise StoreClosedError("the swap store is closed")

    def _stream_arg(self, stream) -> int:
        if type(stream) is int:
            return stream
        try:
            if isinstance(stream, bool):
                raise TypeError
            return operator.index(stream)
        except TypeError:
            raise ValueError(f"stream must be an integer, not {stream!r}") from None

    def swap_out(self, page_ids, pages, stream: int = 0) -> None:
        """Store pages (replacing ids already stored).

        Refused before anything changes: ValueError (bad ids, pages or stream), StoreClosedError,
        and SwapFullError when the live pages would not fit (``page_ids``: the whole batch). Past
        that point the batch is *accepted*: every page of it reads back its new bytes. A
        DeviceIOError that survives the retries, or a SwapFullError with empty ``page_ids`` (the
        device ran out of zones after zones were retired), then only says the batch still waits
        in host buffers."""
        ex = self._express
        if ex is not None and ex.swap_out(page_ids, pages, stream):
            return
        st = self.state
        # the common call (a flat int64 array) skips as_page_ids: st_prepare finds negative ids and
        # as_page_ids then raises its error, before anything changes
        fast = type(page_ids) is np.ndarray and page_ids.dtype == np.int64 \
            and page_ids.ndim == 1 and page_ids.flags.c_contiguous
        ids = page_ids if fast else as_page_ids(page_ids)
        pages = np.asarray(pages)
        ps = self.page_size
        if pages.dtype != np.uint8 or pages.shape != (ids.size, ps):
            if fast:
                as_page_ids(ids)                        # bad ids are named first
            raise ValueError(f"pages must be uint8 of shape ({ids.size}, {ps}), not {pages.dtype} {pages.shape}")
        if type(stream) is not int:
            stream = self._stream_arg(stream)
        with st.lock:
            if st.closed:
                if fast:
                    as_page_ids(ids)
                self._check_open()
            if ids.size == 0:
                return
            if not fast and not ids.flags.c_contiguous:
                ids = np.ascontiguousarray(ids)         # the C helpers read it as one block
            accept(st, self.book, self._writer, ids, pages, stream, fast)

    def swap_in(self, page_ids) -> np.ndarray:
        """Pages for ids, in the order asked. KeyError for an id never stored (or discarded);
        PageLostError for ids whose only copy was in a zone that went offline (``page_ids``: the
        requested lost ids, plus any other loss not reported yet). Changes no stored page."""
        return self._swap_in(page_ids, False)

    def swap_in_words(self, page_ids) -> np.ndarray:
        """The first 64-bit word of each page ``swap_in`` would return (uint64, in the order asked),
        with the same reads, time, statistics and errors. On a device with ``word_reads`` (the
        emulated ones) no page is built: a payload-free device's replay reads 8 bytes per page, not
        4 KiB twice (``SwapBackend``'s optional ``swap_in_words``)."""
        return self._swap_in(page_ids, True)

    def _swap_in(self, page_ids, words: bool) -> np.ndarray:
        ids = as_page_ids(page_ids)
        with self.state.lock:
            self._check_open()
            if ids.size == 0:
                return np.zeros(0, np.uint64) if words else np.zeros((0, self.page_size), np.uint8)
            return self.reads.swap_in(ids, words)

    def take_lost(self) -> np.ndarray:
        """Page ids lost (their only copy was in a zone that went offline) since the last report,
        sorted; the report is then cleared. A ``swap_in`` of a lost id reports them too."""
        with self.state.lock:
            return self.state.take_lost()

    def discard(self, page_ids) -> None:
        """Forget pages (their space becomes garbage for GC). Unknown ids are ignored."""
        st = self.state
        ids = as_page_ids(page_ids)
        with st.lock:
            self._check_open()
            remove = not st.placement.counts_swap_outs    # else remember how often an id came back
            if not remove:
                ids = distinct_ids(ids)[0]
            if ids.size == 0 or self.book.discard(ids, remove):
                return
            # ids beyond the direct array (the id map's hashed range): through the id map
            ids = distinct_ids(ids)[0]
            h = st.idmap.lookup(ids)
            ids, h = ids[h >= 0], h[h >= 0]
            if ids.size == 0:
                return
            stored = st.slots.mapped(h) | (st.buffer_of[h] != 0)
            st.unbuffer(h)
            st.prefetch.drop(st.prefetch_pos, h)
            st.slots.invalidate(h)
            st.lost_count -= int(st.lost[h].sum())
            st.lost[h] = False
            st.live -= int(stored.sum())
            if remove:
                st.idmap.remove(ids)
                st.swap_outs[h] = 0

    def locate(self, page_ids) -> np.ndarray:
        """Zone holding each page's newest copy on the device (int64, in the order asked); -1 where
        the newest copy is not on the device (it waits in a host buffer) or the id is not stored.
        Changes nothing; ValueError for bad ids."""
        st = self.state
        ids = as_page_ids(page_ids)
        with st.lock:
            h = st.idmap.lookup(ids)
            out = np.full(ids.size, -1, np.int64)
            known = np.flatnonzero(h >= 0)
            hk = h[known]
            on_device = st.slots.mapped(hk) & (st.buffer_of[hk] == 0)
            out[known[on_device]] = st.slots.zone_of(st.slots.slots(hk[on_device]).astype(np.int64))
            return out

    def neighbours(self, page_ids, limit: int) -> np.ndarray:
        """Fault-around hint (``SwapBackend``'s optional ``neighbours``): up to ``limit`` ids whose
        newest copy sits in the same zone as one of ``page_ids``' within ``limit`` slots of it,
        nearest first — pages swapped out together are written side by side (the temporal
        placement's groups; other placements' streams likewise), so these tend to be wanted
        together. Distinct, none of ``page_ids``; ids not stored or whose newest copy waits in a
        host buffer have none. int64; changes nothing. ``ValueError`` for bad ids or a negative
        limit; ``StoreClosedError``."""
        st = self.state
        ids = as_page_ids(page_ids)
        limit = check_limit(limit)
        with st.lock:
            self._check_open()
            if ids.size == 0 or limit == 0:
                return np.zeros(0, np.int64)
            h = st.idmap.lookup(ids)
            h = h[h >= 0]
            h = h[st.slots.mapped(h) & (st.buffer_of[h] == 0)]
            sl = st.slots.slots(h).astype(np.int64)
            spz = st.slots.slots_per_zone
            lo = sl // spz * spz
            cand = slots_near(sl, lo, lo + spz, min(limit, spz))
            owners = st.slots.owners(cand)
            owners = owners[owners >= 0]
            owners = owners[st.buffer_of[owners] == 0]     # else its newest copy is elsewhere
            return first_distinct(st.idmap.ids[owners], ids, limit)

    def zone_contents(self, z: int) -> np.ndarray:
        """Page ids whose newest copy is in zone ``z``, sorted: what losing the zone would lose.
        ``IndexError`` for a zone the device does not have."""
        st = self.state
        z = operator.index(z)
        if not 0 <= z < self.device.geometry.nr_zones:
            raise IndexError(f"zone {z} does not exist (the device has {self.device.geometry.nr_zones} zones)")
        with st.lock:
            h = st.slots.zone_handles(z)
            h = h[st.buffer_of[h] == 0]
            return np.sort(st.idmap.ids[h])

    def poll_zones(self) -> int:
        """Ask the device for every zone's condition and act on zones that went read-only (retired,
        their pages queued for draining) or offline (retired, pages whose only copy was there
        reported lost: ``take_lost``, ``swap_in``) since the store last looked, as a failed I/O
        there would. Returns how many zones it acted on; StoreClosedError after ``close()``."""
        st = self.state
        with st.lock:
            self._check_open()
            acted = 0
            for zone in self.device.report_zones():
                z, cond = zone.index, zone.cond
                if (cond == ZoneCond.READ_ONLY and not st.zones.is_retired(z)) or \
                        (cond == ZoneCond.OFFLINE and (not st.zones.is_retired(z) or st.slots.valid(z))):
                    self._writer.zone_trouble(z, cond)
                    acted += 1
            return acted

    def flush(self) -> None:
        """Write every buffered page now (the only way, with idle and GC tails, to get writes
        smaller than the write unit). A DeviceIOError leaves the pages not written in the buffers."""
        st = self.state
        with st.lock:
            self._check_open()
            error = self._writer.flush_all()
            self._collector.background()
            if error is not None:
                raise error

    def gc_step(self, max_bytes: int | None = None) -> int:
        """Run GC now: finish the current victim or pick one, relocating at most ``max_bytes``
        (None: the whole victim). Returns the bytes relocated (0: nothing to reclaim)."""
        st = self.state
        if max_bytes is not None:
            max_bytes = operator.index(max_bytes)
            if max_bytes < 0:
                raise ValueError("max_bytes must not be negative")
        with st.lock:
            self._check_open()
            if max_bytes == 0:
                return 0
            moved = self._collector.step(max_bytes, "manual")
            return max(moved, 0)

    def idle(self, seconds: float) -> None:
        """A window the caller hands over (e.g. between training iterations): GC runs in it, up to
        the idle watermark, then the device clock moves on by what is left of the window. The
        window bounds the work: modeled (or wall) time where the device has a clock, else
        ``seconds * config.idle_gc_bandwidth`` bytes relocated; 0 does nothing. Each GC step moves
        at most one write unit, so the window is overrun by at most one step."""
        st = self.state
        try:
            seconds = float(seconds)
        except (TypeError, ValueError):
            raise ValueError(f"idle window must be a number of seconds, not {seconds!r}") from None
        if not math.isfinite(seconds) or seconds < 0:
            raise ValueError(f"idle window must be finite and not negative, not {seconds}")
        with st.lock:
            self._check_open()
            if seconds == 0:
                return
            t0 = self._now()
            self._collector.idle(seconds, self._clocked, self.config.idle_gc_bandwidth)
            left = seconds - (self._now() - t0)
            if left > 0:
                self.device.advance(left)

    def stats(self) -> SwapStats:
        st = self.state
        with st.lock:
            ds, base = self.device.stats(), self._device_base
            hist = lambda now, old: {k: v - old.get(k, 0) for k, v in now.items() if v - old.get(k, 0)}
            s = SwapStats(
                clock=ds.clock, page_size=self.page_size, pages_stored=st.live,
                host_write_bytes=st.host_write_bytes, host_read_bytes=self.reads.host_read_bytes,
                device_write_bytes=ds.device_write_bytes - base.device_write_bytes,
                device_read_bytes=ds.device_read_bytes - base.device_read_bytes,
                gc_write_bytes=self.gc_write_bytes,
                device_gc_write_bytes=ds.gc_write_bytes - base.gc_write_bytes,
                media_write_bytes=ds.media_write_bytes - base.media_write_bytes,
                device_time_s=ds.device_time_s - base.device_time_s,
                discard_bytes=ds.discard_bytes - base.discard_bytes,     # a zoned view's resets are TRIMs
                write_size_histogram=hist(ds.write_size_histogram, base.write_size_histogram),
                read_size_histogram=hist(ds.read_size_histogram, base.read_size_histogram))
            self.reads.latency.fill(s)
            s.extra = {**st.zones.counts(), **self._collector.counters(),
                       "capacity_pages": self.capacity_pages, "placement": self.config.placement,
                       "victim_policy": self.config.victim,
                       "prefetch_hits": st.prefetch.hits, "prefetch_pages": st.prefetch.inserted,
                       "prefetch_wasted_bytes": st.prefetch.wasted_pages * self.page_size,
                       "pages_lost": st.lost_total}
            return s

    def close(self) -> None:
        """Flush, and leave a summary footer in every partly written zone. The device stays open.
        A second ``close()`` does nothing. If the flush fails the store stays open (and raises)."""
        st = self.state
        with st.lock:
            if st.closed:
                return
            error = self._writer.flush_all()
            if error is not None:
                raise error
            st.zones.write_summaries()
            st.closed = True
            if self._read_pool is not None:
                self._read_pool.shutdown()
                self._read_pool = None

    def _reader(self) -> ThreadPoolExecutor:
        """The thread GC's reads run on while the store appends (devices with ``overlapped_io``)."""
        if self._read_pool is None:
            self._read_pool = ThreadPoolExecutor(1, thread_name_prefix="zswap-gc-read")
        return self._read_pool

    def swap_in_latencies(self) -> np.ndarray:
        """Every swapped-in page's latency so far (seconds, the device's clock)."""
        st = self.state
        with st.lock:
            return self.reads.latency.values().copy()

    def check(self) -> None:
        """Check the map invariants (tests call this; real errors, not asserts): every mapped page's
        slot maps back to it, valid counts match the reverse map, no page is both lost and stored,
        the live count is right. Raises StoreInvariantError naming the first one broken."""
        with self.state.lock:
            self.state.check()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
