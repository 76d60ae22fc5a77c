"""Raw Criteo samples as the readers produce them, and DLRM's transform of the dense features."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NUM_DENSE = 13
NUM_CAT = 26


@dataclass
class Rows:
    """Raw samples of one chunk of a file: ``dense`` (m, 13) as stored (int64 from text, the .npz's own
    numeric dtype; negatives kept), ``cat`` uint64 (m, 26) categorical values (text: the hexadecimal
    value, empty = 0; .npz: ``X_cat`` as stored), ``labels`` float32 (m,) 0/1; ``skipped`` malformed
    lines (rows) dropped from the chunk and ``bad`` (line, reason) of the first few of them."""

    dense: np.ndarray
    cat: np.ndarray
    labels: np.ndarray
    skipped: int = 0
    bad: tuple = ()

    @property
    def size(self) -> int:
        return int(self.labels.size)


def log_dense(dense: np.ndarray) -> np.ndarray:
    """DLRM's dense transform, float32 (m, 13): negatives clamped to 0 (``X_int[X_int < 0] = 0`` in
    facebookresearch/dlrm's preprocessing), then ``log(x + 1)`` (computed in float64, rounded once)."""
    x = np.maximum(np.asarray(dense, np.float64), 0.0)
    return np.log1p(x).astype(np.float32)
