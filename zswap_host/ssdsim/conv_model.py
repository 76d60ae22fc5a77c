"""``ConvSSD``: the conventional SSD on the timing model (page-mapped FTL, over-provisioning, TRIM,
device-side GC; C in native/conv_ftl.c), and the erase block a caller may choose for it."""
from __future__ import annotations

import math

import numpy as np

from .model import TimingModel, ffi, lib, ssd_params
from .presets import UNIT, NandPreset


def block_pages(preset: NandPreset, erase_block: int | None) -> int | None:
    """Pages of an erase block of ``erase_block`` bytes (None: None); ValueError unless it is a
    positive multiple of the preset's program unit."""
    if erase_block is None:
        return None
    eb, pu = int(erase_block), preset.program_unit_bytes
    if eb <= 0 or eb % pu:
        raise ValueError(f"erase block {eb} is not a positive multiple of the {pu}-byte program unit "
                         f"({preset.oneshot_pages} pages of {preset.page_size})")
    return eb // preset.page_size


class ConvSSD(TimingModel):
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
        self._build(preset, logical_bytes, op, idle_gc, suspend, block_pages=block_pages(preset, erase_block),
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
        params = ssd_params(preset, ppb, suspend)
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
