"""``zswap-host bench``: the same DLRM training (same seed, same batches) in DRAM only, on Linux swap
over a conventional SSD, on the host-managed store over the same conventional SSD through a zoned
view (aggregation without ZNS: the ablation), and on the store over a ZNS device with host-scheduled
GC (the trainer hands GC its idle windows). Training time = measured compute wall time + I/O stall
(modeled device time on emulated devices, wall time on real ones).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .errors import SwapFullError, ZswapError
from .units import format_size
from .verify import VerifyingBackend

PAGE = 4096
ZONE = 16 << 20          # zone size of the default emulated ZNS device (halved for small runs)
MIN_ZONES = 64
HEADROOM = 1.3           # swap space beyond the pages a run can swap out


class BenchError(ZswapError):
    """A bench run that cannot start as asked (bad budget, wrong or too small device)."""


@dataclass
class BenchSpec:
    """What to run. None fields come from the training preset."""

    preset: str = "default"
    device: str | None = None           # ZNS device URL or path (default: emulated, same flash as the baseline)
    baseline_device: str | None = None  # conventional device (default: emulated thesis-ssd)
    placement: str = "temporal"
    victim: str = "greedy"
    budget: float | str | None = None
    iterations: int | None = None
    batch_size: int | None = None
    seed: int = 0
    ablation: bool = True
    trace_out: str | None = None
    discard_dirty: bool = True          # a dirtied page's swap copy is dropped (Linux frees the slot on a write fault)
    verify: bool = False                # fingerprint every swapped-out page, check it at swap-in (verify.py)


@dataclass
class Plan:
    preset: object
    model: object
    data: object
    iterations: int
    batch_size: int
    budget: float | str | int
    budget_bytes: int
    table_bytes: int
    table_pages: int
    baseline_url: str
    zns_url: str
    zone_size: int                      # of the zoned view in the ablation run


def plan(spec: BenchSpec) -> Plan:
    """Resolve the preset, check the budget, size the default devices. Raises BenchError."""
    from .ssdsim import ConvSSD, get_preset
    from .workloads.train import footprint
    from .workloads.train import preset as train_preset

    try:
        p = train_preset(spec.preset)
    except ValueError as e:
        raise BenchError(str(e)) from None
    mc, dc = p.model_config(), p.data_config()
    budget = p.budget if spec.budget is None else spec.budget
    batch_size = spec.batch_size or p.batch_size
    try:
        fp = footprint(mc, dc, budget, batch_size, spec.seed)
    except ValueError as e:
        raise BenchError(f"bad DRAM budget {budget!r}: {e}") from None
    pages, budget_bytes = fp["total_pages"], fp["budget_bytes"]
    if budget_bytes >= pages * PAGE:
        raise BenchError(f"the DRAM budget ({format_size(budget_bytes)}) holds all {format_size(pages * PAGE)} of "
                         f"embedding tables: nothing would swap; give a budget below 100%")
    if not fp["fits"]:
        raise BenchError(f"the DRAM budget ({format_size(budget_bytes)}, {fp['budget_pages']} pages) is smaller "
                         f"than one batch's embedding pages ({fp['batch_pages_max']}): raise --budget or lower "
                         f"--batch-size")
    conv = math.ceil(pages * PAGE * HEADROOM / (1 << 20) + 8) << 20
    raw = ConvSSD(get_preset("thesis-ssd"), conv).raw_bytes
    zone = ZONE
    while raw // zone < MIN_ZONES and zone > 1 << 20:     # small runs: smaller zones, enough of them
        zone //= 2
    zones = round(raw / zone)                              # the same flash, all of it exposed
    return Plan(p, mc, dc, spec.iterations or p.iterations, batch_size, budget,
                budget_bytes, pages * PAGE, pages,
                spec.baseline_device or f"emu-conv://?size={conv}&preset=thesis-ssd",
                spec.device or f"emu://?zones={zones}&zone_size={zone}&preset=thesis-ssd", zone)


def _too_small(what: str, url: str, holds: int, need: int) -> BenchError:
    return BenchError(f"{url} is too small for this run: its {what} holds {holds} pages "
                      f"({format_size(holds * PAGE)}), the run can swap out {need} pages ({format_size(need * PAGE)})")


def open_backends(pl: Plan, spec: BenchSpec) -> dict[str, Callable[[], tuple]]:
    """One factory per swap run, returning (backend, device). Devices are opened and checked
    here, before any training, so bad input fails fast."""
    from .baseline import ConventionalSwap
    from .devices import ZonedBlockView, open_device
    from .store import StoreConfig, SwapStore

    cfg = StoreConfig(placement=spec.placement, victim=spec.victim)

    def conventional():
        dev = open_device(pl.baseline_url, zoned=False)
        b = ConventionalSwap(dev)
        if b.capacity_pages < pl.table_pages:
            raise _too_small("swap area", pl.baseline_url, b.capacity_pages, pl.table_pages)
        return b, dev

    def store_on_conventional():
        dev = ZonedBlockView(open_device(pl.baseline_url, zoned=False), pl.zone_size)
        b = SwapStore(dev, cfg)
        if b.capacity_pages < pl.table_pages:
            raise _too_small("zoned view", pl.baseline_url, b.capacity_pages, pl.table_pages)
        return b, dev

    def zns():
        dev = open_device(pl.zns_url, zoned=True)
        try:
            b = SwapStore(dev, cfg)
        except SwapFullError as e:
            raise BenchError(f"{pl.zns_url}: {e}") from None
        if b.capacity_pages < pl.table_pages:
            raise _too_small("swap store", pl.zns_url, b.capacity_pages, pl.table_pages)
        return b, dev

    runs = {"conventional": conventional}
    if spec.ablation:
        runs["store-on-conventional"] = store_on_conventional
    runs["zns-host-gc"] = zns
    for make in runs.values():          # fail before training if a device is wrong or too small
        b, dev = make()
        b.close()
        dev.close()
    return runs


def _share_under(hist: dict, limit: int = 32 << 10) -> float:
    n = sum(hist.values())
    return sum(v for k, v in hist.items() if int(k) < limit) / n if n else 0.0


def run_bench(spec: BenchSpec, progress: Callable[[str, int, int], None] | None = None) -> dict:
    """Run every training and return the report (``runs`` and ``ratios``)."""
    from .workloads.trace import TraceBuilder
    from .workloads.train import train

    pl = plan(spec)
    factories = open_backends(pl, spec)
    runs: list[dict] = []
    extras: dict[str, dict] = {}

    def one(name: str, make=None) -> None:
        backend = dev = None
        if make is not None:
            backend, dev = make()
            if spec.verify:
                backend = VerifyingBackend(backend)
        clock = dev.now if dev is not None and getattr(dev.stats(), "clock", "wall") == "modeled" else None
        written: list[tuple[int, int]] = []

        def on_idle(seconds: float) -> None:
            if backend is None:
                return
            if hasattr(backend, "idle"):
                backend.idle(seconds)
            elif hasattr(dev, "advance"):
                dev.advance(seconds)
            s = dev.stats()
            written.append((s.device_write_bytes, s.media_write_bytes))

        trace = TraceBuilder() if spec.trace_out and name == "zns-host-gc" else None
        res = train(pl.model, pl.data, backend, pl.budget, pl.iterations, pl.batch_size, spec.seed,
                    on_idle=on_idle, clock=clock, trace=trace, discard_dirty=spec.discard_dirty,
                    progress=(lambda d, t: progress(name, d, t)) if progress else None)
        if trace is not None:
            trace.build().save(spec.trace_out)
        rec = {"name": name, "clock": "modeled" if clock is not None else "wall",
               "train_time_s": res.train_time_s, "compute_time_s": res.compute_time_s,
               "io_stall_time_s": res.io_stall_time_s, "iterations": res.iterations,
               "per_iteration_s": res.iteration_s.tolist(), "io_stall_per_iteration_s": res.io_stall_s.tolist(),
               "pages_in_per_iteration": res.pages_in.tolist(), "pages_out_per_iteration": res.pages_out.tolist(),
               "loss": res.loss.tolist(), "paging": res.paging, "wall_s": res.wall_s}
        if written:
            w = np.array(written)
            rec["device_write_bytes_cumulative"] = w[:, 0].tolist()
            rec["media_write_bytes_cumulative"] = w[:, 1].tolist()
        if backend is not None:
            backend.flush()                 # the end of training: what is buffered reaches the device
            s = backend.stats().as_dict()
            s["swap_in_bytes"], s["swap_out_bytes"] = s["host_read_bytes"], s["host_write_bytes"]
            s["write_requests_under_32k_share"] = _share_under(s["write_size_histogram"])
            s["read_requests_under_32k_share"] = _share_under(s["read_size_histogram"])
            s["requests_under_32k_share"] = _share_under(_merge(s["write_size_histogram"],
                                                                s["read_size_histogram"]))
            s["gc_time_s"] = s.get("gc_time_s", 0.0)
            s["device"] = dev.describe().get("url")
            rec.update({k: v for k, v in s.items() if k not in rec})
            if spec.verify:
                rec["verify"] = backend.verify_stats()
            extras[name] = {"latencies": backend.swap_in_latencies()}
            backend.close()
            dev.close()
        runs.append(rec)

    one("dram-only")
    for name, make in factories.items():
        one(name, make)
    report = {"preset": pl.preset.name, "model": pl.model.name, "iterations": pl.iterations,
              "batch_size": pl.batch_size, "seed": spec.seed, "table_bytes": pl.table_bytes,
              "budget_bytes": pl.budget_bytes, "placement": spec.placement, "victim": spec.victim,
              "discard_dirty": spec.discard_dirty, "verify": spec.verify,
              "devices": {"baseline": pl.baseline_url, "zns": pl.zns_url},
              "runs": runs, "ratios": ratios(runs)}
    report["_extras"] = extras
    return report


def _merge(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out


def ratios(runs: list[dict]) -> dict:
    t = {r["name"]: r["train_time_s"] for r in runs}
    by = {r["name"]: r for r in runs}
    out: dict = {}
    dram_compute = by["dram-only"]["compute_time_s"]
    for name in t:
        if name != "dram-only":
            out[f"slowdown_{name}"] = t[name] / t["dram-only"]
            # the same with DRAM-only's compute time: I/O alone, free of compute-time noise between runs
            out[f"slowdown_{name}_io_only"] = (dram_compute + by[name]["io_stall_time_s"]) / dram_compute
    if "conventional" in t and "zns-host-gc" in t:
        out["speedup_zns_host_gc_vs_conventional"] = t["conventional"] / t["zns-host-gc"]
        out["io_stall_ratio_conventional_vs_zns"] = (by["conventional"]["io_stall_time_s"] /
                                                    max(by["zns-host-gc"]["io_stall_time_s"], 1e-12))
        out["write_amplification_conventional"] = by["conventional"]["write_amplification"]
        out["write_amplification_zns_host_gc"] = by["zns-host-gc"]["write_amplification"]
    if "store-on-conventional" in t:
        out["aggregation_gain"] = t["conventional"] / t["store-on-conventional"]
        out["zns_gain"] = t["store-on-conventional"] / t["zns-host-gc"]
    base = np.array(by["dram-only"]["loss"])
    diffs = [float(np.max(np.abs(np.array(r["loss"]) - base))) for r in runs]
    out["max_loss_difference"] = max(diffs)
    out["losses_match"] = bool(max(diffs) <= 1e-5 * max(1.0, float(np.abs(base).max())))
    return out


def format_table(report: dict) -> str:
    """The terminal table."""
    runs = report["runs"]
    head = (f"{'run':22} {'clock':8} {'train s':>9} {'slowdown':>8} {'stall s':>9} {'in MiB':>8} {'out MiB':>8} "
            f"{'<32K w/r':>9} {'WAF':>5} {'GC MiB':>8} {'p50 us':>8} {'p99 us':>8}")
    lines = [f"DLRM bench: preset {report['preset']}, {report['iterations']} iterations of {report['batch_size']}, "
             f"tables {format_size(report['table_bytes'])}, DRAM budget {format_size(report['budget_bytes'])}, "
             f"store {report['placement']}/{report['victim']}", "", head, "-" * len(head)]
    t0 = runs[0]["train_time_s"]
    for r in runs:
        if r["name"] == "dram-only":
            lines.append(f"{r['name']:22} {r['clock']:8} {r['train_time_s']:9.2f} {1.0:8.2f}x")
            continue
        gc = (r.get("gc_write_bytes", 0) + r.get("device_gc_write_bytes", 0)) / 2**20
        lines.append(
            f"{r['name']:22} {r['clock']:8} {r['train_time_s']:9.2f} {r['train_time_s'] / t0:7.2f}x "
            f"{r['io_stall_time_s']:9.2f} {r['swap_in_bytes'] / 2**20:8.1f} {r['swap_out_bytes'] / 2**20:8.1f} "
            f"{r['write_requests_under_32k_share']:4.0%}/{r['read_requests_under_32k_share']:4.0%} "
            f"{r['write_amplification']:5.2f} {gc:8.1f} "
            f"{r['swap_in_latency_p50_s'] * 1e6:8.0f} {r['swap_in_latency_p99_s'] * 1e6:8.0f}")
    q = report["ratios"]
    lines.append("")
    if "speedup_zns_host_gc_vs_conventional" in q:
        lines.append(f"zns-host-gc trains {q['speedup_zns_host_gc_vs_conventional']:.2f}x faster than conventional swap "
                     f"(slowdown vs DRAM: conventional {q['slowdown_conventional']:.2f}x, zns-host-gc "
                     f"{q['slowdown_zns-host-gc']:.2f}x)")
        lines.append(f"with DRAM-only's compute time in every run (I/O alone): conventional "
                     f"{q['slowdown_conventional_io_only']:.2f}x, zns-host-gc {q['slowdown_zns-host-gc_io_only']:.2f}x")
    if "aggregation_gain" in q:
        lines.append(f"attribution: aggregation (store on the conventional SSD) {q['aggregation_gain']:.2f}x, "
                     f"ZNS on top {q['zns_gain']:.2f}x")
    lines.append(f"losses {'match' if q['losses_match'] else 'DIFFER'} across runs "
                 f"(max difference {q['max_loss_difference']:.2e})")
    checked = [f"{r['name']} {r['verify']['pages_checked']}" for r in report["runs"] if "verify" in r]
    if checked:
        lines.append("pages verified bit-exact at swap-in: " + ", ".join(checked))
    lines.append("train time = compute (wall) + I/O stall (the run's clock); <32K w/r: share of device writes / "
                 "reads under 32 KiB; p50/p99: per-page swap-in latency")
    return "\n".join(lines)
