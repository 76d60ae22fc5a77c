"""Placement units: what the store allocates, fills front to back and reclaims whole — a ZNS zone,
a stripe of Open-Channel chunks, or an LBA range of a conventional or FDP SSD.

Every kind of unit is reached through one interface, the ``ZonedDevice`` protocol (a unit is a
"zone": ``append``, ``reset_zone``, the open/active limits, ``place_zone``), and described by one
record, :class:`UnitTraits` (``unit_traits()``): sequential-only or not, who collects garbage, what
``reset_zone`` does on the device, usable capacity and the concurrency limit. :func:`placement_units`
turns a device of any interface into its units through a registry keyed by the device's
``interface`` (``register_interface`` adds one), so the store never asks what device it is on.

Every interface has default units, so ``SwapStore(open_device(url))`` works on any URL:

- ``zns``: the device's zones;
- ``ocssd``: a stripe of one chunk per parallel unit (``OcssdZonedView``, ``layout="stripe"``);
- ``conventional`` (``emu-conv://``, a file, a non-zoned block device): LBA ranges of
  :func:`default_unit_size` — 16 MiB, halved while the device holds fewer than 64 (not below 256 KiB);
- ``fdp``: the same, rounded up to whole reclaim units (the device's ``ru_bytes``), so a unit's
  writes, all under one handle, fill whole reclaim units and its discard frees them whole.
"""

from __future__ import annotations

import importlib
from dataclasses import asdict, dataclass
from typing import Callable

from ..errors import DeviceSpecError
from .zone import ZoneGeometry

COLLECTORS = ("host", "host+device")
# an LBA range's default size (the bench's default zone), halved on small devices down to the floor
DEFAULT_UNIT_BYTES = 16 << 20
MIN_UNIT_BYTES = 256 << 10       # small devices still get enough units for the store's streams and GC
MIN_UNITS = 64


@dataclass(frozen=True)
class UnitTraits:
    """What a device's placement units are.

    ``interface``: the device's ("zns", "ocssd", "conventional", "fdp", or a registered one).
    ``unit``: what one unit is on it ("zone", "chunk stripe", "LBA range").
    ``sequential_only``: True when the device itself refuses a write off a unit's write pointer;
    False when only the host keeps that rule (a view over a device that takes random writes).
    ``collector``: "host" when only the host moves live data; "host+device" when the device's FTL
    collects too (its write amplification then multiplies the host's).
    ``reset``: the device operation behind ``reset_zone`` ("zone reset", "chunk reset", "discard").
    ``count``, ``size_bytes``, ``usable_bytes``: units, each one's address span and writable bytes.
    ``max_open``, ``max_active``: the device's limits on units being written (0: none).
    ``handles``: placement handles the units' writes can carry (FDP), 0 when writes carry none."""

    interface: str
    unit: str
    sequential_only: bool
    collector: str
    reset: str
    count: int
    size_bytes: int
    usable_bytes: int
    max_open: int
    max_active: int
    handles: int = 0

    def __post_init__(self) -> None:
        if self.collector not in COLLECTORS:
            raise ValueError(f"collector {self.collector!r} is not one of {COLLECTORS}")

    @classmethod
    def of(cls, geometry: ZoneGeometry, interface: str, unit: str, sequential_only: bool, collector: str,
           reset: str, handles: int = 0) -> "UnitTraits":
        """The traits of units laid out as ``geometry`` says."""
        return cls(interface, unit, sequential_only, collector, reset, geometry.nr_zones, geometry.zone_size,
                   geometry.zone_capacity, geometry.max_open, geometry.max_active, handles)

    @property
    def write_concurrency(self) -> int:
        """How many units may be open for writing at once (the tighter limit; 1 << 30 for none)."""
        return min([x for x in (self.max_open, self.max_active) if x] or [1 << 30])

    def as_dict(self) -> dict:
        return asdict(self)


