"""What several commands share: option decorators, checks of option values made before any work,
and opening a DEVICE."""

from __future__ import annotations

import functools

import click

from ..run_names import renamed_notes
from .errors import fail


def check_outputs(files=(), dirs=()) -> None:
    """Every output path (``(option, path)``; None: not given) checked before any work: a bad one is
    one line and exit 2 then, not after the runs it would have held."""
    from ..output_paths import check_output_dir, check_output_file

    try:
        for option, path in files:
            if path:
                check_output_file(path, option)
        for option, path in dirs:
            if path:
                check_output_dir(path, option)
    except ValueError as e:
        fail(str(e))


def check_finite(option: str, value) -> None:
    import math

    if value is not None and not math.isfinite(value):
        fail(f"{option} must be a finite number, not {value}")


def note_renamed_runs(command: str, runs_csv: str | None) -> None:
    """One stderr line per old run name in ``--runs`` (it still works, under its name now)."""
    for line in renamed_notes(command, (runs_csv or "").split(",")):
        click.echo(line, err=True)


FORCE_HELP = ("Use a real block device even if it is mounted, in use, or holds a partition table, "
              "file system or swap signature, or a regular file that holds data zswap-host did not create "
              "(no PATH.json beside it): its data will be destroyed.")


_IO_ENGINE_HELP = ("How a real block device's I/O reaches the kernel: uring (io_uring, whole batches at queue "
                   "depth, NVMe zone appends through /dev/ngXnY; the default, sync when io_uring cannot run "
                   "here) or sync (one blocking call at a time). Emulated devices have no engine.")


def io_engine_option(fn):
    """``--io-engine {uring,sync}``: the engine real devices opened by the command get."""
    @functools.wraps(fn)
    def wrapper(*args, io_engine=None, **kwargs):
        from ..devices.io_engine import engine_default

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


def parse_gc_step(text: str | None) -> int | None:
    """``--gc-step SIZE`` in bytes (None: not given); a bad size is one line and exit 2."""
    if text is None:
        return None
    from ..units import parse_size
    try:
        return parse_size(text)
    except ValueError as e:
        fail(f"bad --gc-step {text!r}: {e}")


def open_url(url: str, zoned: bool | None = None, force: bool | None = None, readonly: bool = False):
    """A DEVICE argument or option (URL or path) opened; the devices room is imported only then."""
    from ..devices import open_device

    return open_device(url, zoned=zoned, force=force, readonly=readonly)
