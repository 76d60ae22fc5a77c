"""``LinuxZonedDevice``: a host-managed zoned block device (``/dev/nvmeXnY`` ZNS namespace, SMR disk,
``null_blk`` zoned) through the kernel's zoned block layer, with real I/O on the wall clock.

- Geometry comes from sysfs (``queue/zoned``, ``chunk_sectors``, ``nr_zones``, ``max_open_zones``,
  ``max_active_zones``, ``zone_append_max_bytes``, ``logical_block_size``) and the zone report.
- Zone report and reset/open/close/finish go through the kernel's blkzoned ioctls
  (``native/zoned.c``, the ``zswap_host._zoned`` extension).
- Data moves with ``O_DIRECT`` reads and writes from block-aligned buffers (``direct_io.py``), in
  batches through the device's I/O engine (``io_engine.py``: io_uring at queue depth, or sync).
- Zone append on an NVMe namespace is the NVMe Zone Append command (opcode 0x7d): the device picks
  the position and the completion says which LBA it chose. The append path (``append_path``):
  ``uring-cmd`` (io_uring passthrough on the generic char device ``/dev/ngXnY``), ``ioctl`` (one at
  a time; the sync engine, or when the char device or the big ring is unavailable: one line on
  stderr says why) or ``write-at-wp`` (other zoned devices, or passthrough refused); its own object,
  ``ZoneAppender`` (``linux_zone_append.py``).

Kernel errors become the typed errors the conformance suite checks: a write or zone operation that
breaks the zone rules is ``ZoneStateError`` with the kernel's errno name (``EIO``, ``EOVERFLOW`` for
the active-zone limit, ``ETOOMANYREFS`` for the open-zone limit); misaligned or out-of-range I/O is
``InvalidIOError``; an EIO that no zone rule explains (media error) is ``DeviceIOError``.
"""

from __future__ import annotations

import errno
import os
import sys

import numpy as np

from ..errors import DeviceIOError, DeviceSpecError, InvalidIOError, NotZonedError, ZoneStateError
from .blkzoned import ZONE_OPS, errname, report_fd, zoned_lib
from .buffers import Buffer, as_bytes_view
from .direct_io import DirectIO, open_direct
from .io_engine import DEFAULT_DEPTH, UringEngine
from .linux_zone_append import ZoneAppender
from .request_checks import check_aligned, check_append, check_zone_write
from .sysfs import SECTOR, generic_char_device, is_nvme_namespace, max_transfer_bytes, queue_dir, queue_zone_limits, read_sysfs, sysfs_dir, zoned_model
from .units import ZoneUnits
from .zone import Zone, ZoneCond, ZoneGeometry


