"""Write ``criteo-sample.txt``: a few hundred lines in the Criteo Kaggle ``train.txt`` format.

The data is SYNTHETIC — generated here from a seed, not taken from Criteo's dataset — and only has
its shape: tab-separated label (0/1, about a quarter clicks), 13 integer features (count-like, some
empty, a few negative as Criteo's I2 has them) and 26 categorical features as 8-digit lowercase
hexadecimal values drawn from a Zipf-like vocabulary per feature (some empty). Labels depend on the
features through a hidden function, so a model trained on the file can lower its loss.

    python tests/data/make_criteo_sample.py                  # rewrites tests/data/criteo-sample.txt
    python tests/data/make_criteo_sample.py --lines 1000 --seed 3 --out /tmp/sample.txt

The same (lines, seed) always writes the same bytes.
"""

from __future__ import annotations

import argparse
import os

import numpy as np

NUM_DENSE, NUM_CAT = 13, 26
VOCAB = (40, 30, 400, 300, 20, 8, 120, 30, 3, 200, 90, 400, 60, 10, 150, 400, 6, 90, 50, 4, 400, 10, 12,
         250, 40, 200)          # values per categorical feature (shaped like the Kaggle tables, much smaller)


def sample_lines(lines: int, seed: int = 0) -> list[str]:
    """``lines`` synthetic rows in the Kaggle text format (without newlines)."""
    rng = np.random.default_rng([seed, 0xC12E0])
    vocab = [rng.integers(0, 1 << 32, v, dtype=np.uint64) for v in VOCAB]
    weight = [rng.normal(0, 1, v) for v in VOCAB]                # hidden per-value effect on the click
    cat_missing = rng.uniform(0.0, 0.3, NUM_CAT)
    dense_missing = rng.uniform(0.0, 0.4, NUM_DENSE)
    w_dense = rng.normal(0, 0.3, NUM_DENSE)
    out = []
    for _ in range(lines):
        counts = np.floor(rng.lognormal(1.0, 1.5, NUM_DENSE)).astype(np.int64)
        counts[1] -= 3                                           # I2 reaches below zero in Criteo
        ranks = [min(int(rng.zipf(1.3)) - 1, v - 1) for v in VOCAB]
        logit = -1.2 + float(w_dense @ np.log1p(np.maximum(counts, 0)) / 4)
        logit += sum(weight[t][r] for t, r in enumerate(ranks)) / 5
        label = int(rng.random() < 1 / (1 + np.exp(-logit)))
        dense = ["" if rng.random() < dense_missing[i] else str(int(c)) for i, c in enumerate(counts)]
        cat = ["" if rng.random() < cat_missing[t] else f"{int(vocab[t][r]):08x}" for t, r in enumerate(ranks)]
        out.append("\t".join([str(label), *dense, *cat]))
    return out


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=os.path.join(here, "criteo-sample.txt"))
    a = ap.parse_args()
    with open(a.out, "w", newline="\n") as f:
        f.write("".join(line + "\n" for line in sample_lines(a.lines, a.seed)))
    print(f"wrote {a.lines} synthetic lines to {a.out}")


if __name__ == "__main__":
    main()
