"""The ``zswap-host`` command."""

from __future__ import annotations

import contextlib
import functools
import json
import sys

import click

from .bench.plan import SWAP_RUNS as SWAP_RUN_NAMES
from .errors import ZswapError
from .renamed_options import RenamedOptions
from .run_names import current_names, renamed_notes
from .plugins import command_args as plugin_args, plugin_option
from .store.placement import placements
from .units import format_size

DEFAULT_CHARACTERIZE_DEVICE = "emu-conv://?size=4GiB&preset=thesis-ssd"
QUICK_CHARACTERIZE_DEVICE = "emu-conv://?size=1GiB&preset=thesis-ssd"


def _fail(message: str) -> None:
    click.echo(f"zswap-host: error: {message}", err=True)
    sys.exit(2)


def _check_outputs(files=(), dirs=()) -> None:
    """Every output path (``(option, path)``; None: not given) checked before any work: a bad one is
    one line and exit 2 then, not after the runs it would have held."""
    from .output_paths import check_output_dir, check_output_file

    try:
        for option, path in files:
            if path:
                check_output_file(path, option)
        for option, path in dirs:
            if path:
                check_output_dir(path, option)
    except ValueError as e:
        _fail(str(e))


def _check_finite(option: str, value) -> None:
    import math

    if value is not None and not math.isfinite(value):
        _fail(f"{option} must be a finite number, not {value}")


def _note_renamed_runs(command: str, runs_csv: str | None) -> None:
    """One stderr line per old run name in ``--runs`` (it still works, under its name now)."""
    for line in renamed_notes(command, (runs_csv or "").split(",")):
        click.echo(line, err=True)


def _quiet_broken_pipe() -> None:
    """The reader of our stdout went away (``zswap-host info … | head``): stop without a word, as
    other Unix tools do; stdout goes to /dev/null so the interpreter's last flush cannot complain."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    sys.exit(141)                       # 128 + SIGPIPE, what a shell reports for a tool killed by it


def friendly_errors(fn):
    """Bad input ends in one line on stderr and exit code 2, never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except BrokenPipeError:
            _quiet_broken_pipe()
        except (ZswapError, ValueError) as e:
            _fail(str(e))
        except OSError as e:
            _fail(f"{e.filename or ''}: {e.strerror or e}".lstrip(": "))
        except (MemoryError, OverflowError) as e:   # sizes no check caught: still one line, exit 2
            _fail(f"out of memory or range: {e or type(e).__name__}")

    return wrapper


_FORCE_HELP = ("Use a real block device even if it is mounted, in use, or holds a partition table, "
               "file system or swap signature, or a regular file that holds data zswap-host did not create "
               "(no PATH.json beside it): its data will be destroyed.")


_IO_ENGINE_HELP = ("How a real block device's I/O reaches the kernel: uring (io_uring, whole batches at queue "
                   "depth, NVMe zone appends through /dev/ngXnY; the default, sync when io_uring cannot run "
                   "here) or sync (one blocking call at a time). Emulated devices have no engine.")


def io_engine_option(fn):
    """``--io-engine {uring,sync}``: the engine real devices opened by the command get."""
    @functools.wraps(fn)
    def wrapper(*args, io_engine=None, **kwargs):
        from .devices.io_engine import engine_default

        with engine_default(io_engine):
            return fn(*args, **kwargs)

    return click.option("--io-engine", type=click.Choice(["uring", "sync"]), default=None,
                        help=_IO_ENGINE_HELP)(wrapper)


def quiet_option(fn):
    """``--quiet``: no progress on stderr (bars on a terminal, else a line per finished unit)."""
    return click.option("--quiet", "-q", is_flag=True, help="No progress bars (on a terminal) or progress "
                        "lines (elsewhere) on stderr; errors still show.")(fn)


def store_gc_options(fn):
    """``--gc-yield-to-reads`` and ``--gc-step SIZE``: the store runs' GC levers (bench and replay)."""
    fn = click.option("--gc-step", "gc_step", default=None, metavar="SIZE",
                      help="The store runs' background GC relocates SIZE per step, its victim pages read as one "
                      "queue (0: a whole victim, as foreground GC does; StoreConfig.gc_step_bytes) "
                      "[default: one write unit].")(fn)
    return click.option("--gc-yield-to-reads", is_flag=True, help="The store runs' GC never runs after a "
                        "swap-out, in front of the step's reads: only in the compute (idle) windows, or in the "
                        "foreground when a swap-out finds no zone (StoreConfig.gc_yield_to_reads) "
                        "[default: off].")(fn)


def _open(url: str, zoned: bool | None = None, force: bool | None = None, readonly: bool = False):
    from .devices import open_device

    return open_device(url, zoned=zoned, force=force, readonly=readonly)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="zswap-host")
