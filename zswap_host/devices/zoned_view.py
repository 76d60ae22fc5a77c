"""A zoned view of a conventional block device: fixed LBA ranges act as zones, a zone reset is a
discard (TRIM). It lets the same ``SwapStore`` run on a conventional SSD, which separates what
aggregation buys (the thesis's suggestion 1) from what ZNS buys (suggestion 2): the device still
does its own GC underneath."""

from __future__ import annotations

import numpy as np

from ..errors import DeviceSpecError
from .base import BlockDevice, DeviceStats
from .emulated import EmulatedZonedDevice
from .units import UnitTraits, default_unit_size
from .zone import ZoneGeometry


class ZonedBlockView(EmulatedZonedDevice):
    """ZNS rules (the emulated device's state machine) over ``block``'s LBA space. Data, timing and
    statistics are the block device's; zone state lives in memory."""

    kind = "zoned-view"

    def __init__(self, block: BlockDevice, zone_size: int, zone_capacity: int | None = None, max_open: int = 14,
                 max_active: int = 14, max_append: int = 512 << 10) -> None:
        if zone_size <= 0 or zone_size % block.block_size:
            raise DeviceSpecError(f"zone size {zone_size} is not a multiple of the block size {block.block_size}")
        nr = block.size // zone_size
        if nr < 1:
            raise DeviceSpecError(f"{block.size} bytes hold no zone of {zone_size} bytes")
        geometry = ZoneGeometry(nr_zones=nr, zone_size=zone_size, zone_capacity=zone_capacity or zone_size,
                                block_size=block.block_size, max_open=max_open, max_active=max_active,
                                max_append=max_append)
        self.block = block
        super().__init__(geometry, path=None, model=None, preset=block.describe().get("preset"),
                         url=f"zoned-view:{block.url}")
        self._backing.close()          # the block device holds the data
        self.payload = bool(getattr(block, "payload", True))    # the block device's medium
        self.interface = block.interface                     # "conventional" or "fdp"
        self.ruhs = int(getattr(block, "ruhs", 0))          # FDP placement handles (0: none)
        self._handle = np.zeros(nr, np.int64)
        # appends go down in runs (``_deferrable``) on a block device that takes them
        self._runs = hasattr(block, "write_run") and hasattr(block, "injected_failures") \
            and not getattr(block, "readonly", False)

    @property
    def word_reads(self) -> bool:
        """Whether ``read_batch(..., words=True)`` works: the block device's."""
        return bool(getattr(self.block, "word_reads", False))

    def unit_traits(self) -> UnitTraits:
        """LBA ranges of the block device: sequential by the host's rule only, collected by the host
        (discarding a range on reset) and again by the device's FTL; on FDP, writes carry handles."""
        return UnitTraits.of(self.geometry, self.block.interface, "LBA range", sequential_only=False,
                             collector="host+device", reset="discard", handles=self.ruhs)

    def place_zone(self, z: int, stream: int, gc: bool) -> None:
        """Say who writes zone ``z`` from now on (the store calls this when it opens a zone for a
        writer). On an FDP block device the zone's writes then carry a handle of their own: GC's
        relocations the last one, user stream ``s`` handle ``s % (ruhs - 1)`` — so data GC has
        kept alive, and each stream's, fill reclaim units of their own. Elsewhere a no-op."""
        if self.ruhs > 1:
            self._handle[self._zone_index(z)] = self.ruhs - 1 if gc else int(stream) % (self.ruhs - 1)

    def _media_write(self, start: int, view: np.ndarray) -> None:
        if self.ruhs:
            self.block.write(start, view, handle=int(self._handle[start // self.geometry.zone_size]))
        else:
            self.block.write(start, view)

    def _deferrable(self, z: int) -> bool:
        """Whether an append may wait to go down with the ones after it (``_media_write_units``):
        the block device takes runs of writes (``write_run``), is writable and has no write
        failure injected, so the append cannot fail."""
        return self._runs and not self.block.injected_failures()[1]

    def _media_write_units(self, units: list) -> None:
        """Appends (start, view) in order, as one ``write_run`` of the block device: the same
        writes, counts and time as one ``_media_write`` each."""
        starts = [start for start, _ in units]
        handles = self._handle[np.array(starts, np.int64) // self.geometry.zone_size] if self.ruhs else None
        self.block.write_run(starts, [view for _, view in units], handles)
        units.clear()

    def _media_read(self, offset: int, length: int) -> np.ndarray:
        return self.block.read(offset, length)

    def _media_read_batch(self, offsets, lengths, qd, words=False):
        checked = getattr(self.block, "read_checked", None)      # the emulated block device's
        if checked is not None:                                  # (read_batch checked the ranges)
            return checked(offsets, lengths, qd, words)
        return self.block.read_batch(offsets, lengths, qd, words=True) if words else \
            self.block.read_batch(offsets, lengths, qd)

    def _media_reset(self, z: int, written: int) -> None:
        if written:
            self.block.discard(self.geometry.zone_start(z), written)

    def _media_finish(self, z: int) -> None:
        pass

    def now(self) -> float:
        """The block device's clock."""
        return self.block.now()

    def advance(self, seconds: float) -> None:
        """Idle time goes to the block device (its FTL may collect in it)."""
        self.block.advance(seconds)

    def stats(self) -> DeviceStats:
        return self.block.stats()

    def erase_counts(self) -> np.ndarray | None:
        """The block device's wear (its FTL's erases per erase block), None if it has no model."""
        fn = getattr(self.block, "erase_counts", None)
        return fn() if fn is not None else None

    def describe(self) -> dict:
        d = super().describe()
        d.update(kind=self.kind, clock=self.block.stats().clock, block=self.block.describe())
        if self.ruhs:
            d["zone_handles"] = self._handle.tolist()
        return d

    def flush(self) -> None:
        self.block.flush()

    def close(self) -> None:
        self.block.close()


def block_units(device, zone_size, zone_capacity, **options) -> ZonedBlockView:
    """The ``conventional`` and ``fdp`` interfaces' placement units (``devices/units.py``): LBA
    ranges of ``zone_size`` (default :func:`default_unit_size`)."""
    return ZonedBlockView(device, default_unit_size(device) if zone_size is None else zone_size, zone_capacity,
                          **options)