# interface -> adapter(device, zone_size, zone_capacity, **options) -> ZonedDevice, or its dotted
# path "module:function", imported on first use (as devices/url.py's schemes): the adapters import
# the views, which import base.py, which imports this module, so naming them here breaks the cycle
Adapter = Callable[..., object]
_ADAPTERS: dict[str, Adapter | str] = {
    "conventional": "zswap_host.devices.zoned_view:block_units",
    "fdp": "zswap_host.devices.zoned_view:block_units",
    "ocssd": "zswap_host.devices.ocssd_view:ocssd_units",
}


def register_interface(interface: str, adapt: Adapter | str) -> None:
    """Let :func:`placement_units` open units on devices whose ``interface`` is ``interface``:
    ``adapt(device, zone_size, zone_capacity, **options)`` returns a ``ZonedDevice`` over it.
    ``adapt`` may be a ``"module:function"`` string, imported when first used."""
    _ADAPTERS[interface] = adapt


def interfaces() -> list[str]:
    """The registered interfaces, plus "zns" (a zoned device is its own units)."""
    return sorted({"zns", *_ADAPTERS})


def placement_units(device, zone_size: int | None = None, zone_capacity: int | None = None, **options):
    """``device`` seen as placement units: a zoned device as it is; any other through the adapter
    registered for its ``interface`` (``ZonedBlockView`` for a conventional or FDP SSD, whose units
    ``zone_size`` / ``zone_capacity`` size — by default :func:`default_unit_size` and the whole
    range; ``OcssdZonedView`` for an Open-Channel SSD, whose units are its chunks', ``options``
    e.g. ``layout="isolate"``). The units own ``device``: closing them closes it.

    Raises ``DeviceSpecError`` (one line) for an interface with no adapter, or units the device
    cannot hold (e.g. a ``zone_size`` that is no multiple of its block size)."""
    if getattr(device, "zoned", False):
        return device
    interface = getattr(device, "interface", None)
    adapt = _ADAPTERS.get(interface)
    if adapt is None:
        raise DeviceSpecError(f"{getattr(device, 'url', device)}: no placement units for interface {interface!r} "
                              f"(known: {', '.join(interfaces())})")
    if isinstance(adapt, str):
        module, _, name = adapt.partition(":")
        adapt = _ADAPTERS[interface] = getattr(importlib.import_module(module), name)
    return adapt(device, zone_size, zone_capacity, **options)


def default_unit_size(device) -> int:
    """The size of a conventional or FDP SSD's LBA-range units when the caller gives none:
    ``DEFAULT_UNIT_BYTES`` (16 MiB), halved while ``device`` holds fewer than ``MIN_UNITS`` (64)
    of them, not below ``MIN_UNIT_BYTES`` (256 KiB); on a device with reclaim units (FDP,
    ``ru_bytes``) rounded up to a whole number of them. Always a multiple of the block size."""
    size, block = int(device.size), int(device.block_size)
    unit = DEFAULT_UNIT_BYTES
    while size // unit < MIN_UNITS and unit > MIN_UNIT_BYTES:
        unit //= 2
    ru = int(getattr(device, "ru_bytes", None) or 0)
    if ru > 0:
        unit = -(-unit // ru) * ru          # whole reclaim units: an FDP SSD's natural unit
    return -(-unit // block) * block


class ZoneUnits:
    """Mixin for a ``ZonedDevice`` whose units are its own zones (ZNS); views override both."""

    geometry: ZoneGeometry

    def unit_traits(self) -> UnitTraits:
        """The device's zones as placement units (see :class:`UnitTraits`)."""
        return UnitTraits.of(self.geometry, "zns", "zone", sequential_only=True, collector="host",
                             reset="zone reset")

    def place_zone(self, z: int, stream: int, gc: bool) -> None:
        """Say who writes zone ``z`` from now on (user ``stream``, or GC). A ZNS zone's writes carry
        no placement hint, so nothing changes here; views over other interfaces use it."""
