"""Python face of the SSD timing model (C in native/, via cffi).

Both devices take whole numpy arrays of requests; nothing here loops over requests or pages.
Time is modeled device time in seconds (``now``); every device starts at 0.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Sequence, Union

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


def _params(preset: NandPreset, pages_per_block: int | None = None, suspend: bool = False):
    """C parameters.  A scaled-down erase block (small emulated devices) gets a proportionally
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


class _Model:
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


def _block_pages(preset: NandPreset, erase_block: int | None) -> int | None:
    """Pages of an erase block of ``erase_block`` bytes (None: None); ValueError unless it is a
    positive multiple of the preset's program unit."""
    if erase_block is None:
        return None
    eb, pu = int(erase_block), preset.program_unit_bytes
    if eb <= 0 or eb % pu:
        raise ValueError(f"erase block {eb} is not a positive multiple of the {pu}-byte program unit "
                         f"({preset.oneshot_pages} pages of {preset.page_size})")
    return eb // preset.page_size


class ConvSSD(_Model):
    """Conventional SSD: page-mapped FTL (4 KiB mapping unit), hidden over-provisioning, TRIM,
    greedy device-side GC triggered by a free-block watermark, on the shared timing model.

    ``op`` is the fraction of raw flash hidden from the host (default: the preset's ``conv_op``).
    Raw flash = logical / (1 - op), rounded up to whole erase blocks on every die.  Small devices
    scale the erase block down (in whole program units) so that every die keeps at least
    ``preset.min_blocks_per_die`` blocks: GC behaviour depends on blocks being small against the
    capacity, and the emulated devices are much smaller than the real drive.

    ``idle_gc`` (default off): in host idle time (``advance``) the FTL cleans greedy victims in
    the background, per die, until ``idle_gc_blocks`` blocks are free (``preset.idle_gc_spare_fraction``
    of the die's spare blocks), starting a victim only while the idle window lasts.
    ``suspend`` (default off): host reads suspend a die's program/erase work (at most
    ``preset.t_suspend_us`` of waiting); see docs/ssd-model.md.
    ``erase_block`` (bytes, a multiple of the program unit): that erase block instead of the
    scaling rule; the preset's ``block_bytes`` is the real drive's geometry.  Raw flash still rounds
    up to what GC needs per die, so a large block on a small device raises the effective OP
    (``effective_op``).
    ``gc_striped`` (default: the preset's ``controller.gc_striped``): GC re-programs a victim's
    valid data over all dies in turn, program unit by program unit (a drive's superblock GC), instead
    of on the victim's own die, where its programs run one after another (docs/ssd-model.md)."""


    def __init__(self, preset: NandPreset, logical_bytes: int, op: float | None = None,
                 idle_gc: bool = False, suspend: bool = False, erase_block: int | None = None,
                 gc_striped: bool | None = None):
        self._build(preset, logical_bytes, op, idle_gc, suspend, block_pages=_block_pages(preset, erase_block),
                    gc_striped=gc_striped)

    def _build(self, preset: NandPreset, logical_bytes: int, op: float | None, idle_gc: bool,
               suspend: bool, ruhs: int = 1, persistent: bool = True, block_pages: int | None = None,
               gc_striped: bool | None = None):
        """Size the flash and build the C model: ``ruhs`` reclaim unit handles (FDP; 1 = none),
        ``block_pages`` an erase block chosen by the caller (None: the scaling rule above)."""
        logical_bytes = int(logical_bytes)
        if logical_bytes <= 0 or logical_bytes % UNIT:
            raise ValueError(f"logical size {logical_bytes} is not a positive multiple of {UNIT}")
        op = preset.conv_op if op is None else float(op)
        if not 0.0 <= op < 0.9:
            raise ValueError(f"over-provisioning {op} is outside [0, 0.9)")
        self.preset = preset
        self.op = op
        self.logical_bytes = self.capacity = logical_bytes
        n_dies = preset.n_dies
        upp = preset.page_size // UNIT
        logical_units = logical_bytes // UNIT
        raw_units = math.ceil(logical_units / (1.0 - op))
        per_die = math.ceil(raw_units / n_dies)
        ppb = block_pages or preset.pages_per_block
        if block_pages is None and per_die < preset.min_blocks_per_die * ppb * upp:
            units = per_die // preset.min_blocks_per_die
            ppb = max(preset.oneshot_pages, (units // upp) // preset.oneshot_pages * preset.oneshot_pages)
        upb = ppb * upp
        bpd = math.ceil(per_die / upb)
        # GC needs room: the open host blocks (one per handle), the open GC blocks (one per handle if
        # GC keeps them apart, else one) and the watermark on every die
        frontiers = ruhs + (ruhs if persistent else 1)
        bpd = max(bpd, math.ceil(logical_units / n_dies / upb) + preset.gc_high_blocks + frontiers)
        self.pages_per_block = ppb
        self.blocks_per_die = bpd
        self.raw_bytes = bpd * n_dies * upb * UNIT
        params = _params(preset, ppb, suspend)
        self.gc_striped = preset.controller.gc_striped if gc_striped is None else bool(gc_striped)
        params.gc_striped = int(self.gc_striped)
        h = lib.conv_new_fdp(params, logical_units, bpd, preset.gc_low_blocks,
                             preset.gc_high_blocks, ruhs, int(bool(persistent)))
        if h == ffi.NULL:
            raise MemoryError(f"cannot build a {logical_bytes}-byte conventional SSD model")
        self._bind(ffi.gc(h, lib.conv_free), lib.conv_timing(h), lib.conv_submit_groups_h)
        self.idle_gc, self.suspend = bool(idle_gc), bool(suspend)
        # idle-time GC target: a fraction of the blocks per die beyond what the live data fills,
        # and always above the foreground stop point
        spare = bpd - math.ceil(logical_units / n_dies / upb)
        self.idle_gc_blocks = max(preset.gc_high_blocks + 1, math.ceil(preset.idle_gc_spare_fraction * spare))
        lib.conv_set_idle_gc(self._h, self.idle_gc_blocks if self.idle_gc else 0)

    def _idle(self, until_ns: int) -> None:
        lib.conv_idle(self._h, until_ns)

    @property
    def options(self) -> dict:
        return {"idle_gc": self.idle_gc, "suspend": self.suspend, "gc_striped": self.gc_striped}

    @property
    def effective_op(self) -> float:
        """Raw flash actually hidden after rounding to whole blocks: 1 - logical / raw."""
        return 1.0 - self.logical_bytes / self.raw_bytes

    @property
    def free_blocks(self) -> int:
        return int(lib.conv_free_blocks(self._h))

    @property
    def valid_bytes(self) -> int:
        return int(lib.conv_valid_units(self._h)) * UNIT

    def erase_counts(self) -> np.ndarray:
        """Wear: erases per physical erase block since the model was built (int64, one entry per
        block, ``preset.n_dies * blocks_per_die`` of them), die-major: entry ``d * blocks_per_die + k``
        is block ``k`` of die ``d`` (on channel ``d % preset.channels``).  Every erase is a GC
        victim's, so the entries add up to ``counters()["erase_count"]``."""
        return self._erase_counts(lib.conv_erase_counts, int(lib.conv_n_blocks(self._h)))

    def dies_of(self, offsets) -> np.ndarray:
        """Placement: the die (int32) holding the 4 KiB logical unit at each byte offset, -1 where
        it is unmapped (never written, or trimmed) or beyond the device."""
        lpns = np.ascontiguousarray(np.asarray(offsets, dtype=np.int64).reshape(-1) // UNIT)
        out = np.empty(lpns.size, np.int32)
        lib.conv_lpn_dies(self._h, lpns.size, ffi.from_buffer("int64_t[]", lpns),
                          ffi.from_buffer("int32_t[]", out, require_writable=True))
        return out

    def check_invariants(self) -> None:
        """Walk the C mapping tables; RuntimeError naming the first broken invariant."""
        buf = ffi.new("char[]", 256)
        if lib.conv_check(self._h, buf, 256) != 0:
            raise RuntimeError("conventional FTL invariant broken: " + ffi.string(buf).decode())

    def _reject_hint(self) -> str:
        return (" (no die has a free block and GC could free none: too little spare flash for the live data "
                "at this erase block; GC on the victim's own die (gc_striped off) needs that room on each die)")

    def __repr__(self) -> str:
        return (f"ConvSSD({self.preset.name}, logical={self.logical_bytes}, op={self.op:.3f}, "
                f"blocks/die={self.blocks_per_die} x {self.pages_per_block} pages, now={self.now:.6f}s)")


ISOLATIONS = ("persistent", "initial")
MAX_RUHS = 256
# FDP handles of a submit: None (handle 0), one int for every request, or one int per request
Handles = Union[int, Sequence[int], np.ndarray, None]


class FdpSSD(ConvSSD):
    """Conventional SSD with NVMe Flexible Data Placement (TP4146): every write names a reclaim
    unit handle (RUH), and the FTL keeps an open reclaim unit (RU = one erase block) per handle on
    every die, so data written with different handles never shares an erase block.  Device GC
    still runs, greedy per die over all blocks, as in ``ConvSSD``.

    ``ruhs``: handles 0..ruhs-1 (1..256).  ``isolation``: ``"persistent"`` (persistently isolated:
    GC relocates a victim's valid data into an RU of the victim's own handle) or ``"initial"``
    (initially isolated: GC relocates into one shared RU per die, whose blocks are counted as
    ``"mixed"``).  ``ru_bytes``: the erase block = RU size, a positive multiple of the program unit
    (``preset.program_unit_bytes``); None keeps ``ConvSSD``'s sizing (the erase block scaled down
    on small devices).  The raw flash leaves room for every open RU (one host RU per handle per
    die, plus the GC RUs) besides the over-provisioning.  ``op``, ``idle_gc``, ``suspend``,
    ``gc_striped`` as for ``ConvSSD``; with ``ruhs=1`` the device is exactly a ``ConvSSD``.

    Raises ValueError for ``ruhs`` outside 1..256, an unknown ``isolation`` or a bad ``ru_bytes``
    (and for what ``ConvSSD`` rejects)."""

    def __init__(self, preset: NandPreset, logical_bytes: int, op: float | None = None, ruhs: int = 8,
                 ru_bytes: int | None = None, isolation: str = "persistent", idle_gc: bool = False,
                 suspend: bool = False, gc_striped: bool | None = None):
        if isinstance(ruhs, bool) or not isinstance(ruhs, (int, np.integer)) or not 1 <= ruhs <= MAX_RUHS:
            raise ValueError(f"ruhs {ruhs!r}: an FDP device has 1..{MAX_RUHS} reclaim unit handles")
        if isolation not in ISOLATIONS:
            raise ValueError(f"isolation {isolation!r} is not one of {', '.join(map(repr, ISOLATIONS))}")
        block_pages = None
        if ru_bytes is not None:
            pu = preset.program_unit_bytes
            if isinstance(ru_bytes, bool) or not isinstance(ru_bytes, (int, np.integer)) or ru_bytes <= 0 \
                    or ru_bytes % pu:
                raise ValueError(f"ru_bytes {ru_bytes!r} is not a positive multiple of the {pu}-byte program "
                                 f"unit ({preset.oneshot_pages} pages of {preset.page_size})")
            block_pages = int(ru_bytes) // preset.page_size
        self.ruhs, self.isolation = int(ruhs), isolation
        self._build(preset, logical_bytes, op, idle_gc, suspend, ruhs=self.ruhs,
                    persistent=isolation == "persistent", block_pages=block_pages, gc_striped=gc_striped)
        self.ru_bytes = self.pages_per_block * preset.page_size

    def _handles(self, handles: Handles, ops: np.ndarray):
        """C handle array for the requests ``ops`` (ffi.NULL: handle 0 for all).  ValueError naming
        the first write whose handle is not 0..ruhs-1; reads and trims ignore their handles."""
        if handles is None:
            return ffi.NULL
        h = np.asarray(handles)
        if h.dtype.kind not in "iub":
            raise ValueError(f"handles must be integers, not {h.dtype}")
        if h.ndim == 0:
            h = np.full(ops.size, h.item(), np.int64)
        h = h.reshape(-1)
        if h.size != ops.size:
            raise ValueError(f"{h.size} handles for {ops.size} requests")
        writes = ops == WRITE
        bad = writes & ((h < 0) | (h >= self.ruhs))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"request {i}: handle {int(h[i])} is outside 0..{self.ruhs - 1} "
                             f"(the device has {self.ruhs} reclaim unit handles)")
        h = np.ascontiguousarray(np.where(writes, h, 0), dtype=np.uint16)
        return ffi.from_buffer("uint16_t[]", h) if h.any() else ffi.NULL

    def _charge_extra(self, op: int, n: int, handles):
        """``charge``'s handles for ``n`` requests, which the device checked (an int, or one uint16
        per request, each 0..ruhs-1): none for reads and trims (they ignore theirs), none for handle
        0 everywhere. Anything else goes through ``_handles``'s checks."""
        if handles is None or op != WRITE:
            return ffi.NULL
        if type(handles) is int and 0 <= handles < self.ruhs:
            return ffi.NULL if handles == 0 else ffi.from_buffer("uint16_t[]", np.full(n, handles, np.uint16))
        if type(handles) is np.ndarray and handles.dtype == np.uint16 and handles.shape == (n,) \
                and handles.flags.c_contiguous and int(handles.max()) < self.ruhs:
            return ffi.from_buffer("uint16_t[]", handles) if handles.any() else ffi.NULL
        return super()._charge_extra(op, n, handles)

    def submit(self, ops, offsets, lengths, qd: int = 1, handles: Handles = None) -> np.ndarray:
        """``ConvSSD.submit`` with a reclaim unit handle per request: ``handles`` is None (handle 0),
        one int for all requests, or one int per request.  ValueError (nothing submitted) for a
        write whose handle is not 0..ruhs-1; reads and trims ignore their handles."""
        return self._submit(ops, offsets, lengths, qd, handles)

    def submit_groups(self, ops, offsets, lengths, group_sizes, group_qds, handles: Handles = None) -> np.ndarray:
        """``ConvSSD.submit_groups`` with ``handles`` as for :meth:`submit` (one per request)."""
        return self._submit_groups(ops, offsets, lengths, group_sizes, group_qds, handles)

    def _extra(self, ops: np.ndarray, handles):
        return self._handles(handles, ops)

    def ruh_counters(self) -> list[dict]:
        """Per handle: ``host_write_bytes`` (written with it), ``media_write_bytes`` (programmed into
        its RUs: host data and GC relocations), ``gc_write_bytes`` (relocated by GC out of its RUs),
        ``write_amplification`` (media / host, 0.0 before any host write).  With
        ``isolation="initial"`` a last entry, ``handle: "mixed"``, counts the shared GC RUs (no host
        writes).  The entries add up to the device's ``counters()``."""
        out = ffi.new("int64_t[3]")
        rows = []
        for h in range(self.ruhs + (self.isolation == "initial")):
            lib.conv_ruh_counters(self._h, h, out)
            host, media, gc = int(out[0]), int(out[1]), int(out[2])
            rows.append({"handle": h if h < self.ruhs else "mixed", "host_write_bytes": host,
                         "media_write_bytes": media, "gc_write_bytes": gc,
                         "write_amplification": media / host if host else 0.0})
        return rows

    def fdp_stats(self) -> dict:
        """The FDP statistics log page (NVMe log 0x22): host bytes written, media bytes written and
        media bytes erased (the model has no metadata: "with metadata" = data)."""
        c = self._T.cnt
        return {"host_bytes_with_metadata_written": int(c.host_write_bytes),
                "media_bytes_with_metadata_written": int(c.media_write_bytes),
                "media_bytes_erased": int(c.erase_bytes)}

    @property
    def options(self) -> dict:
        return {**super().options, "ruhs": self.ruhs, "isolation": self.isolation}

    def __repr__(self) -> str:
        return (f"FdpSSD({self.preset.name}, logical={self.logical_bytes}, op={self.op:.3f}, ruhs={self.ruhs}, "
                f"isolation={self.isolation}, RU={self.ru_bytes} bytes, "
                f"blocks/die={self.blocks_per_die} x {self.pages_per_block} pages, now={self.now:.6f}s)")


class ZNSSSD(_Model):
    """ZNS mapping on the same timing model: a zone is a fixed set of erase blocks striped across
    dies (program unit p of a zone on die p mod dies_per_zone), reset is an erase, no device GC.
    Raw flash = nr_zones x zone_capacity; offsets are absolute device bytes.  A reset costs the
    same per erased byte as the conventional FTL's erases.  ``suspend`` as for ``ConvSSD``."""


    def __init__(self, preset: NandPreset, nr_zones: int, zone_size: int, zone_capacity: int,
                 suspend: bool = False):
        nr_zones, zone_size, zone_capacity = int(nr_zones), int(zone_size), int(zone_capacity)
        if nr_zones < 1 or zone_capacity < UNIT or zone_capacity % UNIT or zone_size < zone_capacity \
                or zone_size % UNIT:
            raise ValueError(f"bad zone geometry: {nr_zones} zones of {zone_size} bytes, capacity {zone_capacity}")
        self.preset = preset
        self.nr_zones, self.zone_size, self.zone_capacity = nr_zones, zone_size, zone_capacity
        self.capacity = nr_zones * zone_size
        self.raw_bytes = nr_zones * zone_capacity
        self.suspend = bool(suspend)
        h = lib.zns_new(_params(preset, suspend=suspend), nr_zones, zone_size, zone_capacity)
        if h == ffi.NULL:
            raise MemoryError("cannot build the ZNS model")
        self._bind(ffi.gc(h, lib.zns_free), lib.zns_timing(h), lib.zns_submit_groups)
        self._max_op = APPEND
        self.dies_per_zone = int(lib.zns_dies_per_zone(self._h))
        self.blocks_per_zone = int(lib.zns_blocks_per_zone(self._h))

    def submit(self, ops, offsets, lengths, qd: int = 1) -> np.ndarray:
        ops_a = np.asarray(ops)
        if ops_a.size and (ops_a == TRIM).any():
            raise ValueError("a zoned device has no TRIM; reset the zone instead")
        return super().submit(ops, offsets, lengths, qd)

    def submit_groups(self, ops, offsets, lengths, group_sizes, group_qds) -> np.ndarray:
        ops_a = np.asarray(ops)
        if ops_a.size and (ops_a == TRIM).any():
            raise ValueError("a zoned device has no TRIM; reset the zone instead")
        return super().submit_groups(ops, offsets, lengths, group_sizes, group_qds)

    def _zone(self, zone: int) -> int:
        zone = int(zone)
        if not 0 <= zone < self.nr_zones:
            raise ValueError(f"zone {zone} outside 0..{self.nr_zones - 1}")
        return zone

    def reset(self, zone: int) -> float:
        """Erase the zone's programmed blocks; returns the completion time and advances ``now``."""
        return int(lib.zns_reset(self._h, self._zone(zone))) * 1e-9

    def finish(self, zone: int) -> float:
        """Finish the zone; returns the completion time.  By default the partial program unit is
        padded and programmed in the background (``now`` stays); with the preset's
        ``controller.finish_pads_zone`` the rest of a non-empty zone is programmed as padding and
        ``now`` advances to the end (docs/ssd-model.md)."""
        return int(lib.zns_finish(self._h, self._zone(zone))) * 1e-9

    def erase_counts(self) -> np.ndarray:
        """Wear: erases per physical erase block since the model was built (int64, one entry per
        block, ``nr_zones * blocks_per_zone``).  A zone's blocks are fixed: zone ``z`` owns entries
        ``[z * blocks_per_zone, (z + 1) * blocks_per_zone)``, slice by slice over its dies (a
        slice is ceil(its pages / the preset's erase block) blocks, the last maybe short).  A
        reset erases only the blocks holding programmed pages, one ``erase_count`` each, so the
        entries add up to ``counters()["erase_count"]``."""
        return self._erase_counts(lib.zns_erase_counts, self.nr_zones * self.blocks_per_zone)

    def zone_written(self, zone: int) -> int:
        """Bytes the model has seen written to the zone (its view of the write pointer)."""
        return int(lib.zns_zone_wp(self._h, self._zone(zone)))

    def _reject_hint(self) -> str:
        return " (a write must lie inside one zone's capacity)"

    def __repr__(self) -> str:
        return (f"ZNSSSD({self.preset.name}, {self.nr_zones} x {self.zone_size} (cap {self.zone_capacity}), "
                f"{self.dies_per_zone} dies/zone, now={self.now:.6f}s)")


RESET = TRIM   # op 2 on an Open-Channel SSD: reset (erase) the chunk the request names


class OcssdSSD(_Model):
    """Open-Channel SSD 2.0 on the same timing model: the host addresses flash directly as groups x
    parallel units (PUs) x chunks x sectors of 4 KiB.  A group is a channel, a PU one die on it, a
    chunk one erase block of that die; no mapping table, no device GC.  Requests name linear sector
    addresses ``ppa = ((g * pus + p) * chunks + c) * sectors + s`` and sector counts; ``RESET``
    erases the whole chunk starting at its ppa.  Writes are acknowledged from the write buffer and
    programmed per program unit on the chunk's die; reads of sectors still in the buffer cost no
    flash access.  The chunk rules are the device layer's (``devices/ocssd.py``); the model only
    refuses a write away from its chunk's write pointer or past the chunk's end.

    Geometry defaults come from the preset: ``groups`` = channels, ``pus`` = dies per channel (the
    only values allowed: a group is a channel, a PU a die), ``sectors`` = the erase block / 4 KiB
    (else a positive multiple of the program unit, ``preset.program_unit_bytes / 4096``),
    ``chunks`` per PU = ``size`` // (bytes per chunk on every PU) when ``chunks`` is not given.
    ``suspend`` as for ``ConvSSD``.  ValueError for a geometry the preset cannot have."""

    def __init__(self, preset: NandPreset, groups: int | None = None, pus: int | None = None,
                 chunks: int | None = None, sectors: int | None = None, size: int | None = None,
                 suspend: bool = False):
        groups = preset.channels if groups is None else int(groups)
        pus = preset.dies_per_channel if pus is None else int(pus)
        if (groups, pus) != (preset.channels, preset.dies_per_channel):
            raise ValueError(f"{groups} groups x {pus} PUs: on {preset.name} a group is one of its {preset.channels} "
                             f"channels and a PU one of its {preset.dies_per_channel} dies per channel")
        upp = preset.program_unit_bytes // UNIT
        sectors = preset.block_bytes // UNIT if sectors is None else int(sectors)
        if sectors < 1 or sectors % upp:
            raise ValueError(f"{sectors} sectors per chunk is not a positive multiple of {preset.name}'s "
                             f"{upp}-sector program unit")
        if chunks is None:
            if size is None:
                raise ValueError("give chunks (per PU) or size (bytes)")
            chunks = int(size) // (groups * pus * sectors * UNIT)
        chunks = int(chunks)
        if chunks < 1:
            raise ValueError(f"{chunks} chunks per PU: an Open-Channel SSD needs at least one")
        self.preset, self.suspend = preset, bool(suspend)
        self.groups, self.pus, self.chunks, self.sectors = groups, pus, chunks, sectors
        self.nr_chunks = groups * pus * chunks
        self.capacity = self.raw_bytes = self.nr_chunks * sectors * UNIT
        h = lib.ocssd_new(_params(preset, suspend=suspend), groups, pus, chunks, sectors)
        if h == ffi.NULL:
            raise MemoryError(f"cannot build the Open-Channel SSD model ({self.nr_chunks} chunks)")
        self._bind(ffi.gc(h, lib.ocssd_free), lib.ocssd_timing(h), lib.ocssd_submit_groups)

    charge = charge_groups = None      # sector-addressed: the devices call submit / submit_writes

    def submit(self, ops, ppas, nsectors, qd: int = 1) -> np.ndarray:
        """``_Model.submit`` in sectors: request i is op ``ops[i]`` (READ, WRITE or RESET) of
        ``nsectors[i]`` sectors from linear sector address ``ppas[i]``.  ValueError (naming the
        request) for one outside the device or that the model refuses."""
        return self._submit(ops, self._bytes(ppas), self._bytes(nsectors), qd)

    def submit_groups(self, ops, ppas, nsectors, group_sizes, group_qds) -> np.ndarray:
        """``_Model.submit_groups`` in sectors, as :meth:`submit`."""
        return self._submit_groups(ops, self._bytes(ppas), self._bytes(nsectors), group_sizes, group_qds)

    def submit_writes(self, ppas: np.ndarray, nsectors: np.ndarray, group_sizes: np.ndarray) -> np.ndarray:
        """``submit_groups`` of WRITE requests, each group at a depth of its size (a vectored
        write's runs all in flight at once: devices/ocssd.py), without ``submit``'s checks of the
        requests: for a caller that made them itself (int64 arrays, every request inside the device
        and at least a sector, the sizes adding up to them). The same charges as ``submit_groups``;
        ValueError as it for a request the model refuses."""
        offsets, lengths = ppas * UNIT, nsectors * UNIT
        gs = np.ascontiguousarray(group_sizes, np.int64)
        g = ffi.from_buffer(_I64, gs)
        return self._call(self._op_array(WRITE, offsets.size), offsets, lengths, ffi.NULL, 0, (gs.size, g, g))

    def submit_reads(self, ppas: np.ndarray, nsectors: np.ndarray, qd: int) -> np.ndarray:
        """``submit(READ, ppas, nsectors, qd)`` without ``submit``'s checks of the requests: for a
        caller that made them itself (int64 arrays of one size, every request inside the device and
        at least a sector; ``qd`` >= 1). The same charges as ``submit``; ValueError as it for a
        request the model refuses."""
        offsets, lengths = ppas * UNIT, nsectors * UNIT
        ops = self._op_bufs[READ]
        return self._call(ops if ops.size >= offsets.size else self._op_array(READ, offsets.size), offsets, lengths,
                          ffi.NULL, qd)

    @staticmethod
    def _bytes(sectors) -> np.ndarray:
        return np.asarray(sectors, dtype=np.int64).reshape(-1) * UNIT

    def _chunk(self, chunk: int) -> int:
        chunk = int(chunk)
        if not 0 <= chunk < self.nr_chunks:
            raise ValueError(f"chunk {chunk} outside 0..{self.nr_chunks - 1}")
        return chunk

    def reset(self, chunk: int) -> float:
        """Erase the chunk (linear index ``ppa // sectors``) on its die; returns the completion time
        and advances ``now`` to it."""
        c = self._chunk(chunk)
        return float(self.submit(RESET, [c * self.sectors], [self.sectors])[0])

    def erase_counts(self) -> np.ndarray:
        """Resets per chunk since the model was built (int64, one per chunk: wear).  A chunk is one
        erase block, so the entries add up to ``counters()["erase_count"]``."""
        return self._erase_counts(lib.ocssd_erase_counts, self.nr_chunks)

    def chunk_die(self, chunk: int) -> int:
        """The die (of ``preset.n_dies``) the chunk's block is on; its channel is ``die % channels``."""
        return int(lib.ocssd_chunk_die(self._h, self._chunk(chunk)))

    def chunk_written(self, chunk: int) -> int:
        """Sectors the model has seen written to the chunk (its view of the write pointer)."""
        return int(lib.ocssd_chunk_wp(self._h, self._chunk(chunk)))

    def restore(self, chunk: int, sectors: int) -> None:
        """A reopened device: the chunk already holds ``sectors`` sectors on flash.  ValueError if
        the model has data of its own in the chunk's buffer or ``sectors`` is outside the chunk."""
        if lib.ocssd_set_wp(self._h, self._chunk(chunk), int(sectors)) != 0:
            raise ValueError(f"cannot restore chunk {chunk} to {sectors} sectors")

    def _rejected(self, rc: int, ops, offsets, lengths):
        i = -rc - 1
        raise ValueError(f"the model rejected request {i} (op {int(ops[i])}, ppa {int(offsets[i]) // UNIT}, "
                         f"{int(lengths[i]) // UNIT} sectors): a write starts at its chunk's write pointer and "
                         f"stays in the chunk, a reset names one whole chunk")

    def __repr__(self) -> str:
        return (f"OcssdSSD({self.preset.name}, {self.groups} groups x {self.pus} PUs x {self.chunks} chunks x "
                f"{self.sectors} sectors, now={self.now:.6f}s)")
