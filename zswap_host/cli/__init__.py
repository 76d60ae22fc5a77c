"""The ``zswap-host`` command: the click group ``main`` (the console script's entry point) with every
command registered on it."""

from .group import main
# Each module registers its commands on ``main`` when imported: this order is the commands' order.
from . import device_commands  # noqa: F401
from . import characterize_command  # noqa: F401
from . import bench_command  # noqa: F401
from . import trace_commands  # noqa: F401
from .device_commands import format_devices

__all__ = ["format_devices", "main"]
