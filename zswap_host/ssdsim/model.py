"""Python face of the SSD timing model (C in native/, via cffi).

Both devices take whole numpy arrays of requests; nothing here loops over requests or pages.
Time is modeled device time in seconds (``now``); every device starts at 0.
"""
from __future__ import annotations

import math

import numpy as np

from .presets import UNIT, NandPreset

try:
    from .. import _native
except ImportError as e:  # pragma: no cover - only when the extension was not built
    raise ImportError(
        "zswap_host._native is not built; run `pip install -e .` or `python native/build_native.py`"
    ) from e

ffi, lib = _native.ffi, _native.lib

READ, WRITE, TRIM = 0, 1, 2

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
    return p


class _Model:
    _T = None
    _submit_fn = None
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
                    or int(ops.max()) > TRIM:
                bad = ((offsets % UNIT) != 0) | ((lengths % UNIT) != 0) | (offsets < 0) | (lengths < 0) \
                    | (offsets + lengths > self.capacity) | (ops > TRIM)
                i = int(np.flatnonzero(bad)[0])
                raise ValueError(
                    f"request {i}: op {int(ops[i])} offset {int(offsets[i])} length {int(lengths[i])} is not "
                    f"4 KiB aligned, not a known op, or outside the {self.capacity}-byte device")
        return ops, offsets, lengths

    def submit(self, ops, offsets, lengths, qd: int = 1) -> np.ndarray:
        """Issue requests in order with at most ``qd`` outstanding: the first ``qd`` at ``now``, each
        later one when the earliest outstanding request completes. Returns float64 completion times
        (modeled seconds) and advances ``now`` to the last completion."""
        ops, offsets, lengths = self._arrays(ops, offsets, lengths)
        out = np.empty(offsets.size, np.float64)
        if offsets.size == 0:
            return out
        rc = self._submit_fn(self._h, offsets.size, ffi.from_buffer("uint8_t[]", ops),
                             ffi.from_buffer("int64_t[]", offsets), ffi.from_buffer("int64_t[]", lengths),
                             max(1, int(qd)), ffi.from_buffer("double[]", out, require_writable=True))
        if rc != 0:
            i = -rc - 1
            raise ValueError(f"the model rejected request {i} (op {int(ops[i])}, offset {int(offsets[i])}, "
                             f"length {int(lengths[i])}){self._reject_hint()}")
        return out

    def submit_groups(self, ops, offsets, lengths, group_sizes, group_qds) -> np.ndarray:
        """Serial groups of requests in one call: group ``g`` (the next ``group_sizes[g]``
        requests) is one queue of depth ``group_qds[g]`` issued at ``now``, and the next group is
        issued when its last request completes — exactly one :meth:`submit` per group (a thread's
        page faults, one after the other). Returns the completion times of all the requests."""
        ops, offsets, lengths = self._arrays(ops, offsets, lengths)
        gn = np.ascontiguousarray(group_sizes, dtype=np.int64).reshape(-1)
        gq = np.maximum(np.ascontiguousarray(group_qds, dtype=np.int64).reshape(-1), 1)
        if gn.size != gq.size or (gn < 0).any() or int(gn.sum()) != offsets.size:
            raise ValueError(f"{gn.size} group sizes (adding up to {int(gn.sum())}) and {gq.size} queue depths "
                             f"for {offsets.size} requests")
        out = np.empty(offsets.size, np.float64)
        if offsets.size == 0:
            return out
        rc = self._submit_groups_fn(
            self._h, gn.size, ffi.from_buffer("int64_t[]", gn), ffi.from_buffer("int64_t[]", gq),
            ffi.from_buffer("uint8_t[]", ops), ffi.from_buffer("int64_t[]", offsets),
            ffi.from_buffer("int64_t[]", lengths), ffi.from_buffer("double[]", out, require_writable=True))
        if rc != 0:
            i = -rc - 1
            raise ValueError(f"the model rejected request {i} (op {int(ops[i])}, offset {int(offsets[i])}, "
                             f"length {int(lengths[i])}){self._reject_hint()}")
        return out

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
    ``preset.t_suspend_us`` of waiting); see docs/ssd-model.md."""


    def __init__(self, preset: NandPreset, logical_bytes: int, op: float | None = None,
                 idle_gc: bool = False, suspend: bool = False):
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
        ppb = preset.pages_per_block
        if per_die < preset.min_blocks_per_die * ppb * upp:
            units = per_die // preset.min_blocks_per_die
            ppb = max(preset.oneshot_pages, (units // upp) // preset.oneshot_pages * preset.oneshot_pages)
        upb = ppb * upp
        bpd = math.ceil(per_die / upb)
        # GC needs room: an open host block, an open GC block and the watermark on every die
        bpd = max(bpd, math.ceil(logical_units / n_dies / upb) + preset.gc_high_blocks + 2)
        self.pages_per_block = ppb
        self.blocks_per_die = bpd
        self.raw_bytes = bpd * n_dies * upb * UNIT
        h = lib.conv_new(_params(preset, ppb, suspend), logical_units, bpd, preset.gc_low_blocks,
                         preset.gc_high_blocks)
        if h == ffi.NULL:
            raise MemoryError(f"cannot build a {logical_bytes}-byte conventional SSD model")
        self._h = ffi.gc(h, lib.conv_free)
        self.idle_gc, self.suspend = bool(idle_gc), bool(suspend)
        # idle-time GC target: a fraction of the blocks per die beyond what the live data fills,
        # and always above the foreground stop point
        spare = bpd - math.ceil(logical_units / n_dies / upb)
        self.idle_gc_blocks = max(preset.gc_high_blocks + 1, math.ceil(preset.idle_gc_spare_fraction * spare))
        lib.conv_set_idle_gc(self._h, self.idle_gc_blocks if self.idle_gc else 0)
        self._T = lib.conv_timing(self._h)
        self._submit_fn = lib.conv_submit
        self._submit_groups_fn = lib.conv_submit_groups

    def _idle(self, until_ns: int) -> None:
        lib.conv_idle(self._h, until_ns)

    @property
    def options(self) -> dict:
        return {"idle_gc": self.idle_gc, "suspend": self.suspend}

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

    def check_invariants(self) -> None:
        """Walk the C mapping tables; RuntimeError naming the first broken invariant."""
        buf = ffi.new("char[]", 256)
        if lib.conv_check(self._h, buf, 256) != 0:
            raise RuntimeError("conventional FTL invariant broken: " + ffi.string(buf).decode())

    def _reject_hint(self) -> str:
        return " (no die has a free block: live data exceeds the flash)"

    def __repr__(self) -> str:
        return (f"ConvSSD({self.preset.name}, logical={self.logical_bytes}, op={self.op:.3f}, "
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
        self._h = ffi.gc(h, lib.zns_free)
        self._T = lib.zns_timing(self._h)
        self._submit_fn = lib.zns_submit
        self._submit_groups_fn = lib.zns_submit_groups
        self.dies_per_zone = int(lib.zns_dies_per_zone(self._h))

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

    def finish(self, zone: int) -> None:
        """Pad and program the zone's partially filled program unit, if any."""
        lib.zns_finish(self._h, self._zone(zone))

    def zone_written(self, zone: int) -> int:
        """Bytes the model has seen written to the zone (its view of the write pointer)."""
        return int(lib.zns_zone_wp(self._h, self._zone(zone)))

    def _reject_hint(self) -> str:
        return " (a write must lie inside one zone's capacity)"

    def __repr__(self) -> str:
        return (f"ZNSSSD({self.preset.name}, {self.nr_zones} x {self.zone_size} (cap {self.zone_capacity}), "
                f"{self.dies_per_zone} dies/zone, now={self.now:.6f}s)")
