"""zswap-host: host-managed swap on ZNS SSDs, with an SSD timing model to measure it on.

The swap store (``SwapStore``, ``StoreConfig``) and the Linux-swap baseline (``ConventionalSwap``)
arrive with the store issue; this release provides the device layer and the SSD model.
"""

from .devices import open_device
from .errors import (
    DeviceIOError,
    DeviceSpecError,
    InvalidIOError,
    NotZonedError,
    PageLostError,
    SwapFullError,
    UnsafeDeviceError,
    ZoneStateError,
    ZswapError,
)

__version__ = "0.1.0"

__all__ = [
    "DeviceIOError", "DeviceSpecError", "InvalidIOError", "NotZonedError", "PageLostError", "SwapFullError",
    "UnsafeDeviceError", "ZoneStateError", "ZswapError", "open_device",
]
