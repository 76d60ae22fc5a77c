"""The model twin of a bench on real devices: each run whose device is real (a Linux block device or
a regular file: wall clock) trained again, the same way, on an emulated device of the same geometry,
so the report puts the wall-clock stall next to what the SSD model predicts for that device.

A zoned device's twin is ``emu://?zones=N&zone_size=…&zone_capacity=…&max_open=…&max_active=…
&max_append=…&preset=P`` with the real namespace's geometry (``dev.geometry``); a conventional one's is
``emu-conv://?size=…&preset=P`` with its size. ``P`` is the bench's twin preset (``--preset``,
default ``thesis-ssd``); the bench's timing options (``idle_gc`` on the conventional SSD with
``--idle-gc``, ``suspend`` with ``--suspend``) are those of its own emulated devices.

The twins train after every real run has finished, on fresh in-memory devices (in worker processes,
like an emulated bench), charged the same compute; they change nothing in the real runs' records,
the chain or the ratios, which are computed from the real runs alone.
"""

from __future__ import annotations

import dataclasses

from ..units import format_size
from .plan import BenchError, BenchSpec, Plan

DEFAULT_PRESET = "thesis-ssd"

# which of the bench's two devices each swap run trains on
RUN_DEVICE = {"linux-swap": "baseline", "linux-swap-batched": "baseline", "linux-swap-lookahead": "baseline",
              "linux-swap-packed": "baseline",
              "store-on-conventional": "baseline", "store-on-zns": "zns"}

# what a twin's run record is summarised by, beside the real run's (the same keys)
SUMMARY = ("train_time_s", "io_stall_time_s", "step_stall_p50_s", "step_stall_p99_s", "page_wait_p50_s",
           "page_wait_p99_s", "page_wait_p999_s", "swap_in_bytes", "swap_out_bytes", "device_write_bytes",
           "media_write_bytes", "write_amplification", "gc_write_bytes", "device_gc_write_bytes")

CONFOUNDS = (
    "clock: a real run's stall is wall time, each I/O as this host saw it (the drive, the kernel and the "
    "I/O path; in a QEMU guest, QEMU's device emulation under TCG, which says nothing about flash); the "
    "twin's is the SSD model's device time",
    "compute: charged the same way in both (the same per-iteration charged compute; training time = "
    "charged compute + stall in both)",
    "idle time: the twin's devices get each iteration's charged compute as modeled idle time (their GCs "
    "work in it as --idle-gc says); a real device gets the real time that passes between its I/Os",
    "device state: every twin run starts on a fresh, empty model; the real runs follow one another on the "
    "same device, and a real conventional SSD keeps its FTL state from the runs (and use) before",
    "hidden flash: the twin's flash layout, FTL and over-provisioning are the preset's; a real drive's are "
    "its own (a file or a loop device has none)",
)


@dataclasses.dataclass
class Twin:
    """The twin plan: the bench's plan with each real device replaced by its twin URL; ``spec``
    trains only ``runs`` (the runs on real devices), without verification or trace."""

    plan: Plan
    spec: BenchSpec
    runs: tuple[str, ...]
    preset: str
    devices: dict            # role -> {real, twin, kind, geometry | size, block_size}


def _size(n: int) -> str:
    """An exact size for a URL (``16MiB``, ``516KiB``, ``4096``)."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def check_preset(name: str | None) -> str:
    """The twin preset's name, checked (a BenchError names the known ones)."""
    from ..ssdsim import get_preset

    try:
        return get_preset(name or DEFAULT_PRESET).name
    except ValueError as e:
        raise BenchError(str(e)) from None


