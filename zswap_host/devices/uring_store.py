"""The store's usual ``swap_out`` call with its device write in the same C call (issue 12):
``ur_store_out`` (``native/uring_store.c``) plans and stages the call on the store's arrays
(``store/express.py``, ``native/store_out.c``), sends its units through the device's uring-cmd
ring (``ur_append_run``), and commits them when they landed back to back. In a TCG guest every
Python step costs tens of microseconds; this leaves a handful per call.

``LinuxZonedDevice.store_out_port`` makes one for a store; the device's locks and counters are kept
as ``append_run`` keeps them.
"""

from __future__ import annotations

import time

import numpy as np


class UringStoreOut:
    """``port(qd)`` runs ``ur_store_out`` on the store's ``st_out`` (at address ``out_addr``) under
    the device's append lock and returns its result (<= 0: declined, nothing done; else
    ``(status << 8) | units``: 1 landed and committed, 2 sent and landed otherwise (``results``),
    3 staged, nothing sent). A closed engine, or a device that gave up passthrough, declines."""

    DECLINED = -9      # ST_OUT_DEVICE: the device cannot take the call now

    def __init__(self, dev, eng, out_addr: int) -> None:
        ffi = eng._ffi
        self._dev, self._eng = dev, eng
        self._fn = eng._lib.ur_store_out
        (_, self._lens, self._zones, self._res, self._alba, _), p = eng.small_arrays()
        g = dev.geometry
        self._bs = bs = g.block_size
        self._head = (dev._ngfd, dev.nsid, bs, g.zone_size // bs, g.nr_zones)
        self._tail = (g.max_append or g.zone_size, ffi.cast("void *", out_addr), p[1], p[2], p[3], p[4])
        self._e = eng._e
        self._dt = 0.0

    def __call__(self, qd: int) -> int:
        dev, eng = self._dev, self._eng
        if eng._e is not self._e or not dev._passthrough or dev._append_engine is not eng:
            return self.DECLINED
        with dev._append_lock:
            dev._batch_begins()
            try:
                t = time.perf_counter()
                rc = self._fn(self._e, *self._head, max(1, qd), *self._tail)
                dt = time.perf_counter() - t
            finally:
                dev._batch_ends()
        if rc > 0 and rc >> 8 == 1:
            dev._count_landed(self._lens[:rc & 255].tolist(), dt)
        self._dt = dt
        return rc

    def results(self, rc: int, qd: int, segs: tuple) -> tuple[np.ndarray, list]:
        """``append_batch``'s (offsets, failures) for a call that returned status 2 (``segs``: the
        units' buffers, for the write-at-wp redo of a refused passthrough), counted as
        ``append_run`` counts them."""
        k = rc & 255
        alba = self._alba[:k].astype(np.int64)
        alba *= self._bs
        return self._dev._append_results(self._zones[:k].copy(), None, self._lens[:k].copy(), qd, segs,
                                         self._res[:k].astype(np.int32), alba, self._dt)
