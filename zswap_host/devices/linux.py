"""Linux block devices: a host-managed zoned block device (``/dev/nvmeXnY`` ZNS namespace, SMR disk,
``null_blk`` zoned) and a conventional block device, with real I/O on the wall clock.

- Geometry comes from sysfs (``queue/zoned``, ``chunk_sectors``, ``nr_zones``, ``max_open_zones``,
  ``max_active_zones``, ``zone_append_max_bytes``, ``logical_block_size``) and the zone report.
- Zone report and reset/open/close/finish go through the kernel's blkzoned ioctls (``native/zoned.c``).
- Data moves with ``O_DIRECT`` reads and writes from block-aligned buffers (no page cache).
- Zone append on an NVMe namespace is the NVMe Zone Append command (opcode 0x7d) sent through
  ``NVME_IOCTL_IO64_CMD``: the device picks the position and the completion says which LBA it chose.
  On other zoned devices (or if passthrough is refused) append is a write at the write pointer,
  serialised per zone.

Kernel errors become the typed errors the conformance suite checks: a write or zone operation that
breaks the zone rules is ``ZoneStateError`` with the kernel's errno name (``EIO``, ``EOVERFLOW`` for
the active-zone limit, ``ETOOMANYREFS`` for the open-zone limit); misaligned or out-of-range I/O is
``InvalidIOError``; an EIO that no zone rule explains (media error) is ``DeviceIOError``.
"""

from __future__ import annotations

import errno
import os
import threading
import time
from typing import NamedTuple

import numpy as np

from ..errors import DeviceIOError, DeviceSpecError, InvalidIOError, NotZonedError, ZoneStateError
from .base import (Buffer, DeviceStats, IoCounters, as_bytes_view, check_aligned, check_append, check_batch,
                   check_zone_write)
from .zone import Zone, ZoneCond, ZoneGeometry

SECTOR = 512
_ALIGN = 4096
_OPS = {"reset": 0, "open": 1, "close": 2, "finish": 3}

# NVMe status codes (SCT 1 = command specific, ZNS set) -> (errno name a block I/O would give, kind)
_NVME_ZONE_STATUS = {
    0x1B8: ("EIO", "zone", "zone boundary error"),
    0x1B9: ("EIO", "zone", "zone is full"),
    0x1BA: ("EIO", "media", "zone is read only"),
    0x1BB: ("EIO", "media", "zone is offline"),
    0x1BC: ("EIO", "zone", "zone invalid write"),
    0x1BD: ("EOVERFLOW", "zone", "too many active zones"),
    0x1BE: ("ETOOMANYREFS", "zone", "too many open zones"),
    0x1BF: ("EIO", "zone", "invalid zone state transition"),
    0x080: ("EINVAL", "invalid", "LBA out of range"),
    0x002: ("EINVAL", "invalid", "invalid field in command"),
}


def _lib():
    try:
        from .._native import ffi, lib
    except ImportError as e:  # pragma: no cover - the extension is built by pip install
        raise DeviceSpecError(f"the native extension is missing ({e}); run `pip install -e .`") from None
    if not hasattr(lib, "zd_report_zones"):
        raise DeviceSpecError("the native extension predates zoned-device support; run `pip install -e .`")
    return ffi, lib


def aligned_empty(n: int, align: int = _ALIGN) -> np.ndarray:
    """An uninitialised uint8 array of n bytes whose data pointer is ``align``-aligned (for O_DIRECT)."""
    raw = np.empty(n + align, np.uint8)
    skip = (-raw.ctypes.data) % align
    return raw[skip:skip + n]


def _aligned_copy(view: np.ndarray) -> np.ndarray:
    if view.ctypes.data % _ALIGN == 0 and view.flags.c_contiguous:
        return view
    buf = aligned_empty(view.size)
    buf[:] = view
    return buf


# -------------------------------------------------------------------------------- sysfs
def sysfs_dir(path: str) -> str:
    """``/sys/dev/block/MAJ:MIN`` resolved, for a block device node."""
    st = os.stat(path)
    return os.path.realpath(f"/sys/dev/block/{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}")


def queue_dir(path: str) -> str:
    """The ``queue`` folder of the disk that holds ``path`` (a partition's parent disk)."""
    d = sysfs_dir(path)
    if not os.path.isdir(os.path.join(d, "queue")) and os.path.exists(os.path.join(d, "partition")):
        d = os.path.dirname(d)
    return os.path.join(d, "queue")


