"""Zone append on a Linux zoned namespace (``LinuxZonedDevice.appender``): the device picks the
position and says where each append landed.

On an NVMe namespace it is the NVMe Zone Append command (opcode 0x7d): the completion says which
LBA the device chose. The append path (``append_path``): ``uring-cmd`` sends a batch of them through
``IORING_OP_URING_CMD`` on the namespace's generic char device ``/dev/ngXnY`` (several in flight to
one zone); ``ioctl`` sends one at a time through ``NVME_IOCTL_IO64_CMD`` (the sync engine, or when
the char device or the big ring is unavailable); on other zoned devices (or if passthrough is
refused) ``write-at-wp`` writes at the write pointer, in order and one in flight per zone (the rule
mq-deadline enforces), zones in parallel. A failed append becomes the typed error the conformance
suite checks (an NVMe status through the table below, an errno through the device's
``zone_error``).
"""

from __future__ import annotations

import errno
import os
import sys
import threading
import time

import numpy as np

from ..errors import DeviceIOError, InvalidIOError, ZoneStateError
from .blkzoned import errname, zoned_lib
from .buffers import Buffer
from .direct_io import aligned_copy, gathered
from .io_engine import UringEngine
from .request_checks import check_append_batch
from .serial_batches import append_run_batched
from .zone import ZoneCond

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


