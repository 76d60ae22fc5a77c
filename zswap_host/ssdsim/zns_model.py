"""``ZNSSSD``: the ZNS mapping on the timing model (a zone is a fixed set of erase blocks striped
across dies; C in native/zns_ftl.c)."""
from __future__ import annotations

import numpy as np

from .model import APPEND, TRIM, TimingModel, ffi, lib, ssd_params
from .presets import UNIT, NandPreset


class ZNSSSD(TimingModel):
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
        h = lib.zns_new(ssd_params(preset, suspend=suspend), nr_zones, zone_size, zone_capacity)
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
