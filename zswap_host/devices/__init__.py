"""Zoned, conventional and Open-Channel devices behind small protocols, opened by URL."""

from .base import BlockDevice, DeviceStats, OpenChannelDevice, ZonedDevice
from .blockdev import EmulatedBlockDevice, FileBlockDevice
from .chunk import ChunkInfo, ChunkState, OcssdGeometry
from .emulated import EmulatedZonedDevice
from .ocssd import EmulatedOcssdDevice
from .ocssd_view import OcssdZonedView
from .schemes.base import DeviceScheme
from .units import UnitTraits, interfaces, placement_units, register_interface
from .url import open_device, register_scheme, schemes
from .wear import wear_spread
from .zone import Zone, ZoneCond, ZoneGeometry
from .zoned_view import ZonedBlockView

__all__ = [
    "BlockDevice", "ChunkInfo", "ChunkState", "DeviceScheme", "DeviceStats", "EmulatedBlockDevice",
    "EmulatedOcssdDevice", "EmulatedZonedDevice", "FileBlockDevice", "OcssdGeometry", "OcssdZonedView",
    "OpenChannelDevice", "UnitTraits", "Zone", "ZoneCond", "ZoneGeometry", "ZonedBlockView", "ZonedDevice",
    "interfaces", "open_device", "placement_units", "register_interface", "register_scheme", "schemes",
    "wear_spread",
]