def main() -> None:
    """Host-managed swap on ZNS SSDs, measured against conventional SSD swap.

    DEVICE arguments are paths or URLs (`zswap-host schemes` lists each scheme's parameters; docs/devices.md); an empty PATH keeps the device in memory, a file PATH keeps it between runs:

    \b
      emu://PATH?zones=N&zone_size=16MiB&zone_capacity=…&max_open=…&max_active=…&preset=…
                        emulated ZNS SSD
      emu-conv://PATH?size=8GiB&op=0.15&preset=…
                        emulated conventional SSD (page-mapped FTL; op: hidden over-provisioning,
                        default the preset's, 15% on thesis-ssd)
      fdp://PATH?size=8GiB&op=0.15&ruhs=8&isolation=persistent&preset=…
                        emulated NVMe FDP SSD (ruhs: reclaim unit handles)
      ocssd://PATH?groups=8&pus=2&chunks=8&sectors=1536&ws_min=12&preset=…
                        emulated Open-Channel SSD 2.0
      /path/to/file     a regular file as a conventional block device
      /dev/nvme0n2 …    a Linux block device (zoned or not)

    Presets (the SSD timing model): thesis-ssd (default), zn540, none (timing model off).
    Words the output uses (WAF, payload-free, model twin, charged compute, same-flash, zoned view, idle
    window, ruhs, ws_min, ...): docs/glossary.md.
    """


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@friendly_errors
def schemes(as_json: bool) -> None:
    """The device kinds DEVICE arguments can name: each registered URL scheme (or bare-path kind), its
    query parameters, and whether it can be used here (else how to make it so)."""
    from .devices.url import scheme_class, schemes as registered

    rows = []
    for s in registered():
        params = dict(scheme_class(s["name"]).params) if s["available"] else {}
        rows.append({**s, "params": params})
    if as_json:
        click.echo(json.dumps(rows, indent=1))
        return
    for r in rows:
        state = "" if r["available"] else f"  [unavailable: {r['install_hint'] or 'its import fails'}]"
        click.echo(f"{r['form']:12} {r['summary']}{state}")
        if r["params"]:
            click.echo(f"{'':12} ?{'&'.join(f'{k}=<{v}>' for k, v in r['params'].items())}")


@main.command()
@click.argument("device")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@io_engine_option
@friendly_errors
def info(device: str, as_json: bool) -> None:
    """Show DEVICE's geometry, limits and SSD model. Read-only: works on a mounted device too."""
    dev = _open(device, readonly=True)
    try:
        d = dev.describe()
        if d.get("preset"):
            import dataclasses

            from .ssdsim import get_preset

            d["model"] = dataclasses.asdict(get_preset(d["preset"]))   # the controller's fields too
        if as_json:
            click.echo(json.dumps(d, indent=2))
            return
        click.echo(f"device     {d['url']}  ({d['kind']})")
        if d.get("open_channel"):
            _echo_ocssd(d)
        elif d["zoned"]:
            g = d["geometry"]
            click.echo(f"zones      {g['nr_zones']} x {format_size(g['zone_size'])} "
                       f"(capacity {format_size(g['zone_capacity'])} each, {format_size(g['nr_zones'] * g['zone_capacity'])} writable)")
            click.echo(f"block      {g['block_size']} B")
            click.echo(f"limits     max_open {g['max_open'] or 'none'}, max_active {g['max_active'] or 'none'}, "
                       f"zone append {format_size(g['max_append']) if g['max_append'] else 'none'}")
            click.echo(f"state      {d['open_zones']} open, {d['active_zones']} active")
        else:
            click.echo(f"size       {format_size(d['size'])} ({d['size']} B), block {d['block_size']} B")
            if d.get("op") is not None:
                click.echo(f"over-prov  {d['op']:.1%} of raw flash hidden")
            if d.get("ruhs"):
                ru = f", reclaim unit {format_size(d['ru_bytes'])}" if d.get("ru_bytes") else ""
                click.echo(f"placement  FDP, {d['ruhs']} reclaim unit handles, {d['isolation']} isolation{ru}")
        click.echo(f"clock      {d['clock']}")
        if d.get("io_engine"):
            e = d["io_engine"]
            append = f", zone append {d['zone_append']}" if d.get("zone_append") else ""
            click.echo(f"io engine  {e['engine']}, depth {e['depth']}{append}")
        if isinstance(d.get("model"), str):         # a real device: the drive's model name from sysfs
            click.echo(f"model      {d['model']}")
        elif "model" in d:
            m = d["model"]
            click.echo(f"model      {m['name']}: {m['channels']} ch x {m['dies_per_channel']} dies, "
                       f"{format_size(m['page_size'])} pages, {m['pages_per_block']} pages/block, "
                       f"tR {m['t_read_us']} us, tPROG {m['t_prog_us']} us, tBERS {m['t_erase_us']} us, "
                       f"{m['channel_mb_s']} MB/s/ch, link {m['host_link_mb_s']} MB/s")
            click.echo(f"source     {m['source']}")
    finally:
        dev.close()


def _echo_ocssd(d: dict) -> None:
    """``info``'s lines for an Open-Channel SSD: geometry, write rules, chunk states."""
    g, n = d["geometry"], d["chunk_states"]
    click.echo(f"geometry   {g['groups']} groups x {g['pus']} PUs x {g['chunks']} chunks x {g['sectors']} sectors "
               f"of {g['sector_size']} B ({format_size(g['sectors'] * g['sector_size'])} chunks, "
               f"{format_size(d['size'])})")
    click.echo(f"writes     ws_min {g['ws_min']}, ws_opt {g['ws_opt']} sectors; a sector reads back once "
               f"{g['mw_cunits']} more are written (mw_cunits) or its chunk is closed")
    click.echo(f"chunks     {n['FREE']} free, {n['OPEN']} open, {n['CLOSED']} closed, {n['OFFLINE']} offline")


