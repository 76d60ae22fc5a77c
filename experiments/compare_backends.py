"""Host-managed store vs Linux-swap model on the same raw flash, over a synthetic DLRM-like trace.

For space utilisations of 50%, 75% and 90% (live pages / the conventional SSD's exported capacity),
replays one trace per utilisation through: ConventionalSwap on the emulated thesis-ssd (with and
without discard), and SwapStore on a ZNS device of the same flash for every placement x victim
policy. Reports write amplification (media / host), device write sizes, swap-in read size, modeled
device time, GC bytes and swap-in latency. Writes CSV and a PNG.

    python experiments/compare_backends.py [--quick] [--out experiments/results]
"""

from __future__ import annotations

import argparse
import csv
import os
import time

import numpy as np

from zswap_host import ConventionalSwap, StoreConfig, SwapStore, open_device
from zswap_host.ssdsim import get_preset
from zswap_host.workloads import replay, synthetic_dlrm_trace

PS = 4096
PLACEMENTS = ["single", "temporal", "stream", "hotness"]
VICTIMS = ["greedy", "cost-benefit", "fifo"]


def weighted_median(hist: dict) -> float:
    if not hist:
        return 0.0
    sizes = np.array(sorted(hist), float)
    counts = np.array([hist[k] for k in sorted(hist)], float)
    return float(sizes[np.searchsorted(np.cumsum(counts), counts.sum() / 2)])


def row(name, placement, victim, util, backend, wall):
    s = backend.stats().as_dict()
    wh, rh = s["write_size_histogram"], s["read_size_histogram"]
    n_w, n_r = sum(wh.values()), sum(rh.values())
    return {
        "backend": name, "placement": placement, "victim": victim, "utilization": util,
        "clock": s["clock"],
        "write_amplification": round(s["write_amplification"], 4),
        "host_write_amplification": round(s["host_write_amplification"], 4),
        "mean_write_kib": round(s["device_write_bytes"] / max(n_w, 1) / 1024, 2),
        "median_write_kib": weighted_median(wh) / 1024,
        "writes_under_32k": round(sum(v for k, v in wh.items() if k < 32768) / max(n_w, 1), 4),
        "mean_read_kib": round(s["device_read_bytes"] / max(n_r, 1) / 1024, 2),
        "device_time_s": round(s["device_time_s"], 3),
        "gc_write_mib": round((s["gc_write_bytes"] + s["device_gc_write_bytes"]) / 2**20, 1),
        "swap_in_p50_us": round(s["swap_in_latency_p50_s"] * 1e6, 1),
        "swap_in_p99_us": round(s["swap_in_latency_p99_s"] * 1e6, 1),
        "host_write_mib": round(s["host_write_bytes"] / 2**20, 1),
        "wall_s": round(wall, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="512 MiB of flash and a shorter trace (about 2 minutes)")
    ap.add_argument("--raw", default=None, help="raw flash in MiB (default 1024, quick 512)")
    ap.add_argument("--utilizations", default="0.5,0.75,0.9")
    ap.add_argument("--overwrites", type=float, default=2.5, help="host writes per live byte after the fill")
    ap.add_argument("--out", default="experiments/results")
    a = ap.parse_args()
    preset = get_preset("thesis-ssd")
    raw = (int(a.raw) if a.raw else (512 if a.quick else 1024)) << 20
    zone = 16 << 20
    zones = raw // zone
    logical = int(raw * (1 - preset.conv_op)) // PS * PS
    os.makedirs(a.out, exist_ok=True)
    rows = []
    for util in (float(u) for u in a.utilizations.split(",")):
        pages = int(util * logical / PS)
        iters = int(a.overwrites * pages / 1000)
        trace = synthetic_dlrm_trace(pages, dram_fraction=0.1, batch_pages=2048, iterations=iters,
                                     idle_s=0.005, seed=1)
        c = trace.counts()
        print(f"\nutilization {util:.0%}: {pages} live pages, {c['swap_out_pages']} swapped out, "
              f"{c['swap_in_pages']} swapped in, {len(trace)} events")
        runs = [("conventional", None, None, lambda: ConventionalSwap(
                    open_device(f"emu-conv://?size={logical}&preset=thesis-ssd"))),
                ("conventional+discard", None, None, lambda: ConventionalSwap(
                    open_device(f"emu-conv://?size={logical}&preset=thesis-ssd"), discard=True))]
        for p in PLACEMENTS:
            for v in VICTIMS:
                runs.append(("zns-store", p, v, lambda p=p, v=v: SwapStore(
                    open_device(f"emu://?zones={zones}&zone_size={zone}&preset=thesis-ssd"),
                    StoreConfig(placement=p, victim=v))))
        for name, p, v, make in runs:
            b = make()
            t = time.time()
            replay(b, trace)
            r = row(name, p or "-", v or "-", util, b, time.time() - t)
            rows.append(r)
            print(f"  {name:21} {r['placement']:9} {r['victim']:12} WAF {r['write_amplification']:5.2f}  "
                  f"write mean {r['mean_write_kib']:7.1f} KiB (<32K {r['writes_under_32k']:.0%})  "
                  f"read {r['mean_read_kib']:5.1f} KiB  device {r['device_time_s']:7.2f} s  "
                  f"GC {r['gc_write_mib']:8.1f} MiB  [{r['wall_s']} s wall]", flush=True)
    path = os.path.join(a.out, "compare_backends.csv")
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"\nwrote {path}")
    plot(rows, os.path.join(a.out, "compare_backends.png"), raw)


def plot(rows, path, raw):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    keys = sorted({(r["backend"], r["placement"], r["victim"]) for r in rows},
                  key=lambda k: (k[0] != "conventional", k[0] != "conventional+discard", k))
    for key in keys:
        rs = sorted((r for r in rows if (r["backend"], r["placement"], r["victim"]) == key),
                    key=lambda r: r["utilization"])
        conv = key[0].startswith("conventional")
        label = key[0] if conv else f"{key[1]}/{key[2]}"
        style = dict(lw=2.5, marker="s") if conv else dict(lw=1, marker=".", alpha=0.8)
        x = [100 * r["utilization"] for r in rs]
        axes[0].plot(x, [r["write_amplification"] for r in rs], label=label, **style)
        axes[1].plot(x, [r["device_time_s"] for r in rs], **style)
        axes[2].plot(x, [r["mean_write_kib"] for r in rs], **style)
    for ax, t in zip(axes, ["write amplification (media / host)", "modeled device time (s)",
                            "mean device write (KiB)"]):
        ax.set_title(t)
        ax.set_xlabel("space utilisation (% of the conventional SSD's capacity)")
        ax.grid(alpha=0.3)
    axes[2].set_yscale("log")
    fig.legend(loc="center right", fontsize=7)
    fig.suptitle(f"host-managed ZNS store vs Linux swap, same {raw >> 20} MiB of thesis-ssd flash, "
                 f"synthetic DLRM-like trace (modeled clock)")
    fig.tight_layout(rect=(0, 0, 0.86, 0.95))
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
