"""The emulated devices' URLs: ``emu://`` (a ZNS namespace) and ``emu-conv://`` (a conventional
SSD), in memory (empty path) or in a sparse file with a ``PATH.json`` sidecar that a reopen must
agree with. ``preset=NAME`` picks the NAND timing model (``none``: timing off); ``suspend=1`` and
``idle_gc=1`` switch the model's optional behaviours (docs/ssd-model.md)."""

from __future__ import annotations

from ...errors import DeviceSpecError
from ..backing import load_sidecar, sidecar_field
from ..blockdev import EmulatedBlockDevice
from ..emulated import EmulatedZonedDevice
from ..zone import ZoneGeometry
from .base import MAX_EMULATED_BYTES, DeviceScheme

DEFAULT_PRESET = "thesis-ssd"
DEFAULT_ZONES = 16
DEFAULT_CONV_SIZE = 1 << 30
_GEOMETRY_KEYS = ("zones", "zone_size", "zone_capacity", "max_open", "max_active", "max_append", "block_size")


class EmuScheme(DeviceScheme):
    """``emu://PATH?zones=N&zone_size=16MiB&zone_capacity=…&max_open=…&max_active=…&max_append=…
    &block_size=…&preset=…&suspend=0|1``: an emulated ZNS device."""

    name = "emu"
    summary = "emulated ZNS device (in memory, or a sparse file PATH): zones, zone_size, zone_capacity, ..."
    params = {"zones": "count", "zone_size": "size", "zone_capacity": "size", "max_open": "count",
              "max_active": "count", "max_append": "size", "preset": "name", "block_size": "size",
              "suspend": "flag", "payload": "flag"}

    def open(self, url: str, *, zoned: bool | None = None, force: bool | None = None, readonly: bool = False):
        path, p = self.parse(url)
        saved = _saved(path, readonly, force)
        if saved is not None:
            _reopen_zns(path, saved, p)
        preset_name = p.get("preset", DEFAULT_PRESET)
        preset = preset_by_name(preset_name)
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
            from ...ssdsim import ZNSSSD

            model = _model(lambda: ZNSSSD(preset, geometry.nr_zones, geometry.zone_size, geometry.zone_capacity,
                                          suspend=p.get("suspend", False)), geometry.size, url)
        return EmulatedZonedDevice(geometry, path=path, model=model,
                                   preset=preset.name if preset else None, url=url, readonly=readonly,
                                   payload=p.get("payload", True))


class EmuConvScheme(DeviceScheme):
    """``emu-conv://PATH?size=…&op=0.15&block_size=…&preset=…&suspend=0|1&idle_gc=0|1&erase_block=…
    &gc_striped=0|1``: an emulated conventional SSD (page-mapped FTL, device-side GC); ``erase_block``
    sets the FTL's erase block (default: scaled down on small devices), ``gc_striped`` where GC
    re-programs a victim's data (default: the preset's; docs/ssd-model.md)."""

    name = "emu-conv"
    summary = "emulated conventional SSD (in memory, or a sparse file PATH): size, op, idle_gc, ..."
    params = {"size": "size", "op": "fraction", "preset": "name", "block_size": "size", "suspend": "flag",
              "idle_gc": "flag", "payload": "flag", "erase_block": "size", "gc_striped": "flag"}

    kind = "conventional"           # the sidecar's kind

    def open(self, url: str, *, zoned: bool | None = None, force: bool | None = None, readonly: bool = False):
        path, p = self.parse(url)
        saved = _saved(path, readonly, force)
        if saved is not None:
            if saved.get("kind") != self.kind:
                raise DeviceSpecError(f"{path} holds an emulated {saved.get('kind')!r} device, not a {self.kind} one")
            self._reopen(path, saved, p)
            sidecar_field(saved, "size", path)
            sidecar_field(saved, "op", path, float, optional=True)
            _check_preset(saved, path)
            if "size" in p and p["size"] != saved["size"]:
                raise DeviceSpecError(f"{path} was created with size={saved['size']}, not {p['size']}")
            p["size"] = saved["size"]
            _reopen_block_size(path, saved, p)
            p.setdefault("preset", saved.get("preset") or "none")
            if saved.get("op") is not None:
                p.setdefault("op", saved["op"])
        preset = preset_by_name(p.get("preset", DEFAULT_PRESET))
        size = p.get("size", DEFAULT_CONV_SIZE)
        block_size = p.get("block_size", 4096)
        if size <= 0 or size % block_size:
            raise DeviceSpecError(f"size {size} is not a positive multiple of the block size {block_size}")
        _check_total(size, url)
        model = None
        op = p.get("op")
        if preset is not None:
            op = preset.conv_op if op is None else op
            if p.get("erase_block") is not None:
                from ...ssdsim.conv_model import block_pages
                try:
                    block_pages(preset, p["erase_block"])
                except ValueError as e:
                    raise DeviceSpecError(f"{url}: {e}") from None
            model = _model(lambda: self._build_model(preset, size, op, p), size, url)
        return self._device(size, path=path, model=model, preset=preset.name if preset else None,
                            op=op, block_size=block_size, url=url, readonly=readonly, p=p,
                            payload=p.get("payload", True))

    def _reopen(self, path: str, saved: dict, p: dict) -> None:
        """Check the URL's own parameters against the sidecar and fill them in (subclasses)."""

    def _build_model(self, preset, size: int, op: float, p: dict):
        from ...ssdsim import ConvSSD

        return ConvSSD(preset, size, op, idle_gc=p.get("idle_gc", False), suspend=p.get("suspend", False),
                       erase_block=p.get("erase_block"), gc_striped=p.get("gc_striped"))

    def _device(self, size: int, *, p: dict, **kw):
        return EmulatedBlockDevice(size, **kw)


