"""Zones over an Open-Channel SSD 2.0: the host-side FTL duty pblk did, presented as ZNS zones so the
same ``SwapStore`` runs on the chunk interface.

- A zone is a stripe of ``width`` chunks, one per parallel unit (PU) of a PU set; consecutive
  stripe units (``ws_opt`` sectors; ``ws_min`` when ``ws_opt`` does not divide a chunk) of the zone
  go round-robin over its chunks (RAID-0), so one large append keeps ``width`` dies busy.
  ``layout="stripe"``: one set, every PU; ``layout="isolate"``: one set per group (its PUs), and
  ``place_zone`` puts user streams and GC on different sets.
- Chunks are bound to a zone when it is opened (its first write): per PU, the FREE chunk with the
  lowest wear; a zone reset resets those chunks (one vectored reset) and unbinds them. Which chunks
  are free, their wear and where a zone opens are the view's ``ChunkPool`` (``chunk_pool.py``).
- The device takes a multiple of ``ws_min`` sectors per chunk per write and cannot read the last
  ``mw_cunits`` sectors of an open chunk: per open zone the view keeps each chunk's last
  ``ws_min + mw_cunits`` sectors in host memory, commits whole ``ws_min`` runs as they complete,
  and serves the not-yet-readable sectors from that copy (the reads: ``StripeReader``,
  ``ocssd_read.py``). Finishing (or resetting) a partly written zone pads its chunks with zeros to
  their end so they close.
- A chunk whose reset fails goes OFFLINE on the device and is never bound again; the zone goes
  OFFLINE (``DeviceIOError``) when the chunks left cannot back every zone, as it does when a write
  or read meets an OFFLINE chunk, or when a zone cannot find a free chunk on every PU at open.
"""

from __future__ import annotations

import numpy as np

from .._native import ffi, lib           # the commit (native/ocssd_stripe.c)
from ..errors import DeviceIOError, DeviceSpecError
from .base import DeviceStats
from .chunk import SECTOR, ChunkState
from .chunk_pool import ChunkPool, ranges
from .emulated import EmulatedZonedDevice
from .fingerprint import first_words
from .ocssd_read import StripeReader
from .units import UnitTraits
from .zone import ZoneCond, ZoneGeometry


def per_chunk(n: int, width: int, unit: int) -> np.ndarray:
    """Sectors each chunk slot holds once the zone holds its first ``n`` sectors."""
    full, rem = divmod(int(n), width * unit)
    return full * unit + np.clip(rem - np.arange(width, dtype=np.int64) * unit, 0, unit)


