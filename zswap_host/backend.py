"""The ``SwapBackend`` protocol shared by ``SwapStore`` and ``ConventionalSwap``, and the
statistics both report (metric names as in docs/design.md)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class SwapBackend(Protocol):
    """Pages in, pages out: ``SwapStore`` (the host-managed store), ``ConventionalSwap`` (the Linux
    swap model) and wrappers such as ``VerifyingBackend``.

    Units: ``page_ids`` is an int64 array of ids in ``[0, 2**63 - 1]``; ``pages`` a uint8 array of
    shape (n, page_size); times are seconds on the device's clock (``DeviceStats.clock``).
    Swapping out an id already stored replaces it. A failed call leaves every previously readable
    page readable with the same bytes.

    Optional (not part of the protocol's checks; found with ``getattr``): ``neighbours(page_ids,
    limit) -> int64 array``, the ids stored that are likely needed with these, most likely first, at
    most ``limit``, none of ``page_ids`` (``neighbours.NeighbourHint``). The pager reads them ahead
    with a fault (``Pager(fault_around=...)``); ``SwapStore`` and ``ConventionalSwap`` have it, and
    ``VerifyingBackend`` forwards it. ``swap_in_words(page_ids) -> uint64 array``: the first 64-bit
    word of each page ``swap_in`` would return, with the same reads, time and errors, without
    building the pages (``SwapStore`` has it; the trace replay reads with it where a backend has it,
    as it checks only a page's fingerprint word, ``workloads/page_words.py``).

    Errors: ``KeyError`` from ``swap_in`` of an id not stored; ``ValueError`` for malformed
    arguments (ids out of range, pages of the wrong shape, a negative or non-finite idle window);
    ``SwapFullError`` when the pages do not fit; the device's ``DeviceIOError`` when it fails;
    ``StoreClosedError`` for a call after ``close()`` (a second ``close()`` is a no-op). ``gc_step``
    is ``SwapStore``'s own (host-side GC), not the protocol's: Linux swap has none (its SSD's FTL
    collects in the device, in ``idle`` windows where it models idle-time GC).
    """

    page_size: int

    @property
    def capacity_pages(self) -> int:
        """How many pages the backend guarantees to hold (may drop as zones wear out)."""
    def swap_out(self, page_ids: np.ndarray, pages: np.ndarray, stream: int = 0) -> None:
        """Store ``pages[k]`` under ``page_ids[k]``; ``stream`` is a placement hint (e.g. a table).
        The backend copies what it keeps: the caller may reuse ``pages`` once this returns."""
    def swap_in(self, page_ids: np.ndarray) -> np.ndarray:
        """The pages stored under ``page_ids``, shape (n, page_size), in the order asked."""
    def discard(self, page_ids: np.ndarray) -> None:
        """Forget these pages (ids not stored are ignored)."""
    def flush(self) -> None:
        """Write out whatever is buffered, so that the device holds every stored page."""
    def idle(self, seconds: float) -> None:
        """A window of ``seconds`` in which the host does no swapping (e.g. compute between
        training iterations): the backend's own GC may work in it, then the device clock passes
        it (``device.advance``), so a device with idle-time GC gets what is left. 0 does nothing."""
    def stats(self) -> "SwapStats":
        """What the backend did since it was created."""
    def swap_in_latencies(self) -> np.ndarray:
        """Every swapped-in page's wait so far, in seconds on the device's clock (float64 array)."""
    def close(self) -> None:
        """Release the backend (and the device, where the backend owns it)."""


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
    """Per-page swap-in latencies (seconds): each call's batch kept as is, joined when read (a
    growing buffer would copy tens of millions of them again at every doubling)."""

    def __init__(self) -> None:
        self._parts: list[np.ndarray] = []

    def add(self, latencies: np.ndarray | float) -> None:
        lat = np.array(latencies, np.float64, ndmin=1)        # a copy: the caller may reuse its array
        if lat.size:
            self._parts.append(lat.ravel())

    def values(self) -> np.ndarray:
        if len(self._parts) != 1:
            self._parts = [np.concatenate(self._parts) if self._parts else np.zeros(0, np.float64)]
        return self._parts[0]

    def fill(self, stats: SwapStats) -> SwapStats:
        v = self.values()
        if v.size:
            p50, p99 = np.percentile(v, [50, 99])               # one partition for both
            stats.swap_in_latency_p50_s = float(p50)
            stats.swap_in_latency_p99_s = float(p99)
            stats.swap_in_latency_mean_s = float(v.mean())
        return stats
