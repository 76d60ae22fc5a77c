"""The interface comparison by trace replay: the recorded default-preset DLRM trace and a synthetic
DLRM-like trace, each replayed through swap on a conventional, an FDP, a ZNS and an Open-Channel SSD
built from the same raw flash, at 75, 90 and 95% of the conventional SSD's usable bytes.

Per (trace, utilisation, interface, software): modeled stall, write amplification, GC bytes (the
store's and the device's), p99 swap-in wait, and flash wear spread (erases per erase block:
max / mean and coefficient of variation). Writes CSV, JSON and a PNG.

The traces:
- ``recorded``: the bench's ``store-on-zns`` run of the preset (lookahead 0) recorded with
  ``--trace-out``: every swap_in, swap_out, discard and compute window (an idle window) of 1000
  training iterations. Replaying it reproduces that run's stall and write amplification exactly
  (checked here: the ZNS store's row at the recorded utilisation is compared with the bench's);
  the page stream does not depend on the device (no lookahead), so one trace serves every device.
  The store's run discards a dirty page's stale copy; Linux swap keeps it until it is overwritten,
  so the Linux runs replay the trace without its discards — and then reproduce their own bench
  runs too (``trained_*`` columns: ``experiments/interfaces.py``'s rows beside the replay's).
- ``synthetic``: ``workloads.synthetic_dlrm_trace`` over the same pages and DRAM budget (Zipf 1.05
  popularity scattered over the tables, LRU eviction) with the recorded trace's mean compute window;
  it discards what it faults in (``discard_faulted``: training updates every row it touches), as the
  recorded run does, unless ``--synthetic-discards no`` (then every page stays live in the backend
  and the store's zones fill to its capacity at high utilisation).

Stall here is the replay's modeled time minus its compute (idle) windows: the time the workload
would wait on swap (GC overrunning an idle window counts). Software per interface as in
``experiments/interfaces.py``, plus the Open-Channel store with ``layout="isolate"`` (GC and user
streams on different PU groups) beside the striped one.

    python experiments/interfaces_replay.py [--preset default] [--utilisations 0.75 0.9 0.95]
        [--ruhs 8] [--isolation persistent] [--jobs 2] [--out DIR]
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from interfaces import draw, raw_flash
from zswap_host.bench import BenchSpec, plan, run_bench
from zswap_host.bench.plan import READ_QD, linux_swap
from zswap_host.bench.same_flash import interface_urls
from zswap_host.devices import open_device
from zswap_host.store import StoreConfig
from zswap_host.sweep.replay_run import replay_measured, store_on
from zswap_host.workloads import SwapTrace, synthetic_dlrm_trace
from zswap_host.workloads.trace import DISCARD

# (interface, software): how each run is built — device (key of the URL table), backend
CONFIGS = (
    ("conventional", "linux-swap-batched"), ("conventional", "store"),
    ("fdp", "linux-swap-batched"), ("fdp", "linux-swap-batched + stream handles"), ("fdp", "store"),
    ("zns", "store"), ("ocssd", "store"), ("ocssd", "store (isolate layout)"),
)


def make_backend(iface: str, soft: str, urls: dict, pl, budget_pages: int):
    """(backend, device clock, the device to ask for wear) for one run on a fresh device."""
    if soft.startswith("linux"):
        dev = open_device(urls[iface], zoned=None)
        return linux_swap(dev, budget_pages, "batched", "stream" if "handles" in soft else None), dev.now, dev
    return store_on(urls[iface], pl.zone_size, pl.zone_capacity, StoreConfig(read_qd=READ_QD),
                    **({"layout": "isolate"} if "isolate" in soft else {}))


def run_one(task: tuple) -> dict:
    """Replay one trace through one (interface, software) at one utilisation."""
    trace_path, source, u, iface, soft, urls, budget_pages, preset = task
    pl = plan(BenchSpec(preset=preset, utilisation=u, lookahead=0))
    trace = SwapTrace.load(trace_path)
    if soft.startswith("linux"):
        # the recorded run discarded dirty pages' stale copies (the store frees them early); Linux
        # keeps a slot until it is overwritten, so it gets no discards (as in its own bench run)
        trace = trace.without(DISCARD)
    backend, clock, dev = make_backend(iface, soft, urls, pl, budget_pages)
    wall = time.monotonic()
    measured = replay_measured(backend, clock, dev, [trace])
    row = {"trace": source, "utilisation": u, "interface": iface, "software": soft,
           "tables_over_usable": round(pl.devices["tables_over_zns_usable"] if iface in ("zns", "ocssd")
                                       else pl.devices["tables_over_conventional_usable"], 4),
           **measured, "wall_s": round(time.monotonic() - wall, 1)}
    backend.close()
    dev.close()
    return row


def sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


RECORDED_AT = 0.9       # the recording bench's utilisation (the page stream does not depend on it)
BENCH_KEYS = ("io_stall_time_s", "write_amplification", "gc_write_bytes", "page_wait_p99_s")


def trained_rows(path: str) -> dict:
    """(utilisation, interface, software) -> the training-based comparison's row
    (``experiments/interfaces.py``), to check the replay against; {} without the file."""
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return {(r["utilisation"], r["interface"], r["software"]): r for r in json.load(f)["rows"]}


def make_traces(preset: str, traces_dir: str, synthetic_discards: bool = True) -> tuple[dict, dict]:
    """The two traces (recorded once, then reused from ``traces_dir``) and the recording bench's run."""
    os.makedirs(traces_dir, exist_ok=True)
    recorded = os.path.join(traces_dir, f"{preset}_recorded.npz")
    if not os.path.exists(recorded):
        rep = run_bench(BenchSpec(preset=preset, lookahead=0, utilisation=RECORDED_AT, runs=("store-on-zns",),
                                  trace_out=recorded))
        with open(recorded + ".bench.json", "w") as f:
            json.dump({"utilisation": RECORDED_AT, **{k: rep["runs"][-1][k] for k in BENCH_KEYS}}, f)
    with open(recorded + ".bench.json") as f:
        bench_run = json.load(f)
    tr = SwapTrace.load(recorded)
    synthetic = os.path.join(traces_dir, f"{preset}_synthetic{'' if synthetic_discards else '_no_discards'}.npz")
    if not os.path.exists(synthetic):
        m, iters = tr.meta, int(tr.meta["iterations"])
        pages = int(plan(BenchSpec(preset=preset, lookahead=0)).table_pages)
        synthetic_dlrm_trace(pages, dram_fraction=m["budget_bytes"] / m["page_size"] / pages,
                             batch_pages=2048, iterations=iters, idle_s=float(tr.idle_s.sum()) / iters,
                             seed=1, discard_faulted=synthetic_discards).save(synthetic)
    return {"recorded": recorded, "synthetic": synthetic}, bench_run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="default")
    ap.add_argument("--utilisations", nargs="+", type=float, default=[0.75, 0.9, 0.95])
    ap.add_argument("--ruhs", type=int, default=8)
    ap.add_argument("--isolation", default="persistent", choices=("persistent", "initial"))
    ap.add_argument("--jobs", type=int, default=max(1, len(os.sched_getaffinity(0))))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "interfaces_replay"))
    ap.add_argument("--synthetic-discards", choices=("yes", "no"), default="yes",
                    help="the synthetic trace discards what it faults in, as the recorded run does (default yes)")
    ap.add_argument("--trained", default=os.path.join(os.path.dirname(__file__), "results", "interfaces",
                                                      "interfaces.json"),
                    help="the training-based comparison's JSON, to put its stall and WAF beside the replay's")
    ap.add_argument("--traces", default=None, help="where the traces are kept (default OUT/traces, not committed)")
    a = ap.parse_args()
    cmd = (f"python experiments/interfaces_replay.py --preset {a.preset} --utilisations "
           + " ".join(f"{u:g}" for u in a.utilisations) + f" --ruhs {a.ruhs} --isolation {a.isolation}"
           + f" --synthetic-discards {a.synthetic_discards} --out " + os.path.relpath(a.out))
    t_start = time.monotonic()
    traces, bench_run = make_traces(a.preset, a.traces or os.path.join(a.out, "traces"), a.synthetic_discards == "yes")
    meta = SwapTrace.load(traces["recorded"]).meta
    budget_pages = int(meta["budget_bytes"]) // int(meta["page_size"])
    tasks, flash = [], {}
    for u in a.utilisations:
        pl = plan(BenchSpec(preset=a.preset, utilisation=u, lookahead=0))
        urls = interface_urls(pl, a.ruhs, a.isolation)
        flash[f"{u:g}"] = {k: raw_flash(v) for k, v in urls.items()}
        for source, path in traces.items():
            tasks += [(path, source, u, iface, soft, urls, budget_pages, a.preset) for iface, soft in CONFIGS]
    rows, trained = [], trained_rows(a.trained)
    with ProcessPoolExecutor(a.jobs) as pool:
        for row in pool.map(run_one, tasks):
            t = trained.get((row["utilisation"], row["interface"], row["software"])) if row["trace"] == "recorded" else None
            row["trained_stall_s"] = t["stall_s"] if t else ""
            row["trained_write_amplification"] = t["write_amplification"] if t else ""
            rows.append(row)
            print(f"[{len(rows)}/{len(tasks)}] {row['trace']} {row['utilisation']:.0%} {row['interface']}: "
                  f"{row['software']}: stall {row['stall_s']:.2f} s, WAF {row['write_amplification']:.3f}, "
                  f"wear max/mean {row['wear_max_over_mean']:.2f} ({row['wall_s']} s)", flush=True)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "interfaces_replay.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(a.out, "interfaces_replay.json"), "w") as f:
        json.dump({"command": cmd, "preset": a.preset, "ruhs": a.ruhs, "isolation": a.isolation,
                   "traces": {k: {"sha256": sha256(p), **SwapTrace.load(p).counts()} for k, p in traces.items()},
                   "recording_bench_run": bench_run, "raw_flash_bytes": flash,
                   "wall_s": round(time.monotonic() - t_start, 1), "rows": rows}, f, indent=1)
    plot(rows, a, os.path.join(a.out, "interfaces_replay.png"))
    print(f"wrote {a.out}/interfaces_replay.csv, .json, .png")


def plot(rows: list[dict], a, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = (("stall_s", "stall (s, modeled)"), ("write_amplification", "write amplification (flash / host)"),
            ("wear_max_over_mean", "wear: max / mean erases per block"))
    sources = sorted({r["trace"] for r in rows})
    fig, axes = plt.subplots(len(sources), len(keys), figsize=(16, 4.2 * len(sources)), squeeze=False)
    for i, source in enumerate(sources):
        for ax, (key, label) in zip(axes[i], keys):
            draw(ax, [r for r in rows if r["trace"] == source], CONFIGS, key, label)
            ax.set_title(f"{source} trace")
            if key == "stall_s":
                ax.set_yscale("log")        # the isolate layout's stall is ~3x the others' here
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"SSD interfaces, same flash, trace replay, {a.preset} preset ({a.ruhs} FDP handles, "
                 f"{a.isolation} isolation; modeled clock)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    main()
