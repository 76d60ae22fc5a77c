"""The DLRM training loop (``train``, ``Trainer``): the dense model (``workloads/dlrm.py``) and its
embedding tables as a :class:`SwappedEmbeddingBagCollection`, stepped and timed as
``zswap_host.workloads.train``'s module docstring says (what a run is and what it returns live there,
torch-free; the loop is here because it trains this package's module).
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import asdict

import numpy as np
import torch

from ..workloads.dlrm import DLRM, bce
from ..workloads.trace import IDLE, OVERLAP
from ..workloads.train import TrainResult, batch_source, idle_overrun, resolve
from .collection import SwappedEmbeddingBagCollection


class Trainer:
    """One DLRM training: the dense model and its torch optimizer, and the embedding tables as a
    :class:`SwappedEmbeddingBagCollection` (the module users train with: pooling, fused
    optimizer in backward, lookahead). ``step(batch)`` runs one iteration and returns its loss and
    timings; several trainers can be stepped in turn (interleaved repeats,
    :func:`zswap_host.bench.compute.measure_compute`). ``emb``: the tables' page cache."""

    def __init__(self, model_cfg, data_cfg, backend, budget, seed: int, *, clock=None, trace=None,
                 discard_dirty: bool = False, lookahead: int = 0, pack_hot_rows=False) -> None:
        self.mc, self.dc = resolve(model_cfg, data_cfg)
        self.model = DLRM(self.mc, self.dc.num_tables, seed=seed)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=self.mc.lr)
        self.tables = SwappedEmbeddingBagCollection(
            self.dc.tables, self.mc.dim, "sum", backend=backend, budget=budget, optimizer=self.mc.emb_optimizer,
            lr=self.mc.emb_lr, seed=seed, clock=clock, discard_dirty=discard_dirty, trace=trace,
            pack_hot_rows=pack_hot_rows)
        self.emb = self.tables.page_cache
        self.keys = self.tables.keys
        self.trace = trace
        self.lookahead = int(lookahead) if backend is not None else 0
        self.overlap = None             # the last step's prefetch (``lookahead.Overlap``), or None

    def _features(self, b) -> dict:
        return {k: torch.from_numpy(b.sparse[t]) for t, k in enumerate(self.keys)}

    def step(self, b, ahead=()) -> tuple[float, float, float, float, float]:
        """One iteration on batch ``b``: returns (loss, compute wall s excluding backend calls, paging
        bookkeeping s, I/O stall s of the demand faults, wall s inside backend calls). ``ahead``: the
        upcoming batches (nearest first), prefetched while this one computes when the trainer has a
        lookahead; what that cost is left in ``self.overlap``."""
        emb = self.emb
        w0, s0, k0 = emb.io_wall_s, emb.io_stall_s, emb.bookkeeping_wall_s
        t0 = time.perf_counter()
        pooled = self.tables(self._features(b), concat=True).view(b.size, self.dc.num_tables, self.mc.dim)
        if self.lookahead:
            if self.trace is not None:
                self.trace.add(OVERLAP)
            self.tables.prefetch(*(self._features(a) for a in list(ahead)[:self.lookahead]))
        prob = self.model(torch.from_numpy(b.dense), pooled)
        loss = bce(prob, torch.from_numpy(b.labels))
        self.opt.zero_grad(set_to_none=True)
        loss.backward()                     # the tables' update (and the prefetch's wait) run in here
        self.opt.step()
        self.overlap = self.tables.wait_prefetch() if self.lookahead else None
        t1 = time.perf_counter()
        iowall = emb.io_wall_s - w0
        blocked = self.overlap.blocked_s if self.overlap is not None else 0.0
        return (float(loss.detach()), (t1 - t0) - iowall - blocked, emb.bookkeeping_wall_s - k0,
                emb.io_stall_s - s0, iowall)

    def stop(self) -> None:
        """Finish a prefetch left running by a step that failed (that step's error is the one to
        report, so the prefetch's own is dropped)."""
        if self.lookahead:
            try:
                self.tables.wait_prefetch()
            except Exception:
                pass


