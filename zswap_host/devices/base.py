"""The device protocols every backend implements (zoned, conventional block, Open-Channel), and the
statistics they report.

``read`` returns a ``numpy.ndarray`` of ``uint8`` (the store works on numpy page batches);
``write``/``append`` take any buffer (bytes, bytearray, memoryview, numpy array).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Protocol, Sequence, runtime_checkable

import numpy as np

from ..errors import DeviceIOError, InvalidIOError, ZoneStateError
from .chunk import ChunkInfo, OcssdGeometry
from .units import UnitTraits
from .zone import Zone, ZoneGeometry

Buffer = bytes | bytearray | memoryview | np.ndarray


@dataclass
class DeviceStats:
    """What a device saw. ``clock`` says which clock ``device_time_s`` uses: ``"modeled"`` (the SSD
    timing model of an emulated device), ``"wall"`` (real I/O) or ``"none"`` (timing model off)."""

    clock: str
    device_time_s: float = 0.0
    device_write_bytes: int = 0
    device_read_bytes: int = 0
    discard_bytes: int = 0
    media_write_bytes: int = 0
    gc_write_bytes: int = 0
    erase_count: int = 0
    write_size_histogram: dict[int, int] = field(default_factory=dict)
    read_size_histogram: dict[int, int] = field(default_factory=dict)

    @property
    def write_amplification(self) -> float:
        """Media writes over writes the device received (1.0 when nothing was written)."""
        return self.media_write_bytes / self.device_write_bytes if self.device_write_bytes else 1.0

    def as_dict(self) -> dict:
        return {
            "clock": self.clock, "device_time_s": self.device_time_s,
            "device_write_bytes": self.device_write_bytes, "device_read_bytes": self.device_read_bytes,
            "discard_bytes": self.discard_bytes, "media_write_bytes": self.media_write_bytes,
            "gc_write_bytes": self.gc_write_bytes, "erase_count": self.erase_count,
            "write_amplification": self.write_amplification,
            "write_size_histogram": dict(sorted(self.write_size_histogram.items())),
            "read_size_histogram": dict(sorted(self.read_size_histogram.items())),
        }


class IoCounters:
    """Request counting shared by the backends: bytes and a request-size histogram per direction.
    Batches of sizes are counted into the histograms when they are looked at (or every 256
    batches): a histogram per batch would cost a sort each."""

    _PENDING = 256

    def __init__(self) -> None:
        self.write_bytes = 0
        self.read_bytes = 0
        self.discard_bytes = 0
        self._write_hist: Counter[int] = Counter()
        self._read_hist: Counter[int] = Counter()
        self._pending: tuple[list, list] = ([], [])       # (write, read) size batches not counted yet

    @property
    def write_hist(self) -> Counter:
        if self._pending[0]:
            self._count(0)
        return self._write_hist

    @property
    def read_hist(self) -> Counter:
        if self._pending[1]:
            self._count(1)
        return self._read_hist

    def _count(self, k: int) -> None:
        batches = self._pending[k]
        _count(self._read_hist if k else self._write_hist, np.concatenate(batches))
        batches.clear()

    def wrote(self, n: int) -> None:
        self.write_bytes += n
        self._write_hist[n] += 1

    def read(self, n: int) -> None:
        self.read_bytes += n
        self._read_hist[n] += 1

    def wrote_many(self, lengths: np.ndarray) -> None:
        self.write_bytes += int(lengths.sum())
        self._later(0, lengths)

    def read_many(self, lengths: np.ndarray) -> None:
        self.read_bytes += int(lengths.sum())
        self._later(1, lengths)

    def _later(self, k: int, lengths: np.ndarray) -> None:
        p = self._pending[k]
        p.append(np.array(lengths, np.int64, copy=True).reshape(-1))    # the caller may reuse its array
        if len(p) >= self._PENDING:
            self._count(k)

    def fill(self, stats: DeviceStats) -> DeviceStats:
        stats.device_write_bytes = self.write_bytes
        stats.device_read_bytes = self.read_bytes
        stats.discard_bytes = self.discard_bytes
        stats.write_size_histogram = dict(self.write_hist)
        stats.read_size_histogram = dict(self.read_hist)
        return stats


def _plain(a: np.ndarray) -> bool:
    """A flat contiguous int64 array: what the models' C functions read in place."""
    return a.dtype == np.int64 and a.ndim == 1 and a.flags.c_contiguous


