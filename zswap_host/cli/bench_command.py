"""``zswap-host bench``: DLRM trained in DRAM only and over the swap runs, side by side (sharded with
``--ranks``)."""

from __future__ import annotations

import json
import sys

import click

from ..bench.plan import SWAP_RUNS as SWAP_RUN_NAMES
from ..run_names import current_names
from ..plugins import plugin_option
from ..store.placement import placements
from .errors import fail, friendly_errors
from .group import main
from .options import (FORCE_HELP, check_finite, check_outputs, io_engine_option, note_renamed_runs, open_url,
                      parse_gc_step, quiet_option, store_gc_options)


@main.command()
@click.option("--device", metavar="URL|PATH", help="ZNS device for the host-managed store, or an FDP or "
              "Open-Channel one (fdp://…, ocssd://…: seen as zones) [default: emulated, built from the same "
              "thesis-ssd flash as the baseline]. An emulated device's PATH that exists must be one zswap-host "
              "created (PATH.json beside it), hold no data, or come with --force.")
@click.option("--baseline-device", metavar="URL|PATH", help="Conventional device for the Linux-swap runs and "
              "the store-on-conventional run [default: emulated thesis-ssd sized for the run]. A regular "
              "file that holds data is used only if zswap-host created it (PATH.json beside it) or with "
              "--force; an empty or all-zero file (truncate -s 64M FILE) is taken and marked.")
@click.option("--model", "preset", default=None, metavar="MODEL",
              help="Training preset (the model and its tables, as --model in sweep and replay): tiny, quick, "
              "default, kaggle, mlperf [default: default; --quick: quick].")
@click.option("--budget", default=None, help="DRAM for the embedding tables: a fraction (0.25), a percentage "
              "(25%) or a size (64MiB) [default: the preset's, 25%].")
@click.option("--placement", default="temporal", show_default=True,
              help=f"Store placement policy: {', '.join(placements())} or a registered name.")
@click.option("--victim", default="greedy", show_default=True,
              help="GC victim policy: greedy, cost-benefit, fifo or a registered name.")
@click.option("--iterations", type=click.IntRange(min=1), help="Training iterations [default: the preset's].")
@click.option("--batch-size", type=click.IntRange(min=1), help="Samples per batch [default: the preset's].")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--runs", "runs_csv", default=None, metavar="RUN,...",
              help=f"Swap runs to train besides dram-only, comma-separated: {', '.join(SWAP_RUN_NAMES)} "
              "[default: all; linux-swap-lookahead only with --lookahead, linux-swap-packed only with --pack-hot-rows]. zns-host-gc, store-on-zns's old name, "
              "still works, with a line on stderr.")
@click.option("--lookahead", type=click.IntRange(min=0, max=64), default=1, show_default=True, metavar="K",
              help="Fault in the next K batches' pages while a step computes (the store runs, and "
              "linux-swap-lookahead: Linux swap announcing them with MADV_WILLNEED); on the modeled clock a "
              "step then costs max(compute, prefetch I/O) plus its own faults.")
@click.option("--pack-hot-rows", is_flag=True, default=False,
              help="Pack the embedding tables' hot rows together by measured access frequency, as a step "
              "of its own: adds linux-swap-packed (linux-swap-lookahead with packing: it is the application's "
              "doing, so Linux gets it too), and the store runs pack; the Linux runs before it do not. Losses "
              "unchanged.")
@click.option("--sizing", type=click.Choice(["same-flash", "same-capacity"]), default="same-flash", show_default=True,
              help="same-flash: both emulated devices built from the same raw flash (ZNS exposes what the "
              "conventional SSD hides as over-provisioning); same-capacity: equal usable bytes.")
@click.option("--utilisation", type=float, default=None, metavar="FRACTION",
              help="Tables as a fraction of the conventional device's usable bytes [default: 1/1.3].")
@click.option("--compute", "compute_kind", type=click.Choice(["pinned", "measured"]), default="pinned",
              show_default=True, help="Compute charged to every run: pinned per-sample cost (deterministic; the "
              "preset's calibration unless --compute-us-per-sample) or the median of interleaved DRAM-only "
              "replicas measured now (moves with machine load).")