def preset_by_name(name: str | None):
    """The NAND preset of that name, or None for ``none``/``off`` (timing off)."""
    if name is None or name.lower() in ("none", "off"):
        return None
    from ...ssdsim import get_preset

    try:
        return get_preset(name)
    except ValueError as e:
        raise DeviceSpecError(str(e)) from e


def _saved(path: str | None, readonly: bool, force: bool | None = None) -> dict | None:
    """The sidecar of an existing file-backed device (None: in memory or new). A new device's PATH
    that exists already must not hold someone's data (``safety.check_unowned``, unless forced)."""
    saved = load_sidecar(path) if path else None
    if saved is None and readonly and path:
        raise DeviceSpecError(f"{path}: no such emulated device ({path}.json is missing; a read-only open "
                              f"creates nothing)")
    if saved is None and path and not readonly:
        from .. import safety

        safety.check_unowned(path, force)
    return saved


def _check_preset(saved: dict, path: str) -> None:
    if not isinstance(saved.get("preset"), (str, type(None))):
        raise DeviceSpecError(f"{path}.json is corrupt: preset = {saved.get('preset')!r}")


def _reopen_zns(path: str, saved: dict, p: dict) -> None:
    """Check the URL against the device's sidecar and fill ``p`` with the saved geometry."""
    if saved.get("kind") != "zns":
        raise DeviceSpecError(f"{path} holds an emulated {saved.get('kind')!r} device, not a zoned one")
    for skey in ("nr_zones", "zone_size", "zone_capacity", "max_open", "max_active", "max_append", "block_size"):
        sidecar_field(saved, skey, path)
    _check_preset(saved, path)
    for key in _GEOMETRY_KEYS:
        skey = "nr_zones" if key == "zones" else key
        if key in p and p[key] != saved[skey]:
            raise DeviceSpecError(
                f"{path} was created with {key}={saved[skey]}, not {p[key]}; "
                f"omit it to reopen, or use another path")
    if "preset" not in p:
        p["preset"] = saved.get("preset") or "none"
    p.update({k: saved["nr_zones" if k == "zones" else k] for k in _GEOMETRY_KEYS})


def _reopen_block_size(path: str, saved: dict, p: dict) -> None:
    """The saved block size of a conventional device, checked (issue 34: a corrupt 0 was silently
    replaced by 4096) and against the URL's; a sidecar without one (older) keeps the URL's."""
    bs = sidecar_field(saved, "block_size", path, optional=True)
    if bs is None:
        return
    if bs < 512 or bs & (bs - 1):
        raise DeviceSpecError(f"{path}.json is corrupt: block_size = {bs!r} (a power of two >= 512 expected)")
    if "block_size" in p and p["block_size"] != bs:
        raise DeviceSpecError(f"{path} was created with block_size={bs}, not {p['block_size']}")
    p["block_size"] = bs


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


def _next_pow2(n: int) -> int:
    return 1 << (n - 1).bit_length()