@main.command()
@click.argument("device")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (a list of zones) instead of text.")
@io_engine_option
@friendly_errors
def zones(device: str, as_json: bool) -> None:
    """List DEVICE's zones: index, start, length, capacity, write pointer, condition.

    Positions are bytes here (blkzone report prints 512-byte sectors); conditions use blkzone's
    two-letter names (em, oi, oe, cl, fu, ro, of). Read-only: works on a device in use too.
    """
    dev = _open(device, zoned=True, readonly=True)
    try:
        report = dev.report_zones()
    finally:
        dev.close()
    if as_json:
        click.echo(json.dumps([z.as_dict() for z in report], indent=1))
        return
    click.echo(f"{'zone':>6} {'start':>14} {'len':>12} {'cap':>12} {'wp':>14} cond")
    for z in report:
        click.echo(f"{z.index:>6} {z.start:>14} {z.len:>12} {z.capacity:>12} {z.wp:>14} {z.cond.short}")


@main.command()
@click.argument("device")
@click.option("--zone", "zone", type=int, help="Reset this zone (index).")
@click.option("--all", "all_zones", is_flag=True, help="Reset every zone.")
@click.option("--yes", is_flag=True, help="Do not ask before resetting zones that hold data.")
@click.option("--force", is_flag=True, help=_FORCE_HELP)
@io_engine_option
@friendly_errors
def reset(device: str, zone: int | None, all_zones: bool, yes: bool, force: bool) -> None:
    """Reset zones of DEVICE (their data is gone)."""
    if (zone is None) == (not all_zones):
        _fail("give exactly one of --zone N or --all")
    dev = _open(device, zoned=True, force=force)
    try:
        report = dev.report_zones()
        targets = [z.index for z in report] if all_zones else [zone]
        if zone is not None and not 0 <= zone < len(report):
            _fail(f"zone {zone} does not exist ({device} has {len(report)} zones)")
        holding = [i for i in targets if report[i].wp > report[i].start]
        if holding and not yes:
            click.confirm(f"{len(holding)} zone(s) of {device} hold data; reset them?", abort=True)
        for i in targets:
            dev.reset_zone(i)
        click.echo(f"reset {len(targets)} zone(s)")
    finally:
        dev.close()


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON (a list of namespaces, [] if none) instead of text.")
@friendly_errors
def devices(as_json: bool) -> None:
    """List NVMe controllers and their namespaces: model, serial, size, and whether each namespace is
    zoned, with its zone geometry (zone count, size and capacity, open/active limits, zone append
    limit). Sizes are bytes in JSON; an open or active limit of 0 means none.

    Discovery uses libnvme's Python bindings, the nvme extra, which pip builds from source with swig:

    \b
        apt install swig
        pip install 'zswap-host[nvme]'
    """
    from .devices.nvme_discovery import discover

    found = discover()
    if as_json:
        click.echo(json.dumps([r.as_dict() for r in found], indent=1))
    elif not found:
        click.echo("No NVMe devices found.")
    else:
        click.echo(format_devices(found))


_DEVICE_COLUMNS = ("namespace", "nsid", "size", "block", "zoned", "zones", "zone size", "capacity", "max open",
                   "max active", "append")


def format_devices(found: list) -> str:
    """The ``devices`` table for ``NvmeNamespace`` records: a line per controller, then a row per namespace."""
    import itertools

    def limit(n: int | None) -> str:
        return "?" if n is None else "none" if n == 0 else str(n)

    out = []
    for _, group in itertools.groupby(found, key=lambda r: r.controller):
        group = list(group)
        c = group[0]
        out.append(f"{c.controller}: {c.model or '?'}, serial {c.serial or '?'}, firmware {c.firmware or '?'}, "
                   f"{c.transport or '?'}")
        rows = [list(_DEVICE_COLUMNS)]
        for r in group:
            row = [r.name, str(r.nsid), format_size(r.size), str(r.block_size), r.zoned_model if r.zoned else "no"]
            if r.zoned:
                row += [str(r.nr_zones), format_size(r.zone_size),
                        format_size(r.zone_capacity) if r.zone_capacity else "?", limit(r.max_open),
                        limit(r.max_active), format_size(r.max_append) if r.max_append else "none"]
            rows.append(row)
        ncols = len(_DEVICE_COLUMNS) if any(r.zoned for r in group) else 5   # zone columns only if used
        width = [max(len(row[i]) for row in rows if i < len(row)) for i in range(ncols)]
        for row in rows:   # names left-aligned, numbers right-aligned
            cells = [v.ljust(w) if i in (0, 4) else v.rjust(w) for i, (v, w) in enumerate(zip(row, width))]
            out.append("  " + "  ".join(cells).rstrip())
    return "\n".join(out)


@main.command()
@click.option("--device", default=None, metavar="URL",
              help=f"Emulated conventional SSD to characterize [default: {DEFAULT_CHARACTERIZE_DEVICE}; "
                   f"with --quick {QUICK_CHARACTERIZE_DEVICE}].")
@click.option("--study", type=click.Choice(["thesis", "zns", "conv"]), default="thesis", show_default=True,
              help="thesis: the thesis's fio study on a conventional SSD; zns: Doekemeijer et al. 2023's ZN540 "
                   "characterisation on the ZNS model, model next to paper per point; conv: the same paper's "
                   "conventional drive (nvme-a) on the conventional model, accuracy on calibrate and held-out points.")
@click.option("--preset", default=None, metavar="PRESET",
              help="SSD preset [default: thesis-ssd for --study thesis (its --device), zn540 for --study zns, "
                   "cluster23-nvme-a for --study conv].")
@click.option("--quick", is_flag=True, help="Smaller device and shorter jobs (under a minute).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, writable=True), help="Write results as JSON here.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False, writable=True),
              help="PNG of bandwidth against written volume (zns: model vs paper) [default: next to --json, else none].")
@click.option("--force", is_flag=True, help="Use --device's PATH even if it is a file that holds data zswap-host "
              "did not create (no PATH.json beside it): its data will be destroyed.")
