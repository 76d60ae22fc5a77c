"""What does each SSD interface buy swap under DLRM training, on the same flash? The bench's swap
runs on a conventional SSD, an FDP SSD (the same FTL with reclaim unit handles) and a ZNS SSD, all
built from the same raw flash, with the tables at 75, 90 and 95% of the conventional SSD's usable
bytes. Per point and (interface, software): modeled stall, write amplification, GC bytes (the
store's and the device's), page-wait p99. Writes CSV, JSON and a PNG.

Software on each interface:
- conventional: Linux swap batched (no hints); the store through a zoned view (host GC, TRIMs);
- fdp: Linux swap batched with no hints (Linux 6.1 passes none); the same with a handle per stream
  (a hypothetical FDP-aware swap, ``ConventionalSwap(handles="stream")``); the store through a zoned
  view writing each stream, and its GC, under a handle of its own;
- zns: the store (host GC, zone resets);
- ocssd (Open-Channel 2.0): the store through ``OcssdZonedView`` (zones striped over one chunk per
  parallel unit, chunks bound by wear), chunks sized so a zone holds the ZNS zone's capacity.

    python experiments/interfaces.py [--preset default] [--utilisations 0.75 0.9 0.95] [--ruhs 8]
        [--isolation persistent] [--out DIR]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import time

from zswap_host.bench import BenchSpec, plan, run_bench
from zswap_host.bench.same_flash import interface_urls

# one bench per group (its runs train side by side): (device, extra BenchSpec fields, runs), each run
# labelled (interface, software)
GROUPS = (
    ("conventional", {}, {"linux-swap-batched": ("conventional", "linux-swap-batched"),
                          "store-on-conventional": ("conventional", "store"), "store-on-zns": ("zns", "store")}),
    ("fdp", {}, {"linux-swap-batched": ("fdp", "linux-swap-batched"), "store-on-conventional": ("fdp", "store")}),
    ("fdp", {"linux_handles": "stream"},
     {"linux-swap-batched": ("fdp", "linux-swap-batched + stream handles")}),
    ("ocssd", {}, {"store-on-zns": ("ocssd", "store")}),
)
CONFIGS = [label for _, _, runs in GROUPS for label in runs.values()]
STYLE = {("conventional", "linux-swap-batched"): ("#9467bd", "o-"), ("conventional", "store"): ("#ff7f0e", "o-"),
         ("fdp", "linux-swap-batched"): ("#9467bd", "s--"),
         ("fdp", "linux-swap-batched + stream handles"): ("#8c564b", "s--"),
         ("fdp", "store"): ("#ff7f0e", "s--"), ("zns", "store"): ("#2ca02c", "^-"),
         ("ocssd", "store"): ("#17becf", "v:"), ("ocssd", "store (isolate layout)"): ("#e377c2", "v:")}


def raw_flash(url: str) -> int:
    from zswap_host.devices import open_device

    dev = open_device(url)
    try:
        return int(dev.model.raw_bytes)
    finally:
        dev.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="default")
    ap.add_argument("--utilisations", nargs="+", type=float, default=[0.75, 0.9, 0.95])
    ap.add_argument("--ruhs", type=int, default=8)
    ap.add_argument("--isolation", default="persistent", choices=("persistent", "initial"))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "interfaces"))
    a = ap.parse_args()
    cmd = (f"python experiments/interfaces.py --preset {a.preset} --utilisations "
           + " ".join(f"{u:g}" for u in a.utilisations) + f" --ruhs {a.ruhs} --isolation {a.isolation}"
           + " --out " + os.path.relpath(a.out))
    rows, flash = [], {}
    for u in a.utilisations:
        t = time.monotonic()
        base = BenchSpec(preset=a.preset, utilisation=u, lookahead=0)
        pl = plan(base)
        urls = interface_urls(pl, a.ruhs, a.isolation)
        flash[u] = {k: raw_flash(v) for k, v in urls.items()}
        losses = []
        for device, extra, runs in GROUPS:
            where = {"fdp": {"baseline_device": urls["fdp"]}, "ocssd": {"device": urls["ocssd"]}}.get(device, {})
            spec = BenchSpec(preset=a.preset, utilisation=u, lookahead=0, runs=tuple(runs), **where, **extra)
            rep = run_bench(spec)
            for r in rep["runs"][1:]:
                iface, soft = runs[r["name"]]
                losses.append(r["loss"])
                rows.append({
                    "utilisation": u, "interface": iface, "software": soft,
                    "tables_over_usable": round(pl.devices["tables_over_zns_usable"] if iface in ("zns", "ocssd")
                                                else pl.devices["tables_over_conventional_usable"], 4),
                    "raw_flash_mib": round(flash[u][iface] / 2**20, 1),
                    "stall_s": round(r["io_stall_time_s"], 4),
                    "write_amplification": round(r["write_amplification"], 4),
                    "store_gc_mib": round(r.get("gc_write_bytes", 0) / 2**20, 1),
                    "device_gc_mib": round(r.get("device_gc_write_bytes", 0) / 2**20, 1),
                    "page_wait_p99_us": round(r["page_wait_p99_s"] * 1e6, 1)})
        same = all(x == losses[0] for x in losses)
        for row in rows[-len(CONFIGS):]:
            row["losses_match"] = same
        print(f"{u:.0%}: " + ", ".join(f"{x['interface']}/{x['software']} WAF {x['write_amplification']:.3f} "
                                        f"stall {x['stall_s']:.2f} s" for x in rows[-len(CONFIGS):])
              + f" ({time.monotonic() - t:.0f} s)", flush=True)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "interfaces.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(a.out, "interfaces.json"), "w") as f:
        json.dump({"command": cmd, "preset": a.preset, "ruhs": a.ruhs, "isolation": a.isolation,
                   "raw_flash_bytes": {f"{u:g}": v for u, v in flash.items()}, "rows": rows}, f, indent=1)
    plot(rows, a, os.path.join(a.out, "interfaces.png"))
    print(f"wrote {a.out}/interfaces.csv, interfaces.json, interfaces.png")


def draw(ax, rows: list[dict], configs, key: str, label: str) -> None:
    """One line per (interface, software) in ``configs``: ``key`` against utilisation."""
    for iface, soft in configs:
        rs = [r for r in rows if r["interface"] == iface and r["software"] == soft]
        color, style = STYLE[(iface, soft)]
        ax.plot([100 * r["utilisation"] for r in rs], [r[key] for r in rs], style, color=color,
                label=f"{iface}: {soft}")
    ax.set(xlabel="tables / conventional SSD's usable bytes (%)", ylabel=label)
    ax.grid(alpha=0.3)


def plot(rows: list[dict], a, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5))
    for ax, (key, label) in zip(axes, (("write_amplification", "write amplification (flash / host)"),
                                       ("device_gc_mib", "device GC (MiB)"), ("stall_s", "I/O stall (s, modeled)"))):
        draw(ax, rows, CONFIGS, key, label)
    axes[0].legend(fontsize=7)
    fig.suptitle(f"SSD interfaces, same flash, {a.preset} preset ({a.ruhs} FDP handles, {a.isolation} isolation; "
                 f"modeled clock, lookahead 0)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    main()