def twin_url(dev, preset: str, *, idle_gc: bool = False, suspend: bool = False) -> str:
    """The URL of an emulated device of ``dev``'s geometry, timed by ``preset``."""
    opts = f"&preset={preset}" + ("&suspend=1" if suspend else "")
    if dev.zoned:
        g = dev.geometry
        url = (f"emu://?zones={g.nr_zones}&zone_size={_size(g.zone_size)}&zone_capacity={_size(g.zone_capacity)}"
               f"&max_open={g.max_open}&max_active={g.max_active}&max_append={_size(g.max_append)}")
        if g.block_size != 4096:
            url += f"&block_size={g.block_size}"
        return url + opts
    url = f"emu-conv://?size={_size(dev.size)}"
    if dev.block_size != 4096:
        url += f"&block_size={dev.block_size}"
    return url + opts + ("&idle_gc=1" if idle_gc else "")


def _describe(dev) -> dict:
    if dev.zoned:
        return {"kind": "zoned", "geometry": dev.geometry.as_dict()}
    return {"kind": "conventional", "size": dev.size, "block_size": dev.block_size}


def model_twin(pl: Plan, spec: BenchSpec) -> Twin | None:
    """The twin plan of a bench whose runs use a real (wall-clock) device, None when none does (an
    emulated-only bench) or when ``spec.model_twin`` is off. Each real device is opened once (read
    only) for its geometry and clock."""
    from ..devices import open_device
    from .plan import in_memory, spec_runs

    preset = check_preset(spec.twin_preset)
    if not spec.model_twin:
        return None
    urls = {"baseline": pl.baseline_url, "zns": pl.zns_url}
    used = {RUN_DEVICE[r] for r in spec_runs(spec)}
    devices: dict = {}
    for role in ("baseline", "zns"):
        if role not in used or in_memory(urls[role]):
            continue
        # the store's device may be an FDP SSD seen as zones (plan.open_zns): not zoned itself
        dev = open_device(urls[role], zoned=None if role == "zns" else False, readonly=True)
        try:
            if dev.stats().clock != "wall":
                continue
            url = twin_url(dev, preset, idle_gc=spec.idle_gc and role == "baseline", suspend=spec.suspend)
            devices[role] = {"real": urls[role], "twin": url, **_describe(dev)}
        finally:
            dev.close()
    runs = tuple(r for r in spec_runs(spec) if RUN_DEVICE[r] in devices)
    if not runs:
        return None
    tp = dataclasses.replace(pl, baseline_url=devices.get("baseline", {}).get("twin", pl.baseline_url),
                             zns_url=devices.get("zns", {}).get("twin", pl.zns_url))
    ts = dataclasses.replace(spec, runs=runs, verify=False, trace_out=None,
                             device=devices.get("zns", {}).get("twin", spec.device),
                             baseline_device=devices.get("baseline", {}).get("twin", spec.baseline_device))
    return Twin(tp, ts, runs, preset, devices)


def summary(real: dict, twin: dict) -> dict:
    """What a real run's record carries of its twin: the twin's device and clock, its numbers under
    the real run's key names, and the wall / model stall ratio."""
    out = {"device": twin.get("device"), "clock": twin["clock"]}
    out.update({k: twin[k] for k in SUMMARY if k in twin})
    # None when the model's stall is 0 (a lookahead hid it all there): no finite ratio
    out["stall_wall_over_model"] = (real["io_stall_time_s"] / twin["io_stall_time_s"]
                                    if twin["io_stall_time_s"] > 0 else None)
    out["losses_match_real_run"] = twin["loss"] == real["loss"]
    return out


def describe_device(role: str, d: dict) -> str:
    """One line: the real device, its geometry, and its twin's URL."""
    if d["kind"] == "zoned":
        g = d["geometry"]
        limits = "/".join(str(v or "-") for v in (g["max_open"], g["max_active"]))
        shape = (f"{g['nr_zones']} zones of {format_size(g['zone_size'])} (capacity "
                 f"{format_size(g['zone_capacity'])}), max open/active {limits}, append "
                 f"{format_size(g['max_append']) if g['max_append'] else 'unlimited'}")
    else:
        shape = f"conventional, {format_size(d['size'])}"
    return f"{role} {d['real']}: {shape} -> {d['twin']}"