@quiet_option
@io_engine_option
@friendly_errors
def characterize(device: str | None, study: str, preset: str | None, quick: bool, json_path: str | None,
                 plot_path: str | None, force: bool = False, quiet: bool = False) -> None:
    """Reproduce the thesis's fio study on an emulated SSD, or (--study zns) a published ZNS study.

    Runs fio-equivalent jobs on the SSD timing model and reports the two ratios the thesis measured
    (128 KiB vs small requests: 1.75x; sequential vs random writes in steady state: 4.37x) and the
    write bandwidth as written volume grows. --study zns runs the write/append, read, interference,
    reset and finish experiments of Doekemeijer et al. (2023) on the ZN540 and prints the model's value
    next to the paper's for every point. --study conv runs the same paper's conventional-drive points
    (nvme-a: sequential/random writes, random reads, reads under writes, GC steady state) on the
    conventional model at the drive's size and reports the error on calibrate and held-out points
    separately. All times are modeled device time.
    """
    _check_outputs(files=(("--json", json_path), ("--plot", plot_path)))
    if study == "conv":
        from .characterize_conv import DEFAULT_PRESET, format_table as conv_table, run as run_conv
        from .ssdsim import get_preset

        if device:
            _fail("--device applies to --study thesis; --study conv builds the conventional model from --preset")
        with _study_progress("conv", quiet) as progress:
            result = run_conv(get_preset(preset or DEFAULT_PRESET).name, quick=quick, progress=progress)
        click.echo(conv_table(result))
        if json_path:
            with open(json_path, "w") as f:
                json.dump(result, f, indent=2)
            click.echo(f"wrote {json_path}")
        return
    if study == "zns":
        from .characterize_zns import format_table as zns_table, run as run_zns
        from .ssdsim import get_preset

        if device:
            _fail("--device applies to --study thesis; --study zns builds the ZNS model from --preset")
        preset = get_preset(preset or "zn540").name
        if plot_path is None and json_path:
            plot_path = json_path.rsplit(".", 1)[0] + ".png"
        with _study_progress("zns", quiet) as progress:
            result = run_zns(preset, quick=quick, plot_path=plot_path, progress=progress)
        click.echo(zns_table(result))
        if json_path:
            with open(json_path, "w") as f:
                json.dump(result, f, indent=2)
            click.echo(f"wrote {json_path}")
        return
    if preset and not device:
        from .ssdsim import get_preset

        device = f"emu-conv://?size={'1GiB' if quick else '4GiB'}&preset={get_preset(preset).name}"
    elif preset:
        _fail("give --device or --preset, not both")

    from .characterize import characterize as run, format_table
    from .devices import EmulatedBlockDevice

    url = device or (QUICK_CHARACTERIZE_DEVICE if quick else DEFAULT_CHARACTERIZE_DEVICE)
    dev = _open(url, zoned=False, force=force or None)
    try:
        if not isinstance(dev, EmulatedBlockDevice) or dev.model is None:
            _fail(f"{url}: characterize needs an emulated conventional SSD with a timing model "
                  f"(emu-conv://?size=…&preset=…)")
        if plot_path is None and json_path:
            plot_path = json_path.rsplit(".", 1)[0] + ".png"
        with _study_progress("thesis", quiet) as progress:     # bytes of all the fio jobs, the job's name
            result = run(dev.model, dev.preset, quick=quick, progress=progress, plot_path=plot_path)
    finally:
        dev.close()
    result["device"] = url
    click.echo(format_table(result))
    if json_path:
        with open(json_path, "w") as f:
            json.dump(result, f, indent=2)
        click.echo(f"wrote {json_path}")


@contextlib.contextmanager
def _study_progress(study: str, quiet: bool):
    """A ``progress(done, total, label)`` for a characterize study: one bar over its points or bytes."""
    from .progress import Progress

    name = f"{study} study"
    with Progress("characterize", 1, "study", work="pt" if study != "thesis" else "B", quiet=quiet,
                  overall=False) as bars:
        def progress(done: int, total: int, label: str) -> None:
            bars.update(name, done, total, postfix=label)
            if done == total:
                bars.finish(name)

        yield progress


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
@click.option("--force", is_flag=True, help=_FORCE_HELP)
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
    _check_outputs(files=(("--json", json_path), ("--trace-out", trace_out)), dirs=(("--plot", plot_dir),))
    _check_finite("--compute-us-per-sample", compute_us_per_sample)
    if ranks is not None:
        if lookahead and click.get_current_context().get_parameter_source("lookahead").name != "DEFAULT":
            _fail(f"--lookahead {lookahead}: a sharded bench (--ranks) runs without lookahead; leave it out")
        given = [f"--{k.replace('_', '-')}" for k, v in (
            ("baseline_device", baseline_device), ("data", data_path), ("trace_out", trace_out), ("plot", plot_dir),
            ("verify", verify), ("compute_us_per_sample", compute_us_per_sample), ("utilisation", utilisation),
            ("suspend", suspend), ("jobs", jobs), ("no_idle_gc", not idle_gc), ("gc_yield_to_reads", gc_yield_to_reads),
            ("gc_step", gc_step is not None),
            ("compute measured", compute_kind == "measured"), ("pack_hot_rows", pack_hot_rows)) if v]
        if given:
            _fail(f"{given[0]} does not apply to a sharded bench (--ranks)")
        return _sharded_bench(ranks, device, preset or ("quick" if quick else "default"), budget, placement, victim,
                              iterations, batch_size, seed, runs_csv, json_path)
    from .bench import BenchSpec, ComputeBasis, format_table, run_bench
    from .bench.plan import spec_runs
    from .progress import Progress

    _note_renamed_runs("bench", runs_csv)
    runs = None if runs_csv is None else \
        current_names(runs_csv.split(","))       # checked by the bench's plan
    if data_path is None and (data_format or max_ind_range or cat_mapping or skip_bad_lines):
        _fail("--data-format, --max-ind-range, --cat-mapping and --skip-bad-lines apply to --data PATH")
    if compute_us_per_sample is not None and compute_kind == "measured":
        _fail("give --compute measured or --compute-us-per-sample, not both")
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
                     gc_yield_to_reads=gc_yield_to_reads, gc_step_bytes=_gc_step(gc_step))

    def progress(name: str, done: int, total: int) -> None:   # a bar per run (runs may train at once)
        bars.update(name, done, total)
        if done == total:
            bars.finish(name, f"{total} iterations")

    from .devices.safety import forced

    if device and not yes:
        _confirm_zones_with_data(device, force)
    with Progress("bench", 1 + len(spec_runs(spec)), "runs", work="it", quiet=quiet) as bars, forced(force):
        report = run_bench(spec, progress)      # (the model twins' runs, if any, join the count)
    click.echo(format_table(report))
    if plot_dir:
        from .report import plot_bench

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

    from .distributed import DistSpec
    from .distributed.bench import SHARDED_RUNS, format_sharded, run_sharded_bench

    _note_renamed_runs("bench", runs_csv)
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


