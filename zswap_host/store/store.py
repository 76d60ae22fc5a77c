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
* ``readpath``: device reads planned as coalesced requests.

What is left here is the write path (buffer, write, commit, retry), the read path's assembly, zone
failures, and the API. Invariants: a page's map entry moves only after its new copy is written;
a zone is reset only when no entry points into it.

Errors (docs/store.md): a call refused before its commit point changes nothing; after it, what
the call committed is stated by the error (see ``swap_out``).
"""

from __future__ import annotations

import math
import operator
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..backend import LatencyLog, SwapStats
from ..devices.fingerprint import first_words
from ..devices.units import placement_units
from ..devices.zone import ZoneCond
from ..errors import (DeviceIOError, PageLostError, StoreClosedError, StoreInvariantError, SwapFullError,
                      ZswapError)
from ..gc.collector import Collector
from ..gc.scheduler import GcScheduler
from ..neighbours import check_limit, first_distinct, slots_near
from .buffers import PrefetchBuffer, WriteBuffer
from .config import StoreConfig
from .express import Express
from .idmap import IdMap, as_page_ids
from .native import NativeBook
from .native import load as load_native
from .placement import get_placement
from .readpath import plan_reads
from .slotmap import UNMAPPED, SlotMap
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

    ``native=False`` keeps the per-page bookkeeping in numpy (the reference the C helpers of
    ``store/native.py`` are tested against); by default the C helpers are used when built.

    Thread-safe: every public method holds one lock, so concurrent callers are serialised (the
    device sees one caller at a time). After ``close()`` every call but ``close()`` (a no-op),
    ``stats()``, ``check()`` and ``swap_in_latencies()`` raises ``StoreClosedError``.
    """

    def __init__(self, device, config: StoreConfig | None = None, native: bool = True) -> None:
        self.config = cfg = config or StoreConfig()
        # any interface's placement units (devices/units.py): the store sees zones either way
        self.device = device = placement_units(device)
        self.units = device.unit_traits()
        g = device.geometry
        ps = self.page_size = cfg.page_size
        self._zones = zones = ZoneAllocator(device, ps, reserve=1)   # ValueError: page size
        self._placement = placement = get_placement(cfg.placement)
        limit = self.units.write_concurrency
        n_user = placement.user_streams(cfg.max_streams, limit)
        n_groups = n_user + (1 if placement.gc_own_stream else 0)
        if n_groups > limit:
            raise ValueError(f"placement {cfg.placement!r} needs {n_groups} open zones; the device allows {limit}")
        self._n_user = n_user
        self._n_groups = n_groups
        self._gc_buffer = n_user                            # write buffer (stream) index of GC
        # write group (open zone) of each buffer: user stream k writes group k, GC its own or 0
        self._group_of = list(range(n_user)) + [n_user if placement.gc_own_stream else 0]
        unit = min(cfg.write_size, g.max_append or cfg.write_size)
        self._unit_pages = max(1, unit // ps)               # pages per device write
        self._min_write_pages = min(self._unit_pages, max(1, (128 << 10) // ps))  # smallest but on flush/zone end
        self._buffers = [WriteBuffer(self._unit_pages, ps) for _ in range(n_user + 1)]
        self._slots = SlotMap(g.nr_zones, zones.slots_per_zone)
        scheduler = GcScheduler(g.nr_zones, cfg, self._now)
        self._collector = Collector(_GcPort(self), self._slots, zones, scheduler, cfg.victim, ps, self._unit_pages)
        zones.take_over()
        self._update_capacity()
        if self.capacity_pages <= 0:
            raise SwapFullError(
                f"the device is too small for this configuration: {zones.usable()} usable zones, "
                f"{n_groups} write streams + 1 zone of GC headroom need more")
        self._lock = threading.RLock()
        self._closed = False
        self._read_pool: ThreadPoolExecutor | None = None
        self._idmap = IdMap(direct=self.config.id_space)    # page id -> handle
        # per handle (grown with the id map):
        self._buffer_of = np.zeros(0, np.uint8)             # write buffer + 1 holding its newest copy (0: none)
        self._prefetch_pos = np.zeros(0, np.int32)          # prefetch ring slot + 1 (0: not prefetched)
        self._swap_outs = np.zeros(0, np.uint16)            # times swapped out (placements that count)
        self._lost = np.zeros(0, bool)                      # its only copy was in a zone that went offline
        self._in_flight = np.zeros(0, bool)                 # in a swap_out batch not written or buffered yet
        self._prefetch = PrefetchBuffer(cfg.prefetch_buffer_pages if cfg.prefetch else 0, ps)
        self._latency = LatencyLog()
        self._live = 0                                      # pages stored (buffered or on the device)
        self._lost_unreported: list[np.ndarray] = []        # page ids lost, not reported yet
        self._lost_count = 0                                # handles flagged lost now
        self._lost_total = 0                                # pages ever lost
        self._clocked = device.stats().clock != "none"
        self.host_write_bytes = 0
        self.host_read_bytes = 0
        self._device_base = device.stats()
        self.fast_path = {"prepared": 0, "one_commit_batches": 0, "one_batch_calls": 0}   # taken (tests look)
        lib = load_native() if native else None     # per-page bookkeeping in C (store/native.py)
        port = self._port = _HelperPort(self) if lib is not None else None
        self._native = NativeBook(port, *lib) if lib is not None else None
        self._lens_cache: dict = {}                 # plan of write units -> (zones, byte lengths) arrays
        # the device's append_batch that also says whether the units landed back to back where the
        # store expects them (LinuxZonedDevice: one C call on the uring-cmd path), or None
        self._append_run = getattr(device, "append_run", None)
        self._word_reads = bool(getattr(device, "word_reads", False))     # read_batch(..., words=True)
        # a payload-free device keeps a page's first word only: GC then moves words, not pages
        self._gc_words = self._word_reads and getattr(device, "payload", True) is False
        # the usual call in one C call (store/express.py), or None
        self._express = Express.make(port, self._native, *lib) if lib is not None else None

    # -- set-up ----------------------------------------------------------------------------------
    @property
    def capacity_pages(self) -> int:
        """Pages the store guarantees to hold (drops when zones are retired)."""
        return self._capacity

    @property
    def gc_write_bytes(self) -> int:
        """Bytes GC relocations wrote."""
        return self._collector.write_bytes

    def _update_capacity(self) -> None:
        self._capacity = (self._zones.usable() - self._n_groups - self._zones.reserve) * self._zones.data_slots

    def _now(self) -> float:
        return float(self.device.now())

    def _grow(self, handles: int) -> None:
        """Make the handle-indexed arrays hold ``handles`` entries (they double)."""
        n = self._slots.handles
        if handles <= n:
            return
        new = max(handles, 2 * n, 1024)
        self._slots.grow(new)
        for name in ("_buffer_of", "_prefetch_pos", "_swap_outs", "_lost", "_in_flight"):
            a = getattr(self, name)
            setattr(self, name, np.concatenate([a, np.zeros(new - n, a.dtype)]))
        if self._port is not None:
            self._port.flags = (self._buffer_of, self._in_flight)

    # -- public API ------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
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
        nat = self._native
        # the common call (a flat int64 array) skips as_page_ids: st_prepare finds negative ids and
        # as_page_ids then raises its error, before anything changes
        fast = nat is not None and type(page_ids) is np.ndarray and page_ids.dtype == np.int64 \
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
        with self._lock:
            if self._closed:
                if fast:
                    as_page_ids(ids)
                self._check_open()
            if ids.size == 0:
                return
            fresh_n = buffered_n = -1
            rc = -2
            if nat is not None:
                if not fast and not ids.flags.c_contiguous:
                    ids = np.ascontiguousarray(ids)     # the C helpers read it as one block
                rc, h, fresh_n, new, buffered_n = nat.prepare(ids)
                if not rc:
                    self.fast_path["prepared"] += 1
            if rc:                                      # the general path (numpy)
                if fast:
                    as_page_ids(ids)                    # raises for a negative id
                srt = np.sort(ids)
                if np.count_nonzero(srt[1:] == srt[:-1]):    # the last copy of an id wins
                    rev = ids[::-1]
                    _, first = np.unique(rev, return_index=True)
                    keep = np.sort(ids.size - 1 - first)
                    ids, pages = ids[keep], pages[keep]
                h = self._idmap.lookup(ids)
                fresh = h < 0
                hk = h[~fresh]
                new = int(np.count_nonzero(fresh)) + \
                    int(np.count_nonzero((~self._slots.mapped(hk)) & (self._buffer_of[hk] == 0)))
            if self._live > self._capacity:     # zones were retired: shed pages before writing more
                raise SwapFullError(
                    f"swap store over capacity: {self._live} pages stored, {self.capacity_pages} fit since "
                    f"zones were retired; discard pages first (nothing of this batch was stored)", ids.copy())
            if self._live + new > self._capacity:
                raise SwapFullError(
                    f"swap store full: {self._live} pages stored, {new} more do not fit in "
                    f"{self.capacity_pages}; nothing of this batch was stored", ids.copy())
            # -- commit point: from here on the batch is accepted
            if rc == 0:
                if fresh_n:
                    if not nat.insert(ids, h, fresh_n):
                        fresh = h < 0
                        h[fresh] = self._idmap.insert(ids[fresh])
                    if self._idmap.handles > self._slots.handles:
                        self._grow(self._idmap.handles)
                if buffered_n:
                    self._unbuffer(h)
            else:
                if fresh.any():
                    h[fresh] = self._idmap.insert(ids[fresh])
                    self._grow(self._idmap.handles)
                b = self._buffer_of[h]
                if np.count_nonzero(b):
                    self._unbuffer(h)
            if self._prefetch.size:
                self._prefetch.drop(self._prefetch_pos, h)
            if self._lost_count:
                self._lost_count -= int(self._lost[h].sum())
                self._lost[h] = False
            self._live += new
            counts = None
            if self._placement.counts_swap_outs:        # only then does placement look at it
                counts = self._swap_outs[h]
                counts += counts < 65535
                self._swap_outs[h] = counts
            self.host_write_bytes += ids.size * ps
            streams = self._placement.assign(h, stream, counts, self._n_user, self.config.hot_threshold)
            error = None
            groups = [(int(streams), h, pages)] if type(streams) is int or np.isscalar(streams) else \
                [(int(s), h[streams == s], pages[streams == s]) for s in np.unique(streams)]
            # until every page of the batch is written or buffered, the batch's pages are its newest
            # copies: losing or relocating an old copy of one of them is neither a loss nor a move
            if nat is not None:
                nat.fill(6, h, 1)
            else:
                self._in_flight[h] = True
            try:
                for s, sh, spages in groups:
                    try:
                        self._stream_write(s, sh, spages)
                    except (DeviceIOError, SwapFullError) as e:
                        error = e
            finally:
                if nat is not None:
                    nat.fill(6, h, 0)
                else:
                    self._in_flight[h] = False
            self._collector.background()
            self._raise_write_error(error)

    @staticmethod
    def _raise_write_error(error: Exception | None) -> None:
        """What ``swap_out`` raises for a write error past its commit point (the batch is stored)."""
        if isinstance(error, SwapFullError):
            raise SwapFullError(
                f"{error}: the batch was stored and waits in host buffers until GC frees a zone",
                np.zeros(0, np.int64)) from error
        if error is not None:
            raise error

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
        ps = self.page_size
        row = first_words if words else _same
        with self._lock:
            self._check_open()
            if ids.size == 0:
                return np.zeros(0, np.uint64) if words else np.zeros((0, ps), np.uint8)
            uids, inv = _distinct(ids)
            uh = self._idmap.lookup(uids)
            if (uh < 0).any():
                raise KeyError(int(uids[uh < 0][0]))
            b = self._buffer_of[uh]
            loc = self._slots.slots(uh)
            known = (b != 0) | (loc != UNMAPPED)
            if not known.all():
                self._raise_if_lost(uids, uh)
                raise KeyError(int(uids[~known][0]))
            t0 = self._now()
            lat = np.zeros(uids.size)
            buffered = b != 0
            if not buffered.any() and not self._prefetch.size:   # the usual case: all on the device
                try:
                    rows, at, done = self._read_slots(loc.astype(np.int64), words=words)
                except DeviceIOError:
                    self._raise_if_lost(uids, uh)
                    raise
                lat[:] = done - t0
                self._latency.add(lat[inv])
                self.host_read_bytes += ids.size * ps
                return np.take(rows, at[inv], axis=0)       # one gather, in the order asked
            # every page is copied once into the caller's array, in the order asked (repeats too)
            out = np.empty(ids.size, np.uint64) if words else np.empty((ids.size, ps), np.uint8)
            if buffered.any():
                for k in np.unique(b[buffered]):
                    m = b == k
                    self._place(out, inv, m, row(self._buffers[int(k) - 1].lookup(uh[m])))
            md = ~buffered
            if self._prefetch.size:
                mp = md & (self._prefetch_pos[uh] != 0)
                if mp.any():
                    self._place(out, inv, mp, row(self._prefetch.take(self._prefetch_pos, uh[mp])))
                    md &= ~mp
            if md.any():
                try:
                    rows, at, done = self._read_slots(loc[md].astype(np.int64), words=words)
                except DeviceIOError:
                    self._raise_if_lost(uids, uh)
                    raise
                lat[md] = done - t0
                rank = np.cumsum(md) - 1
                sel = md[inv]
                out[sel] = rows[at[rank[inv[sel]]]]
            self._latency.add(lat[inv])
            self.host_read_bytes += ids.size * ps
            return out

    @staticmethod
    def _place(out: np.ndarray, inv: np.ndarray, mask: np.ndarray, pages: np.ndarray) -> None:
        """Put ``pages`` (one per unique id where ``mask``) at every position asking for them."""
        rank = np.cumsum(mask) - 1
        sel = mask[inv]
        out[sel] = pages[rank[inv[sel]]]

    def _raise_if_lost(self, uids: np.ndarray, uh: np.ndarray) -> None:
        lost = uids[self._lost[uh]]
        if lost.size:
            pending = self.take_lost()
            every = np.union1d(lost, pending)
            raise PageLostError(f"{every.size} page(s) lost with an offline zone "
                                f"({lost.size} of them asked for here)", every)

    def take_lost(self) -> np.ndarray:
        """Page ids lost (their only copy was in a zone that went offline) since the last report,
        sorted; the report is then cleared. A ``swap_in`` of a lost id reports them too."""
        with self._lock:
            if not self._lost_unreported:
                return np.zeros(0, np.int64)
            lost = np.unique(np.concatenate(self._lost_unreported))
            self._lost_unreported.clear()
            return lost

    def discard(self, page_ids) -> None:
        """Forget pages (their space becomes garbage for GC). Unknown ids are ignored."""
        ids = _distinct(as_page_ids(page_ids))[0]
        with self._lock:
            self._check_open()
            h = self._idmap.lookup(ids)
            ids, h = ids[h >= 0], h[h >= 0]
            if ids.size == 0:
                return
            stored = self._slots.mapped(h) | (self._buffer_of[h] != 0)
            self._unbuffer(h)
            self._prefetch.drop(self._prefetch_pos, h)
            self._slots.invalidate(h)
            self._lost_count -= int(self._lost[h].sum())
            self._lost[h] = False
            self._live -= int(stored.sum())
            if not self._placement.counts_swap_outs:    # else remember how often an id came back
                self._idmap.remove(ids)
                self._swap_outs[h] = 0

    def locate(self, page_ids) -> np.ndarray:
        """Zone holding each page's newest copy on the device (int64, in the order asked); -1 where
        the newest copy is not on the device (it waits in a host buffer) or the id is not stored.
        Changes nothing; ValueError for bad ids."""
        ids = as_page_ids(page_ids)
        with self._lock:
            h = self._idmap.lookup(ids)
            out = np.full(ids.size, -1, np.int64)
            known = np.flatnonzero(h >= 0)
            hk = h[known]
            on_device = self._slots.mapped(hk) & (self._buffer_of[hk] == 0)
            out[known[on_device]] = self._slots.zone_of(self._slots.slots(hk[on_device]).astype(np.int64))
            return out

    def neighbours(self, page_ids, limit: int) -> np.ndarray:
        """Fault-around hint (``SwapBackend``'s optional ``neighbours``): up to ``limit`` ids whose
        newest copy sits in the same zone as one of ``page_ids``' within ``limit`` slots of it,
        nearest first — pages swapped out together are written side by side (the temporal
        placement's groups; other placements' streams likewise), so these tend to be wanted
        together. Distinct, none of ``page_ids``; ids not stored or whose newest copy waits in a
        host buffer have none. int64; changes nothing. ``ValueError`` for bad ids or a negative
        limit; ``StoreClosedError``."""
        ids = as_page_ids(page_ids)
        limit = check_limit(limit)
        with self._lock:
            self._check_open()
            if ids.size == 0 or limit == 0:
                return np.zeros(0, np.int64)
            h = self._idmap.lookup(ids)
            h = h[h >= 0]
            h = h[self._slots.mapped(h) & (self._buffer_of[h] == 0)]
            sl = self._slots.slots(h).astype(np.int64)
            spz = self._slots.slots_per_zone
            lo = sl // spz * spz
            cand = slots_near(sl, lo, lo + spz, min(limit, spz))
            owners = self._slots.owners(cand)
            owners = owners[owners >= 0]
            owners = owners[self._buffer_of[owners] == 0]     # else its newest copy is elsewhere
            return first_distinct(self._idmap.ids[owners], ids, limit)

    def zone_contents(self, z: int) -> np.ndarray:
        """Page ids whose newest copy is in zone ``z``, sorted: what losing the zone would lose.
        ``IndexError`` for a zone the device does not have."""
        z = operator.index(z)
        if not 0 <= z < self.device.geometry.nr_zones:
            raise IndexError(f"zone {z} does not exist (the device has {self.device.geometry.nr_zones} zones)")
        with self._lock:
            h = self._slots.zone_handles(z)
            h = h[self._buffer_of[h] == 0]
            return np.sort(self._idmap.ids[h])

    def poll_zones(self) -> int:
        """Ask the device for every zone's condition and act on zones that went read-only (retired,
        their pages queued for draining) or offline (retired, pages whose only copy was there
        reported lost: ``take_lost``, ``swap_in``) since the store last looked, as a failed I/O
        there would. Returns how many zones it acted on; StoreClosedError after ``close()``."""
        with self._lock:
            self._check_open()
            acted = 0
            for zone in self.device.report_zones():
                z, cond = zone.index, zone.cond
                if (cond == ZoneCond.READ_ONLY and not self._zones.is_retired(z)) or \
                        (cond == ZoneCond.OFFLINE and (not self._zones.is_retired(z) or self._slots.valid(z))):
                    self._zone_trouble(z, cond)
                    acted += 1
            return acted

    def flush(self) -> None:
        """Write every buffered page now (the only way, with idle and GC tails, to get writes
        smaller than the write unit). A DeviceIOError leaves the pages not written in the buffers."""
        with self._lock:
            self._check_open()
            error = self._flush_all()
            self._collector.background()
            if error is not None:
                raise error

    def _flush_all(self) -> Exception | None:
        error = None
        try:
            self._flush_streams()
        except (DeviceIOError, SwapFullError) as e:
            error = e
        for k in list(range(self._n_user)) + [self._gc_buffer]:
            try:
                self._flush_buffer(k, force=True)
            except (DeviceIOError, SwapFullError) as e:
                error = e
        return error

    def gc_step(self, max_bytes: int | None = None) -> int:
        """Run GC now: finish the current victim or pick one, relocating at most ``max_bytes``
        (None: the whole victim). Returns the bytes relocated (0: nothing to reclaim)."""
        if max_bytes is not None:
            max_bytes = operator.index(max_bytes)
            if max_bytes < 0:
                raise ValueError("max_bytes must not be negative")
        with self._lock:
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
        try:
            seconds = float(seconds)
        except (TypeError, ValueError):
            raise ValueError(f"idle window must be a number of seconds, not {seconds!r}") from None
        if not math.isfinite(seconds) or seconds < 0:
            raise ValueError(f"idle window must be finite and not negative, not {seconds}")
        with self._lock:
            self._check_open()
            if seconds == 0:
                return
            t0 = self._now()
            self._collector.idle(seconds, self._clocked, self.config.idle_gc_bandwidth)
            left = seconds - (self._now() - t0)
            if left > 0:
                self.device.advance(left)

    def stats(self) -> SwapStats:
        with self._lock:
            ds, base = self.device.stats(), self._device_base
            hist = lambda now, old: {k: v - old.get(k, 0) for k, v in now.items() if v - old.get(k, 0)}
            s = SwapStats(
                clock=ds.clock, page_size=self.page_size, pages_stored=self._live,
                host_write_bytes=self.host_write_bytes, host_read_bytes=self.host_read_bytes,
                device_write_bytes=ds.device_write_bytes - base.device_write_bytes,
                device_read_bytes=ds.device_read_bytes - base.device_read_bytes,
                gc_write_bytes=self.gc_write_bytes,
                device_gc_write_bytes=ds.gc_write_bytes - base.gc_write_bytes,
                media_write_bytes=ds.media_write_bytes - base.media_write_bytes,
                device_time_s=ds.device_time_s - base.device_time_s,
                discard_bytes=ds.discard_bytes - base.discard_bytes,     # a zoned view's resets are TRIMs
                write_size_histogram=hist(ds.write_size_histogram, base.write_size_histogram),
                read_size_histogram=hist(ds.read_size_histogram, base.read_size_histogram))
            self._latency.fill(s)
            s.extra = {**self._zones.counts(), **self._collector.counters(),
                       "capacity_pages": self.capacity_pages, "placement": self.config.placement,
                       "victim_policy": self.config.victim,
                       "prefetch_hits": self._prefetch.hits, "prefetch_pages": self._prefetch.inserted,
                       "prefetch_wasted_bytes": self._prefetch.wasted_pages * self.page_size,
                       "pages_lost": self._lost_total}
            return s

    def close(self) -> None:
        """Flush, and leave a summary footer in every partly written zone. The device stays open.
        A second ``close()`` does nothing. If the flush fails the store stays open (and raises)."""
        with self._lock:
            if self._closed:
                return
            error = self._flush_all()
            if error is not None:
                raise error
            self._zones.write_summaries()
            self._closed = True
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
        with self._lock:
            return self._latency.values().copy()

    def check(self) -> None:
        """Check the map invariants (tests call this; real errors, not asserts): every mapped page's
        slot maps back to it, valid counts match the reverse map, no page is both lost and stored,
        the live count is right. Raises StoreInvariantError naming the first one broken."""
        with self._lock:
            def need(ok, what: str) -> None:
                if not ok:
                    raise StoreInvariantError(f"swap store invariant broken: {what}")
            self._slots.check(self._zones.written_at(np.arange(self.device.geometry.nr_zones)))
            mapped = self._slots.mapped_mask()
            hs = np.flatnonzero(mapped)
            buffered = np.flatnonzero(self._buffer_of)
            need(sum(b.n for b in self._buffers) == buffered.size, "buffer index is off")
            need(np.union1d(hs, buffered).size == self._live, "live page count is off")
            need(not (self._lost & (mapped | (self._buffer_of != 0))).any(), "a page is both lost and stored")
            need(int(self._lost.sum()) == self._lost_count, "lost page count is off")
            keys, vals = self._idmap.items()
            need(np.array_equal(self._idmap.ids[vals], keys), "id map and handle table disagree")
            if not self._placement.counts_swap_outs:
                held = np.zeros(mapped.size, bool)
                held[vals] = True
                stored = mapped | (self._buffer_of != 0) | self._lost
                need(np.array_equal(held, stored), "id map holds ids not stored, or misses some")

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- write path ------------------------------------------------------------------------------
    def _unbuffer(self, handles: np.ndarray) -> None:
        b = self._buffer_of[handles]
        if b.any():
            m = b != 0
            for k in np.unique(b[m]):
                self._buffers[int(k) - 1].remove(handles[b == k])
            self._buffer_of[handles[m]] = 0

    def _buffer(self, k: int, handles: np.ndarray, pages: np.ndarray, words: bool = False) -> None:
        """Pages wait in buffer k (``words``: given as their first words, ``WriteBuffer.add_words``)."""
        if words:
            self._buffers[k].add_words(handles, pages)
        else:
            self._buffers[k].add(handles, pages)
        if self._native is not None:
            self._native.fill(5, handles, k + 1)
        else:
            self._buffer_of[handles] = k + 1

    def _stream_write(self, k: int, handles: np.ndarray, pages: np.ndarray, sent: tuple | None = None) -> None:
        """Small batches gather in the stream's buffer; large ones go to the device straight from
        the caller's array in writes of ``min_write_pages``..``unit_pages`` pages, the rest waits.
        ``sent``: the express path (store/express.py) planned the call, topped the buffer up and
        sent a run of it: ``(plan, C pointers, the device's (offsets, failures) or None: not sent)``;
        the call goes on from ``_one_batch``'s landing of that run."""
        buf, unit, i, n = self._buffers[k], self._unit_pages, 0, handles.size
        done = np.zeros(n, bool)
        clean = False                            # True: nothing past i was written (no error)
        ctx = None                               # the C helpers' pointers into this batch (one-batch plan)
        try:
            if sent is not None:
                plan, ctx, out = sent
                i = plan[1]
                i += self._one_batch(k, handles, pages, done, plan, i, ctx, out)
            elif buf.n + n < unit:
                i = n
                self._buffer(k, handles, pages)
                return
            elif (plan := self._one_batch_plan(k, n) if self._native is not None else None) is not None:
                # the usual call: one batch, planned in a few steps
                ctx = self._native.batch_ctx(handles, pages)    # None: the numpy steps
                top = plan[1]
                if top:
                    i = top
                    if ctx is None or not self._native.stage(buf, k + 1, ctx, 0, top):
                        self._buffer(k, handles[:top], pages[:top])
                i += self._one_batch(k, handles, pages, done, plan, i, ctx)
            else:
                if buf.n and buf.n < self._min_write_pages:  # top the buffer up to one write unit
                    i = unit - buf.n
                    self._buffer(k, handles[:i], pages[:i])
                if buf.n >= self._min_write_pages and n - i >= self._min_write_pages:
                    i += self._write_buffer_and(k, handles[i:], pages[i:], done[i:])
            if buf.n >= self._min_write_pages:
                self._flush_buffer(k, force=False, least=self._min_write_pages)
            while n - i >= self._min_write_pages:
                done[i:] = False
                i += self._write_one(k, handles[i:], pages[i:], self._min_write_pages, False, done[i:])
            clean = True
        finally:
            if i < n:                            # what is not on the device waits in the buffer
                if clean:                        # the tail, as slices (no gather)
                    if ctx is None or not self._native.stage(buf, k + 1, ctx, i, n - i):
                        self._buffer(k, handles[i:], pages[i:])
                else:
                    rest = np.flatnonzero(~done[i:]) + i
                    self._buffer(k, handles[rest], pages[rest])

    def _one_batch_plan(self, k: int, n: int) -> tuple | None:
        """The plan of a user stream's usual call of ``n`` pages, or None: the buffer's pages (topped
        up to a write unit when fewer than ``min_write_pages``) as one unit and the caller's pages
        in whole units after it (while ``min_write_pages`` remain), at least two units, all into
        the stream's open zone, which has room for them all. These are the units, in the same
        order, that ``_stream_write``'s general steps (``_write_buffer_and`` or ``_write_one``)
        would write; None leaves the call to them. Returns ``(zone, top-up pages, buffer unit
        pages, caller pages written, cache key)``; changes nothing."""
        if k >= self._n_user:
            return None
        buf, unit, least = self._buffers[k], self._unit_pages, self._min_write_pages
        r = buf.n
        if r > unit:
            return None
        z = self._zones.current(self._group_of[k])
        if z is None:
            return None
        top = unit - r if 0 < r < least else 0
        rest = n - top
        tail = rest % unit
        w = rest - tail if tail < least else rest    # whole units, and a last one of >= least pages
        b = r + top
        if (b and rest < least) or (not b and w <= unit) or b + w > self._zones.room(z):
            return None
        return z, top, b, w, ("one", z, b, w)

    def _one_batch(self, k: int, handles: np.ndarray, pages: np.ndarray, done: np.ndarray, plan: tuple, at: int,
                   ctx: tuple | None, out=None) -> int:
        """Write ``_one_batch_plan``'s units (the caller's from ``handles[at:]``) as one
        ``append_batch`` (the buffer's unit and the caller's pages as two buffers: no view per
        unit), or the device's ``append_run``; when they landed back to back from the zone's cursor
        (the usual batch), commit them as one run (``ctx``: in one C call). Anything else (a
        failure, another order) goes to ``_land`` as the general path's jobs would, retries
        included. Returns the caller's pages written (a prefix of ``handles[at:]``); ``done``
        marks them as ``_write_jobs`` does. ``out``: the batch was sent already (the express path),
        the device's (offsets, failures)."""
        z, _, b, w, _ = plan
        ps, least = self.page_size, self._min_write_pages
        buf = self._buffers[k]
        lens = self._one_batch_units(z, b, w)[2]
        first = z * self._slots.slots_per_zone + self._zones.written(z)
        if out is None:
            out = self._send_units(z, b, w, buf, pages[at:at + w], first)
        landed = out is True
        if not landed:
            offsets, failures = out
        if landed:                               # back to back in plan order: the usual batch, one commit
            if ctx is not None:                  # the cursor is first: record cannot refuse it
                full = self._zones.record(z, first, self._native.commit_run(buf, b, ctx, at, w, first))
            elif b:
                full = self._commit(np.concatenate((buf.ids[:b], handles[at:at + w])), z, first * ps, False, True)
            else:
                full = self._commit(handles[at:at + w], z, first * ps, False, False)
            if b:
                buf.drop_front(b)
            done[at:at + w] = True
            if full:
                self._seal(self._group_of[k], z)
            self.fast_path["one_commit_batches"] += 1
            self.fast_path["one_batch_calls"] += 1
            return w
        bids = buf.ids[:b].copy()
        handles, pages, done = handles[at:], pages[at:], done[at:]
        # the general path's jobs and plan for what happened
        plan_units, a, j = [], 0, 0
        if b:
            plan_units.append((0, z, 0, b))
            j = 1
        for m in (lens[1:] if b else lens):
            plan_units.append((j, z, a, m))
            a += m
        caller = (k, handles, pages, least, False, done)
        if not b:
            return self._land([caller], plan_units, {z: self._group_of[k]}, offsets, failures)[0]
        done_buf = np.zeros(b, bool)
        try:
            return self._land([(k, bids, buf.data[:b], least, True, done_buf), caller], plan_units,
                              {z: self._group_of[k]}, offsets, failures)[1]
        finally:
            self._drop_written(buf, bids, done_buf)

    def _one_batch_units(self, z: int, b: int, w: int) -> tuple:
        """(zones, byte lengths, pages) of ``_one_batch_plan``'s units: the buffer's ``b`` pages, then
        the caller's ``w`` in write units (cached per plan)."""
        key = ("one", z, b, w)
        arrays = self._lens_cache.get(key)
        if arrays is None:
            unit = self._unit_pages
            lens = ([b] if b else []) + [unit] * (w // unit) + ([w % unit] if w % unit else [])
            zarr, lbytes = self._plan_arrays(tuple((z, m) for m in lens))
            arrays = self._lens_cache[key] = (zarr, lbytes, lens)
        return arrays

    def _send_units(self, z: int, b: int, w: int, buf, mine: np.ndarray, first: int):
        """Send ``_one_batch_plan``'s units (the buffer's first ``b`` pages, then ``mine``) as one
        batch expected back to back from slot ``first``: True when they landed so, else the
        device's (offsets, failures)."""
        ps = self.page_size
        zarr, lbytes, lens = self._one_batch_units(z, b, w)
        run = self._append_run
        if run is not None:                      # the device checks where the units landed
            return run(zarr, (buf.data[:b], mine) if b else (mine,), lbytes, self.config.append_qd, first * ps)
        offsets, failures = self.device.append_batch(zarr, (buf.data[:b], mine) if b else mine, lbytes,
                                                     self.config.append_qd)
        if failures:
            return offsets, failures
        expect = first * ps
        for off, m in zip(offsets.tolist(), lens):
            if off != expect:
                return offsets, failures
            expect += m * ps
        return True

    def _write_buffer_and(self, k: int, handles: np.ndarray, pages: np.ndarray, done: np.ndarray) -> int:
        """Stream k's buffered write unit and the caller's next units as one batch (one trip to the
        device instead of two); returns how many of the caller's pages were written (a prefix)."""
        buf, least = self._buffers[k], self._min_write_pages
        ids = buf.ids[:buf.n].copy()
        done_buf = np.zeros(ids.size, bool)
        try:
            return self._write_jobs([(k, ids, buf.data[:buf.n], least, True, done_buf),
                                     (k, handles, pages, least, False, done)])[1]
        finally:
            self._drop_written(buf, ids, done_buf)

    def _flush_buffer(self, k: int, force: bool, least: int | None = None) -> None:
        """Write buffered pages while at least ``least`` pages wait (default: a whole write unit;
        ``force``: everything)."""
        buf = self._buffers[k]
        least = 1 if force else (least or self._unit_pages)
        while buf.n >= least:
            ids = buf.ids[:buf.n].copy()
            done = np.zeros(ids.size, bool)
            try:
                self._write_one(k, ids, buf.data[:buf.n], least, True, done)
            finally:
                self._drop_written(buf, ids, done)

    @staticmethod
    def _drop_written(buf, ids: np.ndarray, done: np.ndarray) -> None:
        """Take the pages now on the device out of a write buffer (a prefix, unless a retry failed
        after later units had landed)."""
        w = int(np.count_nonzero(done))
        if done[:w].all():
            buf.drop_front(w)
        else:
            buf.remove(ids[done])

    def _flush_streams(self) -> None:
        """The user streams' buffers that fit their open zones go down as one batch (each stream's
        units into its own zone, all in flight together); the rest is left to ``_flush_buffer``."""
        jobs = []
        for k in range(self._n_user):
            buf = self._buffers[k]
            z = self._zones.current(self._group_of[k])
            if buf.n and z is not None and buf.n < self._zones.room(z):   # no zone fills: no seal between
                jobs.append((k, buf.ids[:buf.n].copy(), buf.data[:buf.n], 1, True, np.zeros(buf.n, bool)))
        if len({self._zones.current(self._group_of[j[0]]) for j in jobs}) < 2:
            return
        try:
            self._write_jobs(jobs)
        finally:
            for k, ids, _, _, _, done in jobs:
                self._drop_written(self._buffers[k], ids, done)

    def _write_jobs(self, jobs: list) -> list[int]:
        """One ``append_batch`` for several streams' write units (jobs: ``(k, handles, data, least,
        buffered, done)``, each stream into its own open zone): the units of one zone are in
        flight together and land where the device chooses; they are committed in the zone's
        order. A unit that fails goes through ``_write``'s retries (other zones) afterwards."""
        if len(jobs) == 1:
            return [self._write_one(*jobs[0])]
        plan, room, owners = [], {}, {}
        for j, (k, handles, data, least, buffered, done) in enumerate(jobs):
            group, for_gc = self._group_of[k], k == self._gc_buffer
            z = self._zone_for(group, for_gc)
            owners.setdefault(z, self._zones.owner_of(z, group))
            r = room.setdefault(z, self._zones.room(z))
            a, rem = 0, handles.size
            while rem >= least and r > 0:
                m = min(self._unit_pages, rem, r)
                plan.append((j, z, a, m))
                a, rem, r = a + m, rem - m, r - m
            room[z] = r
        if len(plan) == 1:                       # one unit: the plain path (and its retries)
            j, _, _, m = plan[0]
            k, handles, data, _, buffered, done = jobs[j]
            w = self._write(k, handles[:m], data[:m], buffered)
            done[:w] = True
            return [w if i == j else 0 for i in range(len(jobs))]
        zones, lbytes = self._plan_arrays(tuple((z, m) for _, z, _, m in plan))
        # several jobs: one buffer per unit, gathered by the device without a copy
        data = [jobs[j][2][a:a + m] for j, _, a, m in plan]
        offsets, failures = self.device.append_batch(zones, data, lbytes, self.config.append_qd)
        return self._land(jobs, plan, owners, offsets, failures)

    def _plan_arrays(self, key: tuple) -> tuple[np.ndarray, np.ndarray]:
        """(zone, bytes) of each planned unit as int64 arrays (``key``: ``(zone, pages)`` per unit),
        cached: a stream writes the same plan again and again. The arrays are never written."""
        arrays = self._lens_cache.get(key)
        if arrays is None:
            if len(self._lens_cache) > 256:
                self._lens_cache.clear()
            arrays = self._lens_cache[key] = (np.array([z for z, _ in key], np.int64),
                                              np.array([m for _, m in key], np.int64) * self.page_size)
        return arrays

    def _write_one(self, k: int, handles: np.ndarray, data: np.ndarray, least: int, buffered: bool,
                   done: np.ndarray) -> int:
        """Write stream k's pages in write units into its zone: as many units as the zone has room
        for (while at least ``least`` pages remain), as one ``append_batch``. Returns the pages
        written, a prefix of ``handles``; ``done`` marks each page as it is committed, so that a
        caller seeing an exception knows which pages are on the device. (``_write_jobs`` of one
        job, the common case: the plan as a few ints and cached arrays; units that landed back to
        back in plan order, the usual batch, are one commit.)"""
        group, for_gc = self._group_of[k], k == self._gc_buffer
        zones = self._zones
        z = self._zone_for(group, for_gc)
        r = zones.room(z)
        unit, rem = self._unit_pages, handles.size
        lens = []
        while rem >= least and r > 0:
            m = min(unit, rem, r)
            lens.append(m)
            rem, r = rem - m, r - m
        if not lens:
            return 0
        if len(lens) == 1:                       # one unit: the plain path (and its retries)
            m = lens[0]
            w = self._write(k, handles[:m], data[:m], buffered)
            done[:w] = True
            return w
        w = handles.size - rem
        key = (z, *lens)
        arrays = self._lens_cache.get(key)
        if arrays is None:
            arrays = self._plan_arrays(tuple((z, m) for m in lens))
            self._lens_cache[key] = arrays
        zarr, lbytes = arrays
        offsets, failures = self.device.append_batch(zarr, data[:w], lbytes, self.config.append_qd)
        plan, a = [], 0
        for m in lens:
            plan.append((0, z, a, m))
            a += m
        return self._land([(k, handles, data, least, buffered, done)], plan, {z: zones.owner_of(z, group)},
                          offsets, failures)[0]

    def _land(self, jobs: list, plan: list, owners: dict, offsets: np.ndarray, failures: list) -> list[int]:
        """Account for an ``append_batch`` of ``plan``'s units: commit what landed, each zone in its
        order (units landed back to back: one commit), seal zones now full, retry failed units
        (``_write``: this or other zones). Returns the pages written per job."""
        ps = self.page_size
        written = [0] * len(jobs)
        for j, _, _, m in plan:
            written[j] += m
        if not failures and plan:
            # the usual batch: one zone, every unit back to back in plan order from the cursor; then
            # the commits below are those of the general loop (same runs, same order), without it
            z = plan[0][1]
            expect = (z * self._slots.slots_per_zone + self._zones.written(z)) * ps
            runs = []
            for (j, uz, a, m), off in zip(plan, offsets.tolist()):
                if uz != z or off != expect:
                    break
                if runs and runs[-1][0] == j and runs[-1][1] + runs[-1][2] == a:
                    runs[-1][2] += m
                else:
                    runs.append([j, a, m, off])
                expect += m * ps
            else:
                full = False
                for j, a, m, off in runs:
                    k, handles, _, _, buffered, done = jobs[j]
                    if self._commit(handles[a:a + m], z, off, k == self._gc_buffer, buffered):
                        full = True
                    done[a:a + m] = True
                if full:
                    self._seal(owners[z], z)
                self.fast_path["one_commit_batches"] += 1
                return written
        zones = np.array([u[1] for u in plan], np.int64)
        full = set()
        run = None                                               # units landed back to back: one commit
        for u in np.lexsort((offsets, zones)).tolist() + [None]:  # each zone in its order: cursors move on
            if u is not None and offsets[u] < 0:
                continue
            if u is not None and run is not None:
                j, z, a, m = plan[u]
                rj, rz, ra, rm, roff = run
                if (j, z, a, int(offsets[u])) == (rj, rz, ra + rm, roff + rm * ps):
                    run = (rj, rz, ra, rm + m, roff)
                    continue
            if run is not None:
                j, z, a, m, off = run
                k, handles, _, _, buffered, done = jobs[j]
                if self._commit(handles[a:a + m], z, off, k == self._gc_buffer, buffered):
                    full.add(z)
                done[a:a + m] = True
            run = None if u is None else (*plan[u], int(offsets[u]))
        for z in sorted(full):
            self._seal(owners[z], z)
        for u, _ in failures:                                    # retried in this or other zones
            j, _, a, left = plan[u]
            k, handles, data_j, _, buffered, done = jobs[j]
            while left:
                w = self._write(k, handles[a:a + left], data_j[a:a + left], buffered)
                done[a:a + w] = True
                a, left = a + w, left - w
        return written

    def _write(self, k: int, handles: np.ndarray, data: np.ndarray, buffered: bool = True) -> int:
        """Append up to len(handles) pages into stream k's zone; returns how many were written."""
        group, for_gc = self._group_of[k], k == self._gc_buffer
        error: DeviceIOError | None = None
        failed_once = None
        for _ in range(self.config.write_retries + 1):
            z = self._zone_for(group, for_gc)
            owner = self._zones.owner_of(z, group)
            n = min(handles.size, self._zones.room(z))
            try:
                off = self.device.append(z, data[:n])
            except DeviceIOError as e:
                error = e
                # a zone the device still reports writable gets one more try (a transient error
                # must not cost a zone); a second failure, or a read-only/offline zone, gives it up
                if failed_once != z and not self._zone_trouble(z):
                    failed_once = z
                    continue
                self._write_failed(owner, z)
                continue
            if self._commit(handles[:n], z, off, for_gc, buffered):
                self._seal(owner, z)
            return n
        raise error

    def _zone_for(self, group: int, for_gc: bool) -> int:
        zones = self._zones
        while True:
            z = zones.current(group)
            if z is not None:
                return z
            if zones.can_take(for_gc):
                z = zones.take(group)
                self.device.place_zone(z, group, for_gc)
                return z
            if self._collector.reclaim_empty():
                continue
            if for_gc:
                # no free zone (a write failure cost GC its zone mid-victim): borrow the open zone
                # of a user stream rather than stop
                z = zones.borrow(group)
                if z is not None:
                    return z
                raise SwapFullError("no free zone left for GC relocation")
            if not self._collector.foreground():
                raise SwapFullError("no free zone and GC cannot reclaim one")

    def _commit(self, handles: np.ndarray, z: int, off: int, for_gc: bool, buffered: bool) -> bool:
        """The new copies are on the device at ``off``: advance the zone's cursor, move the map
        entries (invalidating the old copies). True when the zone's data area is now full."""
        first = off // self.page_size
        full = self._zones.record(z, first, self._idmap.ids[handles])   # raises before any change
        if self._native is not None:                # the same four updates in one pass
            self._native.commit(handles, first, buffered)
        else:
            self._slots.commit(handles, first)
            self._in_flight[handles] = False
            if buffered:
                self._buffer_of[handles] = 0
        if for_gc:
            self._collector.wrote(handles.size * self.page_size)
        return full

    def _seal(self, group: int, z: int) -> None:
        try:
            self._zones.seal(group, z)
        except DeviceIOError:
            self._zone_trouble(z)

    def _write_failed(self, group: int, z: int) -> None:
        """A write into z failed: give up on z and look at why. A zone the store had not written yet
        goes back to the free list (reset); one holding data is finished and left to GC."""
        self._zones.abandon(group, z)
        if self._zone_trouble(z):
            return
        try:
            if self._zones.written(z) == 0 and self._slots.valid(z) == 0:
                self._zones.reset(z)
            else:
                self._zones.finish(z)
        except ZswapError:
            self._zone_trouble(z)

    # -- zone failures ---------------------------------------------------------------------------
    def _zone_trouble(self, z: int, cond: ZoneCond | None = None) -> bool:
        """Retire z if the device says (or ``cond`` says) it went read-only (drain it) or offline
        (its pages are lost)."""
        if cond is None:
            cond = self.device.report_zones()[z].cond
        if cond == ZoneCond.READ_ONLY:
            if self._zones.retire(z):                    # queued for draining once, not per failure
                self._update_capacity()
                self._collector.queue_drain(z)
            return True
        if cond == ZoneCond.OFFLINE:
            if self._zones.retire(z):
                self._update_capacity()
            self._collector.zone_lost(z)
            self._lose_zone(z)
            return True
        return False

    def _lose_zone(self, z: int) -> None:
        gone = self._slots.lose_zone(z)
        # a page whose newer copy waits in a write buffer (a swap-out, or GC that already read it)
        # is not lost: only the old copy was there
        keep = (self._buffer_of[gone] != 0) | self._in_flight[gone]   # a newer copy is on its way
        lost = gone[~keep]
        if lost.size:
            self._lost[lost] = True
            self._lost_count += lost.size
            self._lost_total += lost.size
            self._live -= lost.size
            self._lost_unreported.append(self._idmap.ids[lost].copy())
            if self._prefetch.size:
                self._prefetch.drop(self._prefetch_pos, lost)
        self._zones.forget(z)

    # -- read path -------------------------------------------------------------------------------
    def _read_slots(self, slots: np.ndarray, prefetch: bool = True,
                    words: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Read distinct slots: (the rows read, each slot's row among them, each slot's completion
        time). Adjacent slots become one read; with prefetch (demand reads only: GC reads may see
        copies a write in flight is replacing) each read covers the aligned write unit around it,
        and what it brings beyond the request waits in the prefetch buffer. The caller gathers
        the rows it wants once, straight into its output. ``words``: each row is the page's first
        64-bit word (read as words where the device can, and where the prefetch buffer, which
        keeps pages, takes nothing)."""
        cfg, ps = self.config, self.page_size
        window = cfg.prefetch_bytes // ps if cfg.prefetch and prefetch else 0
        plan = plan_reads(slots, self._slots.slots_per_zone, self._zones.written_at, window, cfg.max_read_bytes // ps)
        as_words = words and not window and self._word_reads
        try:
            if as_words:
                rows, done = self.device.read_batch(plan.starts * ps, plan.lengths * ps, cfg.read_qd, words=True)
                return rows, plan.row_of_request, done[plan.request_of_slot]
            data, done = self.device.read_batch(plan.starts * ps, plan.lengths * ps, cfg.read_qd)
        except DeviceIOError:
            for z in np.unique(self._slots.zone_of(slots)).tolist():
                self._zone_trouble(z)
            raise
        rows = data.reshape(-1, ps)
        if window and plan.extra_rows.size:
            handles = self._slots.owners(plan.extra_slots)
            ok = handles >= 0
            ok[ok] &= (self._buffer_of[handles[ok]] == 0) & (self._prefetch_pos[handles[ok]] == 0)
            self._prefetch.insert(self._prefetch_pos, handles[ok], rows[plan.extra_rows[ok]])
        return (first_words(rows) if words else rows), plan.row_of_request, done[plan.request_of_slot]


def _same(rows: np.ndarray) -> np.ndarray:
    return rows


def _distinct(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(ids, return_inverse=True)``, without sorting ids already strictly increasing (a
    fault batch usually is)."""
    if ids.size < 2 or (ids[1:] > ids[:-1]).all():
        return ids, np.arange(ids.size)
    return np.unique(ids, return_inverse=True)


class _GcPort:
    """The store's side of the collector's ``GcHost`` protocol (gc/collector.py)."""

    def __init__(self, store: SwapStore) -> None:
        self._store = store

    def newer_copy(self, handles: np.ndarray) -> np.ndarray:
        s = self._store
        return (s._buffer_of[handles] != 0) | s._in_flight[handles]   # in flight: a swap_out writes it now

    def read_slots(self, slots: np.ndarray) -> np.ndarray:
        # on a payload-free device the pages' first words (all it keeps): queue_relocated takes either
        rows, row, _ = self._store._read_slots(slots, prefetch=False, words=self._store._gc_words)
        if row.size == rows.shape[0] and (row.size < 2 or bool((row[1:] > row[:-1]).all())):
            return rows                  # every row once, in order (GC's sorted slots): no copy
        return rows[row]

    def start_read(self, slots: np.ndarray):
        s = self._store
        if not s.device.overlapped_io:
            data = self.read_slots(slots)
            return lambda: data
        # planned here (store state); only the device read runs on the reader thread
        ps, cfg = s.page_size, s.config
        plan = plan_reads(slots, s._slots.slots_per_zone, s._zones.written_at, 0, cfg.max_read_bytes // ps)
        fut = s._reader().submit(s.device.read_batch, plan.starts * ps, plan.lengths * ps, cfg.read_qd)

        def wait() -> np.ndarray:
            try:
                data, _ = fut.result()
            except DeviceIOError:
                for z in np.unique(s._slots.zone_of(slots)).tolist():
                    s._zone_trouble(z)
                raise
            return data.reshape(-1, ps)[plan.row_of_request]
        return wait

    def read_chunk_pages(self) -> int:
        s = self._store
        return 4 * s._unit_pages if s.device.overlapped_io else 0

    def queue_relocated(self, handles: np.ndarray, pages: np.ndarray) -> None:
        s = self._store
        s._buffer(s._gc_buffer, handles, pages, words=pages.ndim == 1)     # words: from read_slots
        s._flush_buffer(s._gc_buffer, force=False)

    def flush_relocated(self) -> None:
        self._store._flush_buffer(self._store._gc_buffer, force=True)

    def zone_trouble(self, z: int) -> bool:
        return self._store._zone_trouble(z)

    def now(self) -> float:
        return self._store._now()


class _HelperPort:
    """What the store's C helpers (``NativeBook``, store/native.py; ``Express``, store/express.py)
    use of it, in one place: its rooms and settings (fixed for the store's life, plain attributes:
    the express path reads them on every call), the per-handle arrays they update in place, the
    counters they advance, and the general path's steps the express path continues with."""

    def __init__(self, store: SwapStore) -> None:
        s = self._store = store
        self.lock, self.config, self.device, self.page_size = s._lock, s.config, s.device, s.page_size
        self.fast_path = s.fast_path                # counters: the express path counts as the general path would
        self.idmap, self.slots, self.zones, self.buffers = s._idmap, s._slots, s._zones, s._buffers
        self.collector, self.placement = s._collector, s._placement
        self.n_user = s._n_user                     # user streams
        self.group_of = s._group_of                 # write buffer (stream) -> write group (open zone)
        self.unit_pages, self.min_write_pages = s._unit_pages, s._min_write_pages
        # the general path's steps (SwapStore's, bound): the express path hands a call over to them
        self.buffer, self.seal, self.zone_for = s._buffer, s._seal, s._zone_for
        self.send_units, self.stream_write = s._send_units, s._stream_write
        self.raise_write_error = s._raise_write_error
        # (buffer_of, in_flight) themselves, per handle: the write buffer + 1 holding its newest copy
        # (uint8, 0: none), whether a swap_out is writing it now (bool). SwapStore._grow replaces them
        # (and this pair): compare by identity
        self.flags = (s._buffer_of, s._in_flight)

    def room(self) -> int:
        """Pages the store may still take; -1 when only the general path may write now: the store
        is closed, over capacity (zones were retired), holds pages flagged lost or prefetched pages,
        or the id map would hand discarded handles out again."""
        s = self._store
        if s._closed or s._live > s._capacity or s._lost_count or s._prefetch.size or self.idmap.reusable:
            return -1
        return s._capacity - s._live

    def stored(self, pages: int, nbytes: int) -> None:
        """A call past its commit point stored ``pages`` new pages from ``nbytes`` of the caller's."""
        s = self._store
        s._live += pages
        s.host_write_bytes += nbytes
