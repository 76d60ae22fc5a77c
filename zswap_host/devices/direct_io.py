"""``O_DIRECT`` I/O on Linux block devices: aligned buffers, the exclusive open (and this process's
claims on devices), and the read/write/clock half that the zoned and the conventional backends share.

Data bypasses the page cache, so a buffer's address, offset and length must be aligned (to the
logical block size; buffers here are page aligned, which covers every block size in use).
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
import time

import numpy as np

from ..errors import DeviceIOError, DeviceSpecError, InvalidIOError, UnsafeDeviceError
from .base import DeviceStats
from .blkzoned import errname, zoned_lib
from .clocks import WallClock
from .io_counters import IoTally
from .io_engine import DEFAULT_DEPTH, IoEngine, open_engine
from .request_checks import check_batch

ALIGN = 4096


def aligned_empty(n: int, align: int = ALIGN) -> np.ndarray:
    """An uninitialised uint8 array of n bytes whose data pointer is ``align``-aligned (for O_DIRECT)."""
    raw = np.empty(n + align, np.uint8)
    skip = (-raw.ctypes.data) % align
    return raw[skip:skip + n]


def aligned_copy(view: np.ndarray) -> np.ndarray:
    """``view`` itself when O_DIRECT can take it, else an aligned copy."""
    if view.ctypes.data % ALIGN == 0 and view.flags.c_contiguous:
        return view
    buf = aligned_empty(view.size)
    buf[:] = view
    return buf


def gathered(units: list[np.ndarray]) -> np.ndarray:
    """Byte buffers back to back in one buffer O_DIRECT can take (one copy; none for a single
    buffer that is already aligned)."""
    if len(units) == 1:
        return aligned_copy(units[0])
    buf = aligned_empty(sum(u.size for u in units))
    pos = 0
    for u in units:
        buf[pos:pos + u.size] = u
        pos += u.size
    return buf


# block devices this process holds open: rdev -> number of open handles. A second handle in the same
# process (bench opens the baseline device for more than one run) shares the claim instead of failing
# its O_EXCL open; "open exclusively elsewhere" means by another program.
_HELD: dict[int, int] = {}
_HELD_LOCK = threading.Lock()


def held_here(path: str) -> bool:
    """True when this process already has ``path`` open through a Linux backend."""
    try:
        rdev = os.stat(path).st_rdev
    except OSError:
        return False
    with _HELD_LOCK:
        return _HELD.get(rdev, 0) > 0


def open_direct(path: str, exclusive: bool, readonly: bool = False) -> int:
    """Open for O_DIRECT I/O. A read-only handle (``info``, ``zones``) claims nothing: it works on a
    device that is mounted or in use, and does not count in the held claims. Raises
    ``UnsafeDeviceError`` (EBUSY: in use elsewhere) or ``DeviceSpecError`` (permission, other errors)."""
    rdev = os.stat(path).st_rdev
    with _HELD_LOCK:
        if _HELD.get(rdev, 0) > 0 or readonly:
            exclusive = False
    mode = os.O_RDONLY if readonly else os.O_RDWR
    flags = mode | os.O_DIRECT | os.O_CLOEXEC | (os.O_EXCL if exclusive else 0)
    try:
        fd = os.open(path, flags)
        if not readonly:
            with _HELD_LOCK:
                _HELD[rdev] = _HELD.get(rdev, 0) + 1
        return fd
    except OSError as e:
        if e.errno == errno.EBUSY:
            raise UnsafeDeviceError(f"{path} is busy: it is mounted, used as swap, or open exclusively "
                                    f"by another program") from None
        if e.errno in (errno.EACCES, errno.EPERM):
            raise DeviceSpecError(f"{path}: permission denied (raw block devices need root or the disk group)") from None
        raise DeviceSpecError(f"{path}: {e.strerror}") from None


def _release(fd: int, readonly: bool) -> None:
    rdev = os.fstat(fd).st_rdev
    os.close(fd)
    if readonly:
        return
    with _HELD_LOCK:
        if _HELD.get(rdev, 0) > 1:
            _HELD[rdev] -= 1
        else:
            _HELD.pop(rdev, None)


class DirectIO(WallClock):
    """O_DIRECT reads/writes from aligned buffers, request counting and the wall clock. A subclass
    sets ``path``, ``block_size``, ``readonly`` and ``_fd`` (from :func:`open_direct`), calls
    :meth:`_init_io`, and says how far reads may go (``_limit``). Batches go through the device's
    I/O engine (``io_engine.py``): io_uring at queue depth, or blocking calls one at a time."""

    path: str
    block_size: int
    _fd: int = -1          # -1: not open (yet, or any more)
    readonly: bool = False
    _engine: IoEngine | None = None

    def _init_io(self, io_engine: str | None = None, io_depth: int = DEFAULT_DEPTH) -> None:
        self.tally = IoTally()
        self._t0 = time.perf_counter()
        self._batch_lock = threading.Lock()     # one ring: one batch at a time
        self._engine = open_engine(io_engine, io_depth, what=self.path)

    @property
    def fd(self) -> int:
        """The O_DIRECT descriptor (-1 once closed), for the device's other paths (zone appends)."""
        return self._fd

    @property
    def io_engine(self) -> str:
        """``uring`` or ``sync``: the engine this device's batches go through."""
        return self._engine.name

    @property
    def registered_buffers(self) -> bool:
        """Whether batches go through registered buffers (io_uring READ_FIXED / WRITE_FIXED; off by
        default, see ``UringEngine.fixed``). Settable; always False on the sync engine."""
        return bool(self._engine.fixed)

    @registered_buffers.setter
    def registered_buffers(self, on: bool) -> None:
        if self._engine.name == "uring":
            self._engine.fixed = on

    @property
    def io_depth(self) -> int:
        """Most requests the engine keeps in flight (a batch's ``qd`` is clipped to it)."""
        return self._engine.depth

    def engine_stats(self) -> dict:
        """The engine's name, depth and counters (batches, requests, most in flight, appends and most
        appends in flight to one zone, most batches running at once on the device's rings)."""
        return {**self._engine.stats(), "max_batches_at_once": self.tally.max_batches_at_once}

    def _limit(self) -> int:
        raise NotImplementedError

    def _pwrite(self, offset: int, view: np.ndarray) -> int:
        """Bytes written, or -errno (the caller turns it into the right typed error)."""
        ffi, lib = zoned_lib()
        buf = aligned_copy(view)
        t = time.perf_counter()
        r = lib.zd_pwrite(self._fd, ffi.cast("void *", buf.ctypes.data), buf.size, offset)
        dt = time.perf_counter() - t
        if r >= 0:
            with self.tally.lock:
                self.tally.busy += dt
                self.tally.io.wrote(view.size)
        return int(r)

    def _pread(self, offset: int, length: int) -> np.ndarray:
        ffi, lib = zoned_lib()
        buf = aligned_empty(length)
        t = time.perf_counter()
        r = lib.zd_pread(self._fd, ffi.cast("void *", buf.ctypes.data), length, offset)
        dt = time.perf_counter() - t
        if r < 0:
            e = -r
            if e == errno.EINVAL:
                raise InvalidIOError(f"{self.path}: read at {offset} of {length} bytes refused (EINVAL)")
            raise DeviceIOError(f"{self.path}: read at {offset} of {length} bytes failed: "
                                f"{os.strerror(e)} ({errname(e)})", offset=offset)
        if r < length:
            raise DeviceIOError(f"{self.path}: short read at {offset}: {r} of {length} bytes", offset=offset)
        with self.tally.lock:
            self.tally.busy += dt
            self.tally.io.read(length)
        return buf

    def read(self, offset: int, length: int) -> np.ndarray:
        raise NotImplementedError

    def _pieces(self, offsets: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """The requests a batch of ranges becomes (a zoned device splits ranges at zone boundaries):
        (offsets, lengths, the range each piece belongs to, or None when nothing was split)."""
        return offsets, lengths, None

    def run_batch(self, write: bool, buf: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, qd: int,
               zones: np.ndarray | None = None, nzones: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Run one batch through the engine; counts what succeeded. Returns (results, completion
        times on ``now()``'s clock)."""
        with self._batch_lock, self._running():
            t = time.perf_counter()
            res, done = self._engine.rw(self._fd, write, buf, offsets, lengths, qd, zones, nzones)
            dt = time.perf_counter() - t
        ok = res == lengths
        done_ok = lengths if ok.all() else lengths[ok]
        with self.tally.lock:
            self.tally.busy += dt
            (self.tally.io.wrote_many if write else self.tally.io.read_many)(done_ok)
        done -= self._t0
        return res, done

    @contextlib.contextmanager
    def _running(self):
        """Count a batch while it runs (``max_batches_at_once``: two when reads and appends overlapped)."""
        self.tally.batch_begins()
        try:
            yield
        finally:
            self.tally.batch_ends()

    def _batch_error(self, what: str, res: np.ndarray, offsets: np.ndarray, lengths: np.ndarray):
        """The typed error for the first failed request of a batch (None when none failed)."""
        bad = res != lengths
        if not bad.any():
            return None
        k = int(np.argmax(bad))
        off, n, r = int(offsets[k]), int(lengths[k]), int(res[k])
        if r >= 0:
            return DeviceIOError(f"{self.path}: short {what} at {off}: {r} of {n} bytes", offset=off)
        if -r == errno.EINVAL:
            return InvalidIOError(f"{self.path}: {what} at {off} of {n} bytes refused (EINVAL)")
        return DeviceIOError(f"{self.path}: {what} at {off} of {n} bytes failed: {os.strerror(-r)} "
                             f"({errname(-r)})", offset=off, errno=-r)

    def read_batch(self, offsets: np.ndarray, lengths: np.ndarray, qd: int = 32) -> tuple[np.ndarray, np.ndarray]:
        """Read ranges with up to ``qd`` in flight (the sync engine: one after another); returns the
        bytes back to back, read straight into the returned array, and each read's completion time
        on ``now()``'s clock. The first failed read raises (``DeviceIOError`` with its offset and
        errno, ``InvalidIOError`` for EINVAL), after the whole batch completed."""
        offsets = np.asarray(offsets, np.int64)
        lengths = np.asarray(lengths, np.int64)
        check_batch(offsets, lengths, self.block_size, self._limit(), "read")
        out = aligned_empty(int(lengths.sum()))
        if offsets.size == 0:
            return out, np.zeros(0)
        offs, lens, owner = self._pieces(offsets, lengths)
        res, done = self.run_batch(False, out, offs, lens, qd)
        err = self._batch_error("read", res, offs, lens)
        if err is not None:
            raise err
        if owner is not None:                   # a range's completion is its last piece's
            done = np.maximum.reduceat(done, np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]]))
        return out, done

    def _stats(self) -> DeviceStats:
        with self.tally.lock:
            s = self.tally.io.fill(DeviceStats(clock="wall", device_time_s=self.tally.busy))
        s.media_write_bytes = s.device_write_bytes   # what flash saw is the drive's secret
        return s

    def stats(self) -> DeviceStats:
        return self._stats()

    def flush(self) -> None:
        if self._fd >= 0:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            _release(fd, self.readonly)
        if self._engine is not None:
            self._engine.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
