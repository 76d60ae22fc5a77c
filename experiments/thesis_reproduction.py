"""Regenerate docs/results/thesis.md's results from DLRM training runs (``zswap-host bench``'s
machinery), CSV + PNG under experiments/results/thesis/:

  (a) slowdown of Linux swap (one fault at a time and batched) and of the store (on the conventional
      SSD and on ZNS) against DRAM-only across DRAM budgets;
  (b) device request sizes under Linux swap against the store's (the thesis: most < 32 KiB);
  (c) host-scheduled GC against conventional: slowdown, write amplification, and swap I/O bandwidth
      as the volume written grows;
  (d) placement x victim policies replayed on the recorded DLRM page trace.

Clocks: training time = charged compute (the preset's pinned calibration) + I/O stall (modeled device
time); (d) is modeled time only.

    python experiments/thesis_reproduction.py [--preset quick] [--budgets 0.15,0.25,0.5,0.75] [--out DIR]
"""

from __future__ import annotations

import argparse
import csv
import os

import numpy as np

from zswap_host import StoreConfig, SwapStore, open_device
from zswap_host.bench import BenchSpec, plan, run_bench
from zswap_host.workloads import SwapTrace, replay


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {path}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="quick")
    ap.add_argument("--budgets", default="0.15,0.25,0.5,0.75")
    ap.add_argument("--lookahead", type=int, default=0,
                    help="batches prefetched ahead (the committed results: 0, the thesis's stall regime)")
    ap.add_argument("--out", default="experiments/results/thesis")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    budgets = [float(b) for b in a.budgets.split(",")]
    trace_path = os.path.join(a.out, "dlrm_trace.npz")
    reports = {}
    for b in budgets:
        print(f"budget {b:.0%} ...", flush=True)
        reports[b] = run_bench(BenchSpec(preset=a.preset, budget=b, lookahead=a.lookahead,
                                         trace_out=trace_path if b == 0.25 else None))

    # (a) slowdown across budgets
    rows = []
    for b, rep in reports.items():
        t = {r["name"]: r for r in rep["runs"]}
        for name in ("linux-swap", "linux-swap-batched", "store-on-conventional", "store-on-zns"):
            r = t[name]
            rows.append({"budget": b, "run": name, "train_time_s": round(r["train_time_s"], 3),
                         "dram_time_s": round(t["dram-only"]["train_time_s"], 3),
                         "slowdown": round(r["train_time_s"] / t["dram-only"]["train_time_s"], 3),
                         "io_stall_s": round(r["io_stall_time_s"], 3),
                         "write_amplification": round(r["write_amplification"], 3),
                         "swap_in_mib": round(r["swap_in_bytes"] / 2**20, 1),
                         "swap_out_mib": round(r["swap_out_bytes"] / 2**20, 1),
                         "losses_match": rep["ratios"]["losses_match"]})
    write_csv(os.path.join(a.out, "a_slowdown_vs_budget.csv"), rows)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for name, c in (("linux-swap", "#d62728"), ("linux-swap-batched", "#9467bd"),
                    ("store-on-conventional", "#ff7f0e"), ("store-on-zns", "#2ca02c")):
        rs = [r for r in rows if r["run"] == name]
        ax.plot([100 * r["budget"] for r in rs], [r["slowdown"] for r in rs], "o-", label=name, color=c)
    ax.axhspan(2, 5, color="grey", alpha=0.15, label="thesis: 2-5x")
    ax.set(xlabel="DRAM budget (% of embedding tables)", ylabel="training time / DRAM-only",
           title=f"(a) slowdown under swap ({a.preset} preset; charged compute + modeled I/O)")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "a_slowdown_vs_budget.png"), dpi=110)

    # (b) request sizes at the 25% budget (or the first)
    rep = reports.get(0.25, next(iter(reports.values())))
    rows = []
    for r in rep["runs"][1:]:
        for direction, key in (("write", "write_size_histogram"), ("read", "read_size_histogram")):
            h = {int(k): v for k, v in r[key].items()}
            total = sum(h.values())
            for size in sorted(h):
                rows.append({"run": r["name"], "direction": direction, "size_bytes": size, "requests": h[size],
                             "share": round(h[size] / total, 5)})
    write_csv(os.path.join(a.out, "b_request_sizes.csv"), rows)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, direction in zip(axes, ("write", "read")):
        for name, c in (("linux-swap", "#d62728"), ("store-on-zns", "#2ca02c")):
            rs = [x for x in rows if x["run"] == name and x["direction"] == direction]
            sizes = np.array([x["size_bytes"] for x in rs])
            share = np.array([x["share"] for x in rs])
            ax.plot(sizes / 1024, np.cumsum(share), drawstyle="steps-post", label=name, color=c)
        ax.axvline(32, color="k", ls=":", lw=1)
        ax.set(xscale="log", xlabel="request size (KiB)", ylabel="cumulative share of requests",
               title=f"(b) device {direction}s")
        ax.legend()
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "b_request_sizes.png"), dpi=110)

    # (c) swap I/O bandwidth against the volume written
    rows = []
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for r in rep["runs"][1:]:
        stall = np.array(r["io_stall_per_iteration_s"])
        moved = (np.array(r["pages_in_per_iteration"]) + np.array(r["pages_out_per_iteration"])) * 4096
        written = np.array(r.get("device_write_bytes_cumulative", []), float)
        if not written.size:
            continue
        k = 10                              # smooth over windows of 10 iterations
        n = stall.size // k * k
        bw = moved[:n].reshape(-1, k).sum(1) / np.maximum(stall[:n].reshape(-1, k).sum(1), 1e-9) / 2**20
        vol = written[k - 1:n:k] / 2**30
        for v, x in zip(vol, bw):
            rows.append({"run": r["name"], "written_gib": round(float(v), 4), "swap_io_mib_s": round(float(x), 1)})
        ax.plot(vol, bw, label=r["name"])
    write_csv(os.path.join(a.out, "c_bandwidth_vs_written.csv"), rows)
    ax.set(xlabel="device writes so far (GiB)", ylabel="swap I/O per stall second (MiB/s, modeled)",
           title="(c) swap bandwidth as written volume grows")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "c_bandwidth_vs_written.png"), dpi=110)

    # (d) placement x victim on the recorded trace, ZNS device of the bench's size
    trace = SwapTrace.load(trace_path)
    zns_url = plan(BenchSpec(preset=a.preset, budget=0.25)).zns_url
    rows = []
    for placement in ("single", "temporal", "stream", "hotness"):
        for victim in ("greedy", "cost-benefit", "fifo"):
            store = SwapStore(open_device(zns_url), StoreConfig(placement=placement, victim=victim))
            replay(store, trace, verify=True)
            store.flush()
            s = store.stats().as_dict()
            rows.append({"placement": placement, "victim": victim,
                         "write_amplification": round(s["write_amplification"], 4),
                         "device_time_s": round(s["device_time_s"], 3),
                         "gc_relocated_mib": round(s["gc_relocated_bytes"] / 2**20, 1),
                         "swap_in_p99_us": round(s["swap_in_latency_p99_s"] * 1e6, 1)})
            print(f"  {placement:9} {victim:12} WAF {rows[-1]['write_amplification']:.3f} "
                  f"device {rows[-1]['device_time_s']:.2f} s", flush=True)
    write_csv(os.path.join(a.out, "d_policy_sweep.csv"), rows)
    fig, ax = plt.subplots(figsize=(8, 4.2))
    labels = [f"{r['placement']}\n{r['victim']}" for r in rows]
    ax.bar(range(len(rows)), [r["write_amplification"] for r in rows], color="#2ca02c")
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(labels, fontsize=7)
    ax.set(ylabel="write amplification (media / host)", ylim=(1, None),
           title=f"(d) store policies on the recorded DLRM trace ({trace.counts()['swap_out_pages']} pages out)")
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "d_policy_sweep.png"), dpi=110)
    print("done")


if __name__ == "__main__":
    main()