def _names(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))


@main.command(cls=RenamedOptions, renamed={"--placements": "--placement", "--victims": "--victim",
                                            "--utilisations": "--utilisation", "--interfaces": "--interface",
                                            "--preset": "--model"})
@click.option("--trace", "trace_path", required=True, metavar="PATH",
              help="The trace to replay: a bench --trace-out .npz or a chunked trace directory (with --generate: "
              "where the generated trace is written).")
@click.option("--placement", "placements", default="temporal,hotness", show_default=True, metavar="NAME,...",
              help=f"Store placements (bench --placement), in the table's order: {', '.join(placements())}.")
@click.option("--victim", "victims", default="greedy,cost-benefit", show_default=True, metavar="NAME,...",
              help="GC victim policies (bench --victim): greedy, cost-benefit, fifo; the table's columns, "
              "each compared with the first.")
@click.option("--utilisation", "utilisations", default="0.75,0.9", show_default=True, metavar="F,...",
              help="Tables / the conventional SSD's usable bytes (0.05..0.99; 0.9 or 90%; bench --utilisation), "
              "the table's rows; every interface's SSD is built from that SSD's raw flash.")
@click.option("--interface", "interfaces", default="conventional,zns", show_default=True, metavar="NAME,...",
              help="SSD interfaces the store runs on: conventional (its zoned view), fdp, zns, ocssd (replay's "
              "store-on-NAME runs).")
@click.option("--executor", type=click.Choice(["ray", "serial"]), default="ray", show_default=True,
              help="ray: each point a Ray task (local Ray unless --address); serial: one after another here. "
              "Both give the same rows.")
@click.option("--address", default=None, metavar="ADDR", help="A running Ray cluster (ray://HOST:10001, auto) "
              "[default: start a local Ray]; its nodes need zswap-host and the trace at the same path.")
@click.option("--num-cpus", type=click.IntRange(min=1), default=None, metavar="N",
              help="Workers of the local Ray [default: this process's CPUs].")
@click.option("--retries", type=click.IntRange(min=0), default=2, show_default=True,
              help="Extra attempts of a point that fails (a task error or a lost worker).")
@click.option("--seed", type=int, default=0, show_default=True,
              help="The trace's seed (--generate draws its batches from it); recorded in every row.")
@click.option("--generate", "gen_preset", default=None, metavar="MODEL",
              help="First generate the page trace of this training preset (bench --model) into --trace "
              "(torch-free, from --seed).")
@click.option("--iterations", type=click.IntRange(min=1), default=None, help="With --generate: iterations "
              "[default: the preset's].")
@click.option("--budget", default=None, help="With --generate: the DRAM budget (25%, 0.25, 64MiB) [default: the "
              "preset's].")
@click.option("--model", "trace_preset", default=None, metavar="MODEL",
              help="The training preset (bench --model) the trace pages, if its meta does not say (traces "
              "recorded before it did).")
@click.option("--out", "out_dir", default="sweep", show_default=True, type=click.Path(file_okay=False),
              help="Directory for sweep.csv, sweep.json and sweep.png.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary (with every row) as JSON instead of text.")
