"""The reads of an ``OcssdZonedView``'s zones: the address arithmetic, the split into sectors the
device can read and sectors still held in host memory (an open chunk's last ``mw_cunits``), the
device-run depth and the requests' completions are C's (``native/ocssd_read.c``); the held sectors
come from the view's copies (``read_held``)."""

from __future__ import annotations

from typing import Callable

import numpy as np

from .._native import ffi, lib           # the read plan (native/ocssd_read.c)
from ..errors import DeviceIOError
from .chunk import SECTOR
from .fingerprint import first_words


class StripeReader:
    """The reads of an ``OcssdZonedView`` (its ``_media_read_batch``) on ``ocssd``, over the view's
    per-zone arrays, which it holds (updated in place, never replaced): ``chunk`` (zone -> chunk per
    slot), ``dwp`` (sectors committed per slot), ``hw`` (zone sectors written), ``tail`` (open zone
    -> its held sectors, ``ring`` per slot; words when ``narrow``), and the pool's ``owner`` (chunk
    -> zone). ``zs``: sectors per zone; ``width``, ``unit``: the stripe. A device read that fails
    hands the zones it touched to ``lose_broken``."""

    def __init__(self, ocssd, zs: int, width: int, unit: int, ring: int, narrow: bool, chunk: np.ndarray,
                 dwp: np.ndarray, hw: np.ndarray, tail: dict, owner: np.ndarray,
                 lose_broken: Callable[[np.ndarray], None]) -> None:
        self.ocssd = ocssd
        self._zs, self._width, self._unit, self._ring, self._narrow = zs, width, unit, ring, narrow
        self._chunk, self._dwp, self._hw, self._tail, self._owner = chunk, dwp, hw, tail, owner
        self._lose_broken = lose_broken

    def read_batch(self, offsets: np.ndarray, lengths: np.ndarray, qd: int,
                   words: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """The address arithmetic, the split into device and held sectors, the device-run depth
        (``qd`` x runs per request: a request that crosses stripe units becomes one run per chunk
        piece, all in flight together, as a ZNS device reads one request's dies in parallel; page
        reads keep ``qd``) and the requests' completions are C's (``native/ocssd_read.c``; its
        numpy oracle is ``tests/support/ocssd_oracle.py``). The view's ``read_batch`` checked the ranges."""
        c = self._read_c
        if c is None:                           # the per-view constants of this path, once
            c = self._read_c = self._read_consts()
        plan, finish, fb, consts = c
        offsets, lengths = offsets.reshape(-1), lengths.reshape(-1)
        nreq = offsets.size
        if nreq == 0:
            return (np.zeros(0, np.uint64) if words else np.zeros(0, np.uint8)), np.zeros(0)
        offsets_p = fb("int64_t[]", np.ascontiguousarray(offsets, np.int64))
        lengths_p = fb("int64_t[]", np.ascontiguousarray(lengths, np.int64))
        cap = 2 * nreq                          # room for two sectors per request first (pages: one)
        for _ in range(2):
            # one buffer: ppas, pos, req, hpos, hzone, hslot, hsec (cap each), the plan's 4 stats,
            # and ocr_done's nreq of scratch
            buf = np.empty(7 * cap + 4 + nreq, np.int64)
            p = fb("int64_t[]", buf, require_writable=True)
            d = plan(nreq, offsets_p, lengths_p, *consts, cap, p, p + cap, p + 2 * cap, p + 3 * cap, p + 4 * cap,
                     p + 5 * cap, p + 6 * cap, p + 7 * cap)
            if d != -1:
                break
            cap = int(buf[7 * cap + 3])         # longer requests: room for all their sectors
        if d < 0:                               # never for ranges read_batch checked (ocssd_read.h)
            raise RuntimeError(f"the read plan refused {nreq} checked ranges (ocr_plan returned {d})")
        h, runs, reqs, n = buf[7 * cap:7 * cap + 4].tolist()
        # the clock before the read: the time of a sector not read from the device (not needed
        # when each request is one device sector)
        now = 0.0 if d == n == nreq else self.ocssd.now()
        out = done = None
        if d < n:                               # not every sector from the device: zeros, then theirs
            out = np.zeros(n, np.uint64) if words else np.zeros((n, SECTOR), np.uint8)
        if d:
            ppa = buf[:d]
            try:
                data, done = self.ocssd.read_timed(ppa, max(1, int(round(qd * runs / reqs))), words=words)
            except DeviceIOError:
                self._lose_broken(np.unique(self._owner[ppa // self.ocssd.geometry.sectors]))
                raise
            done = np.ascontiguousarray(done, np.float64)
            if out is None and data.dtype == (np.uint64 if words else np.uint8):
                out = data                      # a new array of the device's: no copy
            else:
                if out is None:
                    out = np.zeros(n, np.uint64) if words else np.zeros((n, SECTOR), np.uint8)
                out[buf[cap:cap + d]] = data if words else data.reshape(-1, SECTOR)
        if h:
            self.read_held(out, buf[3 * cap:7 * cap].reshape(4, cap)[:, :h], words)
        if d == n == nreq:                      # a device sector per request: its time is the request's
            return out.reshape(-1), done
        t = np.empty(nreq, np.float64)
        finish(nreq, lengths_p, d, p + 2 * cap, fb("double[]", done) if d else ffi.NULL, now,
               fb("double[]", t, require_writable=True), p + 7 * cap + 4)
        return out.reshape(-1), t

    _read_c = None             # read_batch's constants, made at first use

    def _read_consts(self) -> tuple:
        """``read_batch``'s constants: (ocr_plan, ocr_done, from_buffer, ocr_plan's arguments from
        zs to hw). The per-zone arrays are updated in place, never replaced."""
        fb = ffi.from_buffer
        g = self.ocssd.geometry
        return (lib.ocr_plan, lib.ocr_done, fb, (self._zs, self._width, self._unit, g.sectors, g.mw_cunits,
                                                 self._hw.size, fb("int64_t[]", self._chunk),
                                                 fb("int64_t[]", self._dwp), fb("int64_t[]", self._hw)))

    def read_held(self, out: np.ndarray, held: np.ndarray, words: bool) -> None:
        """Fill ``out``'s held sectors (rows of ``held``: position, zone, slot, sector) from the
        open zones' host copies."""
        pos, zone, slot, sec = held
        one = not (zone != zone[0]).any()               # most often: one open zone
        for zz in ([int(zone[0])] if one else np.unique(zone).tolist()):       # open zones only
            m = slice(None) if one else zone == zz
            tail = self._tail[zz][slot[m], sec[m] % self._ring]
            at = pos[m]
            if words:
                out[at] = tail if self._narrow else first_words(tail)
            elif self._narrow:                          # a word, zeros after: the device's read
                out[at, :8] = tail.view(np.uint8).reshape(-1, 8)
            else:
                out[at] = tail
