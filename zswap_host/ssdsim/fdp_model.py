"""``FdpSSD``: the conventional SSD with NVMe Flexible Data Placement (a reclaim unit per handle
per die; C in native/conv_ftl.c)."""
from __future__ import annotations

from typing import Sequence, Union

import numpy as np

from .conv_model import ConvSSD
from .model import WRITE, ffi, lib
from .presets import NandPreset

ISOLATIONS = ("persistent", "initial")
MAX_RUHS = 256
# FDP handles of a submit: None (handle 0), one int for every request, or one int per request
Handles = Union[int, Sequence[int], np.ndarray, None]


class FdpSSD(ConvSSD):
    """Conventional SSD with NVMe Flexible Data Placement (TP4146): every write names a reclaim
    unit handle (RUH), and the FTL keeps an open reclaim unit (RU = one erase block) per handle on
    every die, so data written with different handles never shares an erase block.  Device GC
    still runs, greedy per die over all blocks, as in ``ConvSSD``.

    ``ruhs``: handles 0..ruhs-1 (1..256).  ``isolation``: ``"persistent"`` (persistently isolated:
    GC relocates a victim's valid data into an RU of the victim's own handle) or ``"initial"``
    (initially isolated: GC relocates into one shared RU per die, whose blocks are counted as
    ``"mixed"``).  ``ru_bytes``: the erase block = RU size, a positive multiple of the program unit
    (``preset.program_unit_bytes``); None keeps ``ConvSSD``'s sizing (the erase block scaled down
    on small devices).  The raw flash leaves room for every open RU (one host RU per handle per
    die, plus the GC RUs) besides the over-provisioning.  ``op``, ``idle_gc``, ``suspend``,
    ``gc_striped`` as for ``ConvSSD``; with ``ruhs=1`` the device is exactly a ``ConvSSD``.

    Raises ValueError for ``ruhs`` outside 1..256, an unknown ``isolation`` or a bad ``ru_bytes``
    (and for what ``ConvSSD`` rejects)."""

    def __init__(self, preset: NandPreset, logical_bytes: int, op: float | None = None, ruhs: int = 8,
                 ru_bytes: int | None = None, isolation: str = "persistent", idle_gc: bool = False,
                 suspend: bool = False, gc_striped: bool | None = None):
        if isinstance(ruhs, bool) or not isinstance(ruhs, (int, np.integer)) or not 1 <= ruhs <= MAX_RUHS:
            raise ValueError(f"ruhs {ruhs!r}: an FDP device has 1..{MAX_RUHS} reclaim unit handles")
        if isolation not in ISOLATIONS:
            raise ValueError(f"isolation {isolation!r} is not one of {', '.join(map(repr, ISOLATIONS))}")
        block_pages = None
        if ru_bytes is not None:
            pu = preset.program_unit_bytes
            if isinstance(ru_bytes, bool) or not isinstance(ru_bytes, (int, np.integer)) or ru_bytes <= 0 \
                    or ru_bytes % pu:
                raise ValueError(f"ru_bytes {ru_bytes!r} is not a positive multiple of the {pu}-byte program "
                                 f"unit ({preset.oneshot_pages} pages of {preset.page_size})")
            block_pages = int(ru_bytes) // preset.page_size
        self.ruhs, self.isolation = int(ruhs), isolation
        self._build(preset, logical_bytes, op, idle_gc, suspend, ruhs=self.ruhs,
                    persistent=isolation == "persistent", block_pages=block_pages, gc_striped=gc_striped)
        self.ru_bytes = self.pages_per_block * preset.page_size

    def _handles(self, handles: Handles, ops: np.ndarray):
        """C handle array for the requests ``ops`` (ffi.NULL: handle 0 for all).  ValueError naming
        the first write whose handle is not 0..ruhs-1; reads and trims ignore their handles."""
        if handles is None:
            return ffi.NULL
        h = np.asarray(handles)
        if h.dtype.kind not in "iub":
            raise ValueError(f"handles must be integers, not {h.dtype}")
        if h.ndim == 0:
            h = np.full(ops.size, h.item(), np.int64)
        h = h.reshape(-1)
        if h.size != ops.size:
            raise ValueError(f"{h.size} handles for {ops.size} requests")
        writes = ops == WRITE
        bad = writes & ((h < 0) | (h >= self.ruhs))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"request {i}: handle {int(h[i])} is outside 0..{self.ruhs - 1} "
                             f"(the device has {self.ruhs} reclaim unit handles)")
        h = np.ascontiguousarray(np.where(writes, h, 0), dtype=np.uint16)
        return ffi.from_buffer("uint16_t[]", h) if h.any() else ffi.NULL

    def _charge_extra(self, op: int, n: int, handles):
        """``charge``'s handles for ``n`` requests, which the device checked (an int, or one uint16
        per request, each 0..ruhs-1): none for reads and trims (they ignore theirs), none for handle
        0 everywhere. Anything else goes through ``_handles``'s checks."""
        if handles is None or op != WRITE:
            return ffi.NULL
        if type(handles) is int and 0 <= handles < self.ruhs:
            return ffi.NULL if handles == 0 else ffi.from_buffer("uint16_t[]", np.full(n, handles, np.uint16))
        if type(handles) is np.ndarray and handles.dtype == np.uint16 and handles.shape == (n,) \
                and handles.flags.c_contiguous and int(handles.max()) < self.ruhs:
            return ffi.from_buffer("uint16_t[]", handles) if handles.any() else ffi.NULL
        return super()._charge_extra(op, n, handles)

    def submit(self, ops, offsets, lengths, qd: int = 1, handles: Handles = None) -> np.ndarray:
        """``ConvSSD.submit`` with a reclaim unit handle per request: ``handles`` is None (handle 0),
        one int for all requests, or one int per request.  ValueError (nothing submitted) for a
        write whose handle is not 0..ruhs-1; reads and trims ignore their handles."""
        return self._submit(ops, offsets, lengths, qd, handles)

    def submit_groups(self, ops, offsets, lengths, group_sizes, group_qds, handles: Handles = None) -> np.ndarray:
        """``ConvSSD.submit_groups`` with ``handles`` as for :meth:`submit` (one per request)."""
        return self._submit_groups(ops, offsets, lengths, group_sizes, group_qds, handles)

    def _extra(self, ops: np.ndarray, handles):
        return self._handles(handles, ops)

    def ruh_counters(self) -> list[dict]:
        """Per handle: ``host_write_bytes`` (written with it), ``media_write_bytes`` (programmed into
        its RUs: host data and GC relocations), ``gc_write_bytes`` (relocated by GC out of its RUs),
        ``write_amplification`` (media / host, 0.0 before any host write).  With
        ``isolation="initial"`` a last entry, ``handle: "mixed"``, counts the shared GC RUs (no host
        writes).  The entries add up to the device's ``counters()``."""
        out = ffi.new("int64_t[3]")
        rows = []
        for h in range(self.ruhs + (self.isolation == "initial")):
            lib.conv_ruh_counters(self._h, h, out)
            host, media, gc = int(out[0]), int(out[1]), int(out[2])
            rows.append({"handle": h if h < self.ruhs else "mixed", "host_write_bytes": host,
                         "media_write_bytes": media, "gc_write_bytes": gc,
                         "write_amplification": media / host if host else 0.0})
        return rows

    def fdp_stats(self) -> dict:
        """The FDP statistics log page (NVMe log 0x22): host bytes written, media bytes written and
        media bytes erased (the model has no metadata: "with metadata" = data)."""
        c = self._T.cnt
        return {"host_bytes_with_metadata_written": int(c.host_write_bytes),
                "media_bytes_with_metadata_written": int(c.media_write_bytes),
                "media_bytes_erased": int(c.erase_bytes)}

    @property
    def options(self) -> dict:
        return {**super().options, "ruhs": self.ruhs, "isolation": self.isolation}

    def __repr__(self) -> str:
        return (f"FdpSSD({self.preset.name}, logical={self.logical_bytes}, op={self.op:.3f}, ruhs={self.ruhs}, "
                f"isolation={self.isolation}, RU={self.ru_bytes} bytes, "
                f"blocks/die={self.blocks_per_die} x {self.pages_per_block} pages, now={self.now:.6f}s)")
