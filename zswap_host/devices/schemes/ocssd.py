"""``ocssd://PATH?groups=&pus=&chunks=&sectors=&ws_min=&ws_opt=&mw_cunits=&preset=&suspend=0|1``: an
emulated Open-Channel SSD 2.0 (``devices/ocssd.py``), in memory (empty PATH) or in a sparse file with
a ``PATH.json`` sidecar that a reopen must agree with.

Defaults come from the preset's flash (``preset=none``: from ``thesis-ssd``'s, without timing):
``groups`` = its channels, ``pus`` = its dies per channel (with a timing model the only values
allowed: a group is a channel, a PU a die), ``sectors`` = its erase block in 4 KiB sectors,
``ws_min`` = ``ws_opt`` = ``mw_cunits`` = its program unit in sectors, ``chunks`` = 8 per PU.
"""

from __future__ import annotations

from ...errors import DeviceSpecError
from ..backing import sidecar_field
from ..chunk import SECTOR, OcssdGeometry
from ..ocssd import EmulatedOcssdDevice
from .base import DeviceScheme
from .emu import DEFAULT_PRESET, _check_preset, _check_total, _saved, preset_by_name

DEFAULT_CHUNKS = 8
_GEOMETRY_KEYS = ("groups", "pus", "chunks", "sectors", "ws_min", "ws_opt", "mw_cunits")


class OcssdScheme(DeviceScheme):
    """``ocssd://PATH?groups=…&pus=…&chunks=…&sectors=…&ws_min=…&ws_opt=…&mw_cunits=…&preset=…
    &suspend=0|1``: an emulated Open-Channel SSD 2.0."""

    name = "ocssd"
    summary = "emulated Open-Channel SSD 2.0 (in memory, or a sparse file PATH): groups, pus, chunks, sectors, ..."
    params = {**{k: "count" for k in _GEOMETRY_KEYS}, "preset": "name", "suspend": "flag", "payload": "flag"}

    def open(self, url: str, *, zoned: bool | None = None, force: bool | None = None, readonly: bool = False):
        path, p = self.parse(url)
        saved = _saved(path, readonly, force)
        if saved is not None:
            _reopen(path, saved, p)
        preset = preset_by_name(p.get("preset", DEFAULT_PRESET))
        try:
            geometry = _geometry(p, preset or preset_by_name(DEFAULT_PRESET))
        except DeviceSpecError as e:
            if saved is None:
                raise DeviceSpecError(f"{url}: {e}") from None
            raise DeviceSpecError(f"{path}.json is corrupt: {e}") from None
        _check_total(geometry.size, url)
        model = None
        if preset is not None:
            from ...ssdsim import OcssdSSD

            try:
                model = OcssdSSD(preset, geometry.groups, geometry.pus, geometry.chunks, geometry.sectors,
                                 suspend=p.get("suspend", False))
            except (ValueError, MemoryError) as e:
                raise DeviceSpecError(f"{url}: {e}; preset=none allows any geometry") from None
        return EmulatedOcssdDevice(geometry, path=path, model=model, preset=preset.name if preset else None,
                                   url=url, readonly=readonly, payload=p.get("payload", True))


def _geometry(p: dict, flash) -> OcssdGeometry:
    """The URL's geometry, the defaults taken from ``flash`` (a NandPreset)."""
    unit = flash.program_unit_bytes // SECTOR
    return OcssdGeometry(
        groups=p.get("groups", flash.channels), pus=p.get("pus", flash.dies_per_channel),
        chunks=p.get("chunks", DEFAULT_CHUNKS), sectors=p.get("sectors", flash.block_bytes // SECTOR),
        ws_min=p.get("ws_min", unit), ws_opt=p.get("ws_opt", p.get("ws_min", unit)),
        mw_cunits=p.get("mw_cunits", unit))


def _reopen(path: str, saved: dict, p: dict) -> None:
    """Check the URL against the device's sidecar and fill ``p`` with the saved geometry."""
    if saved.get("kind") != "ocssd":
        raise DeviceSpecError(f"{path} holds an emulated {saved.get('kind')!r} device, not an Open-Channel one")
    for key in (*_GEOMETRY_KEYS, "sector_size"):
        sidecar_field(saved, key, path)
    _check_preset(saved, path)
    for key in _GEOMETRY_KEYS:
        if key in p and p[key] != saved[key]:
            raise DeviceSpecError(f"{path} was created with {key}={saved[key]}, not {p[key]}; "
                                  f"omit it to reopen, or use another path")
        p[key] = saved[key]
    if saved["sector_size"] != SECTOR:
        raise DeviceSpecError(f"{path}.json is corrupt: sector_size = {saved['sector_size']}")
    p.setdefault("preset", saved.get("preset") or "none")
