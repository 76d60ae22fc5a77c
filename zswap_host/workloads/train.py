"""DLRM training with paged embedding tables over a swap backend, timed the way ``bench`` reports it.

Per iteration a run measures: ``compute_s`` (wall time of the step — torch forward/backward/update
plus the embedding gather/scatter in DRAM — excluding the time inside backend calls), ``paging_s``
(the part of it spent in the page cache's own bookkeeping: gather/apply outside backend calls),
``io_stall_s`` (the change of the caller's ``clock()`` — the device's modeled clock — across each
backend call; wall time inside the calls when ``clock`` is None) and ``io_wall_s`` (wall time inside
backend calls: the simulator's cost when the clock is modeled). Batch generation (``data_s``) is not
counted: a real input pipeline overlaps it with training.

Training time = charged compute + I/O stall. The charged compute is the run's own measured compute,
unless the caller passes ``charged_compute_s`` (what ``bench`` does: every run is charged the same,
deterministic compute, see :mod:`zswap_host.bench.compute`).

With ``lookahead=K`` the next K batches' pages are faulted in while a step computes
(:mod:`.lookahead`); on a modeled clock a step's stall is then its demand faults plus the part of the
prefetch its compute did not cover, and the idle window handed to ``on_idle`` is what the prefetch
left of the compute.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import asdict, dataclass, field

import numpy as np

from .criteo import CriteoSynth, DataConfig, data_preset
from .trace import IDLE, OVERLAP


@dataclass(frozen=True)
class BenchPreset:
    """A named training run: model, dataset, iterations, batch size, DRAM budget."""

    name: str
    model: str
    data: str
    scale: float
    iterations: int
    batch_size: int
    budget: float | int | str = 0.25
    note: str = ""
    compute_us_per_sample: float | None = None   # charged compute, calibrated (experiments/calibrate_compute.py)

    def model_config(self):
        from .dlrm import model_preset
        return model_preset(self.model)

    def data_config(self) -> DataConfig:
        return data_preset(self.data, self.scale)


PRESETS: dict[str, BenchPreset] = {
    "tiny": BenchPreset("tiny", "tiny", "tiny", 1.0, 20, 64, 0.25, "tests", 50.9),
    "quick": BenchPreset("quick", "small", "kaggle", 0.05, 400, 256, 0.25,
                         "bench --quick: six trainings in about a minute", 33.3),
    "default": BenchPreset("default", "small", "kaggle", 0.2, 1000, 1024, 0.25,
                           "bench default: six trainings in about 10 minutes", 26.2),
    "kaggle": BenchPreset("kaggle", "kaggle", "kaggle", 1.0, 2000, 2048, 0.25,
                          "full Criteo Kaggle tables (2.01 GiB), dlrm's kaggle MLPs", 95.1),
    "mlperf": BenchPreset("mlperf", "mlperf", "mlperf", 1.0, 1000, 2048, 0.25,
                          "MLPerf DLRM tables (~96 GB at dim 128): needs a device of ~100 GB"),
}


def preset(name: str) -> BenchPreset:
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown training preset {name!r}; known: {', '.join(PRESETS)}") from None


@dataclass
class TrainResult:
    """Per-iteration arrays (length ``iterations``) and totals of one training run."""

    model: dict
    data: dict
    iterations: int
    batch_size: int
    seed: int
    clock: str                      # "modeled" (clock given), "wall" (backend, no clock), "none" (no backend)
    budget_bytes: int
    table_bytes: int                # paged bytes (weights, plus Adagrad state pages)
    budget_pages: int
    total_pages: int
    compute_s: np.ndarray           # measured compute wall time, backend calls excluded
    io_stall_s: np.ndarray          # clock change across demand backend calls + prefetch not hidden
    io_wall_s: np.ndarray           # wall time inside backend calls (simulation cost when modeled)
    data_s: np.ndarray              # batch generation (not counted in training time)
    loss: np.ndarray
    pages_in: np.ndarray            # pages faulted in (swap_in) per iteration
    pages_out: np.ndarray           # pages written (swap_out) per iteration
    first_touch: np.ndarray         # pages created on first touch per iteration
    paging_s: np.ndarray            # page-cache bookkeeping inside compute_s (backend calls excluded)
    charged_s: np.ndarray           # compute charged to the run (compute_s unless the caller fixed it)
    paging: dict = field(default_factory=dict)
    wall_s: float = 0.0             # whole run, wall clock
    source: dict = field(default_factory=dict)   # what a file batch source read ({} for synthetic data)
    lookahead: int = 0              # upcoming batches prefetched while a step computed
    prefetch_io_s: np.ndarray | None = None      # device time of each step's prefetch (modeled clock)

    @property
    def iteration_s(self) -> np.ndarray:
        return self.charged_s + self.io_stall_s

    @property
    def train_time_s(self) -> float:
        return float(self.iteration_s.sum())

    @property
    def compute_time_s(self) -> float:
        """Charged compute (seconds)."""
        return float(self.charged_s.sum())

    @property
    def measured_compute_s(self) -> float:
        return float(self.compute_s.sum())

    @property
    def io_stall_time_s(self) -> float:
        return float(self.io_stall_s.sum())

    def as_dict(self) -> dict:
        d = {k: v for k, v in asdict(self).items() if not isinstance(v, np.ndarray)}
        for k, v in asdict(self).items():
            if isinstance(v, np.ndarray):
                d[k] = v.tolist()
        d.update(train_time_s=self.train_time_s, compute_time_s=self.compute_time_s,
                 io_stall_time_s=self.io_stall_time_s)
        return d


def _resolve(model_cfg, data_cfg):
    from .dlrm import ModelConfig, model_preset
    mc = model_preset(model_cfg) if isinstance(model_cfg, str) else model_cfg
    dc = data_preset(data_cfg) if isinstance(data_cfg, str) else data_cfg
    if not isinstance(mc, ModelConfig) or not isinstance(dc, DataConfig):
        raise TypeError("model_cfg must be a ModelConfig or preset name, data_cfg a DataConfig or preset name")
    return mc, dc


def batch_source(dc: DataConfig, source=None):
    """What a run's batches come from: ``source`` (an object with ``batches(n, batch_size, seed)``
    yielding ``Batch`` objects and, optionally, ``tables`` and ``hot``: the row counts it maps into and
    its lookups per table, which must be ``dc``'s), or the synthetic generator of ``dc`` when None.
    ``ValueError`` on a mismatch."""
    if source is None:
        return CriteoSynth(dc)
    tables = getattr(source, "tables", None)
    if tables is not None and tuple(tables) != tuple(dc.tables):
        raise ValueError("the batch source maps into other tables than the data config's")
    if getattr(source, "hot", dc.hot) != dc.hot:
        raise ValueError(f"the batch source gives {source.hot} lookups per table, the data config {dc.hot}")
    return source


def footprint(model_cfg, data_cfg, budget=1.0, batch_size: int | None = None, seed: int = 0,
              probe: int = 4, page_size: int = 4096, source=None) -> dict:
    """What a run will need, before it starts (no torch work, no allocation): ``total_pages`` /
    ``table_bytes`` (the paged bytes: at most this much is ever swapped out), ``budget_pages`` /
    ``budget_bytes`` (the DRAM cache; ``ValueError`` for a bad budget), and with ``batch_size`` the
    most pages any of the first ``probe`` batches needs (``batch_pages_max``) and ``fits`` =
    ``batch_pages_max <= budget_pages`` (the run fails with a ValueError otherwise). ``source``: the
    batch source the run will train on (see :func:`train`; None: the synthetic generator)."""
    from .paged_embedding import parse_budget
    mc, dc = _resolve(model_cfg, data_cfg)
    R = page_size // (4 * mc.dim)
    S = page_size // 4
    rows = np.array(dc.tables, np.int64)
    adagrad = mc.emb_optimizer == "adagrad"
    total = int((-(-rows // R)).sum() + ((-(-rows // S)).sum() if adagrad else 0))
    bb = min(parse_budget(budget, total * page_size), total * page_size)
    out = {"page_size": page_size, "rows_per_page": R, "total_pages": total, "table_bytes": total * page_size,
           "budget_pages": bb // page_size, "budget_bytes": bb // page_size * page_size}
    if batch_size:
        worst = 0
        for b in batch_source(dc, source).batches(probe, batch_size, seed):
            n = 0
            for t in range(dc.num_tables):
                idx = b.sparse[t].reshape(-1)
                n += np.unique(idx // R).size + (np.unique(idx // S).size if adagrad else 0)
            worst = max(worst, n)
        out["batch_pages_max"] = worst
        out["fits"] = worst <= out["budget_pages"]
    return out


class Trainer:
    """One DLRM training: the dense model and its torch optimizer, and the embedding tables as a
    ``zswap_host.torch.SwappedEmbeddingBagCollection`` (the module users train with: pooling, fused
    optimizer in backward, lookahead). ``step(batch)`` runs one iteration and returns its loss and
    timings; several trainers can be stepped in turn (interleaved repeats,
    :func:`zswap_host.bench.compute.measure_compute`). ``emb``: the tables' page cache."""

    def __init__(self, model_cfg, data_cfg, backend, budget, seed: int, *, clock=None, trace=None,
                 discard_dirty: bool = False, lookahead: int = 0, pack_hot_rows=False) -> None:
        import torch

        from ..torch import SwappedEmbeddingBagCollection
        from .dlrm import DLRM

        self.mc, self.dc = _resolve(model_cfg, data_cfg)
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
        import torch
        return {k: torch.from_numpy(b.sparse[t]) for t, k in enumerate(self.keys)}

    def step(self, b, ahead=()) -> tuple[float, float, float, float, float]:
        """One iteration on batch ``b``: returns (loss, compute wall s excluding backend calls, paging
        bookkeeping s, I/O stall s of the demand faults, wall s inside backend calls). ``ahead``: the
        upcoming batches (nearest first), prefetched while this one computes when the trainer has a
        lookahead; what that cost is left in ``self.overlap``."""
        import torch

        from .dlrm import bce

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


def idle_overrun(on_idle, clock, window: float) -> float:
    """Hand a compute window of ``window`` seconds to ``on_idle`` (the backend's idle time) and
    return how far the clock moved past it: work started in the window that overran it (one GC
    step at most), which the next step waits for. 0 without a clock."""
    c0 = clock() if clock is not None else 0.0
    on_idle(window)
    over = clock() - c0 - window if clock is not None else 0.0
    return over if over > 1e-12 else 0.0


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
    torch threads (None: leave as is). ``source``: where batches come from (:func:`batch_source`;
    None: ``CriteoSynth(data_cfg)``, else e.g. a ``data.CriteoFile``); what the source's stream reports
    (its ``stats()``) ends in ``TrainResult.source``. ``lookahead``: upcoming batches whose pages are
    faulted in while a step computes (0: none; see the module's docstring for the clock).
    ``pack_hot_rows``: the tables' hot rows packed together (``SwappedEmbeddingBagCollection``'s
    option: False, True or a ``RowPacking``; losses unchanged).
    """
    import torch

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
