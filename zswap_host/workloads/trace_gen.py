"""The page trace of a bench preset's DLRM training without torch and without tables: the same
batches' indices (``CriteoSynth.indices``: the synthetic Criteo stream of the preset, drawn from the
same generator as the bench's batches), paged by the same page cache (``PagedEmbedding`` with
``payload=False``: its CLOCK evictions, first touches, faults and discards, no row values) over a
backend that keeps nothing, into a chunked trace on disk (``chunked_trace``).

The result equals the trace ``zswap-host bench --trace-out`` records for the preset's
``store-on-zns`` run with the same ``--lookahead`` (tested on the ``tiny`` preset, lookahead 0 and 1):
every swap_in, swap_out (stream = table), discard (the store runs discard a dirtied page's stale
copy), one idle window per iteration of the charged compute (pinned: ``us_per_sample`` x batch
size) and, with a lookahead, the overlap marker before each step's prefetch of the next batches. Memory: the cache's
per-page and per-frame arrays (~10 bytes per page of tables) and one chunk of events.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import asdict

import numpy as np

from ..errors import ZswapError
from .chunked_trace import ChunkedTrace, ChunkWriter
from .criteo import CriteoSynth
from .paged_embedding import PagedEmbedding
from .trace import IDLE, OVERLAP, TraceBuilder


class TraceGenError(ZswapError):
    """A trace that cannot be generated as asked (unknown preset, bad budget, no compute cost)."""


class _NoBackend:
    """A backend that keeps nothing: the trace is all that is wanted of it."""

    def __init__(self, page_size: int) -> None:
        self.page_size = page_size

    def swap_out(self, page_ids, pages, stream: int = 0) -> None:
        pass

    def swap_in(self, page_ids):
        return None

    def discard(self, page_ids) -> None:
        pass


def generate_dlrm_trace(out: str, preset: str = "mlperf", *, budget=None, iterations: int | None = None,
                        batch_size: int | None = None, seed: int = 0, us_per_sample: float | None = None,
                        chunk_iterations: int = 50, discard_dirty: bool = True, lookahead: int = 0,
                        progress=None) -> ChunkedTrace:
    """Generate the preset's page trace into directory ``out`` (chunks of ``chunk_iterations``
    iterations) and return it. None arguments come from the preset; ``us_per_sample`` (the charged
    compute per sample, an idle window per iteration) from its calibration — a preset without one
    (``mlperf``) needs it given. ``discard_dirty``: record the discards of dirtied pages' stale copies
    (the store runs' behaviour; Linux-swap replays leave them out). ``lookahead``: the next batches
    whose pages each step prefetches while it computes, as the bench's lookahead runs do (their I/O
    follows an overlap marker: a replay on a device clock takes it out of the compute window).
    ``progress(done, total)`` after
    each chunk. ``TraceGenError`` for bad input, before anything is written."""
    from .train import preset as train_preset

    try:
        p = train_preset(preset)
        mc, dc = p.model_config(), p.data_config()
    except ValueError as e:
        raise TraceGenError(str(e)) from None
    budget = p.budget if budget is None else budget
    iterations = p.iterations if iterations is None else int(iterations)
    batch_size = p.batch_size if batch_size is None else int(batch_size)
    us = p.compute_us_per_sample if us_per_sample is None else float(us_per_sample)
    if us is None or not us >= 0:
        raise TraceGenError(f"preset {preset!r} has no calibrated compute cost: give the compute per sample "
                            f"(us_per_sample / --compute-us-per-sample)")
    if iterations < 1 or batch_size < 1 or chunk_iterations < 1:
        raise TraceGenError("iterations, batch size and chunk iterations must be positive")
    if isinstance(lookahead, bool) or not isinstance(lookahead, int) or not 0 <= lookahead <= 64:
        raise TraceGenError(f"lookahead must be a whole number of batches within 0..64, not {lookahead!r}")
    be = _NoBackend(4096)
    try:
        emb = PagedEmbedding(dc.tables, mc.dim, backend=be, budget=budget, seed=seed, optimizer=mc.emb_optimizer,
                             lr=mc.emb_lr, discard_dirty=discard_dirty, payload=False)
    except ValueError as e:
        raise TraceGenError(f"bad DRAM budget {budget!r}: {e}") from None
    idle = us * 1e-6 * batch_size
    meta = {"kind": "dlrm", "generator": "trace_gen (torch-free)", "preset": preset, "model": asdict(mc),
            "data": {**asdict(dc), "tables": list(dc.tables)}, "iterations": iterations,
            "batch_size": batch_size, "seed": seed, "budget": str(budget), "budget_bytes": emb.budget_bytes,
            "budget_pages": emb.nframes, "total_pages": emb.total_pages, "page_size": emb.page_size,
            "lookahead": lookahead, "us_per_sample": us, "discard_dirty": discard_dirty}
    synth = CriteoSynth(dc)
    rng = synth.batch_rng(seed)
    writer = ChunkWriter(out, meta)
    T = dc.num_tables
    queue: deque = deque()                      # this step's batch, then the ones it prefetches
    drawn = 0
    t0 = time.perf_counter()
    for lo in range(0, iterations, chunk_iterations):
        hi = min(iterations, lo + chunk_iterations)
        emb.trace = tb = TraceBuilder()
        for _ in range(lo, hi):
            while len(queue) < 1 + lookahead and drawn < iterations:
                queue.append(synth.indices(rng, batch_size))
                drawn += 1
            sparse = queue.popleft()

            def prefetch(tb=tb) -> None:            # the step's lookahead, between forward and backward
                tb.add(OVERLAP)
                emb.prefetch([[a[t] for t in range(T)] for a in queue])
            try:
                emb.touch([sparse[t] for t in range(T)], between=prefetch if lookahead else None)
            except ValueError as e:             # a batch larger than the budget
                raise TraceGenError(str(e)) from None
            tb.add(IDLE, idle_s=idle)
        writer.add(tb.build(), (lo, hi))
        if progress is not None:
            progress(hi, iterations)
    writer.meta["paging"] = emb.stats()
    writer.meta["generate_wall_s"] = round(time.perf_counter() - t0, 2)
    return writer.close()
