"""``SwapStore``: the host-managed swap store on a ZNS device.

Swap-outs collect in per-stream write buffers and reach the device as large zone appends; a slot
map (page id -> device slot) and its reverse map live in numpy arrays; the GC scheduler reclaims
zones by relocating their valid pages to a GC stream. Invariants (DESIGN.md): a page's map entry
moves only after its new copy is written; a zone is reset only when no entry points into it.

Per-page state lives in arrays indexed by a *handle* (``idmap.IdMap``: page id -> handle), so memory
follows the pages stored, not the largest page id. The slot map, the reverse map and the buffers all
speak handles; page ids appear only at the API and in zone summaries.

Errors (docs/store.md): a call refused before its commit point changes nothing; after it, what
the call committed is stated by the error (see ``swap_out``).
"""

from __future__ import annotations

import math
import operator
import threading

import numpy as np

from ..backend import LatencyLog, SwapStats
from ..devices.zone import ZoneCond
from ..errors import (DeviceIOError, PageLostError, StoreClosedError, StoreInvariantError, SwapFullError,
                      ZswapError)
from ..gc.policies import ZoneTable, get_victim_policy, greedy
from ..gc.scheduler import GcScheduler
from . import placement as placement_mod
from .buffers import PrefetchBuffer, WriteBuffer
from .config import StoreConfig
from .idmap import IdMap, as_page_ids
from .readpath import plan_reads
from .summary import data_slots, encode, footer_pages
from .zones import FULL, RETIRED, ZoneAllocator

NONE = np.uint32(0xFFFFFFFF)