def read_sysfs(path: str, default: str | None = None) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def zoned_model(path: str) -> str:
    """``none``, ``host-aware`` or ``host-managed`` (``queue/zoned``)."""
    return read_sysfs(os.path.join(queue_dir(path), "zoned"), "none") or "none"


class QueueZoneLimits(NamedTuple):
    """What a disk's ``queue`` folder says about its zones (0 where it says nothing or has no limit)."""

    block_size: int        # logical_block_size, bytes
    zone_sectors: int      # chunk_sectors: zone size in 512-byte sectors
    nr_zones: int
    max_open: int
    max_active: int
    max_append: int        # zone_append_max_bytes, rounded down to whole blocks


def queue_zone_limits(q: str) -> QueueZoneLimits:
    """Zone geometry from sysfs ``queue`` folder ``q`` (see :func:`queue_dir`)."""
    def num(name: str) -> int:
        return int(read_sysfs(os.path.join(q, name), "0") or 0)

    lbs = num("logical_block_size")
    append = num("zone_append_max_bytes")
    return QueueZoneLimits(lbs, num("chunk_sectors"), num("nr_zones"), num("max_open_zones"),
                           num("max_active_zones"), append - append % lbs if lbs else append)


def first_zone_capacity(path: str, zone_sectors: int) -> int | None:
    """Zone 0's capacity in bytes from the zone report, through a read-only open (no exclusive claim,
    nothing written); None when the report is refused."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        cap = _report_fd(fd, path, zone_sectors, 0, 1)[3]
        return int(cap[0]) * SECTOR if cap.size else None
    except (DeviceIOError, DeviceSpecError):
        return None
    finally:
        os.close(fd)


def _report_fd(fd: int, path: str, chunk: int, first: int, n: int):
    """Zones ``first`` .. ``first + n - 1`` of the zoned device open as ``fd`` (sector units):
    start, len, wp, capacity, condition and type arrays."""
    ffi, lib = _lib()
    start = np.zeros(n, np.uint64)
    ln, wp, cap = np.zeros_like(start), np.zeros_like(start), np.zeros_like(start)
    cond, typ = np.zeros(n, np.uint8), np.zeros(n, np.uint8)
    flags = ffi.new("uint32_t *")
    got = 0
    while got < n:
        p = lambda a: ffi.cast(f"{'uint64_t' if a.dtype == np.uint64 else 'uint8_t'} *", a[got:].ctypes.data)
        r = lib.zd_report_zones(fd, (first + got) * chunk, n - got, p(start), p(ln), p(wp), p(cap),
                                p(cond), p(typ), flags)
        if r < 0:
            raise DeviceIOError(f"{path}: zone report failed: {os.strerror(-r)} ({_errname(-r)})")
        if r == 0:
            break
        got += r
    return start[:got], ln[:got], wp[:got], cap[:got], cond[:got], typ[:got]


def is_nvme_namespace(path: str) -> bool:
    return os.path.basename(sysfs_dir(path)).startswith("nvme")


def _errname(e: int) -> str:
    return errno.errorcode.get(e, str(e))


# -------------------------------------------------------------------------------- common I/O
class _DirectIO:
    """O_DIRECT reads/writes from aligned buffers, request counting and the wall clock."""

    path: str
    block_size: int
    _fd: int
    readonly: bool = False

    def _init_io(self) -> None:
        self._io = IoCounters()
        self._busy = 0.0
        self._t0 = time.perf_counter()
        self._stat_lock = threading.Lock()

    def _pwrite(self, offset: int, view: np.ndarray) -> int:
        ffi, lib = _lib()
        buf = _aligned_copy(view)
        t = time.perf_counter()
        r = lib.zd_pwrite(self._fd, ffi.cast("void *", buf.ctypes.data), buf.size, offset)
        dt = time.perf_counter() - t
        if r >= 0:
            with self._stat_lock:
                self._busy += dt
                self._io.wrote(view.size)
        return int(r)

    def _pread(self, offset: int, length: int) -> np.ndarray:
        ffi, lib = _lib()
        buf = aligned_empty(length)
        t = time.perf_counter()
        r = lib.zd_pread(self._fd, ffi.cast("void *", buf.ctypes.data), length, offset)
        dt = time.perf_counter() - t
        if r < 0:
            e = -r
            if e == errno.EINVAL:
                raise InvalidIOError(f"{self.path}: read at {offset} of {length} bytes refused (EINVAL)")
            raise DeviceIOError(f"{self.path}: read at {offset} of {length} bytes failed: "
                                f"{os.strerror(e)} ({_errname(e)})", offset=offset)
        if r < length:
            raise DeviceIOError(f"{self.path}: short read at {offset}: {r} of {length} bytes", offset=offset)
        with self._stat_lock:
            self._busy += dt
            self._io.read(length)
        return buf

    def now(self) -> float:
        """Wall-clock seconds since the device was opened."""
        return time.perf_counter() - self._t0

    def read_batch(self, offsets: np.ndarray, lengths: np.ndarray, qd: int = 32) -> tuple[np.ndarray, np.ndarray]:
        """Read ranges in order (synchronous O_DIRECT I/O: ``qd`` is not used); returns the bytes
        back to back and each read's completion time on ``now()``'s clock."""
        offsets = np.asarray(offsets, np.int64)
        lengths = np.asarray(lengths, np.int64)
        check_batch(offsets, lengths, self.block_size, self._limit(), "read")
        out = np.empty(int(lengths.sum()), np.uint8)
        done = np.empty(offsets.size)
        pos = 0
        for k, (off, n) in enumerate(zip(offsets.tolist(), lengths.tolist())):
            out[pos:pos + n] = self.read(off, n)
            pos += n
            done[k] = self.now()
        return out, done

    def _stats(self) -> DeviceStats:
        with self._stat_lock:
            s = self._io.fill(DeviceStats(clock="wall", device_time_s=self._busy))
        s.media_write_bytes = s.device_write_bytes   # what flash saw is the drive's secret
        return s

    def flush(self) -> None:
        if self._fd >= 0:
            os.fsync(self._fd)

    def close(self) -> None:
        if getattr(self, "_fd", -1) >= 0:
            rdev = os.fstat(self._fd).st_rdev
            os.close(self._fd)
            self._fd = -1
            if self.readonly:
                return
            with _HELD_LOCK:
                if _HELD.get(rdev, 0) > 1:
                    _HELD[rdev] -= 1
                else:
                    _HELD.pop(rdev, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


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


def _open_fd(path: str, exclusive: bool, readonly: bool = False) -> int:
    """Open for O_DIRECT I/O. A read-only handle (``info``, ``zones``) claims nothing: it works on a
    device that is mounted or in use, and does not count in ``_HELD``."""
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
            from ..errors import UnsafeDeviceError

            raise UnsafeDeviceError(f"{path} is busy: it is mounted, used as swap, or open exclusively "
                                    f"by another program") from None
        if e.errno in (errno.EACCES, errno.EPERM):
            raise DeviceSpecError(f"{path}: permission denied (raw block devices need root or the disk group)") from None
        raise DeviceSpecError(f"{path}: {e.strerror}") from None


# -------------------------------------------------------------------------------- zoned
class LinuxZonedDevice(_DirectIO):
    """A host-managed (or host-aware) zoned block device through the kernel's zoned block layer."""

    kind = "linux-zoned"

    def __init__(self, path: str, exclusive: bool = True, use_passthrough: bool | None = None,
                 readonly: bool = False) -> None:
        model = zoned_model(path)
        if model == "none":
            raise NotZonedError(
                f"{path} is not a zoned block device (queue/zoned is 'none'): use it as the conventional "
                f"baseline (--baseline-device {path}), or give a ZNS namespace (e.g. /dev/nvme0n2)")
        self.path = self.url = path
        self.zoned_model = model
        q = queue_dir(path)
        self.readonly = readonly
        self._fd = -1
        self._fd = _open_fd(path, exclusive, readonly)
        self._init_io()
        ffi, lib = _lib()
        lim = queue_zone_limits(q)
        lbs = lim.block_size or lib.zd_logical_block_size(self._fd)
        chunk = lim.zone_sectors
        nr = lim.nr_zones or lib.zd_nr_zones(self._fd)
        if chunk <= 0 or nr <= 0:
            self.close()
            raise DeviceSpecError(f"{path}: sysfs gives no zone size/count (chunk_sectors={chunk}, nr_zones={nr})")
        self._nr = nr
        self._chunk = chunk
        self.block_size = lbs
        self._report_cap = self._report_raw(0, min(nr, 1))
        cap0 = int(self._report_cap[3][0]) * SECTOR
        max_append = lim.max_append - lim.max_append % lbs
        self._max_sectors = int(read_sysfs(os.path.join(q, "max_sectors_kb"), "0") or 0) * 1024
        try:
            self.geometry = ZoneGeometry(
                nr_zones=nr, zone_size=chunk * SECTOR, zone_capacity=cap0, block_size=lbs,
                max_open=lim.max_open, max_active=lim.max_active,
                max_append=max_append)
        except Exception:
            self.close()
            raise
        self.nsid = None
        if use_passthrough is not False and is_nvme_namespace(path):
            r = lib.zd_nvme_nsid(self._fd)
            self.nsid = int(r) if r > 0 else None
        self._passthrough = self.nsid is not None and use_passthrough is not False
        self._zone_locks = [threading.Lock() for _ in range(min(nr, 1 << 16))]

    # -- zones -------------------------------------------------------------------------------------
    def _limit(self) -> int:
        return self.geometry.size

    def _report_raw(self, first: int, n: int):
        return _report_fd(self._fd, self.path, self._chunk, first, n)

    def report_zones(self) -> list[Zone]:
        start, ln, wp, cap, cond, _ = self._report_raw(0, self._nr)
        return [Zone(i, int(s) * SECTOR, int(n) * SECTOR, int(c) * SECTOR, int(w) * SECTOR, ZoneCond(int(k)))
                for i, (s, n, w, c, k) in enumerate(zip(start.tolist(), ln.tolist(), wp.tolist(),
                                                         cap.tolist(), cond.tolist()))]

    def report_zone(self, z: int) -> Zone:
        """One zone's report entry (one small ioctl)."""
        z = self._zone_index(z)
        start, ln, wp, cap, cond, _ = self._report_raw(z, 1)
        return Zone(z, int(start[0]) * SECTOR, int(ln[0]) * SECTOR, int(cap[0]) * SECTOR,
                    int(wp[0]) * SECTOR, ZoneCond(int(cond[0])))

    def _zone_index(self, z: int) -> int:
        if not 0 <= z < self.geometry.nr_zones:
            raise InvalidIOError(f"zone {z} does not exist (the device has {self.geometry.nr_zones} zones)")
        return int(z)

    def _mgmt(self, action: str, z: int) -> None:
        ffi, lib = _lib()
        z = self._zone_index(z)
        g = self.geometry
        r = lib.zd_zone_mgmt(self._fd, _OPS[action], g.zone_start(z) // SECTOR, g.zone_size // SECTOR)
        if r < 0:
            raise self._zone_error(-r, z, f"{action} zone {z}")

    def _zone_error(self, e: int, z: int, what: str, offset: int | None = None, length: int = 0):
        """The typed error for errno ``e`` from an operation on zone ``z`` (for a write: ``offset``
        and ``length``; an EIO that no zone rule explains is a media error, DeviceIOError)."""
        name = _errname(e)
        if e == errno.EINVAL:
            return InvalidIOError(f"{self.path}: {what} refused by the kernel (EINVAL)")
        try:
            rep = self.report_zone(z)
            cond = rep.cond
        except Exception:
            rep = cond = None
        if (e == errno.EIO and offset is not None and rep is not None and (cond.is_active or cond == ZoneCond.EMPTY)
                and offset == rep.wp and offset + length <= rep.start + rep.capacity):
            return DeviceIOError(f"{self.path}: {what} failed at the write pointer: {os.strerror(e)} (EIO)",
                                 offset=offset)
        if cond in (ZoneCond.OFFLINE, ZoneCond.READ_ONLY):
            return DeviceIOError(f"{self.path}: {what}: zone {z} is {cond.name} ({name})", offset=offset)
        if e in (errno.EIO, errno.EOVERFLOW, errno.ETOOMANYREFS):
            state = f", zone is {cond.name}" if cond is not None else ""
            return ZoneStateError(f"{self.path}: {what} failed: {os.strerror(e)} ({name}{state})",
                                  zone=z, errno_name=name)
        return DeviceIOError(f"{self.path}: {what} failed: {os.strerror(e)} ({name})", offset=offset)

    def reset_zone(self, z: int) -> None:
        self._mgmt("reset", z)

    def reset_all(self) -> None:
        """Reset every zone with one request (REQ_OP_ZONE_RESET_ALL)."""
        ffi, lib = _lib()
        r = lib.zd_zone_mgmt(self._fd, 0, 0, self.geometry.size // SECTOR)
        if r < 0:
            raise DeviceIOError(f"{self.path}: reset of all zones failed: {os.strerror(-r)} ({_errname(-r)})")

    def open_zone(self, z: int) -> None:
        self._mgmt("open", z)

    def close_zone(self, z: int) -> None:
        self._mgmt("close", z)

    def finish_zone(self, z: int) -> None:
        self._mgmt("finish", z)

    # -- data path ---------------------------------------------------------------------------------
    def write(self, offset: int, data: Buffer) -> None:
        view = as_bytes_view(data)
        g = self.geometry
        z = check_zone_write(g, offset, view.size)
        rel = offset - g.zone_start(z)
        if self._max_sectors and view.size > self._max_sectors and rel + view.size > g.zone_capacity:
            # the kernel would split this write and the first parts would land: refuse it whole
            raise ZoneStateError(f"zone {z}: {view.size} bytes at +{rel} would pass the zone capacity "
                                 f"{g.zone_capacity}", zone=z)
        r = self._pwrite(offset, view)
        if r < 0:
            raise self._zone_error(-r, z, f"write of {view.size} bytes at {offset}", offset=offset,
                                   length=view.size)

    def append(self, z: int, data: Buffer) -> int:
        view = as_bytes_view(data)
        g = self.geometry
        check_append(g, view.size)
        z = self._zone_index(z)
        if self._passthrough:
            ffi, lib = _lib()
            buf = _aligned_copy(view)
            alba = ffi.new("uint64_t *")
            t = time.perf_counter()
            r = lib.zd_nvme_zone_append(self._fd, self.nsid, g.zone_start(z) // g.block_size,
                                        ffi.cast("void *", buf.ctypes.data), view.size, g.block_size, alba)
            dt = time.perf_counter() - t
            if r == 0:
                with self._stat_lock:
                    self._busy += dt
                    self._io.wrote(view.size)
                return int(alba[0]) * g.block_size
            if r < 0 and -r in (errno.ENOTTY, errno.EPERM, errno.EACCES, errno.EOPNOTSUPP):
                self._passthrough = False          # passthrough refused: fall back for good
            elif r < 0:
                raise self._zone_error(-r, z, f"zone append of {view.size} bytes to zone {z}")
            else:
                raise self._nvme_error(int(r), z, view.size)
        with self._zone_locks[z % len(self._zone_locks)]:
            wp = self.report_zone(z)
            if wp.cond in (ZoneCond.FULL, ZoneCond.READ_ONLY, ZoneCond.OFFLINE):
                raise self._zone_error(errno.EIO, z, f"zone append to zone {z}")
            self.write(wp.wp, view)
            return wp.wp

    def _nvme_error(self, status: int, z: int, n: int):
        sc = status & 0x7FF
        name, kind, text = _NVME_ZONE_STATUS.get(sc, ("EIO", "media", f"NVMe status {sc:#x}"))
        what = f"{self.path}: zone append of {n} bytes to zone {z}: {text} (NVMe status {sc:#x}, {name})"
        if kind == "invalid":
            return InvalidIOError(what)
        if kind == "media":
            return DeviceIOError(what, offset=self.geometry.zone_start(z))
        return ZoneStateError(what, zone=z, errno_name=name)

    def read(self, offset: int, length: int) -> np.ndarray:
        g = self.geometry
        check_aligned(offset, length, g.block_size, g.size, "read")
        end = offset + length
        if g.zone_of(offset) == g.zone_of(end - 1):
            return self._pread(offset, length)
        parts, pos = [], offset                # split at zone boundaries (no cross-zone reads)
        while pos < end:
            stop = min(end, (g.zone_of(pos) + 1) * g.zone_size)
            parts.append(self._pread(pos, stop - pos))
            pos = stop
        return np.concatenate(parts)

    # -- misc ----------------------------------------------------------------------------------------
    def stats(self) -> DeviceStats:
        return self._stats()

    def describe(self) -> dict:
        report = self.report_zones()
        dev = sysfs_dir(self.path)
        model = read_sysfs(os.path.join(dev, "device", "model")) or read_sysfs(os.path.join(dev, "device", "device", "model"))
        return {"url": self.url, "kind": self.kind, "zoned": True, "path": self.path,
                "zoned_model": self.zoned_model, "geometry": self.geometry.as_dict(), "preset": None,
                "clock": "wall", "open_zones": sum(z.cond.is_open for z in report),
                "active_zones": sum(z.cond.is_active for z in report), "nvme_nsid": self.nsid,
                "zone_append": "nvme-passthrough" if self._passthrough else "write-at-wp", "model": model}


# -------------------------------------------------------------------------------- conventional
class LinuxBlockDevice(_DirectIO):
    """A conventional (non-zoned) block device: O_DIRECT I/O, discard through BLKDISCARD."""

    kind = "linux-block"

    def __init__(self, path: str, exclusive: bool = True, readonly: bool = False) -> None:
        self.path = self.url = path
        self.readonly = readonly
        self._fd = -1
        self._fd = _open_fd(path, exclusive, readonly)
        self._init_io()
        ffi, lib = _lib()
        size = int(lib.zd_size_bytes(self._fd))
        lbs = int(lib.zd_logical_block_size(self._fd))
        if size < 0 or lbs <= 0:
            self.close()
            raise DeviceSpecError(f"{path}: cannot read the device size/block size")
        self.block_size = lbs
        self.size = size - size % _ALIGN
        if self.size < _ALIGN:
            self.close()
            raise DeviceSpecError(f"{path} is {size} bytes: too small for a device")

    def _limit(self) -> int:
        return self.size

    def write(self, offset: int, data: Buffer) -> None:
        view = as_bytes_view(data)
        check_aligned(offset, view.size, self.block_size, self.size, "write")
        r = self._pwrite(offset, view)
        if r < 0:
            e = -r
            if e == errno.EINVAL:
                raise InvalidIOError(f"{self.path}: write at {offset} of {view.size} bytes refused (EINVAL)")
            raise DeviceIOError(f"{self.path}: write at {offset} failed: {os.strerror(e)} ({_errname(e)})",
                                offset=offset)

    def read(self, offset: int, length: int) -> np.ndarray:
        check_aligned(offset, length, self.block_size, self.size, "read")
        return self._pread(offset, length)

    def write_batch(self, offsets: np.ndarray, data: np.ndarray, lengths: np.ndarray, qd: int = 32) -> np.ndarray:
        """Write ranges in order (``data`` holds them back to back); returns completion times."""
        view = as_bytes_view(data)
        offsets = np.asarray(offsets, np.int64)
        lengths = np.asarray(lengths, np.int64)
        if int(lengths.sum()) != view.size:
            raise InvalidIOError(f"write batch: lengths add up to {int(lengths.sum())}, data holds {view.size}")
        check_batch(offsets, lengths, self.block_size, self.size, "write")
        done, pos = np.empty(offsets.size), 0
        for k, (off, n) in enumerate(zip(offsets.tolist(), lengths.tolist())):
            self.write(off, view[pos:pos + n])
            pos += n
            done[k] = self.now()
        return done

    def discard(self, offset: int, length: int) -> None:
        import fcntl
        import struct

        check_aligned(offset, length, self.block_size, self.size, "discard")
        try:
            fcntl.ioctl(self._fd, 0x1277, struct.pack("QQ", offset, length))   # BLKDISCARD
        except OSError as e:
            if e.errno not in (errno.EOPNOTSUPP, errno.ENOTTY):
                raise DeviceIOError(f"{self.path}: discard at {offset} failed: {e.strerror}", offset=offset) from None
            return                                  # no discard support: the data stays, which is allowed
        with self._stat_lock:
            self._io.discard_bytes += length

    def stats(self) -> DeviceStats:
        return self._stats()

    def describe(self) -> dict:
        return {"url": self.url, "kind": self.kind, "zoned": False, "path": self.path,
                "size": self.size, "block_size": self.block_size, "clock": "wall", "preset": None}
