"""DLRM training with paged embedding tables over a swap backend, timed the way ``bench`` reports it:
what a run is (presets, configs, the batch source, ``footprint``) and what it gives (``TrainResult``);
the loop itself, which trains a ``zswap_host.torch`` module, is ``zswap_host.torch.training.train``.

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
(``workloads/lookahead.py``); on a modeled clock a step's stall is then its demand faults plus the part of the
prefetch its compute did not cover, and the idle window handed to ``on_idle`` is what the prefetch
left of the compute.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from .criteo import CriteoSynth, DataConfig, data_preset


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


def resolve(model_cfg, data_cfg):
    """(``ModelConfig``, ``DataConfig``) of a training: presets by name, or the configs as given
    (``TypeError`` for anything else)."""
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
    from .page_cache import parse_budget
    mc, dc = resolve(model_cfg, data_cfg)
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


def idle_overrun(on_idle, clock, window: float) -> float:
    """Hand a compute window of ``window`` seconds to ``on_idle`` (the backend's idle time) and
    return how far the clock moved past it: work started in the window that overran it (one GC
    step at most), which the next step waits for. 0 without a clock."""
    c0 = clock() if clock is not None else 0.0
    on_idle(window)
    over = clock() - c0 - window if clock is not None else 0.0
    return over if over > 1e-12 else 0.0
