"""A regular file as a conventional block device (real I/O, wall clock): a bare path to a file."""

from __future__ import annotations

from .base import DeviceScheme


class FileScheme(DeviceScheme):
    """``PATH`` of a regular file: ``FileBlockDevice``, after ``safety.check_file`` (not an active
    swap file, no file-system or swap signature, no data unless the file is ours) unless forced or
    read-only. A writable open marks the file as ours (``PATH.json``, ``kind: file``), so the next
    command reopens it without ``--force``."""

    name = "file"
    summary = "a regular file PATH: conventional block device, real I/O"

    def open(self, url: str, *, zoned: bool | None = None, force: bool | None = None, readonly: bool = False):
        from .. import safety
        from ..blockdev import FileBlockDevice
        from ..ownership import claim

        if not readonly:
            safety.check_file(url, force)
        dev = FileBlockDevice(url, readonly=readonly)
        if not readonly and zoned is not True:        # asked for zones, open_device refuses it: no mark
            claim(url, {"kind": "file", "size": dev.size, "block_size": dev.block_size})
        return dev
