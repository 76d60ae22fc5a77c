"""The all-tables-at-once batch generator agrees with the per-table index law it vectorises."""

from dataclasses import replace

import numpy as np
import pytest

from zswap_host.workloads.criteo import NUM_DENSE, CriteoSynth, data_preset


def _per_table_batch(s: CriteoSynth, rng: np.random.Generator, B: int):
    """The batch built one table at a time from the public per-table methods (the reference)."""
    cfg = s.cfg
    dense = np.log1p(rng.lognormal(0.0, 1.0, (B, NUM_DENSE))).astype(np.float32)
    u = rng.random((cfg.num_tables, B, cfg.hot))
    sparse = np.stack([s.rank_to_row(t, s.ranks(t, u[t])) for t in range(cfg.num_tables)])
    logit = (dense.astype(np.float64) - 0.9) @ s._w_dense + s._bias
    for t in range(cfg.num_tables):
        logit = logit + s._tabs[t].weight * s.row_weight(t, sparse[t]).mean(axis=1)
    p = 1.0 / (1.0 + np.exp(-2.5 * logit))
    return dense, sparse, (rng.random(B) < p).astype(np.float32)


@pytest.mark.parametrize("zipf_a,hot,layout", [(1.05, 1, "hashed"), (1.0, 3, "hashed"), (1.2, 2, "sorted")])
def test_batch_equals_per_table_reference(zipf_a, hot, layout):
    s = CriteoSynth(replace(data_preset("tiny"), zipf_a=zipf_a, hot=hot, layout=layout))
    got = s.batch(np.random.default_rng(5), 96)
    dense, sparse, labels = _per_table_batch(s, np.random.default_rng(5), 96)
    assert np.array_equal(got.dense, dense)
    assert np.array_equal(got.sparse, sparse)
    assert np.array_equal(got.labels, labels)
    assert 0 < labels.sum() < labels.size          # the label law is not degenerate on this draw
