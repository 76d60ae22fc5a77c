"""``fdp://PATH?size=…&op=…&ruhs=8&ru_size=…&isolation=persistent|initial&preset=…``: an emulated
NVMe FDP SSD (``devices/fdp.py``): ``emu-conv://``'s conventional SSD whose writes name one of
``ruhs`` reclaim unit handles. ``ru_size`` sets the reclaim unit (one erase block; default: the
conventional SSD's); ``isolation`` says where the device's GC puts what it moves (``persistent``:
into a reclaim unit of the same handle; ``initial``: into shared ones)."""

from __future__ import annotations

from ...errors import DeviceSpecError
from ..backing import sidecar_field
from ..fdp import MAX_RUHS, EmulatedFdpDevice
from .emu import EmuConvScheme

ISOLATIONS = ("persistent", "initial")
DEFAULT_RUHS = 8


class FdpScheme(EmuConvScheme):
    """``fdp://PATH?size=…&op=…&ruhs=…&ru_size=…&isolation=…&block_size=…&preset=…&suspend=0|1
    &idle_gc=0|1&gc_striped=0|1``: an emulated FDP SSD."""

    name = "fdp"
    kind = "fdp"
    summary = "emulated NVMe FDP SSD (conventional FTL + placement handles): size, op, ruhs, ru_size, isolation, ..."
    # an FDP SSD's erase block is its reclaim unit (ru_size)
    params = {**{k: v for k, v in EmuConvScheme.params.items() if k != "erase_block"},
              "ruhs": "count", "ru_size": "size", "isolation": "name"}

    def parse(self, url: str) -> tuple[str | None, dict]:
        path, p = super().parse(url)
        if "ruhs" in p and not 1 <= p["ruhs"] <= MAX_RUHS:
            raise DeviceSpecError(f"ruhs={p['ruhs']}: an FDP device has 1 to {MAX_RUHS} placement handles")
        if "isolation" in p and p["isolation"] not in ISOLATIONS:
            raise DeviceSpecError(f"isolation={p['isolation']}: not one of {', '.join(ISOLATIONS)}")
        return path, p

    def _reopen(self, path: str, saved: dict, p: dict) -> None:
        sidecar_field(saved, "ruhs", path)
        sidecar_field(saved, "ru_bytes", path, optional=True)
        if saved.get("isolation") not in ISOLATIONS:
            raise DeviceSpecError(f"{path}.json is corrupt: isolation = {saved.get('isolation')!r}")
        for key, skey in (("ruhs", "ruhs"), ("ru_size", "ru_bytes"), ("isolation", "isolation")):
            if key in p and p[key] != saved[skey]:
                raise DeviceSpecError(f"{path} was created with {key}={saved[skey]}, not {p[key]}")
            if saved[skey] is not None:
                p[key] = saved[skey]

    def _build_model(self, preset, size: int, op: float, p: dict):
        from ...ssdsim import FdpSSD

        return FdpSSD(preset, size, op, ruhs=p.get("ruhs", DEFAULT_RUHS), ru_bytes=p.get("ru_size"),
                      isolation=p.get("isolation", "persistent"), idle_gc=p.get("idle_gc", False),
                      suspend=p.get("suspend", False), gc_striped=p.get("gc_striped"))

    def _device(self, size: int, *, p: dict, **kw):
        return EmulatedFdpDevice(size, p.get("ruhs", DEFAULT_RUHS), p.get("isolation", "persistent"),
                                 p.get("ru_size"), **kw)
