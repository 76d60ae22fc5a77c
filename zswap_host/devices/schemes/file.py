"""A regular file as a conventional block device (real I/O, wall clock): a bare path to a file."""

from __future__ import annotations

from .base import DeviceScheme


class FileScheme(DeviceScheme):
    """``PATH`` of a regular file: ``FileBlockDevice``, after ``safety.check_file`` (not an active
    swap file, no file-system or swap signature) unless forced or read-only."""

    name = "file"
    summary = "a regular file PATH: conventional block device, real I/O"

    def open(self, url: str, *, zoned: bool | None = None, force: bool | None = None, readonly: bool = False):
        from .. import safety
        from ..blockdev import FileBlockDevice

        if not readonly:
            safety.check_file(url, force)
        return FileBlockDevice(url, readonly=readonly)