class ModelClock:
    """What the emulated devices share: charging requests to the SSD model (``self.model``,
    None = timing off) and its clock."""

    model = None

    # ``handles``: FDP placement handles (an FdpSSD model only); None leaves them out of the call
    def _charge(self, op: int, offset: int, length: int, handles=None) -> None:
        if self.model is not None:
            self._charge_batch(op, np.array([offset], np.int64), np.array([length], np.int64), 1, handles)

    # the requests are the device's own, checked (aligned, inside it): a byte-addressed model whose
    # units the device's blocks are made of, as large as the device, takes them without checking
    # them again (``charge``); any other through ``submit``
    def _model_takes_checked(self) -> bool:
        ok = self.__dict__.get("_checked_ok")
        if ok is None:
            m = self.model
            g = getattr(self, "geometry", None)
            block, size = (g.block_size, g.size) if g is not None else (getattr(self, "block_size", 0),
                                                                        getattr(self, "size", 1 << 62))
            ok = self._checked_ok = getattr(m, "charge", None) is not None and block > 0 \
                and block % m.UNIT == 0 and size <= m.capacity
        return ok

    def _charge_batch(self, op: int, offsets: np.ndarray, lengths: np.ndarray, qd: int, handles=None) -> np.ndarray:
        m = self.model
        if m is None or offsets.size == 0:
            return np.zeros(offsets.size)
        if self._model_takes_checked() and _plain(offsets) and _plain(lengths):
            return m.charge(op, offsets, lengths, qd, handles)
        kw = {} if handles is None else {"handles": handles}
        return m.submit(np.full(offsets.size, op, np.uint8), offsets, lengths, qd, **kw)

    def _charge_groups(self, op: int, offsets: np.ndarray, lengths: np.ndarray, group_sizes: np.ndarray,
                       group_qds: np.ndarray, handles=None) -> np.ndarray:
        m = self.model
        if m is None or offsets.size == 0:
            return np.zeros(offsets.size)
        if self._model_takes_checked() and _plain(offsets) and _plain(lengths):
            return m.charge_groups(op, offsets, lengths, group_sizes, group_qds, handles)
        kw = {} if handles is None else {"handles": handles}
        return m.submit_groups(np.full(offsets.size, op, np.uint8), offsets, lengths, group_sizes,
                               group_qds, **kw)

    def now(self) -> float:
        """The device clock: modeled seconds (0 with the timing model off)."""
        return float(self.model.now) if self.model is not None else 0.0

    def advance(self, seconds: float) -> None:
        """Let host idle time pass on the modeled clock (a model with idle-time GC works in it)."""
        if self.model is not None and seconds > 0:
            self.model.advance(seconds)

    def timing_options(self) -> dict:
        """The SSD model's optional behaviours (``suspend``, ``idle_gc``) for ``describe()``."""
        return dict(self.model.options) if self.model is not None else {}

    def erase_counts(self) -> np.ndarray | None:
        """Wear: the SSD model's erases per physical erase block since it was built (int64; what
        an entry is depends on the model: ``ConvSSD``/``FdpSSD``, ``ZNSSSD`` or ``OcssdSSD``
        ``.erase_counts()``), or None with the timing model off.  ``devices.wear.wear_spread``
        sums it up."""
        if self.model is None:
            return None
        with self._lock:       # every emulated device has one; the model must not move under the copy
            return self.model.erase_counts()


class WallClock:
    """The clock of real devices: wall-clock seconds since the open (``_t0``, set by the device).
    Idle time passes by itself, so ``advance`` does nothing."""

    _t0: float = 0.0

    def now(self) -> float:
        """Wall-clock seconds since the device was opened."""
        return time.perf_counter() - self._t0

    def advance(self, seconds: float) -> None:
        """A no-op: real time passes without the host's help."""

    def erase_counts(self) -> None:
        """None: a real device does not report its erases per block."""
        return None


