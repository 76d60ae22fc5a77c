"""Wear spread: how evenly a device's erases fall on its erase blocks.

Input is a device's (or SSD model's) ``erase_counts()``: one entry per physical erase block (a
chunk on an Open-Channel SSD).  Flash endurance is per block, so the block that wears first sets
the device's life: ``max_over_mean`` is how much sooner than under perfect levelling (1.0), ``cv``
how uneven the whole distribution is (0.0 = every block erased equally often).
"""

from __future__ import annotations

import numpy as np


def wear_spread(counts: np.ndarray) -> dict:
    """Summary of erase counts per block: ``blocks`` (entries), ``erases`` (their sum), ``mean``,
    ``max``, ``min``, ``max_over_mean`` (max / mean) and ``cv`` (population standard deviation /
    mean).  With no erases at all (mean 0, also no blocks) both ratios are 0.0; ``max``/``min`` of
    no blocks are 0.  ValueError for a negative count or a non-integer array."""
    c = np.asarray(counts).reshape(-1)
    if c.size and c.dtype.kind not in "iu":
        raise ValueError(f"erase counts must be integers, not {c.dtype}")
    c = c.astype(np.int64, copy=False)
    if c.size and int(c.min()) < 0:
        raise ValueError("erase counts cannot be negative")
    n = int(c.size)
    total = int(c.sum()) if n else 0
    mean = total / n if n else 0.0
    # ratios over an all-zero (or empty) device are 0.0: nothing is worn, so nothing is uneven
    ratio = mean > 0
    return {"blocks": n, "erases": total, "mean": mean,
            "max": int(c.max()) if n else 0, "min": int(c.min()) if n else 0,
            "max_over_mean": int(c.max()) / mean if ratio else 0.0,
            "cv": float(c.std()) / mean if ratio else 0.0}
