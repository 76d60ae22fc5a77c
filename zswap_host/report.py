"""Figures for ``bench`` reports (matplotlib, Agg)."""

from __future__ import annotations

import os

import numpy as np

COLORS = {"dram-only": "#555555", "linux-swap": "#d62728", "linux-swap-batched": "#9467bd",
          "linux-swap-lookahead": "#8c564b", "linux-swap-packed": "#e377c2",
          "store-on-conventional": "#ff7f0e", "store-on-zns": "#2ca02c"}


def plot_bench(report: dict, outdir: str) -> list[str]:
    """Time per iteration, cumulative bytes written, request-size histograms and swap-in latency
    CDFs, one PNG each in ``outdir``. Returns the paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(outdir, exist_ok=True)
    runs, extras = report["runs"], report.get("_extras", {})
    clock = "charged compute + modeled I/O stall"
    paths = []

    def save(fig, name):
        path = os.path.join(outdir, name)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for r in runs:
        ax.plot(np.array(r["per_iteration_s"]) * 1e3, label=r["name"], color=COLORS.get(r["name"]), lw=1)
    ax.set(xlabel="iteration", ylabel="time per iteration (ms)", yscale="log",
           title=f"DLRM training time per iteration ({clock})")
    ax.legend(loc="upper right")
    ax.grid(alpha=0.3)
    save(fig, "iteration_time.png")

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for r in runs:
        if "device_write_bytes_cumulative" in r:
            name = r["name"]
            ax.plot(np.array(r["device_write_bytes_cumulative"]) / 2**30, label=f"{name}: device writes",
                    color=COLORS.get(name))
            ax.plot(np.array(r["media_write_bytes_cumulative"]) / 2**30, ls="--", color=COLORS.get(name),
                    label=f"{name}: reaching flash")
    ax.set(xlabel="iteration", ylabel="GiB written (cumulative)", title="bytes written")
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(alpha=0.3)
    save(fig, "bytes_written.png")

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    swap_runs = [r for r in runs if r["name"] != "dram-only"]
    for ax, key, title in zip(axes, ("write_size_histogram", "read_size_histogram"), ("writes", "reads")):
        buckets = [4 << 10 << i for i in range(10)]          # 4 KiB .. 2 MiB, powers of two
        x = np.arange(len(buckets))
        width = 0.8 / max(len(swap_runs), 1)
        for i, r in enumerate(swap_runs):
            share = np.zeros(len(buckets))
            h = {int(k): v for k, v in r[key].items()}
            total = max(sum(h.values()), 1)
            for size, count in h.items():
                share[min(np.searchsorted(buckets, size), len(buckets) - 1)] += count / total
            ax.bar(x + i * width, share, width, label=r["name"], color=COLORS.get(r["name"]))
        ax.set_xticks(x + 0.4 - width / 2)
        ax.set_xticklabels([f"<={b // 1024}K" for b in buckets], fontsize=8)
        ax.set(ylabel="share of requests", title=f"device {title} by request size")
        ax.axvline(3.9, color="k", ls=":", lw=1)        # 32 KiB
        ax.legend(fontsize=8)
    save(fig, "request_sizes.png")

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for name, e in extras.items():
        lat = np.sort(e["latencies"])
        if lat.size:
            ax.plot(lat * 1e6, np.arange(1, lat.size + 1) / lat.size, label=name, color=COLORS.get(name))
    ax.set(xscale="log", xlabel="page wait (us, modeled): from the step needing the page to the page in DRAM",
           ylabel="CDF", title="swap-in page waits")
    ax.legend()
    ax.grid(alpha=0.3)
    save(fig, "latency_cdf.png")
    return paths