@quiet_option
@friendly_errors
@plugin_option
def sweep(trace_path, placements, victims, utilisations, interfaces, executor, address, num_cpus, retries, seed,
          gen_preset, iterations, budget, trace_preset, out_dir, as_json, quiet=False) -> None:
    """Replay one trace through the store over a grid of placements x victim policies x utilisations x
    interfaces, each point on a fresh emulated SSD (modeled clock), as Ray tasks or serially: stall,
    write amplification, GC MiB, p99 swap-in wait and flash wear per point, into OUT/sweep.csv, .json
    and .png. The rows do not depend on the executor or the order points finish in. Each replay ends
    with a flush of the pages still buffered, so write amplification counts every page written.

    The table printed is a pivot per metric: victim policies as columns (each beside its change
    against the first given), utilisations as rows under each interface and placement, all in the
    order given here; then each point's wall time and pages/s on this machine (not in the CSV, whose
    rows must not depend on the machine). The old option names (--placements, --victims,
    --utilisations, --interfaces, and --preset for --model) still work, with a line on stderr.

    \b
        zswap-host sweep --generate tiny --trace /tmp/tiny-trace --placement temporal,hotness \\
            --victim greedy,fifo --utilisation 0.75,0.95 --interface zns,conventional
    """
    _check_outputs(dirs=(("--out", out_dir),))
    from .progress import Progress
    from .sweep import Generate, SweepSpec, check, run_sweep
    from .sweep.output import write_outputs
    from .sweep.table import format_sweep

    if gen_preset is None and (iterations is not None or budget is not None):
        _fail("--iterations and --budget apply to --generate MODEL")
    from .sweep import parse_utilisations

    spec = SweepSpec(trace=trace_path, placements=_names(placements), victims=_names(victims),
                     utilisations=tuple(parse_utilisations(utilisations)), interfaces=_names(interfaces),
                     seed=seed, executor=executor, retries=retries, address=address, num_cpus=num_cpus,
                     preset=trace_preset, generate=Generate(gen_preset, iterations, budget) if gen_preset else None)
    npoints = len(check(spec))              # bad input fails here, before any bar or file

    def progress(done: int, total: int, point) -> None:
        if point is not None:
            bars.finish(point.key)

    def generating(done: int, total: int) -> None:     # the trace counts as one more unit
        bars.update("trace", done, total)
        if done == total:
            bars.finish("trace", "generated")

    with Progress("sweep", npoints + bool(gen_preset), "points", quiet=quiet) as bars:   # before any point ends
        summary = run_sweep(spec, progress, on_generate=generating)
    rows = summary.pop("rows")
    gen = f" --generate {gen_preset}" + (f" --iterations {iterations}" if iterations else "") + \
        (f" --budget {budget}" if budget else "") if gen_preset else ""
    summary["command"] = (f"zswap-host sweep{gen} --trace {trace_path} --placement {','.join(spec.placements)} "
                          f"--victim {','.join(spec.victims)} --utilisation {','.join(f'{u:g}' for u in spec.utilisations)} "
                          f"--interface {','.join(spec.interfaces)} --seed {seed} --executor {executor} --out {out_dir}"
                          + (f" --model {trace_preset}" if trace_preset else "") + plugin_args())
    paths = write_outputs(rows, summary, out_dir, title=f"store sweep over the {summary['trace']['preset']} trace "
                          f"(seed {seed}; modeled clock)")
    if as_json:
        click.echo(json.dumps({**summary, "rows": rows, "files": paths}, indent=1))
        return
    click.echo(format_sweep(rows, spec.placements, spec.victims, spec.utilisations, spec.interfaces,
                            summary.get("point_timing")))
    click.echo(f"\n{summary['points']} points on {executor} in {summary['wall_s']} s")
    for p in paths:
        click.echo(f"wrote {p}")


@main.command(cls=RenamedOptions, renamed={"--preset": "--model"})
@click.option("--trace", "trace_path", required=True, metavar="PATH",
              help="The trace to replay: a bench --trace-out .npz or a chunked trace directory (with --generate: "
              "where the generated trace is written, or reused if it is there with the same parameters).")
@click.option("--runs", "runs_csv", default=None, metavar="RUN,...",
              help="Runs to replay, in this order [default: linux-swap-batched, store-on-conventional, store-on-fdp, "
              "store-on-zns, store-on-ocssd; also linux-swap].")
@click.option("--utilisation", type=float, default=None, metavar="FRACTION",
              help="Tables / the conventional SSD's usable bytes (0.05..0.99) [default: the bench's, 1/1.3]; every "
              "run's SSD is built from that SSD's raw flash.")
@click.option("--op", type=float, default=None, metavar="FRACTION",
              help="The conventional SSD's over-provisioning (0..0.5) [default: the bench's, 15%].")
@click.option("--erase-block", default=None, metavar="SIZE",
              help="The conventional SSD's erase block (a multiple of its 48 KiB program unit, e.g. 6MiB, the "
              "drive's real block) [default: scaled down so every die keeps 256 blocks].")
@click.option("--model", "trace_preset", default=None, metavar="MODEL",
              help="The training preset (bench --model) whose tables the trace pages, only if its meta does not say.")
@click.option("--budget", default=None, metavar="BUDGET", help="The DRAM budget (25%, 0.25, 64MiB): with --generate, the trace's; "
              "otherwise only for a trace whose meta does not record it.")
@click.option("--generate", "gen_preset", default=None, metavar="MODEL",
              help="First generate the page trace of this training preset (bench --model) into --trace "
              "(torch-free).")
@click.option("--iterations", type=click.IntRange(min=1), default=None, help="With --generate: iterations "
              "[default: the preset's].")
@click.option("--compute-us-per-sample", type=click.FloatRange(min=0), default=None, metavar="US",
              help="The compute per sample, the trace's idle windows: with --generate the trace's [default: the "
              "preset's calibration; mlperf has none]; otherwise charged instead of the trace's (its windows "
              "scaled; no page moves).")
@click.option("--lookahead", type=click.IntRange(0, 64), default=None, help="With --generate: batches each step "
              "prefetches while it computes, as the bench's lookahead runs [default: 0]; linux-swap-batched "
              "replayed on such a trace is the bench's linux-swap-lookahead.")
@click.option("--seed", type=int, default=None, help="With --generate: the batches' seed [default: 0].")
@click.option("--ssd", default="thesis-ssd", show_default=True, metavar="PRESET",
              help="SSD preset (bench --preset) of every run's devices, same flash and controller: thesis-ssd, "
              "zn540, cluster23-nvme-a.")