class LinuxZonedDevice(DirectIO, ZoneUnits):
    """A host-managed (or host-aware) zoned block device through the kernel's zoned block layer."""

    kind = "linux-zoned"
    zoned = True
    interface = "zns"
    appender: ZoneAppender | None = None      # the zone appends (made once the geometry is known)

    def __init__(self, path: str, exclusive: bool = True, use_passthrough: bool | None = None,
                 readonly: bool = False, io_engine: str | None = None, io_depth: int = DEFAULT_DEPTH) -> None:
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
        self._fd = open_direct(path, exclusive, readonly)
        ffi, lib = zoned_lib()
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
        # A passthrough command is never split: its pages must fit the queue's segment limit, and a
        # buffer that is not page aligned spans one page more than its length
        segs = int(read_sysfs(os.path.join(q, "max_segments"), "0") or 0)
        if segs > 1 and max_append > (segs - 1) * 4096:
            max_append = (segs - 1) * 4096 - ((segs - 1) * 4096) % lbs
        self._max_sectors = max_transfer_bytes(q)
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
        self.appender = ZoneAppender(self)
        self.appender.passthrough = self.nsid is not None and use_passthrough is not False
        try:
            self._init_engine(io_engine, io_depth)
        except Exception:
            self.close()
            raise

    def _init_engine(self, io_engine: str | None, io_depth: int) -> None:
        """The I/O engine, and for an NVMe namespace on io_uring its generic char device (appends as
        ``IORING_OP_URING_CMD``); else the ioctl or write-at-wp append path, saying why."""
        ap = self.appender
        ng = generic_char_device(self.path) if ap.passthrough and io_engine != "sync" else None
        why = None
        if ng is not None:
            try:
                ap.ngfd = os.open(ng, (os.O_RDONLY if self.readonly else os.O_RDWR) | os.O_CLOEXEC)
            except OSError as e:
                why = f"cannot open {ng}: {e.strerror}"
        elif ap.passthrough and io_engine != "sync":
            why = "no NVMe generic char device (/dev/ngXnY; Linux >= 5.13)"
        self._init_io(io_engine, io_depth)
        if ap.ngfd >= 0 and self.io_engine == "uring":
            # appends get their own ring (big SQEs for the NVMe command) and lock: a read batch and
            # an append batch from two threads run at once (overlapped_io)
            try:
                ap.engine = UringEngine(io_depth, passthrough=True)
            except OSError as e:
                why = f"io_uring passthrough ring: {e.strerror}"
        if ap.ngfd >= 0 and ap.engine is None:
            os.close(ap.ngfd)                    # no uring (said so): appends by ioctl
            ap.ngfd = -1
        if why and self.io_engine == "uring":
            print(f"zswap-host: {self.path}: zone append through the sync ioctl, one at a time: {why}",
                  file=sys.stderr)

    @property
    def append_path(self) -> str:
        """``uring-cmd``, ``ioctl`` or ``write-at-wp``: how :meth:`append` / :meth:`append_batch` write."""
        return self.appender.append_path

    @property
    def overlapped_io(self) -> bool:
        """Reads (the data ring) and zone appends (the passthrough ring) run at once from two threads."""
        return self.append_path == "uring-cmd"

    def engine_stats(self) -> dict:
        """The data ring's counters; with appends on their own ring, its batches and requests added
        in, and the most appends it had in flight to one zone."""
        st = dict(self._engine.stats())
        appender = self.appender
        if appender.engine is not None:
            ap = appender.engine.stats()
            for k in ("batches", "requests", "submit_calls"):
                st[k] += ap[k]
            st["max_in_flight"] = max(st["max_in_flight"], ap["max_in_flight"])
        st.update(append_path=self.append_path, appends=appender.count,
                  max_appends_per_zone=max(appender.max_per_zone, ap["max_appends_per_zone"]) if
                  appender.engine is not None else appender.max_per_zone,
                  max_batches_at_once=self.tally.max_batches_at_once)
        return st

    def close(self) -> None:
        if self.appender is not None:
            self.appender.close()
        super().close()

    # -- zones -------------------------------------------------------------------------------------
    def _limit(self) -> int:
        return self.geometry.size

    def _pieces(self, offsets, lengths):
        """Ranges split at zone boundaries (the kernel refuses reads across zones)."""
        zs = self.geometry.zone_size
        first, last = offsets // zs, (offsets + lengths - 1) // zs
        if (first == last).all():
            return offsets, lengths, None
        cnt = last - first + 1
        owner = np.repeat(np.arange(offsets.size), cnt)
        zone = first[owner] + (np.arange(owner.size) - np.repeat(np.cumsum(cnt) - cnt, cnt))
        start = np.maximum(offsets[owner], zone * zs)
        end = np.minimum((offsets + lengths)[owner], (zone + 1) * zs)
        return start, end - start, owner

    def _report_raw(self, first: int, n: int):
        return report_fd(self._fd, self.path, self._chunk, first, n)

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
        ffi, lib = zoned_lib()
        z = self._zone_index(z)
        g = self.geometry
        r = lib.zd_zone_mgmt(self._fd, ZONE_OPS[action], g.zone_start(z) // SECTOR, g.zone_size // SECTOR)
        if r < 0:
            raise self.zone_error(-r, z, f"{action} zone {z}")

    def zone_error(self, e: int, z: int, what: str, offset: int | None = None, length: int = 0):
        """The typed error for errno ``e`` from an operation on zone ``z`` (for a write: ``offset``
        and ``length``; an EIO that no zone rule explains is a media error, DeviceIOError); the
        appends' too (``ZoneAppender``)."""
        name = errname(e)
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
        ffi, lib = zoned_lib()
        r = lib.zd_zone_mgmt(self._fd, 0, 0, self.geometry.size // SECTOR)
        if r < 0:
            raise DeviceIOError(f"{self.path}: reset of all zones failed: {os.strerror(-r)} ({errname(-r)})")

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
            raise self.zone_error(-r, z, f"write of {view.size} bytes at {offset}", offset=offset,
                                  length=view.size)

    def append(self, z: int, data: Buffer) -> int:
        view = as_bytes_view(data)
        check_append(self.geometry, view.size)
        z = self._zone_index(z)
        offsets, failures = self.append_batch(np.array([z]), view, np.array([view.size]), 1)
        if failures:
            raise failures[0][1]
        return int(offsets[0])

    def append_batch(self, zones, data: Buffer, lengths, qd: int = 32) -> tuple[np.ndarray, list]:
        """See ``ZonedDevice.append_batch``: through the append path (``append_path``)."""
        return self.appender.append_batch(zones, data, lengths, qd)

    def append_run(self, zones: np.ndarray, segs: tuple, lengths: np.ndarray, qd: int, expect: int):
        """See ``ZonedDevice.append_run``: one C call on the uring-cmd path
        (``ZoneAppender.append_run``)."""
        return self.appender.append_run(zones, segs, lengths, qd, expect)

    def run_writer(self, run_addr: int):
        """A writer of append runs for a caller's own C call on the uring-cmd path, None on any other
        (``ZoneAppender.run_writer``)."""
        return self.appender.run_writer(run_addr)

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
    def describe(self) -> dict:
        report = self.report_zones()
        dev = sysfs_dir(self.path)
        model = read_sysfs(os.path.join(dev, "device", "model")) or read_sysfs(os.path.join(dev, "device", "device", "model"))
        return {"url": self.url, "kind": self.kind, "zoned": True, "path": self.path,
                "zoned_model": self.zoned_model, "geometry": self.geometry.as_dict(), "preset": None,
                "clock": "wall", "open_zones": sum(z.cond.is_open for z in report),
                "active_zones": sum(z.cond.is_active for z in report), "nvme_nsid": self.nsid,
                "zone_append": self.append_path, "io_engine": self.engine_stats(), "model": model,
                "units": self.unit_traits().as_dict()}
