"""``IoCounters``: the request counting every backend shares (bytes and a request-size histogram
per direction), which fills a device's ``DeviceStats``; ``IoTally``: a real device's counters, busy
time and running batches under one lock."""

from __future__ import annotations

import threading
from collections import Counter

import numpy as np

from .base import DeviceStats


class IoCounters:
    """Request counting shared by the backends: bytes and a request-size histogram per direction.
    Batches of sizes are counted into the histograms when they are looked at (or every 256
    batches): a histogram per batch would cost a sort each."""

    _PENDING = 256

    def __init__(self) -> None:
        self.write_bytes = 0
        self.read_bytes = 0
        self.discard_bytes = 0
        self._write_hist: Counter[int] = Counter()
        self._read_hist: Counter[int] = Counter()
        self._pending: tuple[list, list] = ([], [])       # (write, read) size batches not counted yet

    @property
    def write_hist(self) -> Counter:
        if self._pending[0]:
            self._count(0)
        return self._write_hist

    @property
    def read_hist(self) -> Counter:
        if self._pending[1]:
            self._count(1)
        return self._read_hist

    def _count(self, k: int) -> None:
        batches = self._pending[k]
        _count(self._read_hist if k else self._write_hist, np.concatenate(batches))
        batches.clear()

    def wrote(self, n: int) -> None:
        self.write_bytes += n
        self._write_hist[n] += 1

    def read(self, n: int) -> None:
        self.read_bytes += n
        self._read_hist[n] += 1

    def read_alike(self, n: int, count: int) -> None:
        """``count`` reads of ``n`` bytes each (a batch of one size: no array kept)."""
        self.read_bytes += n * count
        self._read_hist[n] += count

    def wrote_many(self, lengths: np.ndarray) -> None:
        self.write_bytes += int(lengths.sum())
        self._later(0, lengths)

    def read_many(self, lengths: np.ndarray) -> None:
        self.read_bytes += int(lengths.sum())
        self._later(1, lengths)

    def _later(self, k: int, lengths: np.ndarray) -> None:
        p = self._pending[k]
        p.append(np.array(lengths, np.int64, copy=True).reshape(-1))    # the caller may reuse its array
        if len(p) >= self._PENDING:
            self._count(k)

    def fill(self, stats: DeviceStats) -> DeviceStats:
        stats.device_write_bytes = self.write_bytes
        stats.device_read_bytes = self.read_bytes
        stats.discard_bytes = self.discard_bytes
        stats.write_size_histogram = dict(self.write_hist)
        stats.read_size_histogram = dict(self.read_hist)
        return stats


def _count(hist: Counter, lengths: np.ndarray) -> None:
    if lengths.size <= 8:
        for n in lengths.tolist():
            hist[n] += 1
        return
    lo, hi = int(lengths.min()), int(lengths.max())
    if lo == hi:                                   # the usual batch: one size (no sort)
        hist[lo] += int(lengths.size)
        return
    if lo >= 0 and hi <= 1 << 26 and not (lengths & 511).any():     # sectors: a bincount, no sort
        counts = np.bincount(lengths >> 9)
        sizes = np.flatnonzero(counts)
        for size, count in zip((sizes << 9).tolist(), counts[sizes].tolist()):
            hist[size] += count
        return
    for size, count in zip(*np.unique(lengths, return_counts=True)):
        hist[int(size)] += int(count)


class IoTally:
    """What a real device counts (``direct_io.DirectIO``), under one lock (``lock``): its requests
    (``io``), the wall seconds they took (``busy``) and its batches running at once. Shared by the
    device's data path and its other paths (a zoned namespace's appends: ``linux_zone_append.py``)."""

    def __init__(self) -> None:
        self.io = IoCounters()
        self.busy = 0.0
        self.lock = threading.Lock()
        self.in_flight_batches = 0              # batches running now, on any of the device's rings
        self.max_batches_at_once = 0

    # ``DirectIO._running`` in two calls, for the append paths that a generator per batch would
    # cost (TCG guest)
    def batch_begins(self) -> None:
        with self.lock:
            self.in_flight_batches += 1
            if self.in_flight_batches > self.max_batches_at_once:
                self.max_batches_at_once = self.in_flight_batches

    def batch_ends(self) -> None:
        with self.lock:
            self.in_flight_batches -= 1
