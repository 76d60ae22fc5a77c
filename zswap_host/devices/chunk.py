"""The Open-Channel SSD 2.0 chunk model: chunk states, one chunk's entry of the chunk information
log page, and a device's geometry.

Addresses are linear sector addresses (``ppa``): group ``g``, parallel unit ``p``, chunk ``c`` and
sector ``s`` are ``((g * pus + p) * chunks + c) * sectors + s``; a chunk's linear index is
``ppa // sectors``. State and type values are the spec's (OCSSD 2.0, figure 16 of the chunk
information log page), so they compare directly with liblightnvm's ``NVM_CHUNK_STATE_*``.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass

from ..errors import DeviceSpecError

SECTOR = 4096                 # the only sector size the emulator has (the timing model's unit)
CHUNK_TYPE_SEQUENTIAL = 0x1   # chunk type bit 0: writes must be sequential (the only kind here)


class ChunkState(enum.IntEnum):
    """Chunk state, numbered as the spec's chunk information log page."""

    FREE = 0x1       # erased, write pointer at 0
    CLOSED = 0x2     # written to its end: readable, not writable until reset
    OPEN = 0x4       # partly written
    OFFLINE = 0x8    # bad: neither readable, writable nor resettable


@dataclass(frozen=True)
class ChunkInfo:
    """One chunk's entry of the chunk information log page. ``slba`` is the chunk's first linear
    sector address, ``cnlb`` its sectors, ``wp`` the sectors written (the next writable sector is
    ``slba + wp``), ``wear_index`` its resets so far."""

    chunk: int
    state: ChunkState
    type: int
    wear_index: int
    slba: int
    cnlb: int
    wp: int

    def as_dict(self) -> dict:
        d = asdict(self)
        d["state"] = self.state.name
        return d


@dataclass(frozen=True)
class OcssdGeometry:
    """Shape and write rules of an Open-Channel SSD: ``groups`` x ``pus`` (parallel units per group)
    x ``chunks`` (per PU) x ``sectors`` (per chunk) of ``sector_size`` bytes. A write to a chunk
    carries a multiple of ``ws_min`` sectors (``ws_opt``: the size that keeps a PU busiest, a
    multiple of ``ws_min``); a sector is readable once ``mw_cunits`` more sectors were written after
    it, or its chunk is CLOSED. ``DeviceSpecError`` (one line) for values that do not fit together."""

    groups: int
    pus: int
    chunks: int
    sectors: int
    sector_size: int = SECTOR
    ws_min: int = 1
    ws_opt: int = 1
    mw_cunits: int = 0

    def __post_init__(self) -> None:
        for name in ("groups", "pus", "chunks", "sectors", "ws_min", "ws_opt"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise DeviceSpecError(f"{name}={v!r}: an Open-Channel SSD needs a whole number >= 1")
        if self.sector_size != SECTOR:
            raise DeviceSpecError(f"sector size {self.sector_size}: the emulated Open-Channel SSD has {SECTOR}-byte "
                                  f"sectors only")
        if self.sectors % self.ws_min:
            raise DeviceSpecError(f"ws_min={self.ws_min} does not divide the {self.sectors} sectors of a chunk "
                                  f"(a chunk could never be written to its end)")
        if self.ws_opt % self.ws_min or self.ws_opt > self.sectors:
            raise DeviceSpecError(f"ws_opt={self.ws_opt} is not a multiple of ws_min={self.ws_min} no larger than "
                                  f"a chunk ({self.sectors} sectors)")
        m = self.mw_cunits
        if isinstance(m, bool) or not isinstance(m, int) or not 0 <= m <= self.sectors:
            raise DeviceSpecError(f"mw_cunits={m!r} is outside 0..{self.sectors} (the sectors of a chunk)")

    @property
    def nr_pus(self) -> int:
        return self.groups * self.pus

    @property
    def nr_chunks(self) -> int:
        return self.groups * self.pus * self.chunks

    @property
    def total_sectors(self) -> int:
        return self.nr_chunks * self.sectors

    @property
    def size(self) -> int:
        """Bytes of flash the host addresses."""
        return self.total_sectors * self.sector_size

    @property
    def chunk_bytes(self) -> int:
        return self.sectors * self.sector_size

    def chunk_index(self, group: int, pu: int, chunk: int) -> int:
        """The linear index of chunk ``chunk`` of PU ``pu`` of group ``group``."""
        return (group * self.pus + pu) * self.chunks + chunk

    def ppa(self, group: int, pu: int, chunk: int, sector: int = 0) -> int:
        """The linear sector address of (group, PU, chunk, sector)."""
        return self.chunk_index(group, pu, chunk) * self.sectors + sector

    def address(self, ppa: int) -> tuple[int, int, int, int]:
        """(group, PU, chunk, sector) of a linear sector address."""
        rest, s = divmod(int(ppa), self.sectors)
        rest, c = divmod(rest, self.chunks)
        g, p = divmod(rest, self.pus)
        return g, p, c, s

    def as_dict(self) -> dict:
        return asdict(self)
