"""What each step of the bench buys: the attribution chain, slowdowns, and latency summaries.

The chain compares neighbouring runs, each step changing one thing:
batching (``linux-swap`` -> ``linux-swap-batched``: the step's faults read as one queue),
lookahead (-> ``linux-swap-lookahead``, with ``--lookahead``: the next batches' pages faulted in while
a step computes), packing (-> ``linux-swap-packed``, with ``--pack-hot-rows``: the tables' hot rows
packed together, an application-level lever), aggregation and host placement
(-> ``store-on-conventional``: large appends, the store's slot map and GC, on the same SSD, with the
same lookahead and packing), ZNS (-> ``store-on-zns``: the same
store on a zoned device, no FTL). Each step is a ratio of modeled I/O stall and of training time
(before / after: > 1 means the step helped).

The summary compares the ZNS store with the best Linux run (the fastest of the Linux runs that ran,
``linux-swap-packed`` among them: Linux with the same application-level levers) and with
``linux-swap``, each stall ratio beside both runs' seconds.
"""

from __future__ import annotations

import numpy as np

from ..run_names import old_keys

# (step, before, after); a step whose before-run is missing takes the next one listed for it (the
# aggregation step starts from linux-swap-packed when the bench packs hot rows, else from
# linux-swap-lookahead when it has a lookahead)
STEPS = (("batching", "linux-swap", "linux-swap-batched"),
         ("lookahead", "linux-swap-batched", "linux-swap-lookahead"),
         ("packing", "linux-swap-lookahead", "linux-swap-packed"),
         ("packing", "linux-swap-batched", "linux-swap-packed"),
         ("aggregation", "linux-swap-packed", "store-on-conventional"),
         ("aggregation", "linux-swap-lookahead", "store-on-conventional"),
         ("aggregation", "linux-swap-batched", "store-on-conventional"),
         ("zns", "store-on-conventional", "store-on-zns"))

# the runs that model Linux swap: the candidates for the summary's best Linux run
LINUX_RUNS = ("linux-swap", "linux-swap-batched", "linux-swap-lookahead", "linux-swap-packed")


def share_under(hist: dict, limit: int = 32 << 10) -> float:
    n = sum(hist.values())
    return sum(v for k, v in hist.items() if int(k) < limit) / n if n else 0.0


def merge_hist(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out


def latency_summary(waits: np.ndarray) -> dict:
    """Page waits (seconds from the moment the step needed the page to the moment it was in DRAM):
    p50, p99, p99.9 and the count."""
    w = np.asarray(waits, np.float64)
    if not w.size:
        return {"page_wait_p50_s": 0.0, "page_wait_p99_s": 0.0, "page_wait_p999_s": 0.0, "page_waits": 0}
    p = np.percentile(w, [50, 99, 99.9])
    return {"page_wait_p50_s": float(p[0]), "page_wait_p99_s": float(p[1]), "page_wait_p999_s": float(p[2]),
            "page_waits": int(w.size)}


def _ratio(before: float, after: float) -> float | None:
    """before / after; None when after is 0 (a stall hidden entirely: no finite ratio)."""
    return before / after if after > 0 else None


def stall_text(before: float, after: float, ratio: float | None) -> str:
    """A stall ratio for people, beside its seconds: "99.2 s -> 14.9 s (6.64x)", or the two stalls
    alone ("0.58 s -> 0 s") when either is 0 (no finite ratio)."""
    pair = f"{before:.3g} s -> {after:.3g} s"
    if ratio is None or before == 0:
        return pair
    return f"{pair} ({ratio:.2f}x)"


def _gc_bytes(r: dict) -> int:
    return int(r.get("gc_write_bytes", 0)) + int(r.get("device_gc_write_bytes", 0))


def best_linux_run(runs: list[dict]) -> str | None:
    """The name of the Linux run that trains fastest (lowest training time; a tie goes to the lower
    I/O stall, then to the earlier run in ``LINUX_RUNS``), or None when no Linux run ran."""
    linux = [r for name in LINUX_RUNS for r in runs if r["name"] == name]
    if not linux:
        return None
    return min(linux, key=lambda r: (r["train_time_s"], r["io_stall_time_s"]))["name"]


def _versus(linux: dict, zns: dict) -> dict:
    """store-on-zns against one Linux run: the speedup and the stall ratio (Linux / ZNS), each beside
    both runs' seconds ([Linux, ZNS])."""
    return {"run": linux["name"],
            "speedup": linux["train_time_s"] / zns["train_time_s"],
            "train_time_s": [linux["train_time_s"], zns["train_time_s"]],
            "stall_ratio": _ratio(linux["io_stall_time_s"], zns["io_stall_time_s"]),
            "io_stall_time_s": [linux["io_stall_time_s"], zns["io_stall_time_s"]]}


def summary(runs: list[dict]) -> dict | None:
    """The bench's headline: ``store-on-zns`` against the best Linux run (``vs_best_linux``) and
    against ``linux-swap`` (``vs_linux_swap``, when it ran); None without store-on-zns or a Linux run."""
    by = {r["name"]: r for r in runs}
    best = best_linux_run(runs)
    if best is None or "store-on-zns" not in by:
        return None
    zns = by["store-on-zns"]
    out = {"run": "store-on-zns", "best_linux_run": best, "vs_best_linux": _versus(by[best], zns)}
    if "linux-swap" in by:
        out["vs_linux_swap"] = _versus(by["linux-swap"], zns)
    return out


def chain(runs: list[dict]) -> dict:
    """``chain`` (one entry per step whose two runs ran), ``ratios`` (slowdowns vs DRAM-only, the
    end-to-end speedup, losses) and, when store-on-zns and a Linux run ran, ``summary`` (see
    :func:`summary`)."""
    by = {r["name"]: r for r in runs}
    dram = by["dram-only"]["train_time_s"]
    steps = []
    taken = set()
    for step, a, b in STEPS:
        if a in by and b in by and step not in taken:
            taken.add(step)
            ra, rb = by[a], by[b]
            steps.append({"step": step, "from": a, "to": b,
                          "stall_ratio": _ratio(ra["io_stall_time_s"], rb["io_stall_time_s"]),
                          "io_stall_time_s": [ra["io_stall_time_s"], rb["io_stall_time_s"]],
                          "train_time_ratio": ra["train_time_s"] / rb["train_time_s"],
                          "write_amplification": [ra["write_amplification"], rb["write_amplification"]],
                          "gc_write_bytes": [_gc_bytes(ra), _gc_bytes(rb)]})
    ratios: dict = {}
    for r in runs:
        if r["name"] != "dram-only":
            ratios[f"slowdown_{r['name']}"] = r["train_time_s"] / dram
    if "linux-swap" in by and "store-on-zns" in by:
        lin, zns = by["linux-swap"], by["store-on-zns"]
        ratios["speedup_store_on_zns_vs_linux_swap"] = lin["train_time_s"] / zns["train_time_s"]
        ratios["stall_ratio_linux_swap_vs_store_on_zns"] = _ratio(lin["io_stall_time_s"], zns["io_stall_time_s"])
    ratios.update(old_keys(ratios))       # readers of reports from before the run's rename
    base = np.array(by["dram-only"]["loss"])
    diffs = [float(np.max(np.abs(np.array(r["loss"]) - base))) for r in runs]
    ratios["max_loss_difference"] = max(diffs)
    ratios["losses_match"] = bool(max(diffs) <= 1e-5 * max(1.0, float(np.abs(base).max())))
    out = {"chain": steps, "ratios": ratios}
    head = summary(runs)
    if head is not None:
        out["summary"] = head
    return out
