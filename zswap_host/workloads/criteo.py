"""Criteo-shaped synthetic click data, generated on the fly and deterministic by seed.

A sample has 13 dense features, 26 categorical (sparse) features — one index (or ``hot`` indices,
multi-hot) per embedding table — and a click label. Indices follow a bounded Zipf law of parameter
``zipf_a`` over each table (rank r has probability proportional to ``(r + 1) ** -a``, r < rows). The
row a rank lands on is the table's *layout*:

- ``hashed``: popular rows scattered over the table, as hashing the raw categorical values does
  (a bijective multiplicative hash ``rank -> (rank * p + q) mod rows`` with p coprime to rows);
- ``sorted``: frequency-sorted, rank r is row r, so the most popular rows share the first pages.

Labels come from a fixed hidden function of the features (a linear function of the dense features
plus a per-row pseudo-random weight for every categorical index, all derived from the dataset seed
by hashing, so nothing is materialised), so a model can learn it and the loss falls.

``CriteoSynth(cfg).batches(n, batch_size, seed)`` yields ``Batch`` objects; nothing of the dataset
but the current batch is ever held in memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Iterator

import numpy as np

# Criteo Kaggle Display Advertising Challenge, 26 categorical features: rows per table
# (facebookresearch/dlrm, the `kaggle` table sizes). 33.76 M rows; 2.01 GiB at dim 16 fp32.
KAGGLE_TABLES: tuple[int, ...] = (
    1460, 583, 10131227, 2202608, 305, 24, 12517, 633, 3, 93145, 5683, 8351593, 3194, 27, 14992,
    5461306, 10, 5652, 2173, 4, 7046547, 18, 15, 286181, 105, 142572)

# MLPerf DLRM training: Criteo Terabyte with --max-ind-range=40000000 (tables capped at 40 M rows),
# embedding dim 128, bottom MLP 13-512-256-128, top MLP 479-1024-1024-512-256-1. Source:
# facebookresearch/dlrm (dlrm_s_pytorch.py / bench/run_and_time.sh --max-ind-range=40000000, and the
# same ln_emb in mlcommons/inference recommendation/dlrm/pytorch). 187.77 M rows; 89.5 GiB (96.1 GB)
# at dim 128 fp32.
MLPERF_TABLES: tuple[int, ...] = (
    39884406, 39043, 17289, 7420, 20263, 3, 7120, 1543, 63, 38532951, 2953546, 403346, 10, 2208,
    11938, 155, 4, 976, 14, 39979771, 25641295, 39664984, 585935, 12972, 108, 36)

# Kaggle tables / 250 (scale_tables(KAGGLE_TABLES, 1/250)): 135 k rows, 8.2 MiB at dim 16. For tests.
TINY_TABLES: tuple[int, ...] = (
    6, 4, 40525, 8810, 4, 4, 50, 4, 3, 373, 23, 33406, 13, 4, 60, 21845, 4, 23, 9, 4, 28186, 4, 4,
    1145, 4, 570)

NUM_DENSE = 13
LAYOUTS = ("hashed", "sorted")

_M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser, vectorised over a uint64 array (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64, copy=True)
        z += np.uint64(0x9E3779B97F4A7C15)
        z ^= z >> np.uint64(30)
        z *= np.uint64(0xBF58476D1CE4E5B9)
        z ^= z >> np.uint64(27)
        z *= np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return z


def hash_uniform(keys: np.ndarray, salt: int) -> np.ndarray:
    """Deterministic uniform floats in [0, 1) for uint64/int64 keys (float64)."""
    with np.errstate(over="ignore"):
        h = splitmix64(np.asarray(keys).astype(np.uint64) ^ splitmix64(np.array([salt], np.uint64))[0])
    return (h >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


def scale_tables(tables, scale: float) -> tuple[int, ...]:
    """Multiply table sizes by ``scale``, rounded. A table never shrinks below ``min(rows, 4)``:
    small categorical features (3, 4, 10 values…) stay small tables instead of vanishing to 0 rows."""
    if scale <= 0:
        raise ValueError("scale must be > 0")
    return tuple(max(int(round(n * scale)), min(int(n), 4)) for n in tables)


@dataclass(frozen=True)
class DataConfig:
    """What the synthetic dataset looks like. ``seed`` fixes the dataset itself (layout hash, hidden
    label function); the batch stream has its own seed (``CriteoSynth.batches``)."""

    tables: tuple[int, ...] = TINY_TABLES
    zipf_a: float = 1.05
    layout: str = "hashed"
    hot: int = 1                       # lookups per table per sample (multi-hot when > 1), sum pooled
    seed: int = 0
    name: str = "custom"

    def __post_init__(self) -> None:
        if self.layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}, not {self.layout!r}")
        if self.hot < 1:
            raise ValueError("hot (lookups per table) must be >= 1")
        if self.zipf_a <= 0:
            raise ValueError("zipf_a must be > 0")
        if not self.tables or min(self.tables) < 1:
            raise ValueError("every table needs at least one row")
        object.__setattr__(self, "tables", tuple(int(n) for n in self.tables))

    @property
    def num_tables(self) -> int:
        return len(self.tables)

    @property
    def rows(self) -> int:
        return int(sum(self.tables))

    def table_bytes(self, dim: int, itemsize: int = 4) -> int:
        """Bytes of the embedding tables as dense arrays (no paging)."""
        return self.rows * dim * itemsize


DATA_PRESETS: dict[str, DataConfig] = {
    "tiny": DataConfig(TINY_TABLES, name="tiny"),
    "kaggle": DataConfig(KAGGLE_TABLES, name="kaggle"),
    "mlperf": DataConfig(MLPERF_TABLES, name="mlperf"),
}


def data_preset(name: str, scale: float = 1.0, **overrides) -> DataConfig:
    """A named dataset shape (``tiny``, ``kaggle``, ``mlperf``), tables scaled by ``scale``;
    keyword overrides set any other ``DataConfig`` field (zipf_a, layout, hot, seed)."""
    try:
        base = DATA_PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown data preset {name!r}; known: {', '.join(DATA_PRESETS)}") from None
    tables = scale_tables(base.tables, scale) if scale != 1.0 else base.tables
    label = name if scale == 1.0 else f"{name}x{scale:g}"
    return replace(base, tables=tables, name=overrides.pop("name", label), **overrides)


@dataclass
class Batch:
    """One mini-batch. ``sparse[t, i, j]`` is sample i's j-th index into table t (int64, shape
    (tables, batch, hot)); ``dense`` float32 (batch, 13); ``labels`` float32 (batch,)."""

    dense: np.ndarray
    sparse: np.ndarray
    labels: np.ndarray
    index: int = 0

    @property
    def size(self) -> int:
        return int(self.labels.size)


def _coprime_multiplier(n: int, salt: int) -> int:
    """A multiplier coprime to n near n / golden ratio (Fibonacci hashing), for a bijective scatter."""
    if n <= 2:
        return 1
    p = int(n * 0.6180339887498949) | 1
    p += int(hash_uniform(np.array([n], np.uint64), salt)[0] * 64) * 2
    p %= n
    while math.gcd(p, n) != 1 or p < 2:
        p = (p + 1) % n
    return p


@dataclass
class _Table:
    rows: int
    mult: int          # hashed layout: row = (rank * mult + offset) % rows
    offset: int
    c1: float          # bounded Zipf inverse-CDF constants
    weight: float      # this feature's share of the hidden logit


class CriteoSynth:
    """The synthetic dataset of a ``DataConfig``."""

    def __init__(self, cfg: DataConfig) -> None:
        self.cfg = cfg
        a = cfg.zipf_a
        rng = np.random.default_rng([cfg.seed, 0xC417E0])
        self._w_dense = rng.normal(0.0, 1.0, NUM_DENSE) / math.sqrt(NUM_DENSE)
        self._bias = -0.5
        self._tabs: list[_Table] = []
        feat_w = rng.uniform(0.2, 1.0, cfg.num_tables)
        feat_w *= 2.0 / math.sqrt(float((feat_w ** 2).sum()))
        for t, n in enumerate(cfg.tables):
            if abs(a - 1.0) < 1e-9:
                c1 = math.log(n + 1.0)
            else:
                c1 = (n + 1.0) ** (1.0 - a) - 1.0
            mult = _coprime_multiplier(n, cfg.seed * 131 + t)
            off = int(hash_uniform(np.array([t], np.uint64), cfg.seed + 7)[0] * n)
            self._tabs.append(_Table(n, mult, off, c1, float(feat_w[t])))
        # the same constants as arrays over tables, for the all-tables-at-once batch
        self._c1 = np.array([tab.c1 for tab in self._tabs], np.float64)
        self._nrows = np.array([tab.rows for tab in self._tabs], np.int64)
        self._mult = np.array([tab.mult for tab in self._tabs], np.int64)
        self._off = np.array([tab.offset for tab in self._tabs], np.int64)

    # -- index law ---------------------------------------------------------------------------
    def ranks(self, t: int, u: np.ndarray) -> np.ndarray:
        """Popularity ranks (0 = most popular) for uniforms u in [0, 1): the bounded Zipf law of
        table t by inverting the continuous power-law CDF over [1, rows + 1) and flooring."""
        tab, a = self._tabs[t], self.cfg.zipf_a
        if abs(a - 1.0) < 1e-9:
            x = np.exp(u * tab.c1)
        else:
            x = (1.0 + u * tab.c1) ** (1.0 / (1.0 - a))
        r = np.floor(x).astype(np.int64) - 1
        return np.clip(r, 0, tab.rows - 1)

    def rank_to_row(self, t: int, ranks: np.ndarray) -> np.ndarray:
        """Where rank r's row is in table t under the layout."""
        if self.cfg.layout == "sorted":
            return ranks
        tab = self._tabs[t]
        return (ranks * tab.mult + tab.offset) % tab.rows

    def row_to_rank(self, t: int, rows: np.ndarray) -> np.ndarray:
        """Inverse of ``rank_to_row`` (for tests and analysis)."""
        if self.cfg.layout == "sorted":
            return rows
        tab = self._tabs[t]
        inv = pow(tab.mult, -1, tab.rows) if tab.rows > 1 else 0
        return (((rows - tab.offset) % tab.rows) * inv) % tab.rows

    def row_weight(self, t: int, rows: np.ndarray) -> np.ndarray:
        """The hidden label function's weight of each row of table t, in [-1, 1)."""
        keys = np.asarray(rows, np.int64).astype(np.uint64) * np.uint64(64) + np.uint64(t)
        return 2.0 * hash_uniform(keys, self.cfg.seed * 1_000_003 + 12345) - 1.0

    def _ranks_all(self, u: np.ndarray) -> np.ndarray:
        """``ranks`` of every table for uniforms ``u`` of shape (tables, ...)."""
        shape = (-1,) + (1,) * (u.ndim - 1)
        c1, rows = self._c1.reshape(shape), self._nrows.reshape(shape)
        a = self.cfg.zipf_a
        x = np.exp(u * c1) if abs(a - 1.0) < 1e-9 else (1.0 + u * c1) ** (1.0 / (1.0 - a))
        return np.clip(np.floor(x).astype(np.int64) - 1, 0, rows - 1)

    def _rows_of(self, ranks: np.ndarray) -> np.ndarray:
        """``rank_to_row`` of every table for ranks of shape (tables, ...)."""
        if self.cfg.layout == "sorted":
            return ranks
        shape = (-1,) + (1,) * (ranks.ndim - 1)
        return (ranks * self._mult.reshape(shape) + self._off.reshape(shape)) % self._nrows.reshape(shape)

    # -- batches -----------------------------------------------------------------------------
    def batch(self, rng: np.random.Generator, batch_size: int, index: int = 0) -> Batch:
        cfg = self.cfg
        T, B, k = cfg.num_tables, batch_size, cfg.hot
        dense = rng.lognormal(0.0, 1.0, (B, NUM_DENSE))
        dense = np.log1p(dense).astype(np.float32)        # DLRM's log(1 + x) transform of counts
        u = rng.random((T, B, k))
        # every table at once (one numpy call per step, not per table); the per-table arithmetic and the
        # order the logit is summed in are those of ranks / rank_to_row / row_weight, so batches are
        # bit-identical to the per-table form
        sparse = self._rows_of(self._ranks_all(u))
        t = np.arange(T, dtype=np.uint64).reshape(T, 1, 1)
        keys = sparse.astype(np.uint64) * np.uint64(64) + t
        means = (2.0 * hash_uniform(keys, cfg.seed * 1_000_003 + 12345) - 1.0).mean(axis=2)
        logit = (dense.astype(np.float64) - 0.9) @ self._w_dense + self._bias
        for t in range(T):
            logit = logit + self._tabs[t].weight * means[t]
        p = 1.0 / (1.0 + np.exp(-2.5 * logit))
        labels = (rng.random(B) < p).astype(np.float32)
        return Batch(dense, sparse, labels, index)

    def indices(self, rng: np.random.Generator, batch_size: int) -> np.ndarray:
        """Only the ``sparse`` array of the ``batch`` that ``rng`` would give next, drawing the same
        numbers from it (dense features and label draws included, their arithmetic skipped), so a
        stream of these equals the batches' indices without building the batches (trace generation)."""
        T, B, k = self.cfg.num_tables, int(batch_size), self.cfg.hot
        rng.lognormal(0.0, 1.0, (B, NUM_DENSE))
        sparse = self._rows_of(self._ranks_all(rng.random((T, B, k))))
        rng.random(B)
        return sparse

    def batch_rng(self, seed: int = 0) -> np.random.Generator:
        """The generator ``batches(…, seed)`` draws from."""
        return np.random.default_rng([int(seed), 0xBA7C4])

    def batches(self, n: int, batch_size: int, seed: int = 0) -> Iterator[Batch]:
        """``n`` batches of ``batch_size`` samples; the same (cfg, seed) gives the same batches."""
        rng = self.batch_rng(seed)
        for i in range(int(n)):
            yield self.batch(rng, int(batch_size), i)


def batches(cfg: DataConfig, n: int, batch_size: int, seed: int = 0) -> Iterator[Batch]:
    """Shorthand for ``CriteoSynth(cfg).batches(n, batch_size, seed)``."""
    return CriteoSynth(cfg).batches(n, batch_size, seed)
