"""One sweep point, run: the trace replayed through the store (the point's placement and victim
policy) on a fresh payload-free emulated SSD of the point's interface, sized as the bench sizes
its devices (same raw flash on every interface). A pure function of its arguments: the same point,
trace and seed give the same row on any machine, in any process, in any order — which is what lets
the Ray executor's rows equal the serial executor's."""

from __future__ import annotations

import os
import time

from ..bench.plan import READ_QD
from ..bench.same_flash import interface_urls
from ..store import StoreConfig
from .grid import Point, SweepError
from .replay_run import replay_measured, store_on
from .trace_source import TraceSource

# Failure injection for tests (Ray workers are other processes, so a hook must travel by environment):
# with ZSWAP_SWEEP_FAULTS=DIR, a point whose file DIR/<key>.fail holds n > 0 fails n more times
# (the count is decremented per attempt); n < 0: it always fails.
FAULTS_ENV = "ZSWAP_SWEEP_FAULTS"


class InjectedFault(RuntimeError):
    """The failure ``ZSWAP_SWEEP_FAULTS`` asked for."""


def _inject(point: Point) -> None:
    where = os.environ.get(FAULTS_ENV)
    if not where:
        return
    path = os.path.join(where, point.key + ".fail")
    try:
        with open(path) as f:
            n = int(f.read().strip() or 0)
    except FileNotFoundError:
        return
    if n == 0:
        return
    if n > 0:
        with open(path, "w") as f:
            f.write(str(n - 1))
    raise InjectedFault(f"injected failure of point {point.key} ({'always' if n < 0 else f'{n - 1} more to come'})")


def payload_free(url: str) -> str:
    """The same device keeping a fingerprint word per block instead of its bytes (same modeled
    numbers, ``tests/devices/test_payload_free.py``): a sweep's many devices fit in memory."""
    return url + ("&" if "?" in url else "?") + "payload=0"


def run_point(point: Point, trace_path: str, seed: int = 0, preset: str | None = None) -> dict:
    """The row of one point: its fields, the seed, the tables' share of the device's usable bytes,
    then what ``replay_measured`` reports (modeled stall, write amplification, store and device GC
    MiB, p99 swap-in wait, erase blocks, erases, wear max/mean and cv). Every swapped-in page is
    verified against its fingerprint. ``preset``: the trace's bench preset if its meta lacks one.

    The store, the devices and the replay have no randomness of their own: ``seed`` is the trace's
    (``zswap-host sweep --generate`` draws the trace from it) and is recorded in the row. Raises
    ``SweepError`` for a bad trace; a point the device cannot hold raises what the store raises
    (e.g. ``SwapFullError``)."""
    _inject(point)
    src = TraceSource(trace_path, preset)
    pl = src.plan(point.utilisation)
    url = interface_urls(pl)[point.interface]
    config = StoreConfig(placement=point.placement, victim=point.victim, read_qd=READ_QD)
    backend, clock, dev = store_on(payload_free(url), pl.zone_size, pl.zone_capacity, config)
    try:
        measured = replay_measured(backend, clock, dev, src.chunks(), verify=True)
    finally:
        backend.close()
        dev.close()
    usable = pl.devices["tables_over_zns_usable" if point.interface in ("zns", "ocssd")
                        else "tables_over_conventional_usable"]
    return {**point.as_dict(), "seed": int(seed), "tables_over_usable": round(usable, 4), **measured}


def run_point_timed(point: Point, trace_path: str, seed: int = 0, preset: str | None = None) -> tuple[dict, dict]:
    """``run_point``'s row and what it took here: ``{"wall_s", "pages_per_s"}`` (pages swapped in
    and out per wall second). Kept out of the row, which must not depend on the machine."""
    t0 = time.monotonic()
    row = run_point(point, trace_path, seed, preset)
    wall = time.monotonic() - t0
    c = TraceSource(trace_path, preset).counts()
    pages = int(c["swap_in_pages"]) + int(c["swap_out_pages"])
    return row, {"wall_s": round(wall, 2), "pages_per_s": round(pages / max(wall, 1e-9))}


def check_point_inputs(trace_path: str, preset: str | None = None) -> TraceSource:
    """Open the trace once before a sweep starts (``SweepError`` for a bad one), so no worker is
    started for a sweep that cannot run."""
    if not isinstance(trace_path, str) or not trace_path:
        raise SweepError("give the trace to replay (--trace PATH)")
    return TraceSource(trace_path, preset)