class ZoneAppender:
    """The zone appends of a ``LinuxZonedDevice`` (``dev``): its passthrough state (the generic char
    device ``ngfd``, the appends' own ring ``engine``, ``passthrough`` until the kernel refuses it),
    the three append paths, and the appends' counters (``count``, ``max_per_zone``). It counts into
    the device's ``tally`` and types errors with the device's ``zone_error``."""

    def __init__(self, dev) -> None:
        self.dev = dev
        self.ngfd = -1                                  # the generic char device, -1: none
        self.engine: UringEngine | None = None          # appends' own ring (uring-cmd path)
        self._lock = threading.Lock()
        self.passthrough = False                        # NVMe Zone Append (uring-cmd or ioctl)
        self._zone_locks = [threading.Lock() for _ in range(min(dev.geometry.nr_zones, 1 << 16))]
        self.count = 0                                  # appends that landed
        self.max_per_zone = 0                           # most in flight to one zone (ioctl, write-at-wp)

    @property
    def append_path(self) -> str:
        """``uring-cmd``, ``ioctl`` or ``write-at-wp``: how :meth:`append_batch` writes."""
        if self.ngfd >= 0 and self.passthrough:
            return "uring-cmd"
        return "ioctl" if self.passthrough else "write-at-wp"

    def close(self) -> None:
        if self.ngfd >= 0:
            fd, self.ngfd = self.ngfd, -1
            os.close(fd)
        if self.engine is not None:
            self.engine.close()

    def append_batch(self, zones, data: Buffer, lengths, qd: int = 32) -> tuple[np.ndarray, list]:
        """See ``ZonedDevice.append_batch``: through the append path (``append_path``)."""
        if self.ngfd >= 0 and self.passthrough:
            out = self._append_lean(zones, data, lengths, qd)
            if out is not None:
                return out
        if self.ngfd >= 0 and self.passthrough and not isinstance(data, (list, tuple)):
            # uring-cmd with one buffer (the store's batch of write units): no view per unit, the
            # requests' addresses are the buffer's plus the lengths before them
            zones, lengths, view = check_append_batch(self.dev.geometry, zones, data, lengths, views=False)
            if zones.size == 0:
                return np.zeros(0, np.int64), []
            return self._append_uring(zones, None, lengths, qd, view)
        zones, lengths, units = check_append_batch(self.dev.geometry, zones, data, lengths)
        if zones.size == 0:
            return np.zeros(0, np.int64), []
        if self.append_path == "uring-cmd":
            offsets, failures = self._append_uring(zones, units, lengths, qd)
        elif self.passthrough:
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
        eng = self.engine
        if type(zones) is not np.ndarray or type(lengths) is not np.ndarray:
            return None
        zl, ll = zones.tolist(), lengths.tolist()
        n = len(ll)
        small = getattr(eng, "append_small", None)
        if not 0 < n <= 64 or len(zl) != n or small is None or zones.ndim != 1:
            return None
        g = self.dev.geometry
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
        tally = self.dev.tally
        with self._lock:
            tally.batch_begins()
            try:
                t = time.perf_counter()
                res, alba = small(self.ngfd, self.dev.nsid, bs, g.zone_size // bs, nz, qd, zl, ll, addrs)
                dt = time.perf_counter() - t
            finally:
                tally.batch_ends()
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
        eng = self.engine
        run = getattr(eng, "append_run", None)
        g = self.dev.geometry
        bs = g.block_size
        if self.ngfd >= 0 and self.passthrough and run is not None and type(zones) is np.ndarray \
                and type(lengths) is np.ndarray and zones.dtype == lengths.dtype == np.int64 and expect % bs == 0:
            tally = self.dev.tally
            with self._lock:
                tally.batch_begins()
                try:
                    t = time.perf_counter()
                    r, res, alba = run(self.ngfd, self.dev.nsid, bs, g.zone_size // bs, g.nr_zones, qd, segs, lengths,
                                       zones, expect // bs, g.max_append or g.zone_size)
                    dt = time.perf_counter() - t
                finally:
                    tally.batch_ends()
            if r == 1:
                self._count_landed(lengths.tolist(), dt)
                return True
            if r == 0:
                alba *= bs
                if any(res):
                    return self._append_results(zones, None, lengths, qd, segs, np.array(res, np.int32), alba, dt)
                self._count_landed(lengths.tolist(), dt)
                return alba, []
        return append_run_batched(self.dev, zones, segs, lengths, qd, expect)

    def run_writer(self, run_addr: int):
        """A writer of append runs (``native/append_run.h``: the caller's ``zs_run`` at ``run_addr``)
        for a caller's own C call, on the uring-cmd path (``devices/uring_store.py``); None on any
        other path."""
        eng = self.engine
        if self.ngfd < 0 or not self.passthrough or not hasattr(getattr(eng, "lib", None), "ur_run_append"):
            return None
        from .uring_store import RunPort, RunTarget, UringRunWriter
        g = self.dev.geometry
        target = RunTarget(self.ngfd, self.dev.nsid, g.block_size, g.zone_size // g.block_size, g.nr_zones,
                           g.max_append or g.zone_size)
        port = RunPort(usable=lambda: self.passthrough and self.engine is eng, held=self._run_held,
                       count_landed=self._count_landed, results=self._append_results)
        return UringRunWriter(eng, run_addr, target, port)

    def _run_held(self, call):
        """``call()`` inside one append batch of this device (its append lock held): (its result,
        the wall seconds it took)."""
        tally = self.dev.tally
        with self._lock:
            tally.batch_begins()
            try:
                t = time.perf_counter()
                rc = call()
                return rc, time.perf_counter() - t
            finally:
                tally.batch_ends()

    def _count_landed(self, ll: list, dt: float) -> None:
        """Stats of a uring-cmd batch whose appends all landed (``ll``: their lengths as ints, counted
        without numpy). The most appends in flight per zone is the engine's, read by engine_stats."""
        tally = self.dev.tally
        with tally.lock:
            tally.busy += dt
            io = tally.io
            io.write_bytes += sum(ll)
            hist = io.write_hist
            for ln in ll:
                hist[ln] += 1
            self.count += len(ll)

    def _count_appends(self, n: int, per_zone: int) -> None:
        with self.dev.tally.lock:
            self.count += n
            self.max_per_zone = max(self.max_per_zone, per_zone)

    def _append_uring(self, zones: np.ndarray, units: list[np.ndarray] | None, lengths: np.ndarray, qd: int,
                      view: np.ndarray | None = None):
        """NVMe Zone Appends through io_uring passthrough, each request straight from its unit's
        memory (``units``, or ``view`` holding them back to back); a refused passthrough falls back
        for good to the write-at-wp path (and the refused requests are redone there)."""
        g = self.dev.geometry
        eng = self.engine
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
        tally = self.dev.tally
        with self._lock:
            tally.batch_begins()
            try:
                t = time.perf_counter()
                res, alba, _ = eng.append(self.ngfd, self.dev.nsid, g.block_size, g.zone_size // g.block_size, units,
                                          lengths, zones, g.nr_zones, qd, addrs)
                dt = time.perf_counter() - t
            finally:
                tally.batch_ends()
        offsets = alba.view(np.int64)
        offsets *= g.block_size
        return self._append_results(zones, units, lengths, qd, view, res, offsets, dt)

    def _append_results(self, zones: np.ndarray, units: list | None, lengths: np.ndarray, qd: int, data,
                        res: np.ndarray, offsets: np.ndarray, dt: float):
        """Account for a uring-cmd batch (``res``: 0 or -errno or NVMe status per request, ``offsets``
        where each landed) and type its failures; a refused passthrough redoes the refused requests
        at the write pointer (``units``: a view per request, or None to cut them from ``data``)."""
        g = self.dev.geometry
        tally = self.dev.tally
        if lengths.size <= 64 and not any(res.tolist()):   # the usual batch: every append landed
            self._count_landed(lengths.tolist(), dt)
            return offsets, []
        if not res.any():
            with tally.lock:
                tally.busy += dt
                tally.io.wrote_many(lengths)
            self._count_appends(lengths.size, self.engine.max_appends_per_zone())
            return offsets, []
        if units is None:                               # per-unit views for the failure paths
            units = check_append_batch(g, zones, data, lengths)[2]
        ok = res == 0
        offsets[~ok] = -1
        with tally.lock:
            tally.busy += dt
            tally.io.wrote_many(lengths[ok])
        self._count_appends(int(ok.sum()), self.engine.max_appends_per_zone())
        failures = []
        refused = (res < 0) & np.isin(-res, (errno.ENOTTY, errno.EPERM, errno.EACCES, errno.EOPNOTSUPP))
        if refused.any():
            self.passthrough = False
            print(f"zswap-host: {self.dev.path}: NVMe passthrough refused ({errname(int(-res[refused][0]))}): "
                  f"zone append becomes a write at the write pointer", file=sys.stderr)
            idx = np.flatnonzero(refused)
            redo, redo_fail = self._append_at_wp(zones[idx], [units[k] for k in idx.tolist()], lengths[idx], qd)
            offsets[idx] = redo
            failures += [(int(idx[k]), e) for k, e in redo_fail]
        for k in np.flatnonzero(~ok & ~refused).tolist():
            r, z, n = int(res[k]), int(zones[k]), int(lengths[k])
            failures.append((k, self.dev.zone_error(-r, z, f"zone append of {n} bytes to zone {z}") if r < 0
                             else self._nvme_error(r, z, n)))
        failures.sort(key=lambda f: f[0])
        return offsets, failures

    def _append_ioctl(self, z: int, view: np.ndarray) -> int:
        """One NVMe Zone Append through the blocking passthrough ioctl."""
        g = self.dev.geometry
        ffi, lib = zoned_lib()
        buf = aligned_copy(view)
        alba = ffi.new("uint64_t *")
        t = time.perf_counter()
        r = lib.zd_nvme_zone_append(self.dev.fd, self.dev.nsid, g.zone_start(z) // g.block_size,
                                    ffi.cast("void *", buf.ctypes.data), view.size, g.block_size, alba)
        dt = time.perf_counter() - t
        if r == 0:
            tally = self.dev.tally
            with tally.lock:
                tally.busy += dt
                tally.io.wrote(view.size)
            self._count_appends(1, 1)
            return int(alba[0]) * g.block_size
        if r < 0 and -r in (errno.ENOTTY, errno.EPERM, errno.EACCES, errno.EOPNOTSUPP):
            self.passthrough = False            # passthrough refused: fall back for good
            offsets, failures = self._append_at_wp(np.array([z]), [view], np.array([view.size]), 1)
            if failures:
                raise failures[0][1]
            return int(offsets[0])
        if r < 0:
            raise self.dev.zone_error(-r, z, f"zone append of {view.size} bytes to zone {z}")
        raise self._nvme_error(int(r), z, view.size)

    def _append_at_wp(self, zones: np.ndarray, units: list[np.ndarray], lengths: np.ndarray, qd: int):
        """Appends as writes at each zone's write pointer (one report per zone, under the zone's
        lock): in order and one in flight per zone, zones in parallel."""
        g = self.dev.geometry
        uniq = np.unique(zones)
        locks = sorted({int(z) % len(self._zone_locks) for z in uniq.tolist()})
        offsets = np.full(zones.size, -1, np.int64)
        failures = []
        for i in locks:
            self._zone_locks[i].acquire()
        try:
            go = np.ones(zones.size, bool)
            for z in uniq.tolist():
                rep = self.dev.report_zone(z)
                mine = np.flatnonzero(zones == z)
                if rep.cond in (ZoneCond.FULL, ZoneCond.READ_ONLY, ZoneCond.OFFLINE):
                    go[mine] = False
                    failures += [(int(k), self.dev.zone_error(errno.EIO, z, f"zone append to zone {z}")) for k in mine]
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
                res, _ = self.dev.run_batch(True, gathered([units[k] for k in idx.tolist()]), offsets[idx],
                                            lengths[idx], qd, zones=zones[idx], nzones=g.nr_zones)
                for j in np.flatnonzero(res != lengths[idx]).tolist():
                    k, r = int(idx[j]), int(res[j])
                    z = int(zones[k])
                    failures.append((k, self.dev.zone_error(-r if r < 0 else errno.EIO, z,
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
        what = f"{self.dev.path}: zone append of {n} bytes to zone {z}: {text} (NVMe status {sc:#x}, {name})"
        if kind == "invalid":
            return InvalidIOError(what)
        if kind == "media":
            return DeviceIOError(what, offset=self.dev.geometry.zone_start(z))
        return ZoneStateError(what, zone=z, errno_name=name)
