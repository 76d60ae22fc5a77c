"""Issue 32: the bench's chain with every lever on, at three utilisations and two compute regimes.

One `zswap-host bench --pack-hot-rows --gc-step 0` per (regime, utilisation): packing is its own
step (lookahead -> linux-swap-packed, the Linux run with the same application-level lever), the store
runs collect whole victims (`--gc-step 0`, a store-only lever). Writes OUT/<model>-<regime>-u<U>.{txt,json}
and OUT/summary.md: every chain step's training-time ratio, the summary against the best Linux run,
the p99 step stall of the ZNS store and of that run, and the largest loss difference between runs.

    python experiments/lever_chain.py [--model quick] [--regimes cpu,a100] [--out experiments/results/lever_chain]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

REGIMES = {"cpu": None, "a100": 0.249}          # None: the preset's pinned CPU calibration
UTILISATIONS = (0.75, 0.90, 0.95)
# at 95% the zoned view over the conventional SSD (same flash, its OP hidden) cannot hold the tables:
# the bench refuses store-on-conventional there, so the chain has no aggregation or zns step
FULL = 0.95
NOT_CONV = "linux-swap,linux-swap-batched,linux-swap-lookahead,linux-swap-packed,store-on-zns"


def run(model: str, regime: str, util: float, out: str) -> dict:
    stem = os.path.join(out, f"{model}-{regime}-u{round(util * 100)}")
    if not os.path.exists(stem + ".json"):
        cmd = [os.path.join(os.path.dirname(sys.executable), "zswap-host"), "bench", "--model", model,
               "--pack-hot-rows", "--gc-step", "0", "--utilisation", str(util), "-q", "--json", stem + ".json"]
        if util >= FULL:
            cmd += ["--runs", NOT_CONV]
        if REGIMES[regime] is not None:
            cmd += ["--compute-us-per-sample", str(REGIMES[regime])]
        with open(stem + ".txt", "w") as f:
            subprocess.run(cmd, stdout=f, check=True)
    with open(stem + ".json") as f:
        return json.load(f)


def row(regime: str, util: float, rep: dict) -> str:
    runs = {r["name"]: r for r in rep["runs"]}
    steps = "; ".join(f"{c['step']} {c['train_time_ratio']:.2f}x" for c in rep["chain"])
    s = rep["summary"]
    best = s["best_linux_run"]
    diff = rep["ratios"]["max_loss_difference"]
    p99 = lambda n: runs[n]["step_stall_p99_s"] * 1e3
    return (f"| {regime} | {util:.0%} | {steps} | **{s['vs_best_linux']['speedup']:.2f}x** vs {best} | "
            f"{p99(best):.1f} / {p99('store-on-zns'):.1f} | {diff:.1e} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="quick", help="the bench's training preset [quick]")
    ap.add_argument("--out", default="experiments/results/lever_chain")
    ap.add_argument("--regimes", default=",".join(REGIMES), help="comma-separated, of: " + ", ".join(REGIMES))
    args = ap.parse_args()
    regimes = args.regimes.split(",")
    if not set(regimes) <= set(REGIMES):
        ap.error(f"--regimes: unknown {sorted(set(regimes) - set(REGIMES))}")
    os.makedirs(args.out, exist_ok=True)
    lines = [f"# The chain with every lever, `{args.model}` preset (`python experiments/lever_chain.py --model {args.model}"
             f" --regimes {args.regimes}`)",
             "", "| regime | utilisation | chain steps (training-time ratio, > 1: helped) | ZNS store vs best Linux "
             "| p99 step stall ms: best Linux / ZNS store | max loss difference |", "|---|---|---|---|---|---|"]
    for regime in regimes:
        for util in UTILISATIONS:
            lines.append(row(regime, util, run(args.model, regime, util, args.out)))
            print(lines[-1], flush=True)
    with open(os.path.join(args.out, f"summary-{args.model}-{'-'.join(regimes)}.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
