"""The ``SwapBackend`` protocol shared by ``SwapStore`` and ``ConventionalSwap``, and the
statistics both report (metric names as in DESIGN.md)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class SwapBackend(Protocol):
    """Pages in, pages out. ``page_ids`` is an int64 array, ``pages`` a uint8 array of shape
    (n, page_size). Swapping out an id already stored replaces it; ``swap_in`` of an unknown id raises
    ``KeyError``. A failed call leaves every previously readable page readable with the same bytes."""

    page_size: int

    def swap_out(self, page_ids: np.ndarray, pages: np.ndarray, stream: int = 0) -> None: ...
    def swap_in(self, page_ids: np.ndarray) -> np.ndarray: ...
    def discard(self, page_ids: np.ndarray) -> None: ...
    def flush(self) -> None: ...
    def stats(self) -> "SwapStats": ...
    def close(self) -> None: ...


@dataclass
class SwapStats:
    """What a swap backend did. ``clock`` names the clock of every ``*_s`` field: ``"modeled"``
    (emulated device time), ``"wall"`` (real devices) or ``"none"`` (timing model off)."""

    clock: str
    page_size: int
    pages_stored: int = 0
    host_write_bytes: int = 0          # what callers swapped out
    host_read_bytes: int = 0           # what callers swapped in
    device_write_bytes: int = 0        # what the backend wrote to the device, its GC included
    device_read_bytes: int = 0
    gc_write_bytes: int = 0            # host-side GC relocations (SwapStore)
    device_gc_write_bytes: int = 0     # device-side GC relocations (conventional SSD's FTL)
    media_write_bytes: int = 0         # what reached flash, device-side GC included
    discard_bytes: int = 0
    device_time_s: float = 0.0
    swap_in_latency_p50_s: float = 0.0
    swap_in_latency_p99_s: float = 0.0
    swap_in_latency_mean_s: float = 0.0
    write_size_histogram: dict[int, int] = field(default_factory=dict)
    read_size_histogram: dict[int, int] = field(default_factory=dict)
    extra: dict = field(default_factory=dict)  # backend-specific: zones, GC runs, readahead, ...

    @property
    def write_amplification(self) -> float:
        """media_write_bytes / host_write_bytes (1.0 before anything was written)."""
        return self.media_write_bytes / self.host_write_bytes if self.host_write_bytes else 1.0

    @property
    def host_write_amplification(self) -> float:
        """device_write_bytes / host_write_bytes: what the backend itself added."""
        return self.device_write_bytes / self.host_write_bytes if self.host_write_bytes else 1.0

    def as_dict(self) -> dict:
        d = asdict(self)
        d.update(d.pop("extra"))
        d["write_amplification"] = self.write_amplification
        d["host_write_amplification"] = self.host_write_amplification
        d["write_size_histogram"] = dict(sorted(self.write_size_histogram.items()))
        d["read_size_histogram"] = dict(sorted(self.read_size_histogram.items()))
        return d


class LatencyLog:
    """Per-page swap-in latencies (seconds), kept in a growing numpy buffer."""

    def __init__(self) -> None:
        self._buf = np.zeros(1024, np.float64)
        self._n = 0

    def add(self, latencies: np.ndarray | float) -> None:
        lat = np.atleast_1d(np.asarray(latencies, np.float64))
        need = self._n + lat.size
        if need > self._buf.size:
            self._buf = np.resize(self._buf, max(need, 2 * self._buf.size))
        self._buf[self._n:need] = lat
        self._n = need

    def values(self) -> np.ndarray:
        return self._buf[:self._n]

    def fill(self, stats: SwapStats) -> SwapStats:
        v = self.values()
        if v.size:
            stats.swap_in_latency_p50_s = float(np.percentile(v, 50))
            stats.swap_in_latency_p99_s = float(np.percentile(v, 99))
            stats.swap_in_latency_mean_s = float(v.mean())
        return stats
