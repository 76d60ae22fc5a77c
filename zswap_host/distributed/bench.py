"""``zswap-host bench --ranks N``: the runs that make sense sharded — ``dram-only`` (every rank's
shards in DRAM) and ``store-on-zns`` (each rank's shards in its own store on its own emulated ZNS
device, or the ``{rank}`` device URL template given) — next to the 1-rank DRAM-only losses they must
equal within float tolerance."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..run_names import current_names
from .launch import DistSpec, resolve_spec, run_distributed

SHARDED_RUNS = ("dram-only", "store-on-zns")


def run_sharded_bench(spec: DistSpec, runs=SHARDED_RUNS, timeout_s: float | None = None) -> dict:
    """Each of ``runs`` as a sharded training of ``spec`` (its ``device``: the store-on-zns run's URL
    template; None: the bench plan's emulated ZNS device for the whole tables, a fresh one per rank).
    An old run name (``zns-host-gc``) runs under its name now. ``ValueError`` for an unknown run or
    a bad spec; ``RankFailed`` as ``run_distributed``."""
    from ..bench import BenchSpec
    from ..bench.plan import plan
    from ..torch.training import train

    runs = current_names(runs)      # an old name (run_names) as its name now
    bad = [r for r in runs if r not in SHARDED_RUNS]
    if bad or not runs:
        raise ValueError(f"sharded runs are {', '.join(SHARDED_RUNS)}, not {bad[0] if bad else '(none)'!r}")
    device = spec.device
    if device is None:
        device = plan(BenchSpec(preset=spec.preset, budget=spec.budget, iterations=spec.iterations,
                                batch_size=spec.batch_size, seed=spec.seed, runs=("store-on-zns",))).zns_url
    out = {"ranks": spec.ranks, "preset": spec.preset, "seed": spec.seed, "runs": []}
    for name in runs:
        s = dataclasses.replace(spec, device=None if name == "dram-only" else device)
        rec = run_distributed(s, timeout_s=timeout_s)
        rec["name"] = name
        out["runs"].append(rec)
    _, mc, dc, iterations, batch_size, _ = resolve_spec(spec)
    ref = train(mc, dc, None, 1.0, iterations, batch_size, spec.seed).loss     # the unsharded run
    out["one_rank_loss"] = ref.tolist()
    for rec in out["runs"]:
        rec["loss_max_abs_diff_vs_1_rank"] = float(np.abs(np.asarray(rec["loss"]) - ref).max())
    out["shards"] = out["runs"][0]["shards"]
    return out


def format_sharded(report: dict) -> str:
    """The report as a table: a line per run (losses' largest difference from the 1-rank run, job and
    total stall, training time), then a line per rank."""
    lines = [f"sharded bench: preset {report['preset']}, {report['ranks']} ranks "
             f"(split table: {report['shards']['split_table']}, shard bytes {report['shards']['bytes_by_rank']})",
             f"{'run':14} {'train s':>10} {'job stall s':>12} {'total stall s':>14} {'final loss':>11} "
             f"{'|dloss| vs 1 rank':>18}"]
    for r in report["runs"]:
        lines.append(f"{r['name']:14} {r['train_time_s']:10.4f} {r['job_stall_s']:12.6f} {r['total_stall_s']:14.6f} "
                     f"{r['loss'][-1]:11.6f} {r['loss_max_abs_diff_vs_1_rank']:18.3g}")
        for d in r["per_rank"]:
            lines.append(f"  rank {d['rank']:<7} {d['train_time_s']:10.4f} {d['io_stall_time_s']:12.6f} "
                         f"{'':14} {'':11} faults {d['paging']['faults']}, written {d['paging']['pages_written']}")
    return "\n".join(lines)