@click.option("--compute-us-per-sample", type=click.FloatRange(min=0, min_open=True), default=None, metavar="US",
              help="Pin compute at US microseconds per sample (e.g. a faster accelerator).")
@click.option("--compute-repeats", type=click.IntRange(min=1), default=3, show_default=True,
              help="DRAM-only replicas for --compute measured.")
@click.option("--idle-gc/--no-idle-gc", default=True, show_default=True,
              help="Give each iteration's compute time to both GCs as an idle window (the store's GC and the "
              "conventional SSD's FTL), or to neither.")
@click.option("--suspend", is_flag=True, help="Emulated SSDs (both) suspend programs and erases for reads "
              "(docs/ssd-model.md) [default: off].")
@store_gc_options
@click.option("--quick", is_flag=True, help="The quick preset (about a minute).")
@click.option("--verify", is_flag=True, help="Check every swapped-in page against a fingerprint taken at "
              "swap-out; a page that differs stops the run (for real devices and emulators).")
@click.option("--jobs", type=click.IntRange(min=1), default=None, metavar="N",
              help="Runs trained at once in worker processes [default: one per CPU on in-memory emulated "
              "devices (modeled time: results do not depend on it); always 1 on real or file-backed devices, "
              "whose model twins then train N (default one per CPU) at a time].")
@click.option("--model-twin/--no-model-twin", default=True, show_default=True,
              help="When a device is real or a file (wall clock), train its runs again afterwards on an "
              "emulated device of the same geometry and report the two stalls side by side (the model twin).")
@click.option("--preset", "twin_preset", default="thesis-ssd", show_default=True, metavar="PRESET",
              help="SSD preset (flash, controller and timing, as preset= in device URLs) of the emulated devices: "
              "the default conventional and ZNS SSDs (same flash) and the model twins: thesis-ssd, zn540, "
              "cluster23-nvme-a.")
@click.option("--geometry", type=click.Choice(["scaled", "real"]), default="scaled", show_default=True,
              help="The default emulated SSDs' geometry. scaled: erase blocks and zones scaled down to the tables' "
              "size so GC runs in a short bench; real: the --preset's own erase block, zone size and capacity "
              "(needs tables of the drive's scale: replay --generate mlperf --geometry real).")
@click.option("--data", "data_path", default=None, metavar="PATH",
              help="Train on this Criteo file instead of synthetic data: Kaggle train.txt, Terabyte day_N "
              "(or day_N.gz), or facebookresearch/dlrm's preprocessed .npz; streamed, read again from its "
              "start when the run needs more samples than it holds.")
@click.option("--data-format", type=click.Choice(["auto", "kaggle", "terabyte", "npz"]), default=None,
              help="Format of --data [default: auto: npz for a zip archive, terabyte for day_N[.gz], else kaggle].")
@click.option("--max-ind-range", type=click.IntRange(min=1), default=None, metavar="N",
              help="With --data: cap every embedding table at N rows (dlrm's --max-ind-range).")
@click.option("--cat-mapping", type=click.Choice(["hash", "dict"]), default=None,
              help="With --data: categorical value -> row by value mod rows (hash, dlrm's) or by first-seen "
              "order per table, hashed once a table is full (dict) [default: hash].")
