"""``open_device(url_or_path)``: the backend is chosen by the URL's scheme (fsspec style).

- ``emu://PATH?zones=N&zone_size=16MiB&zone_capacity=…&max_open=…&max_active=…&max_append=…&preset=…``
  emulated ZNS device; PATH empty = in memory. ``preset=none`` turns the timing model off.
- ``emu-conv://PATH?size=…&op=0.07&preset=…`` emulated conventional SSD.
- timing-model options (0/1, default 0, docs/ssd-model.md): ``suspend=1`` on both (host reads
  suspend programs/erases), ``idle_gc=1`` on ``emu-conv://`` (background GC in idle time).
- a regular file: conventional block device with real I/O.
- a block device (``/dev/nvme0n2``, ``/dev/sdb``, a loop device): zoned → ``LinuxZonedDevice``,
  not zoned → ``LinuxBlockDevice`` (``devices/linux.py``), after the safety checks of
  ``devices/safety.py`` (mounted, swap, holders, partitions, signatures, O_EXCL) unless forced.
"""

from __future__ import annotations

import os
import stat
from urllib.parse import parse_qsl, urlsplit

from ..errors import DeviceSpecError, NotZonedError
from ..units import parse_size
from .backing import load_sidecar, sidecar_field
from .blockdev import EmulatedBlockDevice, FileBlockDevice
from .emulated import EmulatedZonedDevice
from .zone import ZoneGeometry

DEFAULT_PRESET = "thesis-ssd"
DEFAULT_ZONES = 16
DEFAULT_CONV_SIZE = 1 << 30
_ZNS_KEYS = {"zones", "zone_size", "zone_capacity", "max_open", "max_active", "max_append", "preset", "block_size",
             "suspend"}
_CONV_KEYS = {"size", "op", "preset", "block_size", "suspend", "idle_gc"}
_FLAG_KEYS = {"suspend", "idle_gc"}
_SIZE_KEYS = {"zone_size", "zone_capacity", "max_append", "size", "block_size"}
MAX_EMULATED_BYTES = 1 << 50      # 1 PiB: sizes beyond are refused before anything is allocated
_MAX_COUNT = 1 << 32