def train(model_cfg, data_cfg, backend, budget, iterations: int, batch_size: int, seed: int,
          on_idle=None, clock=None, progress=None, trace=None, *, threads: int | None = 1,
          discard_dirty: bool = False, charged_compute_s=None, source=None, lookahead: int = 0,
          pack_hot_rows=False) -> TrainResult:
    """Train DLRM for ``iterations`` batches of ``batch_size`` with its embedding tables in a
    ``PagedEmbedding`` of ``budget`` (bytes, fraction of table bytes, or "25%"/"64MiB") over
    ``backend`` (None: DRAM only). ``seed`` fixes the MLP init, first-touch embedding init and the
    batch stream (the dataset itself is fixed by ``data_cfg.seed``).

    ``clock()``: the device's clock (modeled seconds) for I/O stall time; None = wall time in the
    backend calls. ``charged_compute_s``: per-iteration compute to charge (array of ``iterations``
    seconds) instead of the measured one. ``on_idle(seconds)`` is called after each iteration with the
    charged compute (hand it to ``SwapStore.idle`` or advance the conventional device's clock).
    ``progress(done, total)`` after each iteration. ``trace``: a ``TraceBuilder``; it gets every
    swap_in/swap_out/discard and an IDLE event with each iteration's charged compute. ``threads``:
    torch threads (None: leave as is). ``source``: where batches come from (``workloads.train.batch_source``;
    None: ``CriteoSynth(data_cfg)``, else e.g. a ``data.CriteoFile``); what the source's stream reports
    (its ``stats()``) ends in ``TrainResult.source``. ``lookahead``: upcoming batches whose pages are
    faulted in while a step computes (0: none; see ``workloads.train``'s docstring for the clock).
    ``pack_hot_rows``: the tables' hot rows packed together (``SwappedEmbeddingBagCollection``'s
    option: False, True or a ``RowPacking``; losses unchanged).
    """
    if threads is not None:
        torch.set_num_threads(int(threads))
    iterations, batch_size = int(iterations), int(batch_size)
    if charged_compute_s is not None:
        charged_compute_s = np.asarray(charged_compute_s, np.float64)
        if charged_compute_s.shape != (iterations,) or (charged_compute_s < 0).any():
            raise ValueError(f"charged_compute_s must be {iterations} non-negative seconds")
    t_start = time.perf_counter()
    lookahead = int(lookahead)
    if lookahead < 0:
        raise ValueError(f"lookahead must be >= 0, not {lookahead}")
    tr = Trainer(model_cfg, data_cfg, backend, budget, seed, clock=clock, trace=trace, discard_dirty=discard_dirty,
                 lookahead=lookahead, pack_hot_rows=pack_hot_rows)
    mc, dc, emb = tr.mc, tr.dc, tr.emb
    if trace is not None:
        trace.meta.update(kind="dlrm", model=asdict(mc), data={**asdict(dc), "tables": list(dc.tables)},
                          iterations=iterations, batch_size=batch_size, seed=seed,
                          budget_bytes=emb.budget_bytes, page_size=emb.page_size, lookahead=lookahead)
    n = iterations
    compute, paging, stall, iowall, data_s, losses = (np.zeros(n) for _ in range(6))
    pin = np.zeros(n, np.int64)
    pout = np.zeros(n, np.int64)
    ftouch = np.zeros(n, np.int64)
    c = emb.counters
    prefetch_io = np.zeros(n)
    gen = batch_source(dc, source).batches(n, batch_size, seed)
    queue: deque = deque()
    try:
        for i in range(n):
            t0 = time.perf_counter()
            while len(queue) < 1 + tr.lookahead and i + len(queue) < n:
                queue.append(next(gen))
            b = queue.popleft()
            data_s[i] = time.perf_counter() - t0
            f0, o0, n0 = c.faults, c.pages_written, c.first_touch
            losses[i], compute[i], paging[i], stall[i], iowall[i] = tr.step(b, queue)
            pin[i], pout[i], ftouch[i] = c.faults - f0, c.pages_written - o0, c.first_touch - n0
            idle = float(compute[i] if charged_compute_s is None else charged_compute_s[i])
            if trace is not None:
                trace.add(IDLE, idle_s=idle)
            window = idle
            ov = tr.overlap
            if ov is not None and ov.io_s is not None:   # modeled: the step lasts max(compute, prefetch)
                prefetch_io[i] = ov.io_s
                stall[i] += max(0.0, ov.io_s - idle)
                window = max(0.0, idle - ov.io_s)
            elif ov is not None:                        # wall: the step waited for the worker
                stall[i] += ov.blocked_s
            if on_idle is not None:
                stall[i] += idle_overrun(on_idle, clock, window)
            if progress is not None:
                progress(i + 1, n)
    finally:
        tr.stop()
    return TrainResult(
        model=asdict(mc), data={**asdict(dc), "tables": list(dc.tables)}, iterations=n,
        batch_size=batch_size, seed=int(seed),
        clock="modeled" if clock is not None else ("wall" if backend is not None else "none"),
        budget_bytes=emb.nframes * emb.page_size, table_bytes=emb.total_bytes, budget_pages=emb.nframes,
        total_pages=emb.total_pages, compute_s=compute, io_stall_s=stall, io_wall_s=iowall, data_s=data_s,
        loss=losses, pages_in=pin, pages_out=pout, first_touch=ftouch, paging_s=paging,
        charged_s=compute.copy() if charged_compute_s is None else charged_compute_s.copy(),
        paging=emb.stats(), wall_s=time.perf_counter() - t_start,
        source=gen.stats() if hasattr(gen, "stats") else {}, lookahead=lookahead, prefetch_io_s=prefetch_io)