@click.option("--skip-bad-lines", is_flag=True, help="With --data: drop malformed lines and count them in the "
              "report instead of stopping at the first one.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, writable=True), help="Write the report as JSON.")
@click.option("--plot", "plot_dir", type=click.Path(file_okay=False), help="Write PNG figures into this folder.")
@click.option("--trace-out", type=click.Path(dir_okay=False, writable=True),
              help="Record the store-on-zns run's page fault/eviction trace (.npz) for replay without torch.")
@click.option("--force", is_flag=True, help=FORCE_HELP)
@click.option("--yes", is_flag=True, help="Do not ask before the run resets zones of a real ZNS device that hold data.")
@quiet_option
@click.option("--ranks", type=click.IntRange(min=1), default=None, metavar="N",
              help="Sharded training on N ranks (torch.distributed, gloo; or the ranks torchrun started): tables "
              "table-wise over the ranks (the largest row-wise when it exceeds a rank's share), each rank with "
              "its own --budget (of its shards) and its own device (--device: a URL template, {rank} replaced; "
              "default: a fresh emulated ZNS device per rank). Runs dram-only and store-on-zns (--runs: either), "
              "without lookahead (a --lookahead above 0 is refused), next to the 1-rank losses.")
@io_engine_option
@friendly_errors
@plugin_option
def bench(device, baseline_device, preset, budget, placement, victim, iterations, batch_size, seed, runs_csv,
          lookahead, pack_hot_rows, sizing, utilisation, compute_kind, compute_us_per_sample, compute_repeats, idle_gc, suspend, quick, verify,
          jobs, model_twin, twin_preset, geometry, data_path, data_format, max_ind_range, cat_mapping, skip_bad_lines,
          json_path, plot_dir, trace_out, force=False, yes=False, ranks=None, gc_yield_to_reads=False,
          gc_step=None, quiet=False) -> None:
    """Train DLRM in DRAM only and over five swap configurations (six with --pack-hot-rows), side by
    side, each changing one thing from the one before; prints the attribution chain (what batching,
    lookahead, packing, aggregation and ZNS each buy), and last a summary line: store-on-zns against the best Linux run (the fastest
    Linux run that ran) and against linux-swap, each stall ratio beside both runs' seconds.

    \b
    The runs (--runs picks the swap runs; dram-only always runs):
      dram-only              the tables fit in DRAM: the reference losses and compute
      linux-swap             Linux swap on the conventional SSD, page faults one at a time (queue depth 1)
      linux-swap-batched     + each step's pages announced (MADV_WILLNEED): one read queue of depth 32
      linux-swap-lookahead   + the next K batches' pages announced while a step computes (--lookahead K)
      linux-swap-packed      + the tables' hot rows packed together (--pack-hot-rows: the store runs pack too)
      store-on-conventional  the host-managed store (512 KiB appends, its own GC) on the same SSD
      store-on-zns           the same store on a ZNS device: no FTL, zone resets instead of device GC

    Training time = charged compute (the same for every run: deterministic unless --compute measured)
    + I/O stall (modeled device time on emulated devices, wall time on real ones). The runs train the
    same model on the same batches; their losses must match. On a real device (--device /dev/nvme0n2, a
    file) each of its runs is then trained again on an emulated device of the same geometry, and its
    wall-clock stall is reported next to the modeled one (--no-model-twin: not).

    --data PATH trains on a Criteo file instead of the synthetic generator: dense features log(x + 1),
    categorical values mapped into the preset's tables, batches in file order.
    """
    check_outputs(files=(("--json", json_path), ("--trace-out", trace_out)), dirs=(("--plot", plot_dir),))
    check_finite("--compute-us-per-sample", compute_us_per_sample)
    if ranks is not None:
        if lookahead and click.get_current_context().get_parameter_source("lookahead").name != "DEFAULT":
            fail(f"--lookahead {lookahead}: a sharded bench (--ranks) runs without lookahead; leave it out")
        given = [f"--{k.replace('_', '-')}" for k, v in (
            ("baseline_device", baseline_device), ("data", data_path), ("trace_out", trace_out), ("plot", plot_dir),
            ("verify", verify), ("compute_us_per_sample", compute_us_per_sample), ("utilisation", utilisation),
            ("suspend", suspend), ("jobs", jobs), ("no_idle_gc", not idle_gc), ("gc_yield_to_reads", gc_yield_to_reads),
            ("gc_step", gc_step is not None),
            ("compute measured", compute_kind == "measured"), ("pack_hot_rows", pack_hot_rows)) if v]
        if given:
            fail(f"{given[0]} does not apply to a sharded bench (--ranks)")
        return _sharded_bench(ranks, device, preset or ("quick" if quick else "default"), budget, placement, victim,
                              iterations, batch_size, seed, runs_csv, json_path)
    from ..bench import BenchSpec, ComputeBasis, format_table, run_bench
    from ..bench.plan import spec_runs
    from ..progress import Progress

    note_renamed_runs("bench", runs_csv)
    runs = None if runs_csv is None else \
        current_names(runs_csv.split(","))       # checked by the bench's plan
    if data_path is None and (data_format or max_ind_range or cat_mapping or skip_bad_lines):
        fail("--data-format, --max-ind-range, --cat-mapping and --skip-bad-lines apply to --data PATH")
    if compute_us_per_sample is not None and compute_kind == "measured":
        fail("give --compute measured or --compute-us-per-sample, not both")
    basis = None
    if compute_us_per_sample is not None:
        basis = ComputeBasis("pinned", compute_us_per_sample, 1, "--compute-us-per-sample")
    elif compute_kind == "measured":
        basis = ComputeBasis("measured", None, compute_repeats)
    spec = BenchSpec(preset=preset or ("quick" if quick else "default"), device=device,
                     baseline_device=baseline_device, placement=placement, victim=victim,
                     budget=_budget(budget), iterations=iterations, batch_size=batch_size, seed=seed,
                     runs=runs, sizing=sizing, utilisation=utilisation, compute=basis, trace_out=trace_out,
                     verify=verify, idle_gc=idle_gc, suspend=suspend, jobs=jobs, model_twin=model_twin,
                     twin_preset=twin_preset, ssd=twin_preset, geometry=geometry, data=data_path, data_format=data_format or "auto",
                     max_ind_range=max_ind_range, cat_mapping=cat_mapping or "hash",
                     skip_bad_lines=skip_bad_lines, lookahead=lookahead, pack_hot_rows=pack_hot_rows,
                     gc_yield_to_reads=gc_yield_to_reads, gc_step_bytes=parse_gc_step(gc_step))

    def progress(name: str, done: int, total: int) -> None:   # a bar per run (runs may train at once)
        bars.update(name, done, total)
        if done == total:
            bars.finish(name, f"{total} iterations")

    from ..devices.safety import forced

    if device and not yes:
        _confirm_zones_with_data(device, force)
    with Progress("bench", 1 + len(spec_runs(spec)), "runs", work="it", quiet=quiet) as bars, forced(force):
        report = run_bench(spec, progress)      # (the model twins' runs, if any, join the count)
    click.echo(format_table(report))
    if plot_dir:
        from ..report import plot_bench

        for path in plot_bench(report, plot_dir):
            click.echo(f"wrote {path}")
    report.pop("_extras", None)
    if json_path:
        with open(json_path, "w") as f:
            json.dump(report, f, indent=1)
        click.echo(f"wrote {json_path}")


def _sharded_bench(ranks, device, preset, budget, placement, victim, iterations, batch_size, seed, runs_csv,
                   json_path) -> None:
    """``bench --ranks N``: the sharded runs (``distributed.bench``); under torchrun rank 0 reports."""
    import os

    from ..distributed import DistSpec
    from ..distributed.bench import SHARDED_RUNS, format_sharded, run_sharded_bench

    note_renamed_runs("bench", runs_csv)
    runs = SHARDED_RUNS if runs_csv is None else current_names(runs_csv.split(","))
    spec = DistSpec(ranks=ranks, preset=preset, iterations=iterations, batch_size=batch_size, seed=seed,
                    budget=_budget(budget), device=device, placement=placement, victim=victim)
    report = run_sharded_bench(spec, runs)
    if int(os.environ.get("RANK", "0")) != 0:
        return
    click.echo(format_sharded(report))
    if json_path:
        with open(json_path, "w") as f:
            json.dump(report, f, indent=1)
        click.echo(f"wrote {json_path}")


def _confirm_zones_with_data(device: str, force: bool) -> None:
    """The store resets every zone of its device: ask first when a real device's zones hold data."""
    import os
    import stat

    try:
        if not stat.S_ISBLK(os.stat(device).st_mode):
            return
    except OSError:
        return
    dev = open_url(device, zoned=True, force=force)
    try:
        holding = sum(z.wp > z.start for z in dev.report_zones())
    finally:
        dev.close()
    if holding:
        if not sys.stdin.isatty():
            fail(f"{holding} zone(s) of {device} hold data and the run resets them; give --yes to go ahead")
        click.confirm(f"{holding} zone(s) of {device} hold data; the run resets them. Continue?", abort=True)


def _budget(text: str | None):
    """'0.25' -> 0.25; '25%' and '64MiB' stay strings (parsed against the table size later)."""
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        return text