def _query(url: str, allowed: set[str]) -> tuple[str | None, dict]:
    try:
        parts = urlsplit(url)
        pairs = parse_qsl(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
    except ValueError as e:
        raise DeviceSpecError(f"malformed device URL {url!r}: {e}") from None
    if parts.fragment or url.endswith("#"):
        raise DeviceSpecError(f"a device URL has no #fragment: {url!r}")
    path = (parts.netloc + parts.path) or None
    if path is not None and "\0" in path:
        raise DeviceSpecError(f"a path with a NUL byte in {url!r}")
    params: dict = {}
    for key, value in pairs:
        if key not in allowed:
            raise DeviceSpecError(f"unknown parameter {key!r} in {url!r}; known: {', '.join(sorted(allowed))}")
        if key in params:
            raise DeviceSpecError(f"parameter {key} given twice in {url!r}")
        try:
            if key in _SIZE_KEYS:
                params[key] = parse_size(value)
                if params[key] > MAX_EMULATED_BYTES:
                    raise ValueError(f"{value} is more than an emulated device may have (1 PiB)")
            elif key == "op":
                params[key] = float(value)
                if not 0.0 <= params[key] < 1.0:
                    raise ValueError("op must be in [0, 1)")
            elif key == "preset":
                params[key] = value
            elif key in _FLAG_KEYS:
                if value not in ("0", "1"):
                    raise ValueError("must be 0 or 1")
                params[key] = value == "1"
            else:
                if not (value.isascii() and value.isdigit()):
                    raise ValueError(f"{value!r} is not a whole number (not negative)")
                params[key] = int(value)
                if params[key] >= _MAX_COUNT:
                    raise ValueError(f"{value} is too large")
        except ValueError as e:
            raise DeviceSpecError(f"bad value for {key} in {url!r}: {e}") from None
    return path, params


def _check_total(size: int, url: str) -> None:
    if size > MAX_EMULATED_BYTES:
        raise DeviceSpecError(f"{url}: {size} bytes is more than an emulated device may have (1 PiB)")


def _model(build, size: int, url: str):
    """Build an SSD timing model; one too large for this machine is a DeviceSpecError."""
    try:
        return build()
    except (MemoryError, OverflowError, ValueError) as e:
        raise DeviceSpecError(f"{url}: cannot build the SSD timing model for {size} bytes ({e}); "
                              f"use a smaller device or preset=none") from None


def _preset(name: str | None):
    """The NAND preset of that name, or None for ``none`` (timing off)."""
    if name is None or name.lower() in ("none", "off"):
        return None
    from ..ssdsim import get_preset

    try:
        return get_preset(name)
    except ValueError as e:
        raise DeviceSpecError(str(e)) from e


def _next_pow2(n: int) -> int:
    return 1 << (n - 1).bit_length()


def _open_emu_zns(url: str, readonly: bool = False):
    path, p = _query(url, _ZNS_KEYS)
    saved = load_sidecar(path) if path else None
    if saved is None and readonly and path:
        raise DeviceSpecError(f"{path}: no such emulated device ({path}.json is missing; a read-only open "
                              f"creates nothing)")
    if saved is not None:
        if saved.get("kind") != "zns":
            raise DeviceSpecError(f"{path} holds an emulated {saved.get('kind')!r} device, not a zoned one")
        for skey in ("nr_zones", "zone_size", "zone_capacity", "max_open", "max_active", "max_append", "block_size"):
            sidecar_field(saved, skey, path)
        if not isinstance(saved.get("preset"), (str, type(None))):
            raise DeviceSpecError(f"{path}.json is corrupt: preset = {saved.get('preset')!r}")
        for key in ("zones", "zone_size", "zone_capacity", "max_open", "max_active", "max_append", "block_size"):
            skey = "nr_zones" if key == "zones" else key
            if key in p and p[key] != saved[skey]:
                raise DeviceSpecError(
                    f"{path} was created with {key}={saved[skey]}, not {p[key]}; "
                    f"omit it to reopen, or use another path")
        if "preset" not in p:
            p["preset"] = saved.get("preset") or "none"
        p.update({k: saved["nr_zones" if k == "zones" else k] for k in
                  ("zones", "zone_size", "zone_capacity", "max_open", "max_active", "max_append", "block_size")})
    preset_name = p.get("preset", DEFAULT_PRESET)
    preset = _preset(preset_name)
    if "zone_size" in p:
        zone_size = p["zone_size"]
        zone_capacity = p.get("zone_capacity", zone_size)
    elif "zone_capacity" in p:
        zone_capacity = p["zone_capacity"]
        zone_size = preset.zone_size if preset and preset.zone_size >= zone_capacity else _next_pow2(zone_capacity)
    elif preset is not None:
        zone_size, zone_capacity = preset.zone_size, preset.zone_capacity
    else:
        zone_size = zone_capacity = 16 << 20
    _check_total(p.get("zones", DEFAULT_ZONES) * zone_size, url)
    try:
        geometry = ZoneGeometry(
            nr_zones=p.get("zones", DEFAULT_ZONES), zone_size=zone_size, zone_capacity=zone_capacity,
            block_size=p.get("block_size", 4096),
            max_open=p.get("max_open", preset.max_open if preset else 14),
            max_active=p.get("max_active", preset.max_active if preset else 14),
            max_append=p.get("max_append", preset.max_append if preset else 512 << 10))
    except DeviceSpecError as e:
        if saved is None:
            raise
        raise DeviceSpecError(f"{path}.json is corrupt: {e}") from None
    model = None
    if preset is not None:
        from ..ssdsim import ZNSSSD

        model = _model(lambda: ZNSSSD(preset, geometry.nr_zones, geometry.zone_size, geometry.zone_capacity,
                                      suspend=p.get("suspend", False)), geometry.size, url)
    return EmulatedZonedDevice(geometry, path=path, model=model,
                               preset=preset.name if preset else None, url=url, readonly=readonly)


def _open_emu_conv(url: str, readonly: bool = False):
    path, p = _query(url, _CONV_KEYS)
    saved = load_sidecar(path) if path else None
    if saved is None and readonly and path:
        raise DeviceSpecError(f"{path}: no such emulated device ({path}.json is missing; a read-only open "
                              f"creates nothing)")
    if saved is not None:
        if saved.get("kind") != "conventional":
            raise DeviceSpecError(f"{path} holds an emulated {saved.get('kind')!r} device, not a conventional one")
        sidecar_field(saved, "size", path)
        sidecar_field(saved, "op", path, float, optional=True)
        if not isinstance(saved.get("preset"), (str, type(None))):
            raise DeviceSpecError(f"{path}.json is corrupt: preset = {saved.get('preset')!r}")
        if "size" in p and p["size"] != saved["size"]:
            raise DeviceSpecError(f"{path} was created with size={saved['size']}, not {p['size']}")
        p["size"] = saved["size"]
        p.setdefault("preset", saved.get("preset") or "none")
        if saved.get("op") is not None:
            p.setdefault("op", saved["op"])
    preset = _preset(p.get("preset", DEFAULT_PRESET))
    size = p.get("size", DEFAULT_CONV_SIZE)
    block_size = p.get("block_size", 4096)
    if size <= 0 or size % block_size:
        raise DeviceSpecError(f"size {size} is not a positive multiple of the block size {block_size}")
    _check_total(size, url)
    model = None
    op = p.get("op")
    if preset is not None:
        from ..ssdsim import ConvSSD

        op = preset.conv_op if op is None else op
        model = _model(lambda: ConvSSD(preset, size, op, idle_gc=p.get("idle_gc", False),
                                       suspend=p.get("suspend", False)), size, url)
    return EmulatedBlockDevice(size, path=path, model=model, preset=preset.name if preset else None,
                               op=op, block_size=block_size, url=url, readonly=readonly)


def open_device(url: str, zoned: bool | None = None, force: bool | None = None, readonly: bool = False):
    """Open a device by URL or path. ``zoned=True`` demands a zoned device (``NotZonedError``
    otherwise), ``zoned=False`` a conventional one; None takes what the URL names. ``force`` skips
    the safety checks on real devices (None: whatever ``safety.forced()`` set, default off).
    ``readonly`` opens a file or real device read-only, without the safety checks and without
    claiming it (for inspection: geometry, zone reports); writes and zone changes then fail."""
    scheme = urlsplit(url).scheme if "://" in url else ""
    if scheme == "emu":
        dev = _open_emu_zns(url, readonly)
    elif scheme == "emu-conv":
        dev = _open_emu_conv(url, readonly)
    elif scheme:
        raise DeviceSpecError(f"unknown device URL scheme {scheme!r} in {url!r}; use emu://, emu-conv:// or a path")
    else:
        dev = _open_path(url, zoned, force, readonly)
    is_zoned = hasattr(dev, "report_zones")
    if zoned is True and not is_zoned:
        dev.close()
        raise NotZonedError(
            f"{url} is not a zoned device; give a ZNS device (e.g. /dev/nvme0n2 or emu://?zones=64) "
            f"or use it as the conventional baseline (--baseline-device)")
    if zoned is False and is_zoned:
        dev.close()
        raise DeviceSpecError(f"{url} is a zoned device; a conventional block device is needed here")
    return dev


def _open_path(path: str, zoned: bool | None = None, force: bool | None = None, readonly: bool = False):
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise DeviceSpecError(f"{path}: no such file or device") from None
    except OSError as e:
        raise DeviceSpecError(f"{path}: {e.strerror}") from None
    from . import safety

    if stat.S_ISREG(st.st_mode):
        if not readonly:
            safety.check_file(path, force)
        return FileBlockDevice(path, readonly=readonly)
    if stat.S_ISBLK(st.st_mode):
        from .linux import LinuxBlockDevice, LinuxZonedDevice, zoned_model

        model = zoned_model(path)
        if zoned is True and model == "none":
            raise NotZonedError(
                f"{path} is a conventional block device, not a zoned one (queue/zoned is 'none'): "
                f"use it as the conventional baseline (--baseline-device {path}), give a ZNS namespace "
                f"(e.g. /dev/nvme0n2), or emulate one with emu://?zones=64")
        if zoned is False and model != "none":
            raise DeviceSpecError(f"{path} is a zoned block device ({model}); a conventional block device "
                                  f"is needed here (use it as --device for the ZNS store)")
        if not readonly:
            safety.check_device(path, force)
        exclusive = not (force if force is not None else safety.is_forced())
        if model == "none":
            return LinuxBlockDevice(path, exclusive=exclusive, readonly=readonly)
        return LinuxZonedDevice(path, exclusive=exclusive, readonly=readonly)
    raise DeviceSpecError(f"{path} is neither a regular file nor a block device")
