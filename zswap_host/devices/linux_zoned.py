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
  ``uring-cmd`` sends a batch of them through ``IORING_OP_URING_CMD`` on the namespace's generic
  char device ``/dev/ngXnY`` (several in flight to one zone); ``ioctl`` sends one at a time through
  ``NVME_IOCTL_IO64_CMD`` (the sync engine, or when the char device or the big ring is unavailable:
  one line on stderr says why); on other zoned devices (or if passthrough is refused)
  ``write-at-wp`` writes at the write pointer, in order and one in flight per zone (the rule
  mq-deadline enforces), zones in parallel.

Kernel errors become the typed errors the conformance suite checks: a write or zone operation that
breaks the zone rules is ``ZoneStateError`` with the kernel's errno name (``EIO``, ``EOVERFLOW`` for
the active-zone limit, ``ETOOMANYREFS`` for the open-zone limit); misaligned or out-of-range I/O is
``InvalidIOError``; an EIO that no zone rule explains (media error) is ``DeviceIOError``.
"""

from __future__ import annotations

import errno
import os
import sys
import threading
import time

import numpy as np

from ..errors import DeviceIOError, DeviceSpecError, InvalidIOError, NotZonedError, ZoneStateError
from .buffers import Buffer, as_bytes_view
from .request_checks import check_aligned, check_append, check_append_batch, check_zone_write
from .serial_batches import append_run_batched
from .blkzoned import ZONE_OPS, errname, report_fd, zoned_lib
from .direct_io import DirectIO, aligned_copy, gathered, open_direct
from .io_engine import DEFAULT_DEPTH, UringEngine
from .sysfs import SECTOR, generic_char_device, is_nvme_namespace, max_transfer_bytes, queue_dir, queue_zone_limits, read_sysfs, sysfs_dir, zoned_model
from .units import ZoneUnits
from .zone import Zone, ZoneCond, ZoneGeometry

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
class LinuxZonedDevice(DirectIO, ZoneUnits):
    """A host-managed (or host-aware) zoned block device through the kernel's zoned block layer."""

    kind = "linux-zoned"
    zoned = True
    interface = "zns"

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
        self._ngfd = -1
        self._append_engine: UringEngine | None = None    # appends' own ring (uring-cmd path)
        self._append_lock = threading.Lock()
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
        self._passthrough = self.nsid is not None and use_passthrough is not False
        self._zone_locks = [threading.Lock() for _ in range(min(nr, 1 << 16))]
        self._appends = 0
        self._max_appends_zone = 0
        try:
            self._init_engine(io_engine, io_depth)
        except Exception:
            self.close()
            raise

    def _init_engine(self, io_engine: str | None, io_depth: int) -> None:
        """The I/O engine, and for an NVMe namespace on io_uring its generic char device (appends as
        ``IORING_OP_URING_CMD``); else the ioctl or write-at-wp append path, saying why."""
        ng = generic_char_device(self.path) if self._passthrough and io_engine != "sync" else None
        why = None
        if ng is not None:
            try:
                self._ngfd = os.open(ng, (os.O_RDONLY if self.readonly else os.O_RDWR) | os.O_CLOEXEC)
            except OSError as e:
                why = f"cannot open {ng}: {e.strerror}"
        elif self._passthrough and io_engine != "sync":
            why = "no NVMe generic char device (/dev/ngXnY; Linux >= 5.13)"
        self._init_io(io_engine, io_depth)
        if self._ngfd >= 0 and self.io_engine == "uring":
            # appends get their own ring (big SQEs for the NVMe command) and lock: a read batch and
            # an append batch from two threads run at once (overlapped_io)
            try:
                self._append_engine = UringEngine(io_depth, passthrough=True)
            except OSError as e:
                why = f"io_uring passthrough ring: {e.strerror}"
        if self._ngfd >= 0 and self._append_engine is None:
            os.close(self._ngfd)                 # no uring (said so): appends by ioctl
            self._ngfd = -1
        if why and self.io_engine == "uring":
            print(f"zswap-host: {self.path}: zone append through the sync ioctl, one at a time: {why}",
                  file=sys.stderr)

    @property
    def append_path(self) -> str:
        """``uring-cmd``, ``ioctl`` or ``write-at-wp``: how :meth:`append` / :meth:`append_batch` write."""
        if self._ngfd >= 0 and self._passthrough:
            return "uring-cmd"
        return "ioctl" if self._passthrough else "write-at-wp"

    @property
    def overlapped_io(self) -> bool:
        """Reads (the data ring) and zone appends (the passthrough ring) run at once from two threads."""
        return self.append_path == "uring-cmd"

    def engine_stats(self) -> dict:
        """The data ring's counters; with appends on their own ring, its batches and requests added
        in, and the most appends it had in flight to one zone."""
        st = dict(self._engine.stats())
        if self._append_engine is not None:
            ap = self._append_engine.stats()
            for k in ("batches", "requests", "submit_calls"):
                st[k] += ap[k]
            st["max_in_flight"] = max(st["max_in_flight"], ap["max_in_flight"])
        st.update(append_path=self.append_path, appends=self._appends,
                  max_appends_per_zone=max(self._max_appends_zone, ap["max_appends_per_zone"]) if
                  self._append_engine is not None else self._max_appends_zone,
                  max_batches_at_once=self._max_batches_at_once)
        return st

    def close(self) -> None:
        if self._ngfd >= 0:
            fd, self._ngfd = self._ngfd, -1
            os.close(fd)
        if self._append_engine is not None:
            self._append_engine.close()
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
            raise self._zone_error(-r, z, f"{action} zone {z}")

    def _zone_error(self, e: int, z: int, what: str, offset: int | None = None, length: int = 0):
        """The typed error for errno ``e`` from an operation on zone ``z`` (for a write: ``offset``
        and ``length``; an EIO that no zone rule explains is a media error, DeviceIOError)."""
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
            raise self._zone_error(-r, z, f"write of {view.size} bytes at {offset}", offset=offset,
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
        if self._ngfd >= 0 and self._passthrough:
            out = self._append_lean(zones, data, lengths, qd)
            if out is not None:
                return out
        if self._ngfd >= 0 and self._passthrough and not isinstance(data, (list, tuple)):
            # uring-cmd with one buffer (the store's batch of write units): no view per unit, the
            # requests' addresses are the buffer's plus the lengths before them
            zones, lengths, view = check_append_batch(self.geometry, zones, data, lengths, views=False)
            if zones.size == 0:
                return np.zeros(0, np.int64), []
            return self._append_uring(zones, None, lengths, qd, view)
        zones, lengths, units = check_append_batch(self.geometry, zones, data, lengths)
        if zones.size == 0:
            return np.zeros(0, np.int64), []
        if self.append_path == "uring-cmd":
            offsets, failures = self._append_uring(zones, units, lengths, qd)
        elif self._passthrough:
            offsets, failures = np.full(zones.size, -1, np.int64), []
            for k, (z, unit) in enumerate(zip(zones.tolist(), units)):
                try:
                    offsets[k] = self._append_ioctl(z, unit)
                except (DeviceIOError, ZoneStateError, InvalidIOError) as e:
                    failures.append((k, e))
        else:
            offsets, failures = self._append_at_wp(zones, units, lengths, qd)
        return offsets, failures

    def _append_lean(self, zones, data, lengths, qd: int):
        """The store's usual batch on the uring-cmd path in a few calls (each Python call costs tens
        of microseconds in the TCG guest, more than the ring's own work per append): at most
        ``UringEngine.SMALL`` appends from one buffer or a few (numpy, C-contiguous, dword aligned,
        each holding whole requests back to back), checked on ints, sent through the engine's
        ``append_small``. None, with nothing done, for any other batch (the general path checks
        it and names what is wrong). A batch with a failed request goes to ``_append_results``."""
        eng = self._append_engine
        if type(zones) is not np.ndarray or type(lengths) is not np.ndarray:
            return None
        zl, ll = zones.tolist(), lengths.tolist()
        n = len(ll)
        small = getattr(eng, "append_small", None)
        if not 0 < n <= 64 or len(zl) != n or small is None or zones.ndim != 1:
            return None
        g = self.geometry
        limit, bs, nz = g.max_append or g.zone_size, g.block_size, g.nr_zones
        addrs, k = [], 0
        for seg in (data if type(data) is list or type(data) is tuple else (data,)):
            if type(seg) is not np.ndarray or not seg.flags.c_contiguous:
                return None
            pos = eng.address(seg)
            left = seg.nbytes
            if pos % 4:
                return None
            while left > 0 and k < n:
                ln, z = ll[k], zl[k]
                if ln <= 0 or ln > limit or ln % bs or ln > left or z < 0 or z >= nz:
                    return None
                addrs.append(pos)
                pos, left, k = pos + ln, left - ln, k + 1
            if left:
                return None
        if k != n:
            return None
        with self._append_lock:
            self._batch_begins()
            try:
                t = time.perf_counter()
                res, alba = small(self._ngfd, self.nsid, bs, g.zone_size // bs, nz, qd, zl, ll, addrs)
                dt = time.perf_counter() - t
            finally:
                self._batch_ends()
        offsets = alba
        offsets *= bs
        if any(res):
            return self._append_results(np.asarray(zones, np.int64), None, np.asarray(lengths, np.int64), qd, data,
                                        np.array(res, np.int32), offsets, dt)
        self._count_landed(ll, dt)
        return offsets, []

    def append_run(self, zones: np.ndarray, segs: tuple, lengths: np.ndarray, qd: int, expect: int):
        """``append_batch(zones, segs, lengths, qd)`` for the store's usual batch, which expects the
        units to land back to back in order from byte ``expect``: True when they did (counted as
        any batch), else ``append_batch``'s (offsets, failures). On the uring-cmd path one C call
        (``UringEngine.append_run``) cuts, sends, reaps and checks them; any other path, or a batch
        that call refuses with nothing sent, is ``append_batch`` (which checks it and names what is
        wrong)."""
        eng = self._append_engine
        run = getattr(eng, "append_run", None)
        g = self.geometry
        bs = g.block_size
        if self._ngfd >= 0 and self._passthrough and run is not None and type(zones) is np.ndarray \
                and type(lengths) is np.ndarray and zones.dtype == lengths.dtype == np.int64 and expect % bs == 0:
            with self._append_lock:
                self._batch_begins()
                try:
                    t = time.perf_counter()
                    r, res, alba = run(self._ngfd, self.nsid, bs, g.zone_size // bs, g.nr_zones, qd, segs, lengths,
                                       zones, expect // bs, g.max_append or g.zone_size)
                    dt = time.perf_counter() - t
                finally:
                    self._batch_ends()
            if r == 1:
                self._count_landed(lengths.tolist(), dt)
                return True
            if r == 0:
                alba *= bs
                if any(res):
                    return self._append_results(zones, None, lengths, qd, segs, np.array(res, np.int32), alba, dt)
                self._count_landed(lengths.tolist(), dt)
                return alba, []
        return append_run_batched(self, zones, segs, lengths, qd, expect)

    def run_writer(self, run_addr: int):
        """A writer of append runs (``native/append_run.h``: the caller's ``zs_run`` at ``run_addr``)
        for a caller's own C call, on the uring-cmd path (``devices/uring_store.py``); None on any
        other path."""
        eng = self._append_engine
        if self._ngfd < 0 or not self._passthrough or not hasattr(getattr(eng, "lib", None), "ur_run_append"):
            return None
        from .uring_store import RunPort, RunTarget, UringRunWriter
        g = self.geometry
        target = RunTarget(self._ngfd, self.nsid, g.block_size, g.zone_size // g.block_size, g.nr_zones,
                           g.max_append or g.zone_size)
        port = RunPort(usable=lambda: self._passthrough and self._append_engine is eng, held=self._run_held,
                       count_landed=self._count_landed, results=self._append_results)
        return UringRunWriter(eng, run_addr, target, port)

    def _run_held(self, call):
        """``call()`` inside one append batch of this device (its append lock held): (its result,
        the wall seconds it took)."""
        with self._append_lock:
            self._batch_begins()
            try:
                t = time.perf_counter()
                rc = call()
                return rc, time.perf_counter() - t
            finally:
                self._batch_ends()

    def _count_landed(self, ll: list, dt: float) -> None:
        """Stats of a uring-cmd batch whose appends all landed (``ll``: their lengths as ints, counted
        without numpy). The most appends in flight per zone is the engine's, read by engine_stats."""
        with self._stat_lock:
            self._busy += dt
            io = self._io
            io.write_bytes += sum(ll)
            hist = io.write_hist
            for ln in ll:
                hist[ln] += 1
            self._appends += len(ll)

    def _count_appends(self, n: int, per_zone: int) -> None:
        with self._stat_lock:
            self._appends += n
            self._max_appends_zone = max(self._max_appends_zone, per_zone)

    def _append_uring(self, zones: np.ndarray, units: list[np.ndarray] | None, lengths: np.ndarray, qd: int,
                      view: np.ndarray | None = None):
        """NVMe Zone Appends through io_uring passthrough, each request straight from its unit's
        memory (``units``, or ``view`` holding them back to back); a refused passthrough falls back
        for good to the write-at-wp path (and the refused requests are redone there)."""
        g = self.geometry
        eng = self._append_engine
        # NVMe DMA needs dword alignment; max_append leaves room for a buffer that is not page aligned
        if view is not None:
            base = eng.address(view)
            if base % 4:                        # lengths are whole blocks: one aligned copy serves all
                view = aligned_copy(view)
                base = eng.address(view)
            addrs, pos = [], base
            for n in lengths.tolist():
                addrs.append(pos)
                pos += n
        else:                                   # a unit per buffer (a write buffer's unit and the caller's)
            addrs = []
            for k, u in enumerate(units):
                a = eng.address(u)
                if a % 4:
                    u = units[k] = aligned_copy(u)
                    a = eng.address(u)
                addrs.append(a)
        with self._append_lock:
            self._batch_begins()
            try:
                t = time.perf_counter()
                res, alba, _ = eng.append(self._ngfd, self.nsid, g.block_size, g.zone_size // g.block_size, units,
                                          lengths, zones, g.nr_zones, qd, addrs)
                dt = time.perf_counter() - t
            finally:
                self._batch_ends()
        offsets = alba.view(np.int64)
        offsets *= g.block_size
        return self._append_results(zones, units, lengths, qd, view, res, offsets, dt)

    def _append_results(self, zones: np.ndarray, units: list | None, lengths: np.ndarray, qd: int, data,
                        res: np.ndarray, offsets: np.ndarray, dt: float):
        """Account for a uring-cmd batch (``res``: 0 or -errno or NVMe status per request, ``offsets``
        where each landed) and type its failures; a refused passthrough redoes the refused requests
        at the write pointer (``units``: a view per request, or None to cut them from ``data``)."""
        g = self.geometry
        if lengths.size <= 64 and not any(res.tolist()):   # the usual batch: every append landed
            self._count_landed(lengths.tolist(), dt)
            return offsets, []
        if not res.any():
            with self._stat_lock:
                self._busy += dt
                self._io.wrote_many(lengths)
            self._count_appends(lengths.size, self._append_engine.max_appends_per_zone())
            return offsets, []
        if units is None:                               # per-unit views for the failure paths
            units = check_append_batch(g, zones, data, lengths)[2]
        ok = res == 0
        offsets[~ok] = -1
        with self._stat_lock:
            self._busy += dt
            self._io.wrote_many(lengths[ok])
        self._count_appends(int(ok.sum()), self._append_engine.max_appends_per_zone())
        failures = []
        refused = (res < 0) & np.isin(-res, (errno.ENOTTY, errno.EPERM, errno.EACCES, errno.EOPNOTSUPP))
        if refused.any():
            self._passthrough = False
            print(f"zswap-host: {self.path}: NVMe passthrough refused ({errname(int(-res[refused][0]))}): "
                  f"zone append becomes a write at the write pointer", file=sys.stderr)
            idx = np.flatnonzero(refused)
            redo, redo_fail = self._append_at_wp(zones[idx], [units[k] for k in idx.tolist()], lengths[idx], qd)
            offsets[idx] = redo
            failures += [(int(idx[k]), e) for k, e in redo_fail]
        for k in np.flatnonzero(~ok & ~refused).tolist():
            r, z, n = int(res[k]), int(zones[k]), int(lengths[k])
            failures.append((k, self._zone_error(-r, z, f"zone append of {n} bytes to zone {z}") if r < 0
                             else self._nvme_error(r, z, n)))
        failures.sort(key=lambda f: f[0])
        return offsets, failures

    def _append_ioctl(self, z: int, view: np.ndarray) -> int:
        """One NVMe Zone Append through the blocking passthrough ioctl."""
        g = self.geometry
        ffi, lib = zoned_lib()
        buf = aligned_copy(view)
        alba = ffi.new("uint64_t *")
        t = time.perf_counter()
        r = lib.zd_nvme_zone_append(self._fd, self.nsid, g.zone_start(z) // g.block_size,
                                    ffi.cast("void *", buf.ctypes.data), view.size, g.block_size, alba)
        dt = time.perf_counter() - t
        if r == 0:
            with self._stat_lock:
                self._busy += dt
                self._io.wrote(view.size)
            self._count_appends(1, 1)
            return int(alba[0]) * g.block_size
        if r < 0 and -r in (errno.ENOTTY, errno.EPERM, errno.EACCES, errno.EOPNOTSUPP):
            self._passthrough = False          # passthrough refused: fall back for good
            offsets, failures = self._append_at_wp(np.array([z]), [view], np.array([view.size]), 1)
            if failures:
                raise failures[0][1]
            return int(offsets[0])
        if r < 0:
            raise self._zone_error(-r, z, f"zone append of {view.size} bytes to zone {z}")
        raise self._nvme_error(int(r), z, view.size)

    def _append_at_wp(self, zones: np.ndarray, units: list[np.ndarray], lengths: np.ndarray, qd: int):
        """Appends as writes at each zone's write pointer (one report per zone, under the zone's
        lock): in order and one in flight per zone, zones in parallel."""
        g = self.geometry
        uniq = np.unique(zones)
        locks = sorted({int(z) % len(self._zone_locks) for z in uniq.tolist()})
        offsets = np.full(zones.size, -1, np.int64)
        failures = []
        for i in locks:
            self._zone_locks[i].acquire()
        try:
            go = np.ones(zones.size, bool)
            for z in uniq.tolist():
                rep = self.report_zone(z)
                mine = np.flatnonzero(zones == z)
                if rep.cond in (ZoneCond.FULL, ZoneCond.READ_ONLY, ZoneCond.OFFLINE):
                    go[mine] = False
                    failures += [(int(k), self._zone_error(errno.EIO, z, f"zone append to zone {z}")) for k in mine]
                    continue
                ln = lengths[mine]
                offsets[mine] = rep.wp + np.concatenate([[0], np.cumsum(ln)[:-1]])
                over = offsets[mine] + ln > g.zone_start(z) + g.zone_capacity
                for k in mine[over].tolist():
                    go[k] = False
                    failures.append((k, ZoneStateError(f"zone {z}: append of {int(lengths[k])} bytes would pass the "
                                                       f"zone capacity {g.zone_capacity}", zone=z)))
                offsets[mine[over]] = -1
            idx = np.flatnonzero(go)
            if idx.size:
                res, _ = self._batch(True, gathered([units[k] for k in idx.tolist()]), offsets[idx], lengths[idx],
                                     qd, zones=zones[idx], nzones=g.nr_zones)
                for j in np.flatnonzero(res != lengths[idx]).tolist():
                    k, r = int(idx[j]), int(res[j])
                    z = int(zones[k])
                    failures.append((k, self._zone_error(-r if r < 0 else errno.EIO, z,
                                                         f"write of {int(lengths[k])} bytes at {int(offsets[k])}",
                                                         offset=int(offsets[k]), length=int(lengths[k]))))
                    offsets[k] = -1
                self._count_appends(int((res == lengths[idx]).sum()), 1)
        finally:
            for i in locks:
                self._zone_locks[i].release()
        failures.sort(key=lambda f: f[0])
        return offsets, failures

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


