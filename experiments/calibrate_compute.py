"""Calibrate the compute each training preset is charged by ``zswap-host bench`` (its pinned basis).

For each preset, DRAM-only training is run ``--repeats`` times in lockstep (interleaved, see
``zswap_host.bench.compute``) for ``--rounds`` rounds; a round's cost is the mean over iterations of
the per-iteration median across replicas, per sample. The calibrated value is the median round.
Writes ``experiments/results/compute_calibration.json``; the presets' ``compute_us_per_sample``
(zswap_host/workloads/train.py) are these numbers, rounded.

    python experiments/calibrate_compute.py [--presets tiny quick default kaggle] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np

from zswap_host.bench.compute import measure_compute
from zswap_host.workloads.train import preset

# the kaggle preset's tables (2 GiB) make a full run long; its per-iteration cost settles early
ITERATIONS = {"kaggle": 60}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--presets", nargs="+", default=["tiny", "quick", "default", "kaggle"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "compute_calibration.json"))
    a = ap.parse_args()
    out = {"command": "python experiments/calibrate_compute.py " + " ".join(
        ["--presets", *a.presets, "--rounds", str(a.rounds), "--repeats", str(a.repeats)]),
        "machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine(),
                    "python": platform.python_version()},
        "date": time.strftime("%Y-%m-%d"), "presets": {}}
    for name in a.presets:
        p = preset(name)
        n = ITERATIONS.get(name, p.iterations)
        rounds = []
        for r in range(a.rounds):
            m = measure_compute(p.model_config(), p.data_config(), n, p.batch_size, 0, a.repeats)
            us = float(m.median_s.mean() / p.batch_size * 1e6)
            rounds.append({"us_per_sample": us, **m.summary()})
            print(f"{name}: round {r + 1}: {us:.2f} us/sample (replica spread {m.summary()['spread']:.1%})", flush=True)
        per = [x["us_per_sample"] for x in rounds]
        out["presets"][name] = {"iterations": n, "batch_size": p.batch_size, "rounds": rounds,
                                "us_per_sample": float(np.median(per)),
                                "round_spread": float(max(per) / min(per) - 1.0)}
        print(f"{name}: {np.median(per):.2f} us/sample (rounds spread {max(per) / min(per) - 1:.1%})", flush=True)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
