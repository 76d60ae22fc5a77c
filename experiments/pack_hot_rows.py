"""Issue 32, lever 1: hot rows packed together — does learning the packing online make a ``hashed``
table (popular rows scattered, as hashed categorical values are) behave like a ``sorted`` one (the
oracle: rows frequency-sorted, the most popular sharing the first pages)?

    .venv/bin/python experiments/pack_hot_rows.py [--preset default] [--budgets 0.25,0.10]
        [--compute-us-per-sample US] [--every N] [--out experiments/results/pack_hot_rows.json]

Per DRAM budget, the bench's store-on-zns run (the bench's devices, sizing, lookahead and idle GC;
modeled clock) trains the preset's DLRM four times, same seed, same batches:

- ``hashed``: the synthetic Criteo data's default layout, no packing;
- ``hashed+pack``: the same with ``pack_hot_rows=True`` (the module's defaults);
- ``sorted``: the oracle layout, no packing (its rows hold other values: its losses differ);
- ``hashed+meta``: hashed, no packing, its budget raised by the bytes the packing's row map and
  counts take (``pack_bytes``, outside the budget in ``hashed+pack``): the same DRAM as packing.

Reported per run: pages swapped in per step (repacks' own reads included), the page-reference hit
rate (misleading alone: packing makes the hot rows need fewer pages, so what is left to reference is
mostly the cold tail; pages per step is the I/O), the modeled I/O stall, p99 step stall, training
time, the repacks' cost, and whether the losses equal hashed's.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np

from zswap_host.bench import BenchSpec, ComputeBasis
from zswap_host.bench.plan import backend_factories, plan, run_lookahead
from zswap_host.bench.runs import DISCARD_DIRTY
from zswap_host.workloads.row_packing import RowPacking
from zswap_host.torch.training import train

RUN = "store-on-zns"
CONFIGS = ("hashed", "hashed+pack", "sorted", "hashed+meta")


def one(preset: str, budget, layout: str, pack, us: float | None, seed: int) -> dict:
    compute = ComputeBasis("pinned", us, 1, "--compute-us-per-sample") if us is not None else None
    spec = BenchSpec(preset=preset, budget=budget, runs=(RUN,), compute=compute, seed=seed)
    pl = plan(spec)
    pl = dataclasses.replace(pl, data=dataclasses.replace(pl.data, layout=layout))
    backend, dev = backend_factories(pl, spec)[RUN]()
    charged = np.full(pl.iterations, pl.compute.us_per_sample * 1e-6 * pl.batch_size)
    t0 = time.perf_counter()
    res = train(pl.model, pl.data, backend, pl.budget, pl.iterations, pl.batch_size, seed,
                on_idle=backend.idle, clock=dev.now, discard_dirty=DISCARD_DIRTY[RUN], charged_compute_s=charged,
                lookahead=run_lookahead(spec, RUN), pack_hot_rows=pack)
    backend.close()
    dev.close()
    p = res.paging
    return {"layout": layout, "pack_hot_rows": bool(pack), "budget_bytes": res.budget_bytes, "budget_pages": res.budget_pages,
            "table_bytes": res.table_bytes, "total_pages": res.total_pages,
            "pages_in_per_step": float(res.pages_in.mean()), "pages_out_per_step": float(res.pages_out.mean()),
            "page_hit_rate": p["hits"] / p["page_refs"] if p["page_refs"] else None,
            "page_refs_per_step": p["page_refs"] / res.iterations,
            "io_stall_s": res.io_stall_time_s, "step_stall_p99_s": float(np.percentile(res.io_stall_s, 99)),
            "train_time_s": res.train_time_s, "compute_time_s": res.compute_time_s,
            "repacks": p["repacks"], "rows_moved": p["rows_moved"], "repack_pages": p["repack_pages"],
            "repack_faults": p["repack_faults"], "repack_errors": p["repack_errors"], "pack_bytes": p["pack_bytes"],
            "loss": res.loss.tolist(), "wall_s": time.perf_counter() - t0,
            "compute_us_per_sample": pl.compute.us_per_sample, "iterations": res.iterations,
            "batch_size": res.batch_size, "lookahead": res.lookahead}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="default")
    ap.add_argument("--budgets", default="0.25,0.10")
    ap.add_argument("--compute-us-per-sample", type=float, default=None,
                    help="charged compute per sample [default: the preset's calibrated CPU figure]")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--every", type=int, default=None, help="steps between repacks [default: RowPacking's]")
    ap.add_argument("--decay", type=float, default=None, help="the counts' decay per repack [default: RowPacking's]")
    ap.add_argument("--configs", default=",".join(CONFIGS),
                    help="configurations to run; the others are read from --out's earlier results")
    ap.add_argument("--out", default="experiments/results/pack_hot_rows.json")
    a = ap.parse_args()
    report = {"preset": a.preset, "run": RUN, "seed": a.seed, "command": "experiments/pack_hot_rows.py "
              f"--preset {a.preset} --budgets {a.budgets}"
              + (f" --compute-us-per-sample {a.compute_us_per_sample}" if a.compute_us_per_sample else "")
              + (f" --every {a.every}" if a.every else "") + (f" --decay {a.decay}" if a.decay is not None else ""),
              "budgets": {}}
    old = json.loads(Path(a.out).read_text()) if Path(a.out).exists() else {"budgets": {}}
    for b in (float(x) for x in a.budgets.split(",")):
        rows = {}
        for name in CONFIGS:
            if name == "hashed+meta":      # the packing's metadata given to the page cache instead
                budget = int(b * rows["hashed"]["table_bytes"]) + rows["hashed+pack"]["pack_bytes"]
            else:
                budget = b
            if name not in a.configs.split(","):
                rows[name] = old["budgets"][f"{b:g}"][name]        # KeyError: not run before
                continue
            kw = {k: v for k, v in (("every", a.every), ("decay", a.decay)) if v is not None}
            pack = RowPacking(**kw) if name == "hashed+pack" else False
            r = one(a.preset, budget, "sorted" if name == "sorted" else "hashed", pack, a.compute_us_per_sample, a.seed)
            rows[name] = r
            r["losses"] = r.pop("loss")
            print(f"budget {b:.0%} {name:12s} pages in/step {r['pages_in_per_step']:8.1f}  hit {r['page_hit_rate']:.3f}"
                  f"  stall {r['io_stall_s']:8.3f} s  p99 {r['step_stall_p99_s'] * 1e3:7.2f} ms  train {r['train_time_s']:8.3f} s"
                  f"  moved {r['rows_moved']}  ({r['wall_s']:.0f} s wall)", flush=True)
        base = rows["hashed"].get("losses")
        for name, r in rows.items():      # rows read from an earlier run keep their comparison
            if "losses" in r:
                r["losses_equal_hashed"] = r["losses"] == base
                r["loss_final"] = r.pop("losses")[-1]
        rows["summary"] = {
            "pages_in_ratio_pack_vs_hashed": rows["hashed+pack"]["pages_in_per_step"] / rows["hashed"]["pages_in_per_step"],
            "pages_in_ratio_sorted_vs_hashed": rows["sorted"]["pages_in_per_step"] / rows["hashed"]["pages_in_per_step"],
            "stall_ratio_hashed_vs_pack": rows["hashed"]["io_stall_s"] / rows["hashed+pack"]["io_stall_s"],
            "stall_ratio_hashed_vs_sorted": rows["hashed"]["io_stall_s"] / rows["sorted"]["io_stall_s"],
            "stall_ratio_meta_vs_pack": rows["hashed+meta"]["io_stall_s"] / rows["hashed+pack"]["io_stall_s"],
            # how much of the oracle's stall reduction packing gets
            "share_of_oracle_gain": (rows["hashed"]["io_stall_s"] - rows["hashed+pack"]["io_stall_s"])
            / (rows["hashed"]["io_stall_s"] - rows["sorted"]["io_stall_s"]),
        }
        report["budgets"][f"{b:g}"] = rows
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(report, indent=1))
    print(json.dumps({k: v["summary"] for k, v in report["budgets"].items()}, indent=1))


if __name__ == "__main__":
    main()