class SwapStore:
    """Host-managed swap store on any ``ZonedDevice``; implements ``SwapBackend`` plus
    ``gc_step(max_bytes=None)`` and ``idle(seconds)``.

    On construction the store takes the device over: zones holding data are reset, read-only and
    offline zones are never used. ``capacity_pages`` is how many pages it guarantees to hold: the
    usable zones minus one open zone per write stream and one zone of GC headroom.

    Thread-safe: every public method holds one lock, so concurrent callers are serialised (the
    device sees one caller at a time). After ``close()`` every call but ``close()`` (a no-op),
    ``stats()``, ``check()`` and ``swap_in_latencies()`` raises ``StoreClosedError``.
    """

    def __init__(self, device, config: StoreConfig | None = None) -> None:
        self.config = cfg = config or StoreConfig()
        self.device = device
        g = device.geometry
        ps = self.page_size = cfg.page_size
        if ps % g.block_size or g.zone_size % ps or g.zone_capacity % ps:
            raise ValueError(f"page size {ps} does not fit the device's blocks ({g.block_size}) and zones")
        self._spz = g.zone_size // ps                      # slot numbers per zone
        self._D = data_slots(g.zone_capacity, ps)          # data slots per zone (footer excluded)
        self._policy = get_victim_policy(cfg.victim)
        limit = min([x for x in (g.max_open, g.max_active) if x] or [1 << 30])
        n_user = placement_mod.user_streams(cfg.placement, cfg.max_streams)
        shared_gc = cfg.placement == "single"
        if cfg.placement == "stream":
            n_user = min(n_user, max(1, limit - 1))
        n_groups = n_user + (0 if shared_gc else 1)
        if n_groups > limit:
            raise ValueError(f"placement {cfg.placement!r} needs {n_groups} open zones; the device allows {limit}")
        self._n_user = n_user
        self._gcb = n_user                                  # buffer index of the GC stream
        self._group = list(range(n_user)) + [0 if shared_gc else n_user]
        self._n_groups = n_groups
        chunk = min(cfg.write_size, g.max_append or cfg.write_size)
        self._chunk = max(1, chunk // ps)                   # pages per device write
        self._min_pages = min(self._chunk, max(1, (128 << 10) // ps))  # smallest write but on flush/zone end
        self._bufs = [WriteBuffer(self._chunk, ps) for _ in range(n_user + 1)]
        self._alloc = ZoneAllocator(g.nr_zones, self._D, reserve=1)
        self._sched = GcScheduler(g.nr_zones, cfg, self._now)
        self._take_over()
        self._update_capacity()
        if self.capacity_pages <= 0:
            raise SwapFullError(
                f"the device is too small for this configuration: {self._alloc.usable()} usable zones, "
                f"{n_groups} write streams + 1 zone of GC headroom need more")
        self._lock = threading.RLock()
        self._closed = False
        self._ids = IdMap()                                 # page id -> handle
        self._loc = np.full(0, NONE, np.uint32)             # handle -> slot
        self._bufidx = np.zeros(0, np.uint8)                # handle -> write buffer + 1 (0: none)
        self._pfpos = np.zeros(0, np.int32)                 # handle -> prefetch ring slot + 1
        self._count = np.zeros(0, np.uint16)                # handle -> times swapped out
        self._lost = np.zeros(0, bool)
        self._rmap = np.zeros(g.nr_zones * self._spz, np.int64)  # slot -> handle + 1 (0: invalid)
        self._valid = np.zeros(g.nr_zones, np.int64)
        self._zone_ids: dict[int, list[np.ndarray]] = {}
        self._pf = PrefetchBuffer(cfg.prefetch_buffer_pages if cfg.prefetch else 0, ps)
        self._latency = LatencyLog()
        self._live = 0
        self._wclock = 0.0                                  # bytes the store has written
        self._victim: int | None = None
        self._vcursor = 0
        self._vdrain = False
        self._vmoved = 0
        self._vfail = 0
        self._pending = np.zeros(0, bool)                  # handle -> in a swap_out batch not yet written
        self._drain: list[int] = []
        self._lost_pending: list[np.ndarray] = []          # page ids lost, not reported yet
        self._lost_count = 0
        self._lost_total = 0
        self._clocked = hasattr(device, "now") and device.stats().clock != "none"
        self.host_write_bytes = 0
        self.host_read_bytes = 0
        self.gc_write_bytes = 0
        self._base = device.stats()

    # -- set-up ----------------------------------------------------------------------------------
    def _take_over(self) -> None:
        for z in self.device.report_zones():
            if z.cond in (ZoneCond.READ_ONLY, ZoneCond.OFFLINE):
                self._alloc.retire(z.index)
            elif z.cond != ZoneCond.EMPTY:
                self.device.reset_zone(z.index)

    @property
    def capacity_pages(self) -> int:
        """Pages the store guarantees to hold (drops when zones are retired)."""
        return self._capacity

    def _update_capacity(self) -> None:
        self._capacity = (self._alloc.usable() - self._n_groups - self._alloc.reserve) * self._D

    def _now(self) -> float:
        return float(self.device.now()) if hasattr(self.device, "now") else 0.0

    def _grow(self, handles: int) -> None:
        """Make the handle-indexed arrays hold ``handles`` entries (they double)."""
        n = self._loc.size
        if handles <= n:
            return
        new = max(handles, 2 * n, 1024)
        self._loc = np.concatenate([self._loc, np.full(new - n, NONE, np.uint32)])
        for name in ("_bufidx", "_pfpos", "_count", "_lost", "_pending"):
            a = getattr(self, name)
            setattr(self, name, np.concatenate([a, np.zeros(new - n, a.dtype)]))

    # -- public API ------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError("the swap store is closed")

    def _stream_arg(self, stream) -> int:
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
        ids = as_page_ids(page_ids)
        pages = np.asarray(pages)
        ps = self.page_size
        if pages.dtype != np.uint8 or pages.shape != (ids.size, ps):
            raise ValueError(f"pages must be uint8 of shape ({ids.size}, {ps}), not {pages.dtype} {pages.shape}")
        stream = self._stream_arg(stream)
        with self._lock:
            self._check_open()
            if ids.size == 0:
                return
            srt = np.sort(ids)
            if np.count_nonzero(srt[1:] == srt[:-1]):    # the last copy of an id wins
                rev = ids[::-1]
                _, first = np.unique(rev, return_index=True)
                keep = np.sort(ids.size - 1 - first)
                ids, pages = ids[keep], pages[keep]
            h = self._ids.lookup(ids)
            fresh = h < 0
            hk = h[~fresh]
            new = int(np.count_nonzero(fresh)) + \
                int(np.count_nonzero((self._loc[hk] == NONE) & (self._bufidx[hk] == 0)))
            if self._live > self._capacity:     # zones were retired: shed pages before writing more
                raise SwapFullError(
                    f"swap store over capacity: {self._live} pages stored, {self.capacity_pages} fit since "
                    f"zones were retired; discard pages first (nothing of this batch was stored)", ids.copy())
            if self._live + new > self._capacity:
                raise SwapFullError(
                    f"swap store full: {self._live} pages stored, {new} more do not fit in "
                    f"{self.capacity_pages}; nothing of this batch was stored", ids.copy())
            # -- commit point: from here on the batch is accepted
            if fresh.any():
                h[fresh] = self._ids.insert(ids[fresh])
                self._grow(self._ids.handles)
            b = self._bufidx[h]
            if np.count_nonzero(b):
                self._unbuffer(h)
            if self._pf.size:
                self._pf.drop(self._pfpos, h)
            if self._lost_count:
                self._lost_count -= int(self._lost[h].sum())
                self._lost[h] = False
            self._live += new
            counts = None
            if self.config.placement == "hotness":     # only hotness looks at how often a page came back
                counts = self._count[h]
                counts += counts < 65535
                self._count[h] = counts
            self.host_write_bytes += ids.size * ps
            streams = placement_mod.assign(self.config.placement, h, stream, counts,
                                           self._n_user, self.config.hot_threshold)
            error = None
            groups = [(int(streams), h, pages)] if np.isscalar(streams) else \
                [(int(s), h[streams == s], pages[streams == s]) for s in np.unique(streams)]
            # until every page of the batch is written or buffered, the batch's pages are its newest
            # copies: losing or relocating an old copy of one of them is neither a loss nor a move
            self._pending[h] = True
            try:
                for s, sh, spages in groups:
                    try:
                        self._stream_write(s, sh, spages)
                    except (DeviceIOError, SwapFullError) as e:
                        error = e
            finally:
                self._pending[h] = False
            self._after_op()
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
        ids = as_page_ids(page_ids)
        ps = self.page_size
        with self._lock:
            self._check_open()
            if ids.size == 0:
                return np.zeros((0, ps), np.uint8)
            uids, inv = np.unique(ids, return_index=False, return_inverse=True)
            uh = self._ids.lookup(uids)
            if (uh < 0).any():
                raise KeyError(int(uids[uh < 0][0]))
            b = self._bufidx[uh]
            loc = self._loc[uh]
            known = (b != 0) | (loc != NONE)
            if not known.all():
                self._raise_if_lost(uids, uh)
                raise KeyError(int(uids[~known][0]))
            t0 = self._now()
            out = np.empty((uids.size, ps), np.uint8)
            lat = np.zeros(uids.size)
            for k in np.unique(b[b != 0]):
                m = b == k
                out[m] = self._bufs[int(k) - 1].lookup(uh[m])
            mp = (b == 0) & (self._pfpos[uh] != 0)
            if mp.any():
                out[mp] = self._pf.take(self._pfpos, uh[mp])
            md = (b == 0) & ~mp
            if md.any():
                try:
                    data, done = self._read_slots(loc[md].astype(np.int64))
                except DeviceIOError:
                    self._raise_if_lost(uids, uh)
                    raise
                out[md] = data
                lat[md] = done - t0
            self._latency.add(lat[inv])
            self.host_read_bytes += ids.size * ps
            return out[inv]

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
            if not self._lost_pending:
                return np.zeros(0, np.int64)
            lost = np.unique(np.concatenate(self._lost_pending))
            self._lost_pending.clear()
            return lost

    def discard(self, page_ids) -> None:
        """Forget pages (their space becomes garbage for GC). Unknown ids are ignored."""
        ids = np.unique(as_page_ids(page_ids))
        with self._lock:
            self._check_open()
            h = self._ids.lookup(ids)
            ids, h = ids[h >= 0], h[h >= 0]
            if ids.size == 0:
                return
            stored = (self._loc[h] != NONE) | (self._bufidx[h] != 0)
            self._unbuffer(h)
            self._pf.drop(self._pfpos, h)
            self._invalidate(h)
            self._lost_count -= int(self._lost[h].sum())
            self._lost[h] = False
            self._live -= int(stored.sum())
            if self.config.placement != "hotness":       # hotness remembers how often an id came back
                self._ids.remove(ids)
                self._count[h] = 0

    def flush(self) -> None:
        """Write every buffered page now (the only way, with idle and GC tails, to get writes
        smaller than the write unit). A DeviceIOError leaves the pages not written in the buffers."""
        with self._lock:
            self._check_open()
            error = self._flush_all()
            self._after_op()
            if error is not None:
                raise error

    def _flush_all(self) -> Exception | None:
        error = None
        for k in list(range(self._n_user)) + [self._gcb]:
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
            moved = self._gc_step(max_bytes, "manual")
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
            step = self._chunk * self.page_size
            budget = math.inf if self._clocked else seconds * self.config.idle_gc_bandwidth
            moved = 0
            target = self._sched.idle_target
            while self._alloc.free_count() < target or self._victim is not None:
                if self._clocked and self._now() - t0 >= seconds:
                    break
                if moved >= budget:
                    break
                try:
                    m = self._gc_step(int(max(self.page_size, min(step, budget - moved))), "idle")
                except (DeviceIOError, SwapFullError):
                    break
                if m < 0:
                    break
                moved += max(m, self.page_size)
            left = seconds - (self._now() - t0)
            if left > 0 and hasattr(self.device, "advance"):
                self.device.advance(left)

    def stats(self) -> SwapStats:
        with self._lock:
            ds, base = self.device.stats(), self._base
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
            s.extra = {**self._alloc.counts(), **self._sched.counters(),
                       "capacity_pages": self.capacity_pages, "placement": self.config.placement,
                       "victim_policy": self.config.victim,
                       "prefetch_hits": self._pf.hits, "prefetch_pages": self._pf.inserted,
                       "prefetch_wasted_bytes": self._pf.wasted_pages * self.page_size,
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
            cap = self.device.geometry.zone_capacity // self.page_size
            g = self.device.geometry
            for z in list(self._alloc.owner.values()):
                ids = self._zone_ids.pop(z, [])
                n = sum(a.size for a in ids)
                if n and self._alloc.written[z] + footer_pages(n, self.page_size) <= cap:
                    try:
                        self._append_all(z, encode(int(self._alloc.seq[z]), np.concatenate(ids),
                                                   self.page_size, g.zone_start(z)))
                    except ZswapError:
                        pass
            self._closed = True

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
            hs = np.flatnonzero(self._loc != NONE)
            slots = self._loc[hs].astype(np.int64)
            need(np.array_equal(self._rmap[slots], hs + 1), "slot map and reverse map disagree")
            need(np.count_nonzero(self._rmap) == hs.size, "reverse map holds stale entries")
            per_zone = np.bincount(np.flatnonzero(self._rmap) // self._spz, minlength=self._valid.size)
            need(np.array_equal(per_zone, self._valid), "valid counts are off")
            need(((self._valid >= 0) & (self._valid <= self._alloc.written)).all(), "a zone holds more valid pages than written")
            buffered = np.flatnonzero(self._bufidx)
            need(sum(b.n for b in self._bufs) == buffered.size, "buffer index is off")
            need(np.union1d(hs, buffered).size == self._live, "live page count is off")
            need(not (self._lost & ((self._loc != NONE) | (self._bufidx != 0))).any(), "a page is both lost and stored")
            need(int(self._lost.sum()) == self._lost_count, "lost page count is off")
            keys, vals = self._ids.items()
            need(np.array_equal(self._ids.ids[vals], keys), "id map and handle table disagree")
            if self.config.placement != "hotness":
                held = np.zeros(self._loc.size, bool)
                held[vals] = True
                stored = (self._loc != NONE) | (self._bufidx != 0) | self._lost
                need(np.array_equal(held, stored), "id map holds ids not stored, or misses some")

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- write path ------------------------------------------------------------------------------
    def _unbuffer(self, ids: np.ndarray) -> None:
        b = self._bufidx[ids]
        if b.any():
            m = b != 0
            for k in np.unique(b[m]):
                self._bufs[int(k) - 1].remove(ids[b == k])
            self._bufidx[ids[m]] = 0

    def _buffer(self, k: int, ids: np.ndarray, pages: np.ndarray) -> None:
        self._bufs[k].add(ids, pages)
        self._bufidx[ids] = k + 1

    def _stream_write(self, k: int, ids: np.ndarray, pages: np.ndarray) -> None:
        """Small batches gather in the stream's buffer; large ones go to the device straight from
        the caller's array in writes of ``min_pages``..``chunk`` pages, the rest waits."""
        buf, chunk, i, n = self._bufs[k], self._chunk, 0, ids.size
        try:
            if buf.n + n < chunk:
                i = n
                self._buffer(k, ids, pages)
                return
            if buf.n and buf.n < self._min_pages:       # top the buffer up to one write unit
                i = chunk - buf.n
                self._buffer(k, ids[:i], pages[:i])
            self._flush_buffer(k, force=False, least=self._min_pages)
            while n - i >= self._min_pages:
                m = min(chunk, n - i)
                i += self._write(k, ids[i:i + m], pages[i:i + m], buffered=False)
        finally:
            if i < n:
                self._buffer(k, ids[i:], pages[i:])

    def _flush_buffer(self, k: int, force: bool, least: int | None = None) -> None:
        """Write buffered pages while at least ``least`` pages wait (default: a whole write unit;
        ``force``: everything)."""
        buf = self._bufs[k]
        least = 1 if force else (least or self._chunk)
        while buf.n >= least:
            m = min(buf.n, self._chunk)
            w = self._write(k, buf.ids[:m].copy(), buf.data[:m])
            buf.drop_front(w)

    def _write(self, k: int, ids: np.ndarray, data: np.ndarray, buffered: bool = True) -> int:
        """Append up to len(ids) pages into stream k's zone; returns how many were written."""
        group, for_gc = self._group[k], k == self._gcb
        error: DeviceIOError | None = None
        failed_once = None
        for _ in range(self.config.write_retries + 1):
            z = self._zone_for(group, for_gc)
            owner = self._owner_of(z, group)
            n = min(ids.size, self._D - int(self._alloc.written[z]))
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
            self._commit(ids[:n], z, off, gc=for_gc, buffered=buffered)
            if self._alloc.written[z] == self._D:
                self._seal(owner, z)
            return n
        raise error

    def _owner_of(self, z: int, group: int) -> int:
        """The write group whose open zone z is (GC may borrow a user stream's zone)."""
        if self._alloc.owner.get(group) == z:
            return group
        return next((g for g, oz in self._alloc.owner.items() if oz == z), group)

    def _zone_for(self, group: int, for_gc: bool) -> int:
        while True:
            z = self._alloc.current(group)
            if z is not None:
                return z
            if self._alloc.can_take(for_gc):
                return self._alloc.take(group, self._wclock)
            if self._reclaim_empty():
                continue
            if for_gc:
                # no free zone (a write failure cost GC its zone mid-victim): borrow the open zone
                # of a user stream rather than stop
                for g, oz in self._alloc.owner.items():
                    if g != group and self._alloc.written[oz] < self._D:
                        return oz
                raise SwapFullError("no free zone left for GC relocation")
            if not self._foreground_gc():
                raise SwapFullError("no free zone and GC cannot reclaim one")

    def _commit(self, ids: np.ndarray, z: int, off: int, gc: bool, buffered: bool = True) -> None:
        """The new copies are on the device: move the map entries, invalidate the old copies."""
        n, ps = ids.size, self.page_size
        first = off // ps
        written = int(self._alloc.written[z])
        if first != z * self._spz + written:
            for group, oz in list(self._alloc.owner.items()):
                if oz == z:
                    self._alloc.close_group(group)
            self._zone_ids.pop(z, None)
            raise StoreInvariantError(f"zone {z}: the device wrote at slot {first - z * self._spz}, "
                                      f"the store expected +{written}; the zone is abandoned")
        self._invalidate(ids)
        self._pending[ids] = False
        self._loc[ids] = np.arange(first, first + n, dtype=np.int64)
        self._rmap[first:first + n] = ids + 1
        self._valid[z] += n
        if buffered:
            self._bufidx[ids] = 0
        self._alloc.written[z] = written + n
        self._wclock += n * ps
        self._alloc.last_write[z] = self._wclock
        self._zone_ids.setdefault(z, []).append(self._ids.ids[ids])
        if gc:
            self.gc_write_bytes += n * ps

    def _invalidate(self, ids: np.ndarray) -> None:
        old = self._loc[ids]
        has = old != NONE
        if np.count_nonzero(has):
            o = old[has].astype(np.int64)
            self._rmap[o] = 0
            self._valid -= np.bincount(o // self._spz, minlength=self._valid.size)
            self._loc[ids[has]] = NONE

    def _append_all(self, z: int, buf: np.ndarray) -> None:
        step = self.device.geometry.max_append or buf.size
        for i in range(0, buf.size, step):
            self.device.append(z, buf[i:i + step])

    def _seal(self, group: int, z: int) -> None:
        """The zone's data area is full: write its summary footer, ending at zone capacity."""
        ids = np.concatenate(self._zone_ids.pop(z, [np.zeros(0, np.int64)]))
        foot = encode(int(self._alloc.seq[z]), ids, self.page_size, self.device.geometry.zone_start(z))
        tail = self.device.geometry.zone_capacity - self._D * self.page_size
        buf = np.zeros(tail, np.uint8)
        buf[tail - foot.size:] = foot
        self._alloc.close_group(group)
        try:
            self._append_all(z, buf)
        except DeviceIOError:
            self._zone_trouble(z)

    def _write_failed(self, group: int, z: int) -> None:
        """A write into z failed: give up on z and look at why. A zone the store had not written yet
        goes back to the free list (reset); one holding data is finished and left to GC."""
        self._alloc.close_group(group)
        self._zone_ids.pop(z, None)
        if self._zone_trouble(z):
            return
        try:
            if self._alloc.written[z] == 0 and self._valid[z] == 0:
                self.device.reset_zone(z)
                self._alloc.freed(z)
            else:
                self.device.finish_zone(z)
        except ZswapError:
            self._zone_trouble(z)

    def _reclaim_empty(self) -> bool:
        """Reset full zones that hold no valid page (abandoned after a failed write, or emptied by
        overwrites): free zones without relocating anything. True if one was freed."""
        a = self._alloc
        empty = np.flatnonzero((a.state == FULL) & (self._valid == 0))
        done = False
        for z in empty.tolist():
            try:
                self.device.reset_zone(z)
            except ZswapError:
                self._zone_trouble(z)
                continue
            if self._victim == z:                         # a victim emptied by GC writes or overwrites
                self._victim = None
                nbytes = int(a.written[z]) * self.page_size - self._vmoved
            else:
                nbytes = int(a.written[z]) * self.page_size
            self._zone_ids.pop(z, None)
            a.freed(z)
            self._sched.reclaimed("foreground", nbytes)
            done = True
        return done

    def _zone_trouble(self, z: int) -> bool:
        """Retire z if the device says it went read-only (drain it) or offline (its pages are lost)."""
        cond = self.device.report_zones()[z].cond
        if cond == ZoneCond.READ_ONLY:
            if self._alloc.state[z] != RETIRED:          # queued for draining once, not per failure
                self._alloc.retire(z)
                self._update_capacity()
                self._drain.append(z)
            return True
        if cond == ZoneCond.OFFLINE:
            if self._alloc.state[z] != RETIRED:
                self._alloc.retire(z)
                self._update_capacity()
            if z in self._drain:
                self._drain.remove(z)
            self._lose_zone(z)
            return True
        return False

    def _lose_zone(self, z: int) -> None:
        s0 = z * self._spz
        r = self._rmap[s0:s0 + self._spz]
        gone = r[r != 0] - 1
        self._loc[gone] = NONE
        # a page whose newer copy waits in a write buffer (a swap-out, or GC that already read it)
        # is not lost: only the old copy was there
        keep = (self._bufidx[gone] != 0) | self._pending[gone]   # a newer copy is on its way
        lost = gone[~keep]
        if lost.size:
            self._lost[lost] = True
            self._lost_count += lost.size
            self._lost_total += lost.size
            self._live -= lost.size
            self._lost_pending.append(self._ids.ids[lost].copy())
            if self._pf.size:
                self._pf.drop(self._pfpos, lost)
        r[:] = 0
        self._valid[z] = 0
        self._zone_ids.pop(z, None)
        if self._victim == z:
            self._victim = None

    # -- read path -------------------------------------------------------------------------------
    def _read_slots(self, slots: np.ndarray, prefetch: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Rows for distinct slots, and each one's completion time. Adjacent slots become one read;
        with prefetch (demand reads only: GC reads may see copies a write in flight is replacing)
        each read covers the aligned write unit around it, and what it brings beyond the request
        waits in the prefetch buffer."""
        cfg, ps = self.config, self.page_size
        zone = slots // self._spz
        limit = zone * self._spz + self._alloc.written[zone]
        window = cfg.prefetch_bytes // ps if cfg.prefetch and prefetch else 0
        plan = plan_reads(slots, zone * self._spz, limit, window, cfg.max_read_bytes // ps)
        try:
            data, done = self.device.read_batch(plan.starts * ps, plan.lengths * ps, cfg.read_qd)
        except DeviceIOError:
            for z in np.unique(zone).tolist():
                self._zone_trouble(z)
            raise
        rows = data.reshape(-1, ps)
        out = rows[plan.row_of_request]
        if window and plan.extra_rows.size:
            ids = self._rmap[plan.extra_slots] - 1
            ok = ids >= 0
            ok[ok] &= (self._bufidx[ids[ok]] == 0) & (self._pfpos[ids[ok]] == 0)
            self._pf.insert(self._pfpos, ids[ok], rows[plan.extra_rows[ok]])
        return out, done[plan.request_of_slot]

    # -- GC --------------------------------------------------------------------------------------
    def _zone_table(self) -> ZoneTable:
        a = self._alloc
        cand = np.flatnonzero(a.state == FULL)
        if self._victim is not None:
            cand = cand[cand != self._victim]
        ps = self.page_size
        return ZoneTable(zone=cand, valid_bytes=self._valid[cand] * ps,
                         capacity_bytes=np.full(cand.size, self._D * ps, np.int64),
                         last_write=a.last_write[cand], opened_at=a.opened_at[cand],
                         resets=a.resets[cand], now=self._wclock)

    def _pick_victim(self) -> bool:
        self._vfail = 0
        # draining a read-only zone frees no zone: start one only with a free zone to spare, so
        # GC relocations can never be left without a zone
        if self._drain and self._alloc.free_count() >= 2:
            self._victim, self._vcursor, self._vdrain, self._vmoved = self._drain.pop(0), 0, True, 0
            return True
        table = self._zone_table()
        if not len(table):
            return False
        v = self._policy(table)
        if v is None:
            return False
        # resetting a full zone frees all its data slots; relocating costs its valid pages. A zone
        # abandoned after a failed write (few or no pages written) is the cheapest of all.
        if self._valid[v] >= self._D:                      # nothing to gain there: take the best zone instead
            v = greedy(table)
            if self._valid[v] >= self._D:
                return False
        self._victim, self._vcursor, self._vdrain, self._vmoved = int(v), 0, False, 0
        return True

    def _gc_step(self, max_bytes: int | None, why: str) -> int:
        """Relocate up to max_bytes of the victim's valid pages; reset it when empty.
        Returns bytes relocated, or -1 when there is nothing to reclaim."""
        if self._victim is None and not self._pick_victim():
            return -1
        t0 = self._now()
        v, ps = self._victim, self.page_size
        s0 = v * self._spz
        end = int(self._alloc.written[v])
        start = self._vcursor
        pos = np.flatnonzero(self._rmap[s0 + start:s0 + end])
        if max_bytes is not None and pos.size > max(1, max_bytes // ps):
            pos = pos[:max(1, max_bytes // ps)]
            self._vcursor = start + int(pos[-1]) + 1
        else:
            self._vcursor = end
        moved = self._relocate(s0 + start + pos) if pos.size else 0
        if moved < 0:
            self._vcursor = start
            return 0 if self._victim is not None or self._vfail < 3 else -1
        self._vmoved += moved
        # (below: a GC write that needed a zone may have reset the victim once it held nothing
        # valid, _reclaim_empty; then it is done and must not be reset again)
        if self._vcursor >= end and self._victim == v:
            self._flush_buffer(self._gcb, force=True)
            # pages behind the cursor whose GC copy a newer swap-out replaced in the meantime
            rest = s0 + np.flatnonzero(self._rmap[s0:s0 + end]) if self._victim == v else np.zeros(0, np.int64)
            if rest.size:
                if self._relocate(rest) < 0:
                    return 0
                self._flush_buffer(self._gcb, force=True)
        if self._vcursor >= end and self._victim == v:
            if self._valid[v] != 0:                       # never reset a zone that holds data
                self._victim = None
                raise StoreInvariantError(f"zone {v} still holds {int(self._valid[v])} valid pages after GC; "
                                          f"not resetting it")
            if not self._vdrain:
                try:
                    self.device.reset_zone(v)
                    self._alloc.freed(v)
                except ZswapError:
                    if not self._zone_trouble(v):
                        raise
            self._sched.reclaimed(why, 0 if self._vdrain else end * ps - self._vmoved)
            self._victim = None
        self._sched.relocated(moved, self._now() - t0)
        return moved

    def _relocate(self, slots: np.ndarray) -> int:
        """Copy the pages in these victim slots into the GC stream; a page with a newer copy waiting
        in a write buffer is just invalidated. Returns bytes queued, -1 if the zone failed."""
        ids = self._rmap[slots] - 1
        newer = (self._bufidx[ids] != 0) | self._pending[ids]   # pending: a swap_out is writing it now
        if newer.any():
            self._invalidate(ids[newer])
            ids, slots = ids[~newer], slots[~newer]
        if ids.size == 0:
            return 0
        try:
            data, _ = self._read_slots(slots, prefetch=False)
        except DeviceIOError:
            # keep the victim (its pages already in the GC buffer belong to it): a later step
            # resumes it; after three failures in a row it is given up
            self._vfail += 1
            if self._vfail >= 3:
                self._victim = None
            return -1
        self._vfail = 0
        self._buffer(self._gcb, ids, data)
        self._flush_buffer(self._gcb, force=False)
        return ids.size * self.page_size

    def _foreground_gc(self) -> bool:
        """Reclaim until a user stream may take a zone; False when GC can do nothing more."""
        self._sched.foreground_runs += 1
        while not self._alloc.can_take(False):
            if self._gc_step(None, "foreground") < 0:
                return False
        return True

    def _after_op(self) -> None:
        """Drain read-only zones and run background GC. Best effort: the caller's operation is
        complete, so a device error here only stops GC until the next operation."""
        try:
            while self._drain or (self._victim is not None and self._vdrain):
                if not (self._victim is not None and self._vdrain) and self._alloc.free_count() < 2:
                    break                                  # later, once GC has made room
                if self._gc_step(None, "drain") < 0:
                    break
            if self._alloc.free_count() < self._sched.low:
                budget = self._sched.background_budget()
                while budget > 0 and (self._alloc.free_count() < self._sched.high or self._victim is not None):
                    moved = self._gc_step(int(min(budget, self._chunk * self.page_size)), "background")
                    if moved < 0:
                        break
                    budget -= max(moved, self.page_size)
                    self._sched.charge(max(moved, self.page_size))
        except (DeviceIOError, SwapFullError):
            pass
