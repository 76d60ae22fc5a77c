"""Batches for devices without a queue of their own: ``read_groups`` / ``write_groups`` as one
batch per group (``SerialGroups``), ``append_batch`` as one ``append`` after another
(``SerialAppends``), and ``append_run`` on ``append_batch`` (``append_run_batched``)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import DeviceIOError, ZoneStateError
from .buffers import Buffer
from .request_checks import check_append_batch, check_batch, check_groups, check_write_batch
from .zone import ZoneGeometry


class SerialGroups:
    """``read_groups`` / ``write_groups`` for block devices without a grouped submit: one
    ``read_batch`` / ``write_batch`` per group."""

    block_size: int
    size: int

    def read_groups(self, offsets: np.ndarray, lengths: np.ndarray, group_sizes: np.ndarray,
                    group_qds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """See ``BlockDevice.read_groups``."""
        offsets = np.asarray(offsets, np.int64)
        lengths = np.asarray(lengths, np.int64)
        group_sizes = check_groups(group_sizes, group_qds, offsets.size, "read")
        check_batch(offsets, lengths, self.block_size, self.size, "read")
        bufs, dones, lo = [], [], 0
        for n, qd in zip(group_sizes.tolist(), np.asarray(group_qds).tolist()):
            b, d = self.read_batch(offsets[lo:lo + n], lengths[lo:lo + n], qd=int(qd))
            bufs.append(b)
            dones.append(np.asarray(d, np.float64))
            lo += n
        if not bufs:
            return np.zeros(0, np.uint8), np.zeros(0)
        return np.concatenate(bufs), np.concatenate(dones)

    def write_groups(self, offsets: np.ndarray, data: Buffer, lengths: np.ndarray, group_sizes: np.ndarray,
                     group_qds: np.ndarray) -> np.ndarray:
        """See ``BlockDevice.write_groups``."""
        offsets, lengths, view = check_write_batch(offsets, data, lengths, self.block_size, self.size)
        group_sizes = check_groups(group_sizes, group_qds, offsets.size, "write")
        ends = np.concatenate(([0], np.cumsum(lengths)))
        dones, lo = [], 0
        for n, qd in zip(group_sizes.tolist(), np.asarray(group_qds).tolist()):
            dones.append(np.asarray(self.write_batch(offsets[lo:lo + n], view[ends[lo]:ends[lo + n]],
                                                     lengths[lo:lo + n], qd=int(qd)), np.float64))
            lo += n
        return np.concatenate(dones) if dones else np.zeros(0)


def append_run_batched(dev, zones: np.ndarray, segs: tuple, lengths: np.ndarray, qd: int, expect: int):
    """``ZonedDevice.append_run`` on ``dev.append_batch``: True when no request failed and they
    landed back to back in request order from byte ``expect``, else ``append_batch``'s
    ``(offsets, failures)`` (``SerialAppends.append_run``; a Linux namespace off the uring-cmd path)."""
    out = dev.append_batch(zones, segs if len(segs) > 1 else segs[0], lengths, qd)
    offsets, failures = out
    if failures or not offsets.size:
        return out
    at = expect
    for off, n in zip(offsets.tolist(), lengths.tolist()):
        if off != at:
            return out
        at += n
    return True


class SerialAppends:
    """``append_batch`` for zoned devices without a queue: one ``append`` after another; and
    ``append_run`` on it (the check in Python: ``append_run_batched``)."""

    geometry: ZoneGeometry
    append_run = append_run_batched

    def append_batch(self, zones, data: Buffer | Sequence[Buffer], lengths, qd: int = 32) -> tuple[np.ndarray, list]:
        """See ``ZonedDevice.append_batch``."""
        zones, _, units = check_append_batch(self.geometry, zones, data, lengths)
        offsets = []
        failures = []
        append = self.append
        for k, (z, unit) in enumerate(zip(zones.tolist(), units)):
            try:
                offsets.append(append(z, unit))
            except (DeviceIOError, ZoneStateError) as e:
                offsets.append(-1)
                failures.append((k, e))
        return np.array(offsets, np.int64), failures

