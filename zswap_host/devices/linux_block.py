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
from .blkzoned import errname, zoned_lib
from .buffers import Buffer, as_bytes_view
from .direct_io import ALIGN, DirectIO, aligned_copy, open_direct
from .io_engine import DEFAULT_DEPTH
from .request_checks import check_aligned, check_write_batch
from .serial_batches import SerialGroups

_BLKDISCARD = 0x1277


class LinuxBlockDevice(DirectIO, SerialGroups):
    """A conventional (non-zoned) block device: O_DIRECT I/O, discard through BLKDISCARD.
    ``io_engine``: ``uring`` (default; ``sync`` when io_uring cannot run here) or ``sync``;
    ``io_depth``: the ring's size, the most requests a batch keeps in flight."""

    kind = "linux-block"
    zoned = False
    interface = "conventional"

    def __init__(self, path: str, exclusive: bool = True, readonly: bool = False,
                 io_engine: str | None = None, io_depth: int = DEFAULT_DEPTH) -> None:
        self.path = self.url = path
        self.readonly = readonly
        self._fd = -1
        self._fd = open_direct(path, exclusive, readonly)
        try:
            self._init_io(io_engine, io_depth)
        except Exception:
            self.close()
            raise
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
        """Write ranges (``data`` holds them back to back) with up to ``qd`` in flight; returns
        completion times. The first failed write raises after the batch completed (the others
        landed)."""
        offsets, lengths, view = check_write_batch(offsets, data, lengths, self.block_size, self.size)
        if offsets.size == 0:
            return np.zeros(0)
        res, done = self.run_batch(True, aligned_copy(view), offsets, lengths, qd)
        err = self._batch_error("write", res, offsets, lengths)
        if err is not None:
            raise err
        return done

    def discard(self, offset: int, length: int) -> None:
        check_aligned(offset, length, self.block_size, self.size, "discard")
        try:
            fcntl.ioctl(self._fd, _BLKDISCARD, struct.pack("QQ", offset, length))
        except OSError as e:
            if e.errno not in (errno.EOPNOTSUPP, errno.ENOTTY):
                raise DeviceIOError(f"{self.path}: discard at {offset} failed: {e.strerror}", offset=offset) from None
            return                                  # no discard support: the data stays, which is allowed
        with self.tally.lock:
            self.tally.io.discard_bytes += length

    def describe(self) -> dict:
        return {"url": self.url, "kind": self.kind, "zoned": False, "path": self.path,
                "size": self.size, "block_size": self.block_size, "clock": "wall", "preset": None,
                "io_engine": self.engine_stats()}
