"""One measured replay: a trace (one ``SwapTrace`` or the chunks of a ``ChunkedTrace``) through one
backend on a fresh device, and what the interface comparisons report of it — modeled stall, write
amplification, GC bytes (the store's and the device's), p99 swap-in wait and flash wear. Shared by
``zswap-host sweep`` (``sweep/point.py``) and ``experiments/interfaces_replay.py``, so both measure a
run the same way."""

from __future__ import annotations

from typing import Callable, Iterable

from ..devices import open_device, placement_units, wear_spread
from ..store import StoreConfig, SwapStore
from ..workloads import SwapTrace, replay
from ..workloads.page_words import PageVersions


def store_on(url: str, zone_size: int, zone_capacity: int, config: StoreConfig, **unit_options):
    """(store, device clock, the device to ask for wear) on a fresh device opened from ``url``, seen
    as placement units (``devices.placement_units``: a conventional or FDP SSD's units are LBA ranges
    of ``zone_size`` bytes, ``zone_capacity`` of them written; ``unit_options`` e.g. an Open-Channel
    SSD's ``layout="isolate"``). Raises what ``open_device`` / ``SwapStore`` raise for a bad device."""
    units = placement_units(open_device(url, zoned=None), zone_size, zone_capacity, **unit_options)
    try:
        return SwapStore(units, config), units.now, units
    except BaseException:
        units.close()
        raise


def replay_measured(backend, clock: Callable[[], float], dev, chunks: Iterable[SwapTrace],
                    verify: bool = False) -> dict:
    """Replay ``chunks`` one after another through ``backend`` (one page-version history, so a
    chunked trace replays as its whole would) and measure it. ``verify``: check every swapped-in
    page's fingerprint (``PageCorruptError`` at the first wrong one). The replay ends as training
    ends, with a ``flush`` of the pages still buffered: without it they would count as written by the
    host but not by the flash, and write amplification could read below 1. Stall is the modeled time
    the replay took (the flush included) minus its idle (compute) windows: what the workload would
    wait on swap, GC that overruns an idle window included. The caller closes ``backend`` and ``dev``."""
    versions = PageVersions()
    t0, idle = clock(), 0.0
    for chunk in chunks:
        replay(backend, chunk, verify=verify, clock=clock, versions=versions)
        idle += float(chunk.idle_s.sum())
    backend.flush()
    stall = clock() - t0 - idle
    s = backend.stats()
    wear = wear_spread(dev.erase_counts())
    return {"stall_s": round(stall, 4), "write_amplification": round(s.write_amplification, 4),
            "store_gc_mib": round(s.gc_write_bytes / 2**20, 1),
            "device_gc_mib": round(s.device_gc_write_bytes / 2**20, 1),
            "swap_in_p99_us": round(s.swap_in_latency_p99_s * 1e6, 1),
            "erase_blocks": wear["blocks"], "erases": wear["erases"],
            "wear_max_over_mean": round(wear["max_over_mean"], 3), "wear_cv": round(wear["cv"], 3)}