@click.option("--geometry", type=click.Choice(["scaled", "real"]), default="scaled", show_default=True,
              help="scaled: erase blocks and zones scaled down to the trace's size; real: the --ssd preset's "
              "own erase block, zone size and capacity, and OP unless --op (needs tables of the drive's "
              "scale, e.g. --generate mlperf).")
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Keep OUT/replay.jsonl, a line per finished run: a run already there for this trace and "
              "sizing is not run again.")
@click.option("--restart", is_flag=True, help="With --out: forget the finished runs, run them all again.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, writable=True),
              help="Write the summary (trace, sizing, every run's row) as JSON.")
@click.option("--idle-gc/--no-idle-gc", default=True, show_default=True,
              help="Give the trace's compute windows to both GCs (the store's GC, then the conventional SSD's "
              "background GC), as the bench does; --no-idle-gc: to neither (the device clocks only pass).")
@click.option("--suspend", is_flag=True, help="Every run's emulated SSD suspends programs and erases for reads, "
              "as drives do (the bench's --suspend; docs/ssd-model.md).")
@store_gc_options
@quiet_option
@friendly_errors
@plugin_option
def replay(trace_path, runs_csv, utilisation, op, erase_block, trace_preset, budget, gen_preset, iterations,
           compute_us_per_sample, lookahead, seed, ssd, geometry, out_dir, restart, json_path, idle_gc=True,
           suspend=False, gc_yield_to_reads=False, gc_step=None, quiet=False) -> None:
    """Replay a page trace through named swap runs, each on fresh payload-free emulated SSDs (no page
    bytes kept: a trace of tables far beyond RAM replays in a few GB) sized as the bench sizes them,
    all from the same raw flash, every swap-in verified against its fingerprint. Per run: modeled
    stall, write amplification, store and device GC MiB, swap-in p99 (modeled clock), and the wall
    time, pages/s, CPU time and peak RSS it took here (each run in a process of its own).

    \b
    Runs: linux-swap, linux-swap-batched (the bench's Linux-swap model on the conventional SSD; they
    replay without the trace's discards), and the store on each interface the sweep names:
    store-on-conventional (the conventional SSD's zoned view), store-on-fdp (an NVMe FDP SSD, a
    placement handle per stream), store-on-zns (ZNS; its old name zns-host-gc still works, with a
    line on stderr), store-on-ocssd (Open-Channel). Every run ends with a flush of the pages still buffered, as
    training ends, so write amplification counts every page written. --preset, the old name of
    --model, still works, with a line on stderr.

    \b
        zswap-host replay --generate default --trace /tmp/default-trace --out replay-out
        zswap-host replay --trace run.npz --runs store-on-zns,store-on-fdp --json replay.json
    """
    import os

    from .progress import Progress
    from .replay import DEFAULT_RUNS, ReplaySpec, check_runs, ensure_trace, run_replay
    _check_outputs(files=(("--json", json_path),), dirs=(("--out", out_dir),))
    _check_finite("--compute-us-per-sample", compute_us_per_sample)

    if gen_preset is None:
        given = [o for o, v in (("--iterations", iterations), ("--lookahead", lookahead),
                                ("--seed", seed)) if v is not None]
        if given:
            _fail(f"{given[0]} applies to --generate MODEL")
    if restart and not out_dir:
        _fail("--restart applies to --out DIR (the runs it keeps)")
    if utilisation is not None and not 0.05 <= utilisation <= 0.99:
        _fail(f"utilisation must be within 0.05..0.99 of the usable capacity, not {utilisation}")
    if op is not None and not 0.0 <= op <= 0.5:
        _fail(f"--op must be within 0..0.5, not {op}")
    erase_bytes = None
    if erase_block is not None:
        from .units import parse_size
        try:
            erase_bytes = parse_size(erase_block)
        except ValueError as e:
            _fail(f"bad --erase-block {erase_block!r}: {e}")
    gc_step_bytes = _gc_step(gc_step)
    _note_renamed_runs("replay", runs_csv)
    runs = check_runs(runs_csv.split(",")) if runs_csv is not None else DEFAULT_RUNS
    if gen_preset is not None:
        if trace_preset is not None:
            _fail("--model names a recorded trace's training preset; with --generate it is --generate's")
        with Progress("trace", 1, "trace", work="it", quiet=quiet, overall=False) as bars:
            made = ensure_trace(trace_path, gen_preset, budget=budget, iterations=iterations,
                                us_per_sample=compute_us_per_sample, seed=seed or 0, lookahead=lookahead or 0,
                                progress=lambda done, total: bars.update("generating", done, total),
                                sizing={"utilisation": utilisation, "op": op, "erase_block": erase_bytes,
                                        "ssd": ssd, "geometry": geometry})
        if not quiet:
            click.echo(f"{'generated' if made else 'reusing'} the {gen_preset} trace in {trace_path}", err=True)

    def progress(name: str, done: int, total: int, chunk: int, chunks: int, wall: float) -> None:
        bars.update(name, done, total)

    def on_row(row: dict, resumed: bool) -> None:
        if resumed:
            bars.finish(row["run"], f"finished before (in {journal}), not run again")
        else:
            bars.finish(row["run"], f"{row['pages']:,} pages, {row['pages_per_s']:,} pages/s, "
                        f"WAF {row['write_amplification']:.3f}")

    journal = os.path.join(out_dir, "replay.jsonl") if out_dir else None
    spec = ReplaySpec(trace=trace_path, runs=runs, preset=trace_preset,
                      budget=None if gen_preset else budget, utilisation=utilisation, op=op,
                      erase_block=erase_bytes, ssd=ssd, geometry=geometry, idle_gc=idle_gc, suspend=suspend,
                      gc_yield_to_reads=gc_yield_to_reads, gc_step_bytes=gc_step_bytes,
                      us_per_sample=None if gen_preset else compute_us_per_sample, journal=journal, restart=restart)
    with Progress("replay", len(runs), "runs", work="page", quiet=quiet) as bars:
        summary = run_replay(spec, progress, on_row)
    gen = (f" --generate {gen_preset}" + (f" --iterations {iterations}" if iterations else "")
           + (f" --budget {budget}" if budget else "")
           + (f" --compute-us-per-sample {compute_us_per_sample:g}" if compute_us_per_sample is not None else "")
           + (f" --lookahead {lookahead}" if lookahead is not None else "")
           + (f" --seed {seed}" if seed is not None else "")) if gen_preset else ""
    summary = {"command": f"zswap-host replay{gen} --trace {trace_path} --runs {','.join(runs)}" + plugin_args()
               + (f" --utilisation {utilisation:g}" if utilisation is not None else "")
               + (f" --op {op:g}" if op is not None else "")
               + (f" --erase-block {erase_block}" if erase_block is not None else "")
               + (f" --ssd {ssd}" if ssd != "thesis-ssd" else "") + (f" --geometry {geometry}" if geometry != "scaled" else "")
               + (f" --compute-us-per-sample {compute_us_per_sample:g}"
                  if compute_us_per_sample is not None and not gen_preset else "")
               + ("" if idle_gc else " --no-idle-gc") + (" --suspend" if suspend else "")
               + (" --gc-yield-to-reads" if gc_yield_to_reads else "") + (f" --gc-step {gc_step}" if gc_step else "")
               + (f" --model {trace_preset}" if trace_preset else "")
               + (f" --budget {budget}" if budget and not gen_preset else "")
               + (f" --out {out_dir}" if out_dir else "") + (" --restart" if restart else "")
               + (f" --json {json_path}" if json_path else ""),
               **summary}
    click.echo(_format_replay(summary))
    if json_path:
        with open(json_path, "w") as f:
            json.dump(summary, f, indent=1)
        click.echo(f"wrote {json_path}")


