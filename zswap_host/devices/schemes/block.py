"""A Linux block device path (``/dev/nvme0n2``, ``/dev/sdb``, a loop device): zoned (``queue/zoned``
is not ``none``) → ``LinuxZonedDevice``, else ``LinuxBlockDevice``, after the safety checks of
``devices/safety.py`` (mounted, swap, holders, partitions, signatures, O_EXCL) unless forced.
Importing this module needs the ``zswap_host._zoned`` extension (the registry shows the install hint
when it is missing)."""

from __future__ import annotations

from ... import _zoned  # noqa: F401  (fail at import, with the registry's install hint)
from ...errors import NotZonedError, DeviceSpecError
from .base import DeviceScheme


class BlockScheme(DeviceScheme):
    """``PATH`` of a block device. ``zoned=True``/``False`` refuse the wrong kind before anything
    is opened; ``force`` skips the safety checks and the exclusive (``O_EXCL``) open."""

    name = "block"
    summary = "a block device PATH (/dev/nvme0n2, /dev/sdb): zoned or conventional, O_DIRECT I/O"

    def open(self, url: str, *, zoned: bool | None = None, force: bool | None = None, readonly: bool = False):
        from .. import safety
        from ..linux_block import LinuxBlockDevice
        from ..linux_zoned import LinuxZonedDevice
        from ..sysfs import zoned_model

        path = url
        model = zoned_model(path)
        if zoned is True and model == "none":
            raise NotZonedError(
                f"{path} is a conventional block device, not a zoned one (queue/zoned is 'none'): "
                f"use it as the conventional baseline (--baseline-device {path}), give a ZNS namespace "
                f"(e.g. /dev/nvme0n2), or emulate one with emu://?zones=64")
        if zoned is False and model != "none":
            raise DeviceSpecError(f"{path} is a zoned block device ({model}); a conventional block device "
                                  f"is needed here (use it as --device for the ZNS store)")
        if not readonly:
            safety.check_device(path, force)
        exclusive = not (force if force is not None else safety.is_forced())
        if model == "none":
            return LinuxBlockDevice(path, exclusive=exclusive, readonly=readonly)
        return LinuxZonedDevice(path, exclusive=exclusive, readonly=readonly)
