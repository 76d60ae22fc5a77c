"""zswap-host: host-managed swap on ZNS SSDs, with an SSD timing model to measure it on.

``open_device`` opens a zoned or conventional device by URL; ``SwapStore`` is the host-managed swap
store on a zoned device; ``ConventionalSwap`` models Linux swap on a conventional SSD.
"""

from .backend import SwapBackend, SwapStats
from .baseline import ConventionalSwap
from .devices import open_device
from .errors import (
    DependencyMissingError,
    DeviceIOError,
    DeviceSpecError,
    InvalidIOError,
    NotZonedError,
    PageCorruptError,
    PageLostError,
    SwapFullError,
    UnsafeDeviceError,
    ZoneStateError,
    ZswapError,
)

from .store import StoreConfig, SwapStore

__version__ = "0.1.0"

__all__ = [
    "DependencyMissingError", "DeviceIOError", "DeviceSpecError", "InvalidIOError", "NotZonedError",
    "PageCorruptError", "PageLostError", "SwapFullError", "UnsafeDeviceError", "ZoneStateError", "ZswapError",
    "open_device",
    "ConventionalSwap", "StoreConfig", "SwapBackend", "SwapStats", "SwapStore",
]
