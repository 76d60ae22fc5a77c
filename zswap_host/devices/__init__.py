"""Zoned and conventional devices behind two small protocols, opened by URL."""

from .base import BlockDevice, DeviceStats, ZonedDevice
from .blockdev import EmulatedBlockDevice, FileBlockDevice
from .emulated import EmulatedZonedDevice
from .schemes.base import DeviceScheme
from .url import open_device, register_scheme, schemes
from .zone import Zone, ZoneCond, ZoneGeometry
from .zoned_view import ZonedBlockView

__all__ = [
    "BlockDevice", "DeviceScheme", "DeviceStats", "EmulatedBlockDevice", "EmulatedZonedDevice", "FileBlockDevice",
    "Zone", "ZoneCond", "ZoneGeometry", "ZonedBlockView", "ZonedDevice", "open_device", "register_scheme", "schemes",
]
