"""One run's replay: the trace's chunks one after another through the run's backend (one page
version history, so a chunked trace replays as its whole would; every swap-in verified against its
fingerprint), then the end of training (``flush``), and what it cost: modeled stall (the replay's
modeled time minus its compute windows), write amplification, the store's and the device's GC MiB,
swap-in p99, and the wall time, pages/s and peak RSS it took here. Linux-swap runs replay without
the trace's discards, as their bench runs issue none."""

from __future__ import annotations

import resource
import time
from typing import Callable

from .runs import Sizing, make_run, run_url
from .stall import StallClock, stall_breakdown

# progress(run, pages done, pages in all, chunks done, chunks, wall s)
Progress = Callable[[str, int, int, int, int, float], None]


def replay_run(name: str, trace_path: str, preset: str, sizing: Sizing, progress: Progress | None = None,
               verify: bool = True, idle_scale: float = 1.0) -> dict:
    """The row of run ``name`` (``runs.RUNS``) replaying the trace at ``trace_path`` (a ``.npz`` or a
    chunked trace directory of bench preset ``preset``) on fresh devices of ``sizing``: ``run``,
    ``stall_s``, ``write_amplification``, ``store_gc_mib``, ``device_gc_mib``, ``swap_in_p99_ms``,
    ``compute_s``, ``pages``, ``wall_s``, ``pages_per_s``, ``cpu_s`` and ``pages_per_cpu_s`` (less
    moved by other load on the machine than wall time), ``peak_rss_mib`` (this process's: run it in
    a process of its own for the run's), ``device`` (URL), ``devices`` (the plan's sizing) and ``stall_breakdown`` (``stall.stall_breakdown``: where
    the stall went, on the model's clock).
    ``idle_scale``: the trace's compute windows times this (another compute per sample). Without
    ``sizing.idle_gc`` a window only lets the device clock pass (neither GC gets it).
    Raises ``PageCorruptError`` for a page that comes back wrong, what the backend raises otherwise
    (e.g. ``SwapFullError``)."""
    from ..sweep.trace_source import TraceSource
    from ..workloads import replay
    from ..workloads.page_words import PageVersions
    from ..workloads.trace import DISCARD
    from .runs import check_runs

    name = check_runs([name])[0]            # an old name (RENAMED_RUNS) reports under its name now
    src = TraceSource(trace_path, preset)
    total = src.counts()
    pages_total = total["swap_in_pages"] + total["swap_out_pages"]
    nchunks = int(total.get("chunks", 1))
    id_space = int(src.meta.get("total_pages") or src.meta.get("pages") or 0)
    if not id_space and "chunks" not in total:        # a bench .npz: its one chunk says
        id_space = next(iter(src.chunks())).pages
    backend, clock, dev = make_run(name, sizing, id_space)
    timed = StallClock(backend, clock, None if sizing.idle_gc else dev.advance)
    try:
        vers = PageVersions(id_space)
        wall0, cpu0, t0, done, idle = time.monotonic(), time.process_time(), clock(), 0, 0.0
        if progress is not None:
            progress(name, 0, pages_total, 0, nchunks, 0.0)
        for i, chunk in enumerate(src.chunks()):
            c = chunk.counts()
            c["idle_s"] *= idle_scale
            if name.startswith("linux"):
                chunk = chunk.without(DISCARD)
            if idle_scale != 1.0:
                chunk = chunk.with_idle_scaled(idle_scale)
            replay(timed, chunk, verify=verify, clock=clock, versions=vers)
            done += c["swap_in_pages"] + c["swap_out_pages"]
            idle += c["idle_s"]
            if progress is not None:
                progress(name, done, pages_total, i + 1, nchunks, time.monotonic() - wall0)
        timed.flush()                   # the end of training, as the bench ends it
        wall, cpu = time.monotonic() - wall0, time.process_time() - cpu0
        s = backend.stats()
        return {"run": name, "stall_s": round(clock() - t0 - idle, 4) or 0.0,
                "write_amplification": round(s.write_amplification, 4),
                "store_gc_mib": round(s.gc_write_bytes / 2**20, 1),
                "device_gc_mib": round(s.device_gc_write_bytes / 2**20, 1),
                "swap_in_p99_ms": round(s.swap_in_latency_p99_s * 1e3, 3), "compute_s": round(idle, 3),
                "pages": pages_total, "wall_s": round(wall, 1), "pages_per_s": round(pages_total / max(wall, 1e-9)),
                "cpu_s": round(cpu, 1), "pages_per_cpu_s": round(pages_total / max(cpu, 1e-9)),
                "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                "device": run_url(name, sizing), "devices": sizing.devices,
                "stall_breakdown": stall_breakdown(timed, s.extra or {}, idle)}
    finally:
        backend.close()
        dev.close()
