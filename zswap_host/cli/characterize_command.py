"""``zswap-host characterize``: the thesis's fio study, or a published drive's, on the SSD timing model."""

from __future__ import annotations

import contextlib
import json

import click

from .errors import fail, friendly_errors
from .group import main
from .options import check_outputs, io_engine_option, open_url, quiet_option


DEFAULT_CHARACTERIZE_DEVICE = "emu-conv://?size=4GiB&preset=thesis-ssd"
QUICK_CHARACTERIZE_DEVICE = "emu-conv://?size=1GiB&preset=thesis-ssd"


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
    check_outputs(files=(("--json", json_path), ("--plot", plot_path)))
    if study == "conv":
        from ..characterize_conv import DEFAULT_PRESET, format_table as conv_table, run as run_conv
        from ..ssdsim import get_preset

        if device:
            fail("--device applies to --study thesis; --study conv builds the conventional model from --preset")
        with _study_progress("conv", quiet) as progress:
            result = run_conv(get_preset(preset or DEFAULT_PRESET).name, quick=quick, progress=progress)
        click.echo(conv_table(result))
        if json_path:
            with open(json_path, "w") as f:
                json.dump(result, f, indent=2)
            click.echo(f"wrote {json_path}")
        return
    if study == "zns":
        from ..characterize_zns import format_table as zns_table, run as run_zns
        from ..ssdsim import get_preset

        if device:
            fail("--device applies to --study thesis; --study zns builds the ZNS model from --preset")
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
        from ..ssdsim import get_preset

        device = f"emu-conv://?size={'1GiB' if quick else '4GiB'}&preset={get_preset(preset).name}"
    elif preset:
        fail("give --device or --preset, not both")

    from ..characterize import characterize as run, format_table
    from ..devices import EmulatedBlockDevice

    url = device or (QUICK_CHARACTERIZE_DEVICE if quick else DEFAULT_CHARACTERIZE_DEVICE)
    dev = open_url(url, zoned=False, force=force or None)
    try:
        if not isinstance(dev, EmulatedBlockDevice) or dev.model is None:
            fail(f"{url}: characterize needs an emulated conventional SSD with a timing model "
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
    from ..progress import Progress

    name = f"{study} study"
    with Progress("characterize", 1, "study", work="pt" if study != "thesis" else "B", quiet=quiet,
                  overall=False) as bars:
        def progress(done: int, total: int, label: str) -> None:
            bars.update(name, done, total, postfix=label)
            if done == total:
                bars.finish(name)

        yield progress
