"""The device protocols every backend implements (zoned, conventional block, Open-Channel), and the
statistics they report.

``read`` returns a ``numpy.ndarray`` of ``uint8`` (the store works on numpy page batches);
``write``/``append`` take any buffer (bytes, bytearray, memoryview, numpy array).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence, runtime_checkable

import numpy as np

from .buffers import Buffer
from .chunk import ChunkInfo, OcssdGeometry
from .units import UnitTraits
from .zone import Zone, ZoneGeometry


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

