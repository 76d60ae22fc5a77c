"""Where does ZNS beat the store on a conventional SSD? The bench's runs 3-5 (Linux swap batched, the
store on the conventional SSD through a zoned view, the store on ZNS) with the tables at 50, 75, 90
and 95% of the conventional SSD's usable capacity, in both sizing modes (same raw flash; same usable
bytes). Per point: modeled stall, training time (pinned compute), write amplification, GC bytes (the
store's and the SSD's own), page-wait p99. Writes CSV, JSON and a PNG.

    python experiments/utilisation_sweep.py [--preset quick] [--utilisations 0.5 0.75 0.9 0.95]
        [--compute-us-per-sample US] [--out DIR]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import time

from zswap_host.bench import BenchError, BenchSpec, ComputeBasis, open_backends, plan, run_bench

RUNS = ("linux-swap-batched", "store-on-conventional", "store-on-zns")
COLORS = {"linux-swap-batched": "#9467bd", "store-on-conventional": "#ff7f0e", "store-on-zns": "#2ca02c"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="quick")
    ap.add_argument("--lookahead", type=int, default=0,
                    help="batches prefetched ahead (the committed results: 0, the stall regime)")
    ap.add_argument("--utilisations", nargs="+", type=float, default=[0.5, 0.75, 0.9, 0.95])
    ap.add_argument("--sizings", nargs="+", default=["same-flash", "same-capacity"])
    ap.add_argument("--compute-us-per-sample", type=float, default=None,
                    help="pin compute at this cost instead of the preset's calibration (e.g. a faster accelerator)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "utilisation_sweep"))
    a = ap.parse_args()
    cmd = ("python experiments/utilisation_sweep.py --preset " + a.preset + " --utilisations "
           + " ".join(f"{u:g}" for u in a.utilisations) + " --sizings " + " ".join(a.sizings)
           + (f" --compute-us-per-sample {a.compute_us_per_sample:g}" if a.compute_us_per_sample else "")
           + " --out " + os.path.relpath(a.out))
    basis = (ComputeBasis("pinned", a.compute_us_per_sample, 1, "--compute-us-per-sample")
             if a.compute_us_per_sample else None)
    rows, skipped = [], []
    for sizing in a.sizings:
        for u in a.utilisations:
            t = time.monotonic()
            runs = []
            for run in RUNS:                # a run whose device cannot hold the tables is reported, not run
                spec = BenchSpec(preset=a.preset, runs=(run,), sizing=sizing, utilisation=u, compute=basis,
                                 lookahead=a.lookahead)
                try:
                    open_backends(plan(spec), spec)
                    runs.append(run)
                except BenchError as e:
                    skipped.append({"sizing": sizing, "utilisation": u, "run": run, "why": str(e)})
                    print(f"{sizing} {u:.0%} {run}: not runnable: {e}", flush=True)
            if not runs:
                continue
            rep = run_bench(BenchSpec(preset=a.preset, runs=tuple(runs), sizing=sizing, utilisation=u, compute=basis,
                                      lookahead=a.lookahead))
            sz = rep["sizing"]
            for r in rep["runs"][1:]:
                rows.append({
                    "sizing": sizing, "utilisation": u, "run": r["name"],
                    "tables_over_usable": round(sz["tables_over_zns_usable"] if r["name"] == "store-on-zns"
                                                else sz["tables_over_conventional_usable"], 4),
                    "stall_s": round(r["io_stall_time_s"], 4), "train_time_s": round(r["train_time_s"], 4),
                    "write_amplification": round(r["write_amplification"], 4),
                    "store_gc_mib": round(r.get("gc_write_bytes", 0) / 2**20, 1),
                    "device_gc_mib": round(r.get("device_gc_write_bytes", 0) / 2**20, 1),
                    "page_wait_p99_us": round(r["page_wait_p99_s"] * 1e6, 1),
                    "linux_in_place_pages": r.get("in_place_pages", ""),
                    "linux_slots_freed_on_fault": r.get("slots_freed_on_fault", ""),
                    "step_stall_p99_ms": round(r["step_stall_p99_s"] * 1e3, 3),
                    "losses_match": rep["ratios"]["losses_match"]})
            print(f"{sizing} {u:.0%}: " + ", ".join(
                f"{x['run']} stall {x['stall_s']:.2f} s WAF {x['write_amplification']:.3f}"
                for x in rows[-len(runs):]) + f" ({time.monotonic() - t:.0f} s)", flush=True)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "sweep.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(a.out, "sweep.json"), "w") as f:
        json.dump({"command": cmd, "preset": a.preset, "compute": rep["compute"], "rows": rows,
                   "not_runnable": skipped}, f, indent=1)
    plot(rows, a, os.path.join(a.out, "sweep.png"))
    print(f"wrote {a.out}/sweep.csv, sweep.json, sweep.png")


def plot(rows: list[dict], a, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(a.sizings), 3, figsize=(14, 4 * len(a.sizings)), squeeze=False)
    for i, sizing in enumerate(a.sizings):
        for j, (key, label) in enumerate((("stall_s", "I/O stall (s, modeled)"),
                                          ("write_amplification", "write amplification (flash / host)"),
                                          ("page_wait_p99_us", "page wait p99 (us)"))):
            ax = axes[i][j]
            for run in RUNS:
                rs = [r for r in rows if r["sizing"] == sizing and r["run"] == run]
                ax.plot([100 * r["utilisation"] for r in rs], [r[key] for r in rs], "o-", label=run,
                        color=COLORS[run])
            ax.set(xlabel="tables / conventional SSD's usable bytes (%)", ylabel=label, title=f"{sizing}")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
    us = a.compute_us_per_sample
    fig.suptitle(f"utilisation sweep, {a.preset} preset (compute pinned at "
                 f"{'the preset calibration' if us is None else f'{us:g} us/sample'}, modeled clock)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    main()
