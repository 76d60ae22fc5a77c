"""The commands about devices themselves: ``schemes``, ``info``, ``zones``, ``reset`` and ``devices``."""

from __future__ import annotations

import json

import click

from ..units import format_size
from .errors import fail, friendly_errors
from .group import main
from .options import FORCE_HELP, io_engine_option, open_url


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@friendly_errors
def schemes(as_json: bool) -> None:
    """The device kinds DEVICE arguments can name: each registered URL scheme (or bare-path kind), its
    query parameters, and whether it can be used here (else how to make it so)."""
    from ..devices.url import scheme_class, schemes as registered

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
    dev = open_url(device, readonly=True)
    try:
        d = dev.describe()
        if d.get("preset"):
            import dataclasses

            from ..ssdsim import get_preset

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
    dev = open_url(device, zoned=True, readonly=True)
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
@click.option("--force", is_flag=True, help=FORCE_HELP)
@io_engine_option
@friendly_errors
def reset(device: str, zone: int | None, all_zones: bool, yes: bool, force: bool) -> None:
    """Reset zones of DEVICE (their data is gone)."""
    if (zone is None) == (not all_zones):
        fail("give exactly one of --zone N or --all")
    dev = open_url(device, zoned=True, force=force)
    try:
        report = dev.report_zones()
        targets = [z.index for z in report] if all_zones else [zone]
        if zone is not None and not 0 <= zone < len(report):
            fail(f"zone {zone} does not exist ({device} has {len(report)} zones)")
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
    from ..devices.nvme_discovery import discover

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
