"""``zswap-host bench``: the same DLRM training (same seed, same batches) in DRAM only and over four
swap configurations, on the devices of :mod:`.plan`:

1. ``dram-only``;
2. ``linux-swap`` — the Linux-swap model in its kernel-validated configuration, one fault at a time;
3. ``linux-swap-batched`` — the same, but each step's pages are announced (``MADV_WILLNEED``) and the
   missing ones read as one queue;
3b. ``linux-swap-lookahead`` (with ``--lookahead K``) — linux-swap-batched that also announces the next
   K batches' pages while a step computes; the two store runs then prefetch K batches ahead too;
3c. ``linux-swap-packed`` (with ``--pack-hot-rows``) — linux-swap-lookahead whose tables pack their hot
   rows together (an application-level lever); the two store runs then pack too;
4. ``store-on-conventional`` — the host-managed store on the conventional SSD through a zoned view;
5. ``store-on-zns`` — the store on the ZNS device.

Training time = charged compute (:mod:`.compute`, the same for every run) + I/O stall (the device's
modeled clock on emulated devices, wall time on real ones). Idle windows (the charged compute of each
iteration) go to both GCs or to neither (``BenchSpec.idle_gc``). The runs on real devices are then
trained again on their model twins (:mod:`.twin`), emulated devices of the same geometry.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..errors import ZswapError
from ..verify import VerifyingBackend
from .chain import chain, latency_summary, share_under, merge_hist
from .compute import charged_compute, measure_compute
from .parallel import run_parallel
from .plan import (BenchError, BenchSpec, backend_factories, jobs_for, open_backends, plan, run_lookahead, run_packs,
                   spec_runs)
from .twin import CONFOUNDS, model_twin, summary

# the store drops a page's swap copy when the page is dirtied in DRAM (the pager knows, and its GC then
# forgets the copy); Linux keeps the swap-cache slot and rewrites the page there, as 6.1 does
DISCARD_DIRTY = {"linux-swap": False, "linux-swap-batched": False, "linux-swap-lookahead": False,
                 "linux-swap-packed": False,
                 "store-on-conventional": True, "store-on-zns": True}


def _record(name: str, res, clock: str) -> dict:
    stall = res.io_stall_s
    return {"name": name, "clock": clock,
            "train_time_s": res.train_time_s, "compute_time_s": res.compute_time_s,
            "measured_compute_s": res.measured_compute_s, "paging_bookkeeping_s": float(res.paging_s.sum()),
            "simulation_wall_s": float(res.io_wall_s.sum()), "io_stall_time_s": res.io_stall_time_s,
            "step_stall_p50_s": float(np.percentile(stall, 50)), "step_stall_p99_s": float(np.percentile(stall, 99)),
            "iterations": res.iterations, "per_iteration_s": res.iteration_s.tolist(),
            "io_stall_per_iteration_s": stall.tolist(), "pages_in_per_iteration": res.pages_in.tolist(),
            "pages_out_per_iteration": res.pages_out.tolist(), "loss": res.loss.tolist(), "paging": res.paging,
            "wall_s": res.wall_s, **({"data": res.source} if res.source else {}), "lookahead": res.lookahead,
            "prefetch_io_time_s": float(res.prefetch_io_s.sum()) if res.prefetch_io_s is not None else 0.0}


def _dram_run(name: str, pl, spec: BenchSpec, basis, progress=None) -> tuple[dict, dict]:
    """The DRAM-only training(s) of the compute basis: (record, measured compute)."""
    measured = measure_compute(pl.model, pl.data, pl.iterations, pl.batch_size, spec.seed, basis.repeats,
                               progress=(lambda d, t: progress(name, d, t)) if progress else None,
                               source=pl.source)
    charged = charged_compute(basis, measured, pl.batch_size)
    stall0 = np.zeros(pl.iterations)
    return {"name": name, "clock": "charged", "train_time_s": float(charged.sum()),
            "compute_time_s": float(charged.sum()), "measured_compute_s": float(measured.median_s.sum()),
            "paging_bookkeeping_s": float(np.median(measured.paging_s, axis=0).sum()),
            "simulation_wall_s": 0.0, "io_stall_time_s": 0.0, "step_stall_p50_s": 0.0, "step_stall_p99_s": 0.0,
            "iterations": pl.iterations, "per_iteration_s": charged.tolist(),
            "io_stall_per_iteration_s": stall0.tolist(), "loss": measured.loss[0].tolist(),
            "paging": measured.paging, "wall_s": measured.wall_s, "replicas": measured.summary(),
            **({"data": measured.source} if measured.source else {})}, measured


def _swap_run(name: str, pl, spec: BenchSpec, charged: np.ndarray, progress=None) -> tuple[dict, dict]:
    """One swap run on fresh devices: (record, extras)."""
    from ..workloads.trace import TraceBuilder
    from ..torch.training import train

    backend, dev = backend_factories(pl, spec)[name]()
    if spec.verify:
        backend = VerifyingBackend(backend)
    modeled = dev.stats().clock == "modeled"
    written: list[tuple[int, int]] = []

    def on_idle(seconds: float, backend=backend, dev=dev) -> None:
        if spec.idle_gc:
            backend.idle(seconds)           # the store's GC gets the window (then the device's FTL)
        else:
            dev.advance(seconds)            # the FTL's own idle GC, if the device has it on
        s = dev.stats()
        written.append((s.device_write_bytes, s.media_write_bytes))

    trace = TraceBuilder() if spec.trace_out and name == "store-on-zns" else None
    res = train(pl.model, pl.data, backend, pl.budget, pl.iterations, pl.batch_size, spec.seed,
                on_idle=on_idle, clock=dev.now if modeled else None, trace=trace,
                discard_dirty=DISCARD_DIRTY[name], charged_compute_s=charged, source=pl.source,
                lookahead=run_lookahead(spec, name), pack_hot_rows=run_packs(spec, name),
                progress=(lambda d, t: progress(name, d, t)) if progress else None)
    if trace is not None:
        trace.meta["preset"] = spec.preset      # what sizes a replay's devices (zswap-host sweep)
        trace.build().save(spec.trace_out)
    rec = _record(name, res, "modeled" if modeled else "wall")
    w = np.array(written)
    rec["device_write_bytes_cumulative"] = w[:, 0].tolist()
    rec["media_write_bytes_cumulative"] = w[:, 1].tolist()
    backend.flush()                 # the end of training: what is buffered reaches the device
    s = backend.stats().as_dict()
    s["swap_in_bytes"], s["swap_out_bytes"] = s["host_read_bytes"], s["host_write_bytes"]
    s["write_requests_under_32k_share"] = share_under(s["write_size_histogram"])
    s["read_requests_under_32k_share"] = share_under(s["read_size_histogram"])
    s["requests_under_32k_share"] = share_under(merge_hist(s["write_size_histogram"], s["read_size_histogram"]))
    s["gc_time_s"] = s.get("gc_time_s", 0.0)
    s["device"] = dev.describe().get("url")
    rec.update({k: v for k, v in s.items() if k not in rec})
    waits = backend.swap_in_latencies()
    rec.update(latency_summary(waits))
    if spec.verify:
        rec["verify"] = backend.verify_stats()
    backend.close()
    dev.close()
    return rec, {"latencies": waits}


def _run(name: str, pl, spec: BenchSpec, basis, charged, progress=None) -> tuple[dict, dict]:
    """Any run by name (what a worker process is handed)."""
    if name == "dram-only":
        return _dram_run(name, pl, spec, basis, progress)[0], {}
    return _swap_run(name, pl, spec, charged, progress)


def run_bench(spec: BenchSpec, progress: Callable[[str, int, int], None] | None = None) -> dict:
    """Run every training and return the report (``runs``, ``chain``, ``ratios``). With a pinned
    compute basis every run, DRAM-only included, is independent and they train ``jobs_for`` at a time;
    a measured basis is measured first, alone, and charged to the swap runs."""
    pl = plan(spec)
    open_backends(pl, spec)          # every device opened and checked before any training
    twin = model_twin(pl, spec)      # ... and every model twin (None: no real device, or turned off)
    if twin is not None:
        try:
            open_backends(twin.plan, twin.spec)
        except ZswapError as e:
            raise BenchError(f"cannot build the model twin ({e}); --no-model-twin runs without it") from None
    basis, jobs = pl.compute, jobs_for(pl, spec)
    names = list(spec_runs(spec))
    if basis.kind == "pinned":
        charged = np.full(pl.iterations, basis.us_per_sample * 1e-6 * pl.batch_size)
        names.insert(0, "dram-only")
        done = run_parallel(_run, names, (pl, spec, basis, charged), jobs, progress)
    else:
        rec, measured = _dram_run("dram-only", pl, spec, basis, progress)
        charged = charged_compute(basis, measured, pl.batch_size)
        done = {"dram-only": (rec, {})}
        done.update(run_parallel(_run, names, (pl, spec, basis, charged), jobs, progress))
    runs = [done[n][0] for n in ("dram-only", *spec_runs(spec))]
    extras = {n: x for n, (_, x) in done.items() if x}

    report = {"preset": pl.preset.name, "model": pl.model.name, "iterations": pl.iterations,
              "batch_size": pl.batch_size, "seed": spec.seed, "table_bytes": pl.table_bytes,
              "budget_bytes": pl.budget_bytes, "placement": spec.placement, "victim": spec.victim,
              "verify": spec.verify, "idle_gc": spec.idle_gc, "lookahead": spec.lookahead,
              "pack_hot_rows": spec.pack_hot_rows, "compute": basis.as_dict(),
              **({"linux_handles": spec.linux_handles} if spec.linux_handles else {}),
              **({"gc_yield_to_reads": True} if spec.gc_yield_to_reads else {}),
              **({"gc_step_bytes": spec.gc_step_bytes} if spec.gc_step_bytes is not None else {}),
              "sizing": pl.devices, "devices": {"baseline": pl.baseline_url, "zns": pl.zns_url},
              "runs": runs}
    if pl.source is not None:
        report["data"] = data_report(runs)
    report.update(chain(runs))
    if twin is not None:
        report["model_twin"] = _twin_runs(twin, spec, basis, charged, runs, progress)
    report["_extras"] = extras
    return report


def data_report(runs: list[dict]) -> dict:
    """The data file's block of the report: what the DRAM-only run's stream read, and whether every
    run's stream counted the same (``every_run_read_alike``; equal losses, ``ratios.losses_match``,
    show that the batches were the same)."""
    streams = [r["data"] for r in runs if "data" in r]
    keys = ("samples", "passes", "bad_lines_skipped", "samples_per_pass")
    same = all(all(s.get(k) == streams[0].get(k) for k in keys) for s in streams)
    return {**streams[0], "every_run_read_alike": same}


def _twin_runs(twin, spec: BenchSpec, basis, charged: np.ndarray, runs: list[dict], progress=None) -> dict:
    """The runs on real devices trained again on their model twins, after every real run has ended
    (nothing of theirs can move the real runs' results), in worker processes as an emulated bench's
    runs are (``--jobs``, default one per CPU). Each real run's record gets a ``model_twin`` summary;
    the returned block holds the twins' whole records, their chain and ratios, and the confounds."""
    import os

    jobs = max(1, int(spec.jobs)) if spec.jobs is not None else max(1, len(os.sched_getaffinity(0)))
    tell = (lambda n, d, t: progress(f"{n} (twin)", d, t)) if progress else None
    done = run_parallel(_run, list(twin.runs), (twin.plan, twin.spec, basis, charged), jobs, tell)
    trecs = [done[n][0] for n in twin.runs]
    by = {r["name"]: r for r in runs}
    for t in trecs:
        by[t["name"]]["model_twin"] = summary(by[t["name"]], t)
    tchain = chain([runs[0], *trecs])          # against the same DRAM-only reference
    return {"preset": twin.preset, "clock": "modeled", "devices": twin.devices, "runs": trecs,
            "chain": tchain["chain"], "ratios": tchain["ratios"],
            **({"summary": tchain["summary"]} if "summary" in tchain else {}), "confounds": list(CONFOUNDS)}
