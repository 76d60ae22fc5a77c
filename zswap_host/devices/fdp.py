"""An emulated NVMe FDP SSD (Flexible Data Placement, TP4146): a conventional SSD whose writes
each name a reclaim unit handle (RUH). The device keeps one open reclaim unit per handle, so data
written under different handles never shares an erase unit, and it still collects garbage itself
(``zswap_host.ssdsim.FdpSSD``, docs/ssd-model.md). Random writes stay legal; a handle is a hint
about lifetime, not a rule the host must follow."""

from __future__ import annotations

import numpy as np

from .blockdev import EmulatedBlockDevice

MAX_RUHS = 256


class EmulatedFdpDevice(EmulatedBlockDevice):
    """``fdp://``: an :class:`EmulatedBlockDevice` with ``ruhs`` placement handles. ``write``,
    ``write_batch`` and ``write_groups`` take ``handle=`` (an int for every range, or one per
    range; default 0); a handle outside ``[0, ruhs)`` is a ValueError before anything is written.
    ``model``: a ``zswap_host.ssdsim.FdpSSD`` or None (timing off: handles are checked and counted,
    nothing is placed)."""

    kind = "emulated-fdp"
    interface = "fdp"

    def __init__(self, size: int, ruhs: int, isolation: str = "persistent", ru_bytes: int | None = None,
                 path: str | None = None, model=None, preset: str | None = None, op: float | None = None,
                 block_size: int = 4096, url: str | None = None, readonly: bool = False,
                 payload: bool = True) -> None:
        if not 1 <= int(ruhs) <= MAX_RUHS:
            raise ValueError(f"ruhs={ruhs}: an FDP device has 1 to {MAX_RUHS} placement handles")
        self.ruhs = int(ruhs)
        self.isolation = isolation
        self.ru_bytes = model.ru_bytes if model is not None else ru_bytes    # the model's own when there is one
        self._host_by_handle = np.zeros(self.ruhs, np.int64)
        super().__init__(size, path=path, model=model, preset=preset, op=op, block_size=block_size,
                         url=url or f"fdp://{path or ''}", readonly=readonly, payload=payload)

    def _sidecar(self) -> dict:
        return {**super()._sidecar(), "kind": "fdp", "ruhs": self.ruhs, "isolation": self.isolation,
                "ru_bytes": self.ru_bytes}

    def _placement(self, handle, lengths: np.ndarray):
        if handle is None:
            return None
        if np.ndim(handle) == 0:
            h = int(handle)
            if not 0 <= h < self.ruhs:
                raise ValueError(f"placement handle {h} is outside [0, {self.ruhs}) on {self.url}")
            return np.full(lengths.size, h, np.uint16)
        h = np.asarray(handle)
        if h.shape != lengths.shape or not np.issubdtype(h.dtype, np.integer):
            raise ValueError(f"handle must be an int or {lengths.size} ints (one per range), not {h.dtype} {h.shape}")
        bad = (h < 0) | (h >= self.ruhs)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"range {i}: placement handle {int(h[i])} is outside [0, {self.ruhs}) on {self.url}")
        return h.astype(np.uint16)

    def _placed(self, handles, lengths: np.ndarray) -> None:
        if handles is None:
            self._host_by_handle[0] += int(lengths.sum())
        elif handles.size == 1:                            # a write of one range: no bincount
            self._host_by_handle[int(handles[0])] += int(lengths[0])
        else:
            self._host_by_handle += np.bincount(handles, weights=lengths, minlength=self.ruhs).astype(np.int64)

    def ruh_stats(self) -> list[dict]:
        """Per handle: host bytes written under it and, with the timing model, the flash bytes
        programmed into its reclaim units, the bytes the device's GC moved out of them and their
        write amplification (``ssdsim.FdpSSD.ruh_counters``; an ``initial``-isolation device adds a
        ``"mixed"`` entry for the GC's shared reclaim units)."""
        with self._lock:
            if self.model is None:
                return [{"handle": h, "host_write_bytes": int(b)} for h, b in enumerate(self._host_by_handle)]
            return self.model.ruh_counters()

    def fdp_stats(self) -> dict:
        """The FDP statistics log page (host / media bytes written, media bytes erased); zeros of
        media without the timing model."""
        with self._lock:
            if self.model is None:
                return {"host_bytes_with_metadata_written": int(self._host_by_handle.sum()),
                        "media_bytes_with_metadata_written": 0, "media_bytes_erased": 0}
            return self.model.fdp_stats()

    def describe(self) -> dict:
        d = super().describe()
        d.update(kind=self.kind, ruhs=self.ruhs, isolation=self.isolation, ru_bytes=self.ru_bytes)
        return d