def _gc_step(text: str | None) -> int | None:
    """``--gc-step SIZE`` in bytes (None: not given); a bad size is one line and exit 2."""
    if text is None:
        return None
    from .units import parse_size
    try:
        return parse_size(text)
    except ValueError as e:
        _fail(f"bad --gc-step {text!r}: {e}")


def _format_replay(summary: dict) -> str:
    t = summary["trace"]
    head = (f"{t['preset']} trace: {t['swap_in_pages']:,} pages in, {t['swap_out_pages']:,} out, "
            f"{t['idle_s']:.2f} s of compute windows; DRAM budget {t['budget_pages']:,} pages")
    d = summary.get("devices") or {}
    if "conventional_erase_block_bytes" in d:
        head += (f"\nconventional SSD: {d['conventional_usable_bytes'] / (1 << 20):,.0f} MiB usable, OP "
                 f"{d['conventional_op'] * 100:.1f}% (effective), erase block "
                 f"{d['conventional_erase_block_bytes'] / 1024:,.0f} KiB; tables "
                 f"{d['tables_over_conventional_usable'] * 100:.0f}% of its usable bytes")
    cols = ("run", "stall s", "WAF", "store GC MiB", "device GC MiB", "swap-in p99 ms", "wall s", "pages/s",
            "CPU s", "peak RSS MiB")
    rows = [(r["run"], f"{r['stall_s']:.4f}", f"{r['write_amplification']:.4f}", f"{r['store_gc_mib']:.1f}",
             f"{r['device_gc_mib']:.1f}", f"{r['swap_in_p99_ms']:.3f}", f"{r['wall_s']:.1f}",
             f"{r['pages_per_s']:,}", f"{r.get('cpu_s', float('nan')):.1f}", f"{r['peak_rss_mib']:.0f}")
            for r in summary["runs"]]
    w = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    line = lambda cells: "  ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i]) for i, c in enumerate(cells))  # noqa: E731
    notes = ["stall, WAF, GC and p99: modeled clock; wall, pages/s, CPU, RSS: this machine; every run ends "
             "with a flush of its buffered pages"]
    if any(r["write_amplification"] < 1 for r in summary["runs"]):
        from .sweep.table import WAF_BELOW_1

        notes.append(WAF_BELOW_1)
    return "\n".join([head, line(cols), *(line(r) for r in rows), *notes])


def _confirm_zones_with_data(device: str, force: bool) -> None:
    """The store resets every zone of its device: ask first when a real device's zones hold data."""
    import os
    import stat

    try:
        if not stat.S_ISBLK(os.stat(device).st_mode):
            return
    except OSError:
        return
    dev = _open(device, zoned=True, force=force)
    try:
        holding = sum(z.wp > z.start for z in dev.report_zones())
    finally:
        dev.close()
    if holding:
        if not sys.stdin.isatty():
            _fail(f"{holding} zone(s) of {device} hold data and the run resets them; give --yes to go ahead")
        click.confirm(f"{holding} zone(s) of {device} hold data; the run resets them. Continue?", abort=True)


def _budget(text: str | None):
    """'0.25' -> 0.25; '25%' and '64MiB' stay strings (parsed against the table size later)."""
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        return text


if __name__ == "__main__":
    main()
