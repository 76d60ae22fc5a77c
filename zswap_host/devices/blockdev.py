"""Conventional block devices: the emulated SSD (page-mapped FTL with device-side GC under the
timing model) and a regular file (real I/O, wall clock)."""

from __future__ import annotations

import os
import threading
import time

import numpy as np

from ..errors import DeviceIOError, DeviceSpecError
from .backing import punch_hole, save_sidecar, sidecar_path
from .base import DeviceStats
from .buffers import Buffer, as_bytes_view
from .clocks import ModelClock, WallClock
from .fingerprint import make_backing
from .io_counters import IoCounters
from .request_checks import check_aligned, check_batch, check_groups, check_write_batch
from .serial_batches import SerialGroups

_READ, _WRITE, _TRIM = 0, 1, 2


class EmulatedBlockDevice(ModelClock):
    """Emulated conventional SSD (``emu-conv://``). ``model`` is a ``zswap_host.ssdsim.ConvSSD``
    or None (timing off). Data lives in memory or in a sparse file; TRIMmed ranges read as zeros."""

    kind = "emulated-conventional"
    word_reads = True       # read_batch(..., words=True)
    zoned = False
    interface = "conventional"

    def __init__(self, size: int, path: str | None = None, model=None, preset: str | None = None,
                 op: float | None = None, block_size: int = 4096, url: str | None = None,
                 readonly: bool = False, payload: bool = True) -> None:
        if size <= 0 or size % block_size:
            raise DeviceSpecError(f"device size {size} is not a positive multiple of the block size {block_size}")
        self.size = size
        self.block_size = block_size
        self.path = path
        self.model = model
        self.preset = preset
        self.op = op
        self.url = url or f"emu-conv://{path or ''}"
        self._lock = threading.RLock()
        self._io = IoCounters()
        self._fail_writes = 0
        self.payload = bool(payload)
        self.readonly = bool(readonly)
        # read-only: the file is never written
        new = path is not None and not os.path.exists(sidecar_path(path))      # no description yet
        self._backing = make_backing(size, path, readonly, payload, block_size, new=new)
        if path is not None and not readonly:
            save_sidecar(path, self._sidecar())

    def _sidecar(self) -> dict:
        """What a reopen of the file-backed device must agree with (``PATH.json``)."""
        return {"kind": "conventional", "size": self.size, "block_size": self.block_size, "preset": self.preset,
                "op": self.op}

    def read_batch(self, offsets: np.ndarray, lengths: np.ndarray, qd: int = 32, *,
                   words: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Read many ranges as one queue of requests (at most ``qd`` in flight). Returns the bytes
        concatenated in request order and each request's completion time on ``now()``'s clock.
        ``words``: the first 64-bit word of every block instead (``read_groups``)."""
        offsets = np.asarray(offsets, np.int64)
        return self.read_groups(offsets, lengths, np.array([offsets.size]), np.array([qd]), words=words)

    def read_groups(self, offsets: np.ndarray, lengths: np.ndarray, group_sizes: np.ndarray,
                    group_qds: np.ndarray, *, words: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Serial groups of reads in one call (a thread's page faults): group ``g`` is the next
        ``group_sizes[g]`` ranges read as one queue of depth ``group_qds[g]``, issued when group
        ``g - 1`` has completed — the same as one :meth:`read_batch` per group. Returns the bytes of
        all the ranges back to back and each one's completion time on ``now()``'s clock."""
        offsets = np.asarray(offsets, np.int64)
        lengths = np.asarray(lengths, np.int64)
        group_sizes = check_groups(group_sizes, group_qds, offsets.size, "read")
        check_batch(offsets, lengths, self.block_size, self.size, "read")
        return self.read_checked(offsets, lengths, 0, words, (group_sizes, group_qds))

    def read_checked(self, offsets: np.ndarray, lengths: np.ndarray, qd: int, words: bool = False,
                     groups: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``read_batch`` of int64 ranges already checked (block-aligned, inside this device): what a
        zoned view over this device sends, having checked its reads against its own geometry.
        ``groups``: (sizes, depths) of serial groups as in ``read_groups``, checked, instead of one
        queue of depth ``qd``."""
        with self._lock:
            out = (self._backing.gather_words if words else self._backing.gather)(offsets, lengths, self.block_size)
            self._io.read_many(lengths)
            if groups is None:
                return out, self._charge_batch(_READ, offsets, lengths, qd)
            return out, self._charge_groups(_READ, offsets, lengths, groups[0], groups[1])

    def write_batch(self, offsets: np.ndarray, data: np.ndarray, lengths: np.ndarray, qd: int = 32, *,
                    handle=None) -> np.ndarray:
        """Write many ranges (``data`` holds them back to back) as one queue of requests. Returns
        completion times. An injected failure fails the whole batch before anything is written.
        ``handle``: placement handle(s), on devices that have them (``fdp://``; ValueError here)."""
        return self.write_groups(offsets, data, lengths, np.array([np.size(offsets)]), np.array([qd]), handle=handle)

    def write_groups(self, offsets: np.ndarray, data: Buffer, lengths: np.ndarray, group_sizes: np.ndarray,
                     group_qds: np.ndarray, *, handle=None) -> np.ndarray:
        """Serial groups of writes in one call (see ``BlockDevice.write_groups``): one model call,
        timed exactly as one :meth:`write_batch` per group. An injected failure fails the first
        group, before anything is written."""
        offsets, lengths, view = check_write_batch(offsets, data, lengths, self.block_size, self.size)
        group_sizes = check_groups(group_sizes, group_qds, offsets.size, "write")
        handles = self._placement(handle, lengths)
        with self._lock:
            if self._fail_writes:
                self._fail_writes -= 1
                raise DeviceIOError("injected write failure", offset=int(offsets[0]) if offsets.size else None)
            self._backing.scatter(offsets, lengths, view, self.block_size)
            self._io.wrote_many(lengths)
            self._placed(handles, lengths)
            return self._charge_groups(_WRITE, offsets, lengths, group_sizes, group_qds, handles)

    def write(self, offset: int, data: Buffer, *, handle=None) -> None:
        """Write ``data`` at ``offset``; ``handle`` as in :meth:`write_batch`."""
        view = as_bytes_view(data)
        check_aligned(offset, view.size, self.block_size, self.size, "write")
        handles = self._placement(handle, np.array([view.size], np.int64))
        with self._lock:
            if self._fail_writes:
                self._fail_writes -= 1
                raise DeviceIOError(f"injected write failure at {offset}", offset=offset)
            self._backing.write(offset, view)
            self._io.wrote(view.size)
            self._placed(handles, np.array([view.size], np.int64))
            self._charge(_WRITE, offset, view.size, handles)

    def write_run(self, starts: list[int], views: list[np.ndarray], handles: np.ndarray | None = None) -> None:
        """``write(starts[i], views[i], handle=handles[i])`` for each i in order, in one call (a
        zoned view's run of appends): the same data, counts and modeled time as the writes one
        after another (one queue of depth 1). The ranges are the caller's, checked (block-aligned
        bytes, inside this device). With a write failure injected the writes go one by one, so
        it lands on the write it would have."""
        n = len(starts)
        if n == 0:
            return
        if self._fail_writes:
            for i in range(n):
                self.write(starts[i], views[i], handle=None if handles is None else int(handles[i]))
            return
        offsets = np.array(starts, np.int64)
        lengths = np.fromiter((v.size for v in views), np.int64, n)
        placed = self._placement(handles, lengths)
        write = self._backing.write
        with self._lock:
            for start, view in zip(starts, views):
                write(start, view)
            self._io.wrote_many(lengths)
            self._placed(placed, lengths)
            self._charge_batch(_WRITE, offsets, lengths, 1, placed)

    def injected_failures(self) -> tuple[int, int]:
        """(reads, writes) injected failures not raised yet (this device injects writes only)."""
        return 0, self._fail_writes

    def _placement(self, handle, lengths: np.ndarray):
        """The write's placement handles for the model (None: the device's default). A
        conventional device has none."""
        if handle is None:
            return None
        raise ValueError(f"{self.url}: this device has no placement handles (FDP devices do: fdp://)")

    def _placed(self, handles, lengths: np.ndarray) -> None:
        """Count a write's bytes per handle (devices with handles)."""

    def read(self, offset: int, length: int) -> np.ndarray:
        check_aligned(offset, length, self.block_size, self.size, "read")
        with self._lock:
            out = self._backing.read(offset, length)
            self._io.read(length)
            self._charge(_READ, offset, length)
            return out

    def discard(self, offset: int, length: int) -> None:
        check_aligned(offset, length, self.block_size, self.size, "discard")
        with self._lock:
            self._backing.zero(offset, length)
            self._io.discard_bytes += length
            self._charge(_TRIM, offset, length)

    def inject_write_failures(self, n: int) -> None:
        """Fail the next ``n`` writes with DeviceIOError (nothing written)."""
        with self._lock:
            self._fail_writes = n

    def flush(self) -> None:
        with self._lock:
            self._backing.flush()

    def stats(self) -> DeviceStats:
        with self._lock:
            if self.model is None:
                s = self._io.fill(DeviceStats(clock="none"))
                s.media_write_bytes = self._io.write_bytes
                return s
            m = self.model
            s = DeviceStats(clock="modeled", device_time_s=float(m.now),
                            media_write_bytes=int(m.media_write_bytes),
                            gc_write_bytes=int(m.gc_write_bytes), erase_count=int(m.erase_count))
            return self._io.fill(s)

    def describe(self) -> dict:
        return {"url": self.url, "kind": self.kind, "zoned": False, "path": self.path,
                "size": self.size, "block_size": self.block_size, "preset": self.preset,
                "op": self.op, "clock": "modeled" if self.model is not None else "none", "payload": self.payload,
                **self.timing_options()}

    def close(self) -> None:
        with self._lock:
            self._backing.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class FileBlockDevice(WallClock, SerialGroups):
    """A regular file used as a conventional block device: real I/O through pread/pwrite,
    discard as hole punching, wall-clock timing of the time spent inside I/O calls."""

    kind = "file"
    zoned = False
    interface = "conventional"

    def __init__(self, path: str, block_size: int = 4096, readonly: bool = False) -> None:
        if not os.path.isfile(path):
            raise DeviceSpecError(f"{path} is not a regular file")
        size = os.path.getsize(path)
        if size < block_size:
            raise DeviceSpecError(f"{path} is {size} bytes: too small for a device (needs at least {block_size})")
        if size % block_size:
            raise DeviceSpecError(f"{path} is {size} bytes, not a whole number of {block_size}-byte blocks "
                                  f"(truncated?)")
        self.path = path
        self.block_size = block_size
        self.size = size - size % block_size
        self.url = path
        self.readonly = readonly
        self._fd = os.open(path, os.O_RDONLY if readonly else os.O_RDWR)
        self._io = IoCounters()
        self._busy = 0.0
        self._t0 = time.perf_counter()
        self._lock = threading.Lock()

    def write(self, offset: int, data: Buffer) -> None:
        view = as_bytes_view(data)
        check_aligned(offset, view.size, self.block_size, self.size, "write")
        t = time.perf_counter()
        try:
            os.pwrite(self._fd, view, offset)
        except OSError as e:
            raise DeviceIOError(f"write at {offset} failed: {e}", offset=offset) from e
        with self._lock:
            self._busy += time.perf_counter() - t
            self._io.wrote(view.size)

    def read(self, offset: int, length: int) -> np.ndarray:
        check_aligned(offset, length, self.block_size, self.size, "read")
        t = time.perf_counter()
        try:
            buf = os.pread(self._fd, length, offset)
        except OSError as e:
            raise DeviceIOError(f"read at {offset} failed: {e}", offset=offset) from e
        with self._lock:
            self._busy += time.perf_counter() - t
            self._io.read(length)
        return np.frombuffer(buf, dtype=np.uint8).copy()

    def read_batch(self, offsets: np.ndarray, lengths: np.ndarray, qd: int = 32) -> tuple[np.ndarray, np.ndarray]:
        """Read ranges in order (synchronous I/O: ``qd`` is not used); returns the bytes back to back
        and each read's completion time on ``now()``'s clock."""
        offsets = np.asarray(offsets, np.int64)
        lengths = np.asarray(lengths, np.int64)
        check_batch(offsets, lengths, self.block_size, self.size, "read")
        parts, done = [], []
        for off, n in zip(offsets.tolist(), lengths.tolist()):
            parts.append(self.read(off, n))
            done.append(self.now())
        return (np.concatenate(parts) if parts else np.zeros(0, np.uint8)), np.array(done)

    def write_batch(self, offsets: np.ndarray, data: np.ndarray, lengths: np.ndarray, qd: int = 32) -> np.ndarray:
        """Write ranges in order (``data`` holds them back to back); returns completion times.
        Every range is checked before the first is written."""
        offsets, lengths, view = check_write_batch(offsets, data, lengths, self.block_size, self.size)
        done, pos = [], 0
        for off, n in zip(offsets.tolist(), lengths.tolist()):
            self.write(off, view[pos:pos + n])
            pos += n
            done.append(self.now())
        return np.array(done)

    def discard(self, offset: int, length: int) -> None:
        check_aligned(offset, length, self.block_size, self.size, "discard")
        punch_hole(self.path, offset, length)
        with self._lock:
            self._io.discard_bytes += length

    def flush(self) -> None:
        os.fsync(self._fd)

    def stats(self) -> DeviceStats:
        with self._lock:
            s = self._io.fill(DeviceStats(clock="wall", device_time_s=self._busy))
            s.media_write_bytes = self._io.write_bytes  # unknown below the file system; what we wrote
            return s

    def describe(self) -> dict:
        return {"url": self.url, "kind": self.kind, "zoned": False, "path": self.path,
                "size": self.size, "block_size": self.block_size, "clock": "wall"}

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