class SerialGroups:
    """``read_groups`` / ``write_groups`` for block devices without a grouped submit: one
    ``read_batch`` / ``write_batch`` per group."""

    block_size: int
    size: int

    def read_groups(self, offsets: np.ndarray, lengths: np.ndarray, group_sizes: np.ndarray,
                    group_qds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """See ``BlockDevice.read_groups``."""
        offsets = np.asarray(offsets, np.int64)
        lengths = np.asarray(lengths, np.int64)
        group_sizes = check_groups(group_sizes, group_qds, offsets.size, "read")
        check_batch(offsets, lengths, self.block_size, self.size, "read")
        bufs, dones, lo = [], [], 0
        for n, qd in zip(group_sizes.tolist(), np.asarray(group_qds).tolist()):
            b, d = self.read_batch(offsets[lo:lo + n], lengths[lo:lo + n], qd=int(qd))
            bufs.append(b)
            dones.append(np.asarray(d, np.float64))
            lo += n
        if not bufs:
            return np.zeros(0, np.uint8), np.zeros(0)
        return np.concatenate(bufs), np.concatenate(dones)

    def write_groups(self, offsets: np.ndarray, data: Buffer, lengths: np.ndarray, group_sizes: np.ndarray,
                     group_qds: np.ndarray) -> np.ndarray:
        """See ``BlockDevice.write_groups``."""
        offsets, lengths, view = check_write_batch(offsets, data, lengths, self.block_size, self.size)
        group_sizes = check_groups(group_sizes, group_qds, offsets.size, "write")
        ends = np.concatenate(([0], np.cumsum(lengths)))
        dones, lo = [], 0
        for n, qd in zip(group_sizes.tolist(), np.asarray(group_qds).tolist()):
            dones.append(np.asarray(self.write_batch(offsets[lo:lo + n], view[ends[lo]:ends[lo + n]],
                                                     lengths[lo:lo + n], qd=int(qd)), np.float64))
            lo += n
        return np.concatenate(dones) if dones else np.zeros(0)


def check_groups(group_sizes, group_qds, n: int, what: str) -> np.ndarray:
    """``group_sizes`` as int64, checked: as many as ``group_qds``, none negative, adding up to ``n``
    ranges (``InvalidIOError`` otherwise)."""
    group_sizes = np.asarray(group_sizes, np.int64)
    if group_sizes.shape != np.shape(group_qds) or (group_sizes < 0).any() or int(group_sizes.sum()) != n:
        raise InvalidIOError(f"{what} groups: {group_sizes.size} groups of {int(group_sizes.sum())} ranges "
                             f"({np.size(group_qds)} queue depths) for {n} ranges")
    return group_sizes


def _count(hist: Counter, lengths: np.ndarray) -> None:
    if lengths.size <= 8:
        for n in lengths.tolist():
            hist[n] += 1
        return
    lo, hi = int(lengths.min()), int(lengths.max())
    if lo == hi:                                   # the usual batch: one size (no sort)
        hist[lo] += int(lengths.size)
        return
    for size, count in zip(*np.unique(lengths, return_counts=True)):
        hist[int(size)] += int(count)


@runtime_checkable
class ZonedDevice(Protocol):
    """A host-managed zoned device, shaped like libzbd's ``zbd.h``.

    Units: every offset and length is in bytes from the start of the device; ``z`` is a zone index
    in ``[0, geometry.nr_zones)``; times are seconds on the device's clock (``now()``). Reads return
    a fresh ``uint8`` ``numpy.ndarray``; writes take any :data:`Buffer`. The zone rules are those of
    NVMe ZNS (see ``zone.py``): a zone is written only at its write pointer and only up to its
    capacity; opening a zone may fail on the open/active limits.

    Errors (``zswap_host.errors``), the same on every implementation:

    - ``InvalidIOError``: a range that is not block aligned, is empty, or leaves the device; a zone
      index that does not exist; a zone append larger than ``geometry.max_append`` (EINVAL).
    - ``ZoneStateError``: the zone rules refuse it: a write off the write pointer or past the zone
      capacity, an action the zone's condition does not allow (``errno_name`` ``EIO``), the active
      limit (``EOVERFLOW``) or the open limit (``ETOOMANYREFS``).
    - ``DeviceIOError``: the medium failed (a read-only or offline zone, a media error, an injected
      failure), or a write to a device opened read-only.
    """

    kind: str          # what ``describe()["kind"]`` says, e.g. "emulated-zns", "linux-zoned"
    zoned: bool        # True: lets ``open_device`` tell the protocols apart without probing
    interface: str     # the SSD interface underneath: "zns", or a view's ("conventional", "fdp", "ocssd")
    url: str           # what it was opened as
    geometry: ZoneGeometry
    # True when a ``read_batch`` and an ``append_batch`` from two threads run at once (separate
    # queues: the store's GC then reads its next chunk while it appends the last). False on modeled
    # devices: their clock models one stream of requests in the order they come.
    overlapped_io: bool

    def unit_traits(self) -> UnitTraits:
        """What a zone is here as a placement unit (``devices/units.py``): sequential-only, who
        collects garbage, what a reset does, usable bytes, open/active limits, placement handles."""
    def place_zone(self, z: int, stream: int, gc: bool) -> None:
        """Say who writes zone ``z`` from now on (the store's user ``stream``, or GC when ``gc``),
        before its first write: a view that can place by writer (FDP handles, Open-Channel PU sets)
        does; a ZNS zone carries no hint and ignores it."""
    def report_zones(self) -> list[Zone]:
        """Every zone's start, size, capacity, write pointer and condition, in zone order (zbd_report_zones)."""
    def reset_zone(self, z: int) -> None:
        """Rewind zone ``z``'s write pointer to its start; it becomes EMPTY and its data is gone
        (zbd_reset_zones). EMPTY stays EMPTY. An OFFLINE zone raises ``DeviceIOError``; a READ_ONLY
        one is refused too (``ZoneStateError`` on the emulator, ``DeviceIOError`` from the kernel)."""
    def open_zone(self, z: int) -> None:
        """Explicitly open zone ``z`` (zbd_open_zones). Raises ``ZoneStateError`` on a FULL zone or
        at the open (ETOOMANYREFS) / active (EOVERFLOW) limit."""
    def close_zone(self, z: int) -> None:
        """Close an open zone: it stays active but stops counting as open (zbd_close_zones).
        ``ZoneStateError`` unless the zone is open or already CLOSED."""
    def finish_zone(self, z: int) -> None:
        """Move zone ``z`` to FULL, its write pointer to the capacity (zbd_finish_zones); releases
        its open/active resources. FULL stays FULL."""
    def write(self, offset: int, data: Buffer) -> None:
        """Write ``data`` at ``offset``, which must be its zone's write pointer; the write may not
        cross the zone's capacity (zbd_pwrite). Implicitly opens the zone; reaching the capacity
        makes it FULL. Nothing is written when it raises."""
    def append(self, z: int, data: Buffer) -> int:
        """Zone append: the device writes ``data`` at zone ``z``'s write pointer and returns the
        byte offset it chose. ``data`` is whole blocks, at most ``geometry.max_append`` bytes
        (``InvalidIOError`` beyond). Errors as :meth:`write`."""
    def append_batch(self, zones, data: Buffer | Sequence[Buffer], lengths, qd: int = 32) -> tuple[np.ndarray, list]:
        """Many zone appends as one queue with at most ``qd`` in flight: request i appends
        ``lengths[i]`` bytes to zone ``zones[i]``; ``data`` is one buffer holding the requests back
        to back, or a sequence of buffers each holding one or more whole requests back to back (a
        buffer per request, or a write buffer's unit and the caller's units: gathered without a
        copy where the device can);
        several may go to one zone, and then they land in any order, each where the device chose.
        Arguments are checked before anything is written (``InvalidIOError``). Returns
        ``(offsets, failures)``: the byte offset each request landed at (-1 where it failed), and
        ``(i, typed error)`` for each failed request in order. A request's failure raises nothing:
        the batch's other appends landed and the caller must account for them. Devices without
        a queue append one after another (``SerialAppends``)."""
    def append_run(self, zones: np.ndarray, segs: tuple, lengths: np.ndarray, qd: int, expect: int):
        """``append_batch(zones, segs, lengths, qd)`` of a run a caller expects to land back to
        back in request order from byte ``expect`` (``segs``: one or two buffers holding the
        requests back to back; ``zones``/``lengths`` int64 arrays): True when it did, else
        ``append_batch``'s ``(offsets, failures)``; the same checks and errors. The emulated
        devices check in Python (``SerialAppends``: ``append_run_batched``); a Linux zoned
        namespace on the uring-cmd path sends, reaps and checks in one C call."""
    def read(self, offset: int, length: int) -> np.ndarray:
        """``length`` bytes at ``offset`` (zbd_pread); may span zones. Bytes past a zone's write
        pointer read as zeros on the emulator (a real device returns what its deallocated blocks
        read as). ``DeviceIOError`` when a zone in the range is OFFLINE."""
    def read_batch(self, offsets: np.ndarray, lengths: np.ndarray, qd: int = 32) -> tuple[np.ndarray, np.ndarray]:
        """Read many ranges as one queue of requests with at most ``qd`` (>= 1) in flight.
        ``offsets``/``lengths`` are int64 arrays of equal size. Returns the bytes of every range
        back to back in request order, and each request's completion time (float64 seconds on
        ``now()``'s clock). Every range is checked before any is read (``InvalidIOError`` names the
        first bad one). A device with synchronous I/O reads them one after the other and ignores
        ``qd``."""
    def now(self) -> float:
        """The device clock in seconds: modeled time on an emulated device (0.0 with the timing
        model off), wall-clock seconds since the open on a real one. Never goes backwards."""
    def advance(self, seconds: float) -> None:
        """Let ``seconds`` of host idle time pass on the device clock (a model with idle-time GC
        works in it). A no-op on a wall clock (real time passes by itself) and for ``seconds <= 0``."""
    def flush(self) -> None:
        """Make everything written so far durable (fsync, or the emulator's file and zone states)."""
    def stats(self) -> DeviceStats:
        """What the device saw since it was opened."""
    def describe(self) -> dict:
        """A JSON-able description: ``url``, ``kind``, ``zoned``, ``geometry``, ``clock``, ..."""
    def close(self) -> None:
        """Flush and release the device; closing twice is allowed."""


@runtime_checkable
class BlockDevice(Protocol):
    """A conventional block device: read, write and discard at any block-aligned offset.

    Units and errors as :class:`ZonedDevice` (bytes; seconds on ``now()``'s clock): ``InvalidIOError``
    for a range that is unaligned, empty or outside ``[0, size)`` and for batch arguments that do not
    add up; ``DeviceIOError`` when the medium fails or the device was opened read-only.
    """

    kind: str
    zoned: bool        # False
    interface: str     # "conventional", or "fdp" (``write`` then takes a placement ``handle=``)
    url: str
    size: int          # bytes, a multiple of block_size
    block_size: int    # bytes: every offset and length is a multiple of it

    def read(self, offset: int, length: int) -> np.ndarray:
        """``length`` bytes at ``offset``; never written or discarded blocks read as zeros."""
    def write(self, offset: int, data: Buffer) -> None:
        """Write ``data`` at ``offset``."""
    def read_batch(self, offsets: np.ndarray, lengths: np.ndarray, qd: int = 32) -> tuple[np.ndarray, np.ndarray]:
        """As :meth:`ZonedDevice.read_batch`: the ranges' bytes back to back and each request's
        completion time; every range checked before any is read."""
    def read_groups(self, offsets: np.ndarray, lengths: np.ndarray, group_sizes: np.ndarray,
                    group_qds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Serial groups of reads in one call (one thread's page faults): group ``g`` is the next
        ``group_sizes[g]`` ranges, read as one queue of depth ``group_qds[g]`` once group ``g - 1``
        has completed; the same as one :meth:`read_batch` per group. ``group_sizes`` add up to the
        number of ranges. Returns the bytes back to back and each range's completion time. Every
        range is checked before any is read."""
    def write_batch(self, offsets: np.ndarray, data: Buffer, lengths: np.ndarray, qd: int = 32) -> np.ndarray:
        """Write many ranges as one queue of requests (at most ``qd`` in flight); ``data`` holds
        them back to back, so ``lengths.sum()`` must equal its size (``InvalidIOError`` otherwise).
        Returns each request's completion time on ``now()``'s clock. Every range is checked before
        anything is written. (Only block devices have it: a swap area's scattered page writes are
        its one caller. A zoned device writes at write pointers with ``write``/``append``.)"""
    def write_groups(self, offsets: np.ndarray, data: Buffer, lengths: np.ndarray, group_sizes: np.ndarray,
                     group_qds: np.ndarray) -> np.ndarray:
        """Serial groups of writes in one call (reclaim batches, one after the other): group ``g``
        is the next ``group_sizes[g]`` ranges, written as one queue of depth ``group_qds[g]`` once
        group ``g - 1`` has completed; the same as one :meth:`write_batch` per group. ``data`` holds
        all the ranges back to back. Returns each range's completion time. Every range is checked
        before anything is written; a device that fails part-way has written the groups before the
        failing one (an emulated device fails before writing any)."""
    def discard(self, offset: int, length: int) -> None:
        """TRIM: the range's data is no longer needed (it may read as zeros afterwards)."""
    def flush(self) -> None:
        """Make everything written so far durable."""
    def now(self) -> float:
        """As :meth:`ZonedDevice.now`."""
    def advance(self, seconds: float) -> None:
        """As :meth:`ZonedDevice.advance` (an emulated SSD with ``idle_gc=1`` collects in it)."""
    def stats(self) -> DeviceStats:
        """What the device saw since it was opened."""
    def describe(self) -> dict:
        """A JSON-able description: ``url``, ``kind``, ``zoned``, ``size``, ``block_size``, ``clock``, ..."""
    def close(self) -> None:
        """Release the device; closing twice is allowed."""


@runtime_checkable
class OpenChannelDevice(Protocol):
    """An Open-Channel SSD 2.0: the host writes, reads and resets chunks of parallel units by linear
    sector address (``ppa``, see ``devices/chunk.py``); the device keeps no mapping and does no GC.

    Vectored calls take numpy arrays of addresses and check all of them before doing anything:
    ``InvalidIOError`` for an address outside the device or data that does not match the vector;
    ``ZoneStateError`` (``.zone`` = the chunk's linear index) for a broken chunk rule: a write away
    from its chunk's write pointer, a count per chunk that is not a multiple of ``ws_min``, a write
    to a CLOSED chunk, a read of a sector not yet readable, a reset of an OPEN chunk;
    ``DeviceIOError`` for an OFFLINE chunk, a failed reset, or a device opened read-only.
    """

    kind: str
    zoned: bool          # False: not a zoned block device
    open_channel: bool   # True: lets ``open_device`` tell this protocol apart
    interface: str       # "ocssd"
    url: str
    geometry: OcssdGeometry

    def chunk_info(self, chunks=None) -> list[ChunkInfo]:
        """The chunk information log page: one ``ChunkInfo`` (state, type, wear index, slba, cnlb,
        write pointer) per chunk, or per linear chunk index in ``chunks``."""
    def write(self, ppas, data: Buffer) -> None:
        """Vectored write: sector ``ppas[i]`` gets ``data``'s i-th sector. Per chunk touched, the
        addresses (in vector order) run on from its write pointer and number a multiple of
        ``ws_min``. A FREE chunk becomes OPEN, a chunk written to its end CLOSED."""
    def read(self, ppas) -> np.ndarray:
        """Vectored read: the sectors at ``ppas`` back to back. A sector is readable when its chunk
        is CLOSED or at least ``mw_cunits`` sectors were written after it."""
    def reset(self, chunks) -> None:
        """Vectored chunk reset (erase): FREE or CLOSED chunks become FREE, write pointer 0, wear + 1."""
    def now(self) -> float:
        """As :meth:`ZonedDevice.now`."""
    def advance(self, seconds: float) -> None:
        """As :meth:`ZonedDevice.advance`."""
    def flush(self) -> None:
        """Make everything written so far durable (data and chunk states)."""
    def stats(self) -> DeviceStats:
        """What the device saw since it was opened."""
    def describe(self) -> dict:
        """A JSON-able description: ``url``, ``kind``, ``zoned``, ``open_channel``, ``geometry``, ``clock``, ..."""
    def close(self) -> None:
        """Flush and release the device; closing twice is allowed."""


_U8 = np.dtype(np.uint8)


def as_bytes_view(data: Buffer) -> np.ndarray:
    """A flat uint8 view of any buffer, without copying."""
    if type(data) is np.ndarray and data.dtype is _U8 and data.ndim == 1 and data.flags.c_contiguous:
        return data                              # already one (a unit of a batch): no new view
    if isinstance(data, np.ndarray):
        return data.reshape(-1).view(np.uint8) if data.flags.c_contiguous else np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    return np.frombuffer(data, dtype=np.uint8)


def check_zone_write(g: ZoneGeometry, offset: int, length: int) -> int:
    """The zone a write lands in: aligned, inside the device, not crossing a zone's end."""
    check_aligned(offset, length, g.block_size, g.size, "write")
    z = g.zone_of(offset)
    if g.zone_of(offset + length - 1) != z:
        raise ZoneStateError(f"write at {offset} of {length} bytes crosses the end of zone {z}", zone=z)
    return z


def check_append(g: ZoneGeometry, length: int) -> None:
    """A zone append's size: whole blocks, at most a zone, within the device's append limit."""
    check_aligned(0, length, g.block_size, g.zone_size, "zone append")
    if g.max_append and length > g.max_append:
        raise InvalidIOError(f"zone append of {length} bytes exceeds the device's append limit {g.max_append}")


def check_append_batch(g: ZoneGeometry, zones, data, lengths, views: bool = True) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """An ``append_batch``'s arguments as int64 arrays and one uint8 view per request (no copy),
    checked: every zone exists, every length is a valid append, the data matches the lengths (one
    buffer: they add up to its size; a sequence: one buffer of each length). ``views=False`` with
    one buffer: the third item is the buffer's flat uint8 view instead of the per-request views."""
    zones = np.asarray(zones, np.int64)
    lengths = np.asarray(lengths, np.int64)
    if zones.ndim != 1:
        zones = zones.reshape(-1)
    if lengths.ndim != 1:
        lengths = lengths.reshape(-1)
    if zones.shape != lengths.shape:
        raise InvalidIOError(f"append batch: {zones.size} zones but {lengths.size} lengths")
    if zones.size > 64:
        zones, lengths, units = _check_append_batch_np(g, zones, data, lengths)
        return zones, lengths, (units if views or isinstance(data, (list, tuple)) else as_bytes_view(data))
    # a batch of write units (the usual size): checked on Python ints, no numpy reduction
    zl, ll = zones.tolist(), lengths.tolist()
    if isinstance(data, (list, tuple)):
        units = _split_segments([as_bytes_view(d) for d in data], ll)
    else:
        view = as_bytes_view(data)
        if sum(ll) != view.size:
            raise InvalidIOError(f"append batch: lengths add up to {sum(ll)}, data holds {view.size}")
        if views:
            units, e = [], 0
            for n in ll:
                units.append(view[e:e + n])
                e += n
        else:
            units = view
    if zl and (min(zl) < 0 or max(zl) >= g.nr_zones):
        z = next(z for z in zl if z < 0 or z >= g.nr_zones)
        raise InvalidIOError(f"zone {z} does not exist (the device has {g.nr_zones} zones)")
    limit, bs = g.max_append or g.zone_size, g.block_size
    for n in ll:
        if n <= 0 or n > limit or n % bs:
            check_append(g, n)                   # raises, naming the first bad one
    return zones, lengths, units


def _split_segments(segs: list[np.ndarray], ll: list[int]) -> list[np.ndarray]:
    """One view per request of an ``append_batch`` given as a sequence of buffers, each holding one
    or more whole requests back to back (one buffer per request: the buffers themselves).
    ``InvalidIOError`` when the buffers do not split into the lengths."""
    sizes = [u.size for u in segs]
    if sizes == ll:
        return segs
    units, k = [], 0
    for seg in segs:
        e = 0
        while e < seg.size and k < len(ll) and ll[k] > 0 and e + ll[k] <= seg.size:
            units.append(seg[e:e + ll[k]])
            e, k = e + ll[k], k + 1
        if e != seg.size:
            break
    else:
        if k == len(ll):
            return units
    raise InvalidIOError(f"append batch: {len(ll)} lengths but buffers of sizes {sizes}")


def _check_append_batch_np(g: ZoneGeometry, zones: np.ndarray, data, lengths: np.ndarray):
    """``check_append_batch`` of a long batch, with numpy reductions."""
    if isinstance(data, (list, tuple)):
        units = _split_segments([as_bytes_view(d) for d in data], lengths.tolist())
    else:
        view = as_bytes_view(data)
        if int(lengths.sum()) != view.size:
            raise InvalidIOError(f"append batch: lengths add up to {int(lengths.sum())}, data holds {view.size}")
        ends = np.cumsum(lengths).tolist()
        units = [view[e - n:e] for e, n in zip(ends, lengths.tolist())]
    if zones.size and (int(zones.min()) < 0 or int(zones.max()) >= g.nr_zones):
        z = int(zones[np.flatnonzero((zones < 0) | (zones >= g.nr_zones))[0]])
        raise InvalidIOError(f"zone {z} does not exist (the device has {g.nr_zones} zones)")
    limit = g.max_append or g.zone_size
    if zones.size and (int(lengths.min()) <= 0 or int(lengths.max()) > limit or (lengths % g.block_size).any()):
        bad = (lengths <= 0) | (lengths > limit) | (lengths % g.block_size != 0)
        check_append(g, int(lengths[np.flatnonzero(bad)[0]]))     # raises, naming the first bad one
    return zones, lengths, units


def append_run_batched(dev, zones: np.ndarray, segs: tuple, lengths: np.ndarray, qd: int, expect: int):
    """``ZonedDevice.append_run`` on ``dev.append_batch``: True when no request failed and they
    landed back to back in request order from byte ``expect``, else ``append_batch``'s
    ``(offsets, failures)`` (``SerialAppends.append_run``; a Linux namespace off the uring-cmd path)."""
    out = dev.append_batch(zones, segs if len(segs) > 1 else segs[0], lengths, qd)
    offsets, failures = out
    if failures or not offsets.size:
        return out
    at = expect
    for off, n in zip(offsets.tolist(), lengths.tolist()):
        if off != at:
            return out
        at += n
    return True


class SerialAppends:
    """``append_batch`` for zoned devices without a queue: one ``append`` after another; and
    ``append_run`` on it (the check in Python: ``append_run_batched``)."""

    geometry: ZoneGeometry
    append_run = append_run_batched

    def append_batch(self, zones, data: Buffer | Sequence[Buffer], lengths, qd: int = 32) -> tuple[np.ndarray, list]:
        """See ``ZonedDevice.append_batch``."""
        zones, _, units = check_append_batch(self.geometry, zones, data, lengths)
        offsets = []
        failures = []
        append = self.append
        for k, (z, unit) in enumerate(zip(zones.tolist(), units)):
            try:
                offsets.append(append(z, unit))
            except (DeviceIOError, ZoneStateError) as e:
                offsets.append(-1)
                failures.append((k, e))
        return np.array(offsets, np.int64), failures


def check_batch(offsets: np.ndarray, lengths: np.ndarray, block_size: int, limit: int, what: str) -> None:
    """check_aligned for many ranges at once (the per-range check only runs to name the bad one)."""
    if offsets.shape != lengths.shape:
        raise InvalidIOError(f"{what} batch: {offsets.size} offsets but {lengths.size} lengths")
    if offsets.size <= 4:
        for o, n in zip(offsets.tolist(), lengths.tolist()):
            check_aligned(o, n, block_size, limit, what)
        return
    # three reductions (the OR of all offsets and lengths: with a power-of-two block a misaligned one
    # leaves a low bit, a negative one the sign); the per-range mask only when one may be bad
    either = int(np.bitwise_or.reduce(offsets | lengths))
    if either % block_size or either < 0 or block_size & (block_size - 1) or int(lengths.min()) <= 0 \
            or int((offsets + lengths).max()) > limit:
        bad = (offsets < 0) | (lengths <= 0) | (offsets + lengths > limit) | (offsets % block_size != 0) \
            | (lengths % block_size != 0)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            check_aligned(int(offsets[k]), int(lengths[k]), block_size, limit, what)


def check_write_batch(offsets, data: Buffer, lengths, block_size: int, limit: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A ``write_batch``'s arguments as int64 arrays and a byte view, checked: the lengths add up to
    the data, every range is aligned and inside ``[0, limit)``."""
    offsets = np.asarray(offsets, np.int64)
    lengths = np.asarray(lengths, np.int64)
    view = as_bytes_view(data)
    if int(lengths.sum()) != view.size:
        raise InvalidIOError(f"write batch: lengths add up to {int(lengths.sum())}, data holds {view.size}")
    check_batch(offsets, lengths, block_size, limit, "write")
    return offsets, lengths, view


def check_aligned(offset: int, length: int, block_size: int, limit: int, what: str = "I/O") -> None:
    """Raise InvalidIOError unless [offset, offset+length) is block aligned and inside [0, limit)."""
    if offset < 0 or length <= 0 or offset + length > limit:
        raise InvalidIOError(f"{what} [{offset}, {offset + length}) is outside the device (size {limit})")
    if offset % block_size or length % block_size:
        raise InvalidIOError(f"{what} at {offset} of {length} bytes is not aligned to the {block_size}-byte block size")