class OcssdZonedView(EmulatedZonedDevice):
    """ZNS rules (the emulated device's state machine) over ``ocssd``'s chunks (an
    ``OpenChannelDevice``). Zone capacity = ``width`` chunks, zone size the same or ``zone_size``
    (larger: an address gap after each zone, as ZNS drives have); one zone per ``width`` chunks;
    ``max_append`` (None: 512 KiB or one full stripe row, whichever is larger)
    (``nr_zones * width`` = all chunks, so an opening zone finds a free chunk on every PU while no
    chunk is offline). Zone state and the zone -> chunks map live in memory: at construction the
    view takes the device over (open chunks padded, written ones reset).

    Errors: ``DeviceSpecError`` for an unknown layout or a zone size below the capacity; at run time
    the ZNS errors of ``EmulatedZonedDevice``, and ``DeviceIOError`` (the zone then OFFLINE) when
    the device fails a chunk as described in the module docstring."""

    kind = "ocssd-view"
    interface = "ocssd"
    _commit_p = None           # (dwp, chunk) pointers for the C commit, made at first use

    @property
    def word_reads(self) -> bool:
        """Whether ``read_batch(..., words=True)`` works: the Open-Channel device's ``read_timed``
        takes ``words``."""
        return bool(getattr(self.ocssd, "word_reads", False))

    def __init__(self, ocssd, layout: str = "stripe", zone_size: int | None = None, max_open: int = 14,
                 max_active: int = 14, max_append: int | None = None) -> None:
        g = ocssd.geometry
        self.ocssd = ocssd
        self.layout = layout
        self._chunks = chunks = ChunkPool(ocssd, layout)        # the chunks zones are bound to
        self.width = width = chunks.sets.shape[1]
        self.unit = g.ws_opt if g.sectors % g.ws_opt == 0 else g.ws_min   # stripe unit, in sectors
        nr = chunks.nr_zones
        cap = width * g.chunk_bytes
        if zone_size is None:
            zone_size = cap
        elif zone_size < cap or zone_size % SECTOR:
            raise DeviceSpecError(f"zone size {zone_size} is not a multiple of {SECTOR} of at least the "
                                  f"{cap} bytes of {width} chunks")
        if max_append is None:          # a full stripe row at least: one append can reach every PU
            max_append = min(cap, max(512 << 10, width * self.unit * SECTOR))
        geometry = ZoneGeometry(nr_zones=nr, zone_size=zone_size, zone_capacity=cap, block_size=SECTOR,
                                max_open=max_open, max_active=max_active, max_append=max_append)
        super().__init__(geometry, path=None, model=None, preset=ocssd.describe().get("preset"),
                         url=f"ocssd-view:{ocssd.url}")
        self._backing.close()          # the Open-Channel device holds the data
        self.payload = bool(getattr(ocssd, "payload", True))    # the Open-Channel device's medium
        self._zs = zone_size // SECTOR                       # sectors per zone (capacity: width chunks)
        self._ring = g.ws_min + g.mw_cunits                  # host copy per chunk, in sectors
        self._chunk = np.full((nr, width), -1, np.int64)     # zone -> chunk per slot (-1: unbound)
        self._dwp = np.zeros((nr, width), np.int64)          # sectors committed per slot
        self._hw = np.zeros(nr, np.int64)                    # zone sectors written (host view)
        self._tail: dict[int, np.ndarray] = {}               # zone -> (width, ring, *_row) host copy
        self._online: dict[int, int] = {}                    # zone -> device retirements when its chunks were all online
        # a payload-free device keeps a sector's first word only: the view then moves words, not
        # sectors (its rows are uint64; ``write_vectors(..., words=True)``)
        self._narrow = getattr(ocssd, "payload", True) is False and getattr(ocssd, "word_reads", False) \
            and hasattr(ocssd, "write_vectors")
        self._row, self._row_dtype = ((), np.uint64) if self._narrow else ((SECTOR,), np.uint8)
        self._reader = StripeReader(ocssd, self._zs, width, self.unit, self._ring, self._narrow, self._chunk,
                                    self._dwp, self._hw, self._tail, chunks.owner, self._lose_broken)
        chunks.take_over()
        chunks.rescore()

    @property
    def retired_chunks(self) -> int:
        """Chunks the device took OFFLINE on a failed reset (never bound again)."""
        return self._chunks.retired

    # -- chunks ------------------------------------------------------------------------------------
    def _bind(self, z: int) -> None:
        """Open zone z on chunks: its preferred PU set first (``ChunkPool.set_order``)."""
        for s in self._chunks.set_order(z):
            chunks = self._chunks.pick(s)
            if chunks is not None:
                self._chunk[z] = chunks
                self._online.pop(z, None)
                self._chunks.claim(z, chunks)
                self._dwp[z] = 0
                self._tail[z] = np.zeros((self.width, self._ring, *self._row), self._row_dtype)
                return
        self._lose(z)
        raise DeviceIOError(f"zone {z}: no free chunk left on some parallel unit; the zone is offline",
                            offset=self.geometry.zone_start(z))

    def _unbind(self, z: int) -> None:
        chunks = self._chunk[z]
        self._chunks.release(chunks)
        self._chunk[z] = -1
        self._online.pop(z, None)
        self._dwp[z] = 0
        self._hw[z] = 0
        self._tail.pop(z, None)

    def _lose(self, z: int) -> None:
        """Zone z goes OFFLINE (its chunks stay bound: open ones cannot be reset)."""
        self._zones.set(z, ZoneCond.OFFLINE)
        self._tail.pop(z, None)

    def zone_chunks(self, z: int) -> list[int]:
        """The chunks (linear indices, one per slot) zone ``z`` is bound to; [] when unbound."""
        c = self._chunk[self._zone_index(z)]
        return c.tolist() if c[0] >= 0 else []

    def unit_traits(self) -> UnitTraits:
        """Stripes of chunks: the device itself keeps each chunk's write pointer, only the host
        collects, and a unit's reset resets its chunks."""
        return UnitTraits.of(self.geometry, "ocssd", "chunk stripe", sequential_only=True, collector="host",
                             reset="chunk reset")

    def place_zone(self, z: int, stream: int, gc: bool) -> None:
        """Say who writes zone ``z`` from now on (the store calls this when it opens a zone). With
        ``layout="isolate"`` the zone's chunks then come from a PU set of that writer: GC's
        relocations the last set, user stream ``s`` set ``s % (sets - 1)`` (another set when that
        one has no free chunk on every PU). With one set (``stripe``) only recorded."""
        with self._lock:
            self._chunks.place(self._zone_index(z), stream, gc)

    # -- the medium --------------------------------------------------------------------------------
    def _write_chunks(self, z: int, slots: np.ndarray, secs: np.ndarray, data: np.ndarray) -> None:
        """One vectored device write of (slot, sector) pairs, per chunk in sector order."""
        if slots.size == 0:
            return
        order = np.lexsort((secs, slots))
        ppas = self._chunk[z, slots[order]] * self.ocssd.geometry.sectors + secs[order]
        self._write_vector(z, ppas, data[order], None)

    def _write_vector(self, z: int, ppas: np.ndarray, data: np.ndarray, counts: np.ndarray | None) -> None:
        """The device write(s) of zone ``z``'s ordered sectors: one, or ``counts`` one after another;
        a device failure takes the zone offline."""
        try:
            if self._narrow:
                self.ocssd.write_vectors(ppas, data, counts, words=True)
            elif counts is None:
                self.ocssd.write(ppas, np.ascontiguousarray(data))
            else:                               # only a device with write_vectors gets runs (_deferrable)
                self.ocssd.write_vectors(ppas, data, counts)
        except DeviceIOError:
            self._lose(z)
            raise

    def _rows(self, view: np.ndarray) -> np.ndarray:
        """An append's sectors as the view's rows (each sector's first word when narrow)."""
        rows = view.reshape(-1, SECTOR)
        return first_words(rows) if self._narrow else rows

    def _media_write(self, start: int, view: np.ndarray) -> None:
        z, r0 = divmod(start // SECTOR, self._zs)
        self._commit(z, r0, self._rows(view))

    def _deferrable(self, z: int) -> bool:
        """Whether an append to zone ``z`` may wait to go down with the ones after it
        (``_media_write_units``): the device writes several vectors in one call (``write_vectors``),
        the zone is bound, the device writable and none of the zone's chunks offline, so its write
        cannot fail."""
        c = self._chunk[z]
        if not (c[0] >= 0 and hasattr(self.ocssd, "write_vectors") and not getattr(self.ocssd, "readonly", False)):
            return False
        # the chunk log is read once per zone binding while the device retires no chunk (its
        # ``retirements`` count, when it keeps one): a log read per append cost more than the commit
        seen = getattr(self.ocssd, "retirements", None)
        if seen is not None and self._online.get(z) == seen:
            return True
        if (self._chunks.states(c)[0] == ChunkState.OFFLINE).any():
            return False
        if seen is not None:
            self._online[z] = seen
        return True

    def _media_write_units(self, units: list) -> None:
        """Appends (start, view) in order; each run of them back to back in one zone is committed
        at once (``_commit`` of the run, a device write per append: the same state and time)."""
        i = 0
        while i < len(units):
            z, r0 = divmod(units[i][0] // SECTOR, self._zs)
            j, end = i + 1, r0 + units[i][1].size // SECTOR
            while j < len(units) and units[j][0] // SECTOR == z * self._zs + end:
                end += units[j][1].size // SECTOR
                j += 1
            views = [self._rows(v) for _, v in units[i:j]]
            self._commit(z, r0, views[0] if j == i + 1 else np.concatenate(views),
                         [v.shape[0] for v in views] if j > i + 1 else None)
            i = j
        units.clear()

    def _commit(self, z: int, r0: int, rows: np.ndarray, appends: list | None = None) -> None:
        """Zone ``z`` gets ``rows`` (sectors, or their words when narrow) from zone sector ``r0``:
        each chunk's whole ``ws_min`` runs go to the device (the held tail first), its last ``ring``
        sectors stay in host memory until readable. ``appends``: the rows are that many appends
        back to back (sectors each), written as one device write each, as appending them one by one
        would. The plan and the gathers are C's (``native/ocssd_stripe.c``; its numpy oracle is
        ``tests/support/ocssd_oracle.py``)."""
        g = self.ocssd.geometry
        if self._chunk[z, 0] < 0:
            self._bind(z)
        fb = ffi.from_buffer
        n, width, ring = rows.shape[0], self.width, self._ring
        if self._commit_p is None:              # the per-zone arrays are updated in place, never replaced
            self._commit_p = (ffi.cast("int64_t *", fb("int64_t[]", self._dwp)),
                              ffi.cast("int64_t *", fb("int64_t[]", self._chunk)))
        dwp_p, chunk_p = self._commit_p
        rows = np.ascontiguousarray(rows)
        rows_p, tail_p = fb("uint8_t[]", rows), fb("uint8_t[]", self._tail[z], require_writable=True)
        elem = 8 if self._narrow else SECTOR
        cap = n + width * ring                  # the new rows and every held one at most
        k = 0 if appends is None else len(appends)
        ints = np.empty(cap + max(k, 1) + width, np.int64)      # ppas, sectors per write, new dwp
        ints_p = ffi.cast("int64_t *", fb("int64_t[]", ints, require_writable=True))
        data = np.empty((cap, *self._row), self._row_dtype)
        t = lib.ocs_commit_plan(width, self.unit, g.ws_min, ring, g.sectors, elem, r0, n,
                                ffi.NULL if appends is None else fb("int64_t[]", np.asarray(appends, np.int64)), k,
                                dwp_p + z * width, chunk_p + z * width, rows_p, tail_p, cap, ints_p,
                                fb("uint8_t[]", data, require_writable=True), ints_p + cap, ints_p + ints.size - width)
        if t < 0:                               # never for a state this view makes (ocssd_stripe.h)
            raise RuntimeError(f"zone {z}: the stripe commit refused appends {appends} of {n} sectors at "
                               f"sector {r0} (ocs_commit_plan returned {t})")
        if t:
            self._write_vector(z, ints[:t], data[:t], None if appends is None else ints[cap:cap + k])
        lib.ocs_commit_keep(width, self.unit, ring, elem, r0, n, rows_p, tail_p)
        c_new = ints[ints.size - width:]
        self._dwp[z] = c_new
        self._hw[z] = r0 + n
        if (c_new == g.sectors).all():
            self._tail.pop(z, None)                     # every chunk closed: all readable

    def _pad(self, z: int) -> None:
        """Write every open chunk of zone z to its end (held tail, then zeros) so it closes."""
        g = self.ocssd.geometry
        if self._chunk[z, 0] < 0:
            return
        h = per_chunk(self._hw[z], self.width, self.unit)
        d = self._dwp[z]
        todo = (d > 0) | (h > 0)
        todo &= d < g.sectors
        if not todo.any():
            return
        slots = np.repeat(np.arange(self.width, dtype=np.int64)[todo], (g.sectors - d)[todo])
        secs = ranges(d[todo], (g.sectors - d)[todo])
        data = np.zeros((secs.size, *self._row), self._row_dtype)
        held = secs < h[slots]
        data[held] = self._tail[z][slots[held], secs[held] % self._ring]
        self._write_chunks(z, slots, secs, data)
        self._dwp[z] = np.where(todo, g.sectors, d)
        self._tail.pop(z, None)

    def _media_finish(self, z: int) -> None:
        self._pad(z)

    def _media_reset(self, z: int, written: int) -> None:
        if self._chunk[z, 0] < 0:
            return
        self._pad(z)
        chunks = self._chunk[z].copy()
        dirty = chunks[self._dwp[z] > 0]
        self._unbind(z)
        try:
            if dirty.size:
                self.ocssd.reset(dirty)
        except DeviceIOError as e:
            # the failed chunks are OFFLINE on the device, so never bound again
            self._chunks.retired += int((self._chunks.states(dirty)[0] == ChunkState.OFFLINE).sum())
            if not self._chunks.backable(self._cond != ZoneCond.OFFLINE):
                self._lose(z)
                raise DeviceIOError(f"zone {z}: {e}; too few chunks left to back it, the zone is offline",
                                    offset=self.geometry.zone_start(z)) from None
        finally:
            self._chunks.rescore(chunks)     # free again (wear + 1 where reset), or offline

    def _media_read(self, offset: int, length: int) -> np.ndarray:
        return self._media_read_batch(np.array([offset], np.int64), np.array([length], np.int64), 1)[0]

    def _media_read_batch(self, offsets: np.ndarray, lengths: np.ndarray, qd: int,
                          words: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``StripeReader.read_batch`` (``ocssd_read.py``); ``read_batch`` checked the ranges."""
        return self._reader.read_batch(offsets, lengths, qd, words)

    def _lose_broken(self, zones: np.ndarray) -> None:
        """Zones with an OFFLINE chunk go OFFLINE."""
        for z in zones.tolist():
            state, _ = self._chunks.states(self._chunk[z][self._chunk[z] >= 0])
            if (state == ChunkState.OFFLINE).any():
                self._lose(z)

    # -- the device's own --------------------------------------------------------------------------
    def now(self) -> float:
        """The Open-Channel device's clock."""
        return self.ocssd.now()

    def advance(self, seconds: float) -> None:
        self.ocssd.advance(seconds)

    def stats(self) -> DeviceStats:
        """The device's clock, media writes (padding included) and erases; requests as the host
        made them (appends and reads of zones, not the chunk vectors)."""
        with self._lock:
            return self._io.fill(self.ocssd.stats())

    def erase_counts(self) -> np.ndarray | None:
        """The Open-Channel device's wear (erases per chunk), None if it has no timing model."""
        fn = getattr(self.ocssd, "erase_counts", None)
        return fn() if fn is not None else None

    def describe(self) -> dict:
        d = super().describe()
        d.update(kind=self.kind, clock=self.ocssd.stats().clock, layout=self.layout, width=self.width,
                 stripe_unit_sectors=self.unit, bound_zones=int((self._chunk[:, 0] >= 0).sum()),
                 retired_chunks=self.retired_chunks, zone_writers=dict(self._chunks.writer), ocssd=self.ocssd.describe())
        return d

    def flush(self) -> None:
        self.ocssd.flush()

    def close(self) -> None:
        self.ocssd.close()


def ocssd_units(device, zone_size, zone_capacity, **options) -> OcssdZonedView:
    """The ``ocssd`` interface's placement units (``devices/units.py``): chunk stripes, whose size
    is the chunks', not the caller's (``zone_size`` / ``zone_capacity`` are ignored)."""
    return OcssdZonedView(device, **options)
