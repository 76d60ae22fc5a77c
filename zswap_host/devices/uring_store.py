"""The io_uring device's writer of append runs (issue 12; issue 31: a neutral plan): a caller (the
store's usual ``swap_out`` call, ``native/store_out.c``'s ``st_out_call``) describes a run of zone
appends as a ``zs_run`` (``native/append_run.h``: units cut from two buffers, their zones and
lengths, the offset they must land at, a version checked at the boundary) and hands this device's
``zs_run_writer`` to its own C call, which appends the run through the uring-cmd ring
(``ur_run_check`` / ``ur_run_append``, ``native/uring_store.c``) without leaving C. In a TCG guest
every Python step costs tens of microseconds; this leaves a handful per call. The device knows the
run, never the caller's structs.

``LinuxZonedDevice.run_writer`` makes one for a caller and hands it the namespace (``RunTarget``) and
its own part (``RunPort``: its append lock and batch count, its counters, its typing of failures),
so the writer keeps the device's locks and counters as ``append_run`` keeps them without reaching
into the device.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np


class RunTarget(NamedTuple):
    """The namespace a writer appends to, as its C context takes it."""
    ngfd: int                  # the NVMe generic char device (/dev/ngXnY), open
    nsid: int
    block_size: int            # bytes per LBA
    zone_blocks: int           # LBAs per zone
    nr_zones: int
    max_len: int               # the device's largest append, bytes


class RunPort(NamedTuple):
    """The device's part of a writer's call (``LinuxZonedDevice.run_writer``)."""
    usable: Callable[[], bool]                      # still on the passthrough path of this engine
    held: Callable[[Callable[[], int]], tuple]      # (call(), wall s) inside one of its append batches
    count_landed: Callable[[list, float], None]     # count a run that landed (lengths, wall s)
    results: Callable                               # append_batch's (offsets, failures) of C results


class UringRunWriter:
    """The device's ``zs_run_writer`` for the caller's ``zs_run`` at ``run_addr``: ``writer`` is its
    address, for the caller's C call. ``port(qd, call)`` runs ``call()`` (that C call, which returns
    ``(status << 8) | units`` or <= 0) under the device's append lock and counts a run that landed
    (status 1); ``results`` gives ``append_batch``'s (offsets, failures) of one that did not (status
    2). A closed engine, or a device that gave up passthrough, declines (``DECLINED``, nothing run)."""

    DECLINED = -9      # ST_OUT_DEVICE / ZS_RUN_CANNOT: the device cannot take the call now

    def __init__(self, eng, run_addr: int, target: RunTarget, port: RunPort) -> None:
        ffi, lib = eng.ffi, eng.lib
        self._eng, self._ffi, self._port = eng, ffi, port
        self._run = ffi.cast("zs_run *", run_addr)
        (_, _, _, self._res, self._alba, _), p = eng.small_arrays()
        self._bs = target.block_size
        self._ring = eng.handle
        c = self._ctx = ffi.new("ur_run_ctx *")
        c.e, c.ngfd, c.nsid, c.lba_size = self._ring, target.ngfd, target.nsid, target.block_size
        c.zone_lbas, c.nzones = target.zone_blocks, target.nr_zones
        c.max_len, c.res, c.alba, c.qd = target.max_len, p[3], p[4], 1
        w = self._w = ffi.new("zs_run_writer *")
        w.check, w.append, w.ctx = ffi.addressof(lib, "ur_run_check"), ffi.addressof(lib, "ur_run_append"), c
        self.writer = int(ffi.cast("uintptr_t", w))
        self._dt = 0.0

    def __call__(self, qd: int, call: Callable[[], int]) -> int:
        port = self._port
        if self._eng.handle is not self._ring or not port.usable():
            return self.DECLINED
        self._ctx.qd = max(1, qd)
        rc, dt = port.held(call)
        if rc > 0 and rc >> 8 == 1:
            port.count_landed(self._ffi.unpack(self._run.lens, rc & 255), dt)
        self._dt = dt
        return rc

    def results(self, rc: int, qd: int, segs: tuple) -> tuple[np.ndarray, list]:
        """``append_batch``'s (offsets, failures) for a call that returned status 2 (``segs``: the
        units' buffers, for the write-at-wp redo of a refused passthrough), counted as
        ``append_run`` counts them."""
        k = rc & 255
        run, unpack = self._run, self._ffi.unpack
        alba = self._alba[:k].astype(np.int64)
        alba *= self._bs
        return self._port.results(np.array(unpack(run.zones, k), np.int64), None,
                                  np.array(unpack(run.lens, k), np.int64), qd, segs,
                                  self._res[:k].astype(np.int32), alba, self._dt)
