"""``LinuxBlockDevice``: a conventional (non-zoned) Linux block device (``/dev/sdb``, an NVMe
conventional namespace, a loop device) with ``O_DIRECT`` I/O on the wall clock and discard through
``BLKDISCARD``."""

from __future__ import annotations

import errno
import fcntl
import os
import struct

import numpy as np

from ..errors import DeviceIOError, DeviceSpecError, InvalidIOError
from .base import Buffer, SerialGroups, as_bytes_view, check_aligned, check_write_batch
from .blkzoned import errname, zoned_lib
from .direct_io import ALIGN, DirectIO, open_direct

_BLKDISCARD = 0x1277


class LinuxBlockDevice(DirectIO, SerialGroups):
    """A conventional (non-zoned) block device: O_DIRECT I/O, discard through BLKDISCARD."""

    kind = "linux-block"
    zoned = False

    def __init__(self, path: str, exclusive: bool = True, readonly: bool = False) -> None:
        self.path = self.url = path
        self.readonly = readonly
        self._fd = -1
        self._fd = open_direct(path, exclusive, readonly)
        self._init_io()
        ffi, lib = zoned_lib()
        size = int(lib.zd_size_bytes(self._fd))
        lbs = int(lib.zd_logical_block_size(self._fd))
        if size < 0 or lbs <= 0:
            self.close()
            raise DeviceSpecError(f"{path}: cannot read the device size/block size")
        self.block_size = lbs
        self.size = size - size % ALIGN
        if self.size < ALIGN:
            self.close()
            raise DeviceSpecError(f"{path} is {size} bytes: too small for a device")

    def _limit(self) -> int:
        return self.size

    def write(self, offset: int, data: Buffer) -> None:
        view = as_bytes_view(data)
        check_aligned(offset, view.size, self.block_size, self.size, "write")
        r = self._pwrite(offset, view)
        if r < 0:
            e = -r
            if e == errno.EINVAL:
                raise InvalidIOError(f"{self.path}: write at {offset} of {view.size} bytes refused (EINVAL)")
            raise DeviceIOError(f"{self.path}: write at {offset} failed: {os.strerror(e)} ({errname(e)})",
                                offset=offset)

    def read(self, offset: int, length: int) -> np.ndarray:
        check_aligned(offset, length, self.block_size, self.size, "read")
        return self._pread(offset, length)

    def write_batch(self, offsets: np.ndarray, data: np.ndarray, lengths: np.ndarray, qd: int = 32) -> np.ndarray:
        """Write ranges in order (``data`` holds them back to back); returns completion times."""
        offsets, lengths, view = check_write_batch(offsets, data, lengths, self.block_size, self.size)
        done, pos = np.empty(offsets.size), 0
        for k, (off, n) in enumerate(zip(offsets.tolist(), lengths.tolist())):
            self.write(off, view[pos:pos + n])
            pos += n
            done[k] = self.now()
        return done

    def discard(self, offset: int, length: int) -> None:
        check_aligned(offset, length, self.block_size, self.size, "discard")
        try:
            fcntl.ioctl(self._fd, _BLKDISCARD, struct.pack("QQ", offset, length))
        except OSError as e:
            if e.errno not in (errno.EOPNOTSUPP, errno.ENOTTY):
                raise DeviceIOError(f"{self.path}: discard at {offset} failed: {e.strerror}", offset=offset) from None
            return                                  # no discard support: the data stays, which is allowed
        with self._stat_lock:
            self._io.discard_bytes += length

    def describe(self) -> dict:
        return {"url": self.url, "kind": self.kind, "zoned": False, "path": self.path,
                "size": self.size, "block_size": self.block_size, "clock": "wall", "preset": None}
