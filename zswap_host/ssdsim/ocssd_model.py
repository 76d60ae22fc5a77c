"""``OcssdSSD``: an Open-Channel SSD 2.0 on the timing model (the host addresses chunks of parallel
units; C in native/ocssd.c)."""
from __future__ import annotations

import numpy as np

from .model import READ, TRIM, WRITE, TimingModel, ffi, lib, ssd_params
from .presets import UNIT, NandPreset

_I64 = ffi.typeof("int64_t[]")

RESET = TRIM   # op 2 on an Open-Channel SSD: reset (erase) the chunk the request names


class OcssdSSD(TimingModel):
    """Open-Channel SSD 2.0 on the same timing model: the host addresses flash directly as groups x
    parallel units (PUs) x chunks x sectors of 4 KiB.  A group is a channel, a PU one die on it, a
    chunk one erase block of that die; no mapping table, no device GC.  Requests name linear sector
    addresses ``ppa = ((g * pus + p) * chunks + c) * sectors + s`` and sector counts; ``RESET``
    erases the whole chunk starting at its ppa.  Writes are acknowledged from the write buffer and
    programmed per program unit on the chunk's die; reads of sectors still in the buffer cost no
    flash access.  The chunk rules are the device layer's (``devices/ocssd.py``); the model only
    refuses a write away from its chunk's write pointer or past the chunk's end.

    Geometry defaults come from the preset: ``groups`` = channels, ``pus`` = dies per channel (the
    only values allowed: a group is a channel, a PU a die), ``sectors`` = the erase block / 4 KiB
    (else a positive multiple of the program unit, ``preset.program_unit_bytes / 4096``),
    ``chunks`` per PU = ``size`` // (bytes per chunk on every PU) when ``chunks`` is not given.
    ``suspend`` as for ``ConvSSD``.  ValueError for a geometry the preset cannot have."""

    def __init__(self, preset: NandPreset, groups: int | None = None, pus: int | None = None,
                 chunks: int | None = None, sectors: int | None = None, size: int | None = None,
                 suspend: bool = False):
        groups = preset.channels if groups is None else int(groups)
        pus = preset.dies_per_channel if pus is None else int(pus)
        if (groups, pus) != (preset.channels, preset.dies_per_channel):
            raise ValueError(f"{groups} groups x {pus} PUs: on {preset.name} a group is one of its {preset.channels} "
                             f"channels and a PU one of its {preset.dies_per_channel} dies per channel")
        upp = preset.program_unit_bytes // UNIT
        sectors = preset.block_bytes // UNIT if sectors is None else int(sectors)
        if sectors < 1 or sectors % upp:
            raise ValueError(f"{sectors} sectors per chunk is not a positive multiple of {preset.name}'s "
                             f"{upp}-sector program unit")
        if chunks is None:
            if size is None:
                raise ValueError("give chunks (per PU) or size (bytes)")
            chunks = int(size) // (groups * pus * sectors * UNIT)
        chunks = int(chunks)
        if chunks < 1:
            raise ValueError(f"{chunks} chunks per PU: an Open-Channel SSD needs at least one")
        self.preset, self.suspend = preset, bool(suspend)
        self.groups, self.pus, self.chunks, self.sectors = groups, pus, chunks, sectors
        self.nr_chunks = groups * pus * chunks
        self.capacity = self.raw_bytes = self.nr_chunks * sectors * UNIT
        h = lib.ocssd_new(ssd_params(preset, suspend=suspend), groups, pus, chunks, sectors)
        if h == ffi.NULL:
            raise MemoryError(f"cannot build the Open-Channel SSD model ({self.nr_chunks} chunks)")
        self._bind(ffi.gc(h, lib.ocssd_free), lib.ocssd_timing(h), lib.ocssd_submit_groups)

    charge = charge_groups = None      # sector-addressed: the devices call submit / submit_writes

    def submit(self, ops, ppas, nsectors, qd: int = 1) -> np.ndarray:
        """``TimingModel.submit`` in sectors: request i is op ``ops[i]`` (READ, WRITE or RESET) of
        ``nsectors[i]`` sectors from linear sector address ``ppas[i]``.  ValueError (naming the
        request) for one outside the device or that the model refuses."""
        return self._submit(ops, self._bytes(ppas), self._bytes(nsectors), qd)

    def submit_groups(self, ops, ppas, nsectors, group_sizes, group_qds) -> np.ndarray:
        """``TimingModel.submit_groups`` in sectors, as :meth:`submit`."""
        return self._submit_groups(ops, self._bytes(ppas), self._bytes(nsectors), group_sizes, group_qds)

    def submit_writes(self, ppas: np.ndarray, nsectors: np.ndarray, group_sizes: np.ndarray) -> np.ndarray:
        """``submit_groups`` of WRITE requests, each group at a depth of its size (a vectored
        write's runs all in flight at once: devices/ocssd.py), without ``submit``'s checks of the
        requests: for a caller that made them itself (int64 arrays, every request inside the device
        and at least a sector, the sizes adding up to them). The same charges as ``submit_groups``;
        ValueError as it for a request the model refuses."""
        offsets, lengths = ppas * UNIT, nsectors * UNIT
        gs = np.ascontiguousarray(group_sizes, np.int64)
        g = ffi.from_buffer(_I64, gs)
        return self._call(self._op_array(WRITE, offsets.size), offsets, lengths, ffi.NULL, 0, (gs.size, g, g))

    def submit_reads(self, ppas: np.ndarray, nsectors: np.ndarray, qd: int) -> np.ndarray:
        """``submit(READ, ppas, nsectors, qd)`` without ``submit``'s checks of the requests: for a
        caller that made them itself (int64 arrays of one size, every request inside the device and
        at least a sector; ``qd`` >= 1). The same charges as ``submit``; ValueError as it for a
        request the model refuses."""
        offsets, lengths = ppas * UNIT, nsectors * UNIT
        ops = self._op_bufs[READ]
        return self._call(ops if ops.size >= offsets.size else self._op_array(READ, offsets.size), offsets, lengths,
                          ffi.NULL, qd)

    @staticmethod
    def _bytes(sectors) -> np.ndarray:
        return np.asarray(sectors, dtype=np.int64).reshape(-1) * UNIT

    def _chunk(self, chunk: int) -> int:
        chunk = int(chunk)
        if not 0 <= chunk < self.nr_chunks:
            raise ValueError(f"chunk {chunk} outside 0..{self.nr_chunks - 1}")
        return chunk

    def reset(self, chunk: int) -> float:
        """Erase the chunk (linear index ``ppa // sectors``) on its die; returns the completion time
        and advances ``now`` to it."""
        c = self._chunk(chunk)
        return float(self.submit(RESET, [c * self.sectors], [self.sectors])[0])

    def erase_counts(self) -> np.ndarray:
        """Resets per chunk since the model was built (int64, one per chunk: wear).  A chunk is one
        erase block, so the entries add up to ``counters()["erase_count"]``."""
        return self._erase_counts(lib.ocssd_erase_counts, self.nr_chunks)

    def chunk_die(self, chunk: int) -> int:
        """The die (of ``preset.n_dies``) the chunk's block is on; its channel is ``die % channels``."""
        return int(lib.ocssd_chunk_die(self._h, self._chunk(chunk)))

    def chunk_written(self, chunk: int) -> int:
        """Sectors the model has seen written to the chunk (its view of the write pointer)."""
        return int(lib.ocssd_chunk_wp(self._h, self._chunk(chunk)))

    def restore(self, chunk: int, sectors: int) -> None:
        """A reopened device: the chunk already holds ``sectors`` sectors on flash.  ValueError if
        the model has data of its own in the chunk's buffer or ``sectors`` is outside the chunk."""
        if lib.ocssd_set_wp(self._h, self._chunk(chunk), int(sectors)) != 0:
            raise ValueError(f"cannot restore chunk {chunk} to {sectors} sectors")

    def _rejected(self, rc: int, ops, offsets, lengths):
        i = -rc - 1
        raise ValueError(f"the model rejected request {i} (op {int(ops[i])}, ppa {int(offsets[i]) // UNIT}, "
                         f"{int(lengths[i]) // UNIT} sectors): a write starts at its chunk's write pointer and "
                         f"stays in the chunk, a reset names one whole chunk")

    def __repr__(self) -> str:
        return (f"OcssdSSD({self.preset.name}, {self.groups} groups x {self.pus} PUs x {self.chunks} chunks x "
                f"{self.sectors} sectors, now={self.now:.6f}s)")
