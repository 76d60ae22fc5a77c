"""Python face of the SSD timing model (C in native/, via cffi): the op codes, the C parameters
of a preset, and ``TimingModel``, what every mapping shares (the one C call, the clock, the
counters). The mappings are their own modules: ``conv_model.py`` (``ConvSSD``), ``fdp_model.py``
(``FdpSSD``), ``zns_model.py`` (``ZNSSSD``), ``ocssd_model.py`` (``OcssdSSD``).

Every model takes whole numpy arrays of requests; nothing here loops over requests or pages.
Time is modeled device time in seconds (``now``); every device starts at 0.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .presets import UNIT, ControllerModel, NandPreset

try:
    from .. import _native
except ImportError as e:  # pragma: no cover - only when the extension was not built
    raise ImportError(
        "zswap_host._native is not built; run `pip install -e .` or `python native/build_native.py`"
    ) from e

ffi, lib = _native.ffi, _native.lib
_U8, _I64, _F64 = ffi.typeof("uint8_t[]"), ffi.typeof("int64_t[]"), ffi.typeof("double[]")

READ, WRITE, TRIM, APPEND = 0, 1, 2, 3     # APPEND: zoned model only (a write at the write pointer)

_COUNTERS = ("host_write_bytes", "host_read_bytes", "host_trim_bytes", "media_write_bytes",
             "media_read_bytes", "gc_write_bytes", "pad_bytes", "erase_count", "gc_runs",
             "buffer_read_bytes", "nand_read_ops", "nand_prog_ops", "die_busy_ns",
             "erase_ns", "erase_bytes", "gc_bg_write_bytes", "gc_bg_runs", "suspend_count")


def ssd_params(preset: NandPreset, pages_per_block: int | None = None, suspend: bool = False):
    """The C parameters (``ssd_params``) of ``preset``.  A scaled-down erase block (small emulated devices) gets a proportionally
    shorter erase time, so erasing costs the same per byte as on the real block (the ZNS model
    scales its zone slices from the preset's block the same way, in C)."""
    p = ffi.new("ssd_params *")
    p.channels = preset.channels
    p.dies_per_channel = preset.dies_per_channel
    p.page_size = preset.page_size
    p.pages_per_block = pages_per_block or preset.pages_per_block
    p.oneshot_pages = preset.oneshot_pages
    p.t_read_us = preset.t_read_us
    p.t_prog_us = preset.t_prog_us
    p.t_erase_us = preset.t_erase_us * (p.pages_per_block / preset.pages_per_block)
    p.channel_mb_s = preset.channel_mb_s
    p.host_link_mb_s = preset.host_link_mb_s
    p.cmd_overhead_us = preset.cmd_overhead_us
    p.write_buffer_bytes = preset.buffer_bytes
    p.t_suspend_us = preset.t_suspend_us
    p.suspend = int(bool(suspend))
    for f in dataclasses.fields(ControllerModel):      # the C struct has a field of each name
        v = getattr(preset.controller, f.name)
        setattr(p, f.name, int(v) if isinstance(v, bool) else v)
    return p


class TimingModel:
    """What every mapping of the timing model shares: the checks and the one C call of ``submit`` /
    ``submit_groups`` / ``charge`` / ``charge_groups``, idle time, the clock and the counters. A
    mapping builds its C model and hands it over with ``_bind``."""

    _T = None
    _max_op = TRIM               # the largest op code the model takes
    _submit_groups_fn = None
    capacity: int = 0

    def _arrays(self, ops, offsets, lengths):
        offsets = np.ascontiguousarray(offsets, dtype=np.int64).reshape(-1)
        lengths = np.ascontiguousarray(lengths, dtype=np.int64).reshape(-1)
        if np.ndim(ops) == 0:
            ops = np.full(offsets.size, int(ops), np.uint8)
        ops = np.ascontiguousarray(ops, dtype=np.uint8).reshape(-1)
        if not (ops.size == offsets.size == lengths.size):
            raise ValueError(f"ops, offsets and lengths differ in length: {ops.size}, {offsets.size}, {lengths.size}")
        if offsets.size:
            # a few whole-array reductions; the per-request mask only to name a bad request.  The
            # OR of all offsets and lengths has a low bit set if one is misaligned, the sign if one
            # is negative.
            either = int(np.bitwise_or.reduce(offsets | lengths))
            if either % UNIT or either < 0 or int((offsets + lengths).max()) > self.capacity \
                    or int(ops.max()) > self._max_op:
                bad = ((offsets % UNIT) != 0) | ((lengths % UNIT) != 0) | (offsets < 0) | (lengths < 0) \
                    | (offsets + lengths > self.capacity) | (ops > self._max_op)
                i = int(np.flatnonzero(bad)[0])
                raise ValueError(
                    f"request {i}: op {int(ops[i])} offset {int(offsets[i])} length {int(lengths[i])} is not "
                    f"4 KiB aligned, not a known op, or outside the {self.capacity}-byte device")
        return ops, offsets, lengths

    def submit(self, ops, offsets, lengths, qd: int = 1) -> np.ndarray:
        """Issue requests in order with at most ``qd`` outstanding: the first ``qd`` at ``now``, each
        later one when the earliest outstanding request completes. Returns float64 completion times
        (modeled seconds) and advances ``now`` to the last completion."""
        return self._submit(ops, offsets, lengths, qd)

    def submit_groups(self, ops, offsets, lengths, group_sizes, group_qds) -> np.ndarray:
        """Serial groups of requests in one call: group ``g`` (the next ``group_sizes[g]``
        requests) is one queue of depth ``group_qds[g]`` issued at ``now``, and the next group is
        issued when its last request completes — exactly one :meth:`submit` per group (a thread's
        page faults, one after the other). Returns the completion times of all the requests."""
        return self._submit_groups(ops, offsets, lengths, group_sizes, group_qds)

    def _extra(self, ops: np.ndarray, handles):
        """The C handles argument of requests ``ops`` (FDP: one per request; elsewhere NULL)."""
        return ffi.NULL

    # -- a device's own requests ---------------------------------------------------------------
    # The emulated devices check their requests (block-aligned, inside the device) before they
    # charge them: ``charge`` and ``charge_groups`` are ``submit`` / ``submit_groups`` of requests
    # that are all one op, without building an ops array or checking the requests again. A request
    # the C model still refuses raises ValueError as there.

    UNIT = UNIT                  # bytes the model's requests are aligned to

    def _op_array(self, op: int, n: int) -> np.ndarray:
        """At least ``n`` requests' worth of op code ``op`` (a reused buffer: the C call reads the
        first ``n``; never written)."""
        a = self._op_bufs[op]
        if a.size < n:
            a = self._op_bufs[op] = np.full(max(n, 2 * a.size), op, np.uint8)
        return a

    def _charge_extra(self, op: int, n: int, handles):
        """``_extra`` for :meth:`charge` of ``n`` requests (FDP: handles the caller checked)."""
        return self._extra(self._op_array(op, n)[:n], handles)

    def charge(self, op: int, offsets: np.ndarray, lengths: np.ndarray, qd: int = 1, handles=None) -> np.ndarray:
        """``submit`` of ``op`` requests the caller has checked (contiguous int64 arrays of
        4 KiB-aligned ranges inside the device); ``handles`` as ``FdpSSD.submit``'s."""
        ops = self._op_array(op, offsets.size)
        return self._call(ops, offsets, lengths,
                          ffi.NULL if handles is None else self._charge_extra(op, offsets.size, handles), qd)

    def charge_groups(self, op: int, offsets: np.ndarray, lengths: np.ndarray, group_sizes, group_qds,
                      handles=None) -> np.ndarray:
        """``submit_groups`` of ``op`` requests the caller has checked, as :meth:`charge`."""
        gn, gq = self._groups(group_sizes, group_qds, offsets.size)
        ops = self._op_array(op, offsets.size)
        return self._call(ops, offsets, lengths,
                          ffi.NULL if handles is None else self._charge_extra(op, offsets.size, handles), 0,
                          (gn.size, ffi.from_buffer(_I64, gn), ffi.from_buffer(_I64, gq)))

    def _submit(self, ops, offsets, lengths, qd: int, handles=None) -> np.ndarray:
        ops, offsets, lengths = self._arrays(ops, offsets, lengths)
        return self._call(ops, offsets, lengths, self._extra(ops, handles), qd)

    def _submit_groups(self, ops, offsets, lengths, group_sizes, group_qds, handles=None) -> np.ndarray:
        ops, offsets, lengths = self._arrays(ops, offsets, lengths)
        gn, gq = self._groups(group_sizes, group_qds, offsets.size)
        return self._call(ops, offsets, lengths, self._extra(ops, handles), 0,
                          (gn.size, ffi.from_buffer(_I64, gn), ffi.from_buffer(_I64, gq)))

    # -- the one C call ----------------------------------------------------------------------------
    # Every submit and charge above (and the Open-Channel model's write and read runs) ends here, in
    # the FTL's grouped submit (native/ssd_groups.c), which is exactly one submit per group: a plain
    # queue is one group. One place builds the C arguments and words a refusal.

    def _bind(self, h, timing, groups_fn) -> None:
        """Keep the C model ``h`` (freed with this object), its timing struct and its grouped submit
        function; the one-group sizes and depths every plain queue reuses."""
        self._h, self._T, self._submit_groups_fn = h, timing, groups_fn
        self._one_n, self._one_qd = ffi.new("int64_t[1]"), ffi.new("int64_t[1]")
        self._op_bufs = [np.full(64, op, np.uint8) for op in range(APPEND + 1)]

    def _call(self, ops: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, handles, qd: int,
              groups: tuple | None = None) -> np.ndarray:
        """Completion times of the requests (C-ready, contiguous: int64 ``offsets`` and ``lengths`` of
        one size, at least as many uint8 ``ops``), as one queue of depth ``qd`` or, with ``groups`` = (count, C int64
        sizes, C int64 depths), as those serial queues. ``handles``: the C FDP handles (NULL: none).
        ValueError naming the request the model refused."""
        n = offsets.size
        out = np.empty(n, np.float64)
        if n == 0:
            return out
        if groups is None:
            ng, gn, gq = 1, self._one_n, self._one_qd
            gn[0] = n
            try:
                gq[0] = qd                              # the C loop takes a depth below 1 as 1
            except TypeError:
                gq[0] = int(qd)
        else:
            ng, gn, gq = groups
        fb = ffi.from_buffer
        rc = self._submit_groups_fn(self._h, ng, gn, gq, fb(_U8, ops), fb(_I64, offsets), fb(_I64, lengths), handles,
                                    fb(_F64, out, require_writable=True))
        if rc != 0:
            self._rejected(rc, ops, offsets, lengths)
        return out

    @staticmethod
    def _groups(group_sizes, group_qds, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Group sizes and queue depths as C arrays; ValueError unless the sizes cover the n requests."""
        gn = np.ascontiguousarray(group_sizes, dtype=np.int64).reshape(-1)
        gq = np.maximum(np.ascontiguousarray(group_qds, dtype=np.int64).reshape(-1), 1)
        if gn.size != gq.size or (gn < 0).any() or int(gn.sum()) != n:
            raise ValueError(f"{gn.size} group sizes (adding up to {int(gn.sum())}) and {gq.size} queue depths "
                             f"for {n} requests")
        return gn, gq

    def _rejected(self, rc: int, ops, offsets, lengths):
        """Raise the ValueError for the request a C submit function rejected (its rc = -(i + 1))."""
        i = -rc - 1
        raise ValueError(f"the model rejected request {i} (op {int(ops[i])}, offset {int(offsets[i])}, "
                         f"length {int(lengths[i])}){self._reject_hint()}")

    def _reject_hint(self) -> str:
        return ""

    def advance(self, seconds: float) -> None:
        """Host idle time passes.  Queued device work completes during it; a conventional SSD with
        ``idle_gc`` also cleans blocks in it (background GC), otherwise nothing else happens."""
        if seconds < 0:
            raise ValueError("cannot advance by a negative time")
        self._idle(self._T.now + int(round(seconds * 1e9)))

    def _idle(self, until_ns: int) -> None:
        self._T.now = until_ns

    @property
    def options(self) -> dict:
        """The optional behaviours of this model and whether they are on."""
        return {"suspend": self.suspend}

    @property
    def now(self) -> float:
        return self._T.now * 1e-9

    def counters(self) -> dict:
        c = self._T.cnt
        d = {k: int(getattr(c, k)) for k in _COUNTERS}
        d["device_time_s"] = self.now
        d["write_amplification"] = (d["media_write_bytes"] / d["host_write_bytes"]) if d["host_write_bytes"] else 0.0
        return d

    host_write_bytes = property(lambda self: int(self._T.cnt.host_write_bytes))
    host_read_bytes = property(lambda self: int(self._T.cnt.host_read_bytes))
    host_trim_bytes = property(lambda self: int(self._T.cnt.host_trim_bytes))
    media_write_bytes = property(lambda self: int(self._T.cnt.media_write_bytes))
    media_read_bytes = property(lambda self: int(self._T.cnt.media_read_bytes))
    gc_write_bytes = property(lambda self: int(self._T.cnt.gc_write_bytes))
    pad_bytes = property(lambda self: int(self._T.cnt.pad_bytes))
    erase_count = property(lambda self: int(self._T.cnt.erase_count))
    gc_runs = property(lambda self: int(self._T.cnt.gc_runs))
    gc_bg_write_bytes = property(lambda self: int(self._T.cnt.gc_bg_write_bytes))
    gc_bg_runs = property(lambda self: int(self._T.cnt.gc_bg_runs))
    erase_ns = property(lambda self: int(self._T.cnt.erase_ns))
    erase_bytes = property(lambda self: int(self._T.cnt.erase_bytes))
    suspend_count = property(lambda self: int(self._T.cnt.suspend_count))

    @property
    def write_amplification(self) -> float:
        h = self.host_write_bytes
        return self.media_write_bytes / h if h else 0.0

    def _erase_counts(self, fn, n: int) -> np.ndarray:
        """The n int64 wear counters the C function ``fn(handle, out)`` copies out."""
        out = np.empty(n, np.int64)
        fn(self._h, ffi.from_buffer("int64_t[]", out, require_writable=True))
        return out
