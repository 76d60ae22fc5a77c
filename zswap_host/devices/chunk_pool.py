"""The chunks an ``OcssdZonedView`` binds to its zones: the PU sets zones are striped over, which
zone owns each chunk, the free chunks' wear (a zone opens on the least worn free chunk of every PU
of its set), where each zone opens (its writer: ``place_zone``), and the chunks the device retired.
The pool keeps the free chunks' wear between binds (only the view's own resets change it) and
checks the chunks it picks against the device's log, reading the whole log again when they differ.
"""

from __future__ import annotations

import numpy as np

from ..errors import DeviceIOError, DeviceSpecError
from .chunk import SECTOR, ChunkState

LAYOUTS = ("stripe", "isolate")


_NONE = np.iinfo(np.int64).max        # not a free chunk: never picked


def pu_sets(groups: int, pus: int, layout: str) -> np.ndarray:
    """The PU sets zones are striped over, as a (sets, width) array of linear PU indices."""
    every = np.arange(groups * pus, dtype=np.int64)
    if layout == "stripe":
        return every.reshape(1, -1)
    if layout == "isolate":
        return every.reshape(groups, pus)
    raise DeviceSpecError(f"layout {layout!r} is not one of {', '.join(LAYOUTS)}")


def ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``starts[i] .. starts[i] + counts[i] - 1`` for every i, concatenated."""
    starts = np.asarray(starts, np.int64)
    counts = np.asarray(counts, np.int64)
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    before = np.cumsum(counts) - counts
    return np.repeat(starts - before, counts) + np.arange(total, dtype=np.int64)


class ChunkPool:
    """The chunks of ``ocssd`` (an ``OpenChannelDevice``) for zones striped over the PU sets of
    ``layout`` (``sets``: (sets, width) linear PU indices), one zone per ``width`` chunks
    (``nr_zones``). ``owner``: chunk -> zone (-1:
    unbound); ``writer``: zone -> who writes it; ``retired``: chunks the device took OFFLINE on a
    failed reset. ``owner`` is updated in place, never replaced (the view's reads hold it)."""

    def __init__(self, ocssd, layout: str) -> None:
        g = ocssd.geometry
        self.ocssd = ocssd
        self.sets = pu_sets(g.groups, g.pus, layout)
        self.nr_zones = nr = g.nr_chunks // self.sets.shape[1]
        self.owner = np.full(g.nr_chunks, -1, np.int64)      # chunk -> zone
        self._pref = np.arange(nr, dtype=np.int64) % self.sets.shape[0]   # PU set a zone opens on
        self.writer: dict[int, str] = {}                     # zone -> who writes it (place_zone)
        self.retired = 0
        self._free_wear = np.zeros(0, np.int64)              # per chunk: wear if FREE and unbound, else _NONE

    def states(self, chunks=None) -> tuple[np.ndarray, np.ndarray]:
        """(state, wear) of the chunks from the device's chunk log (as arrays when it offers them)."""
        table = getattr(self.ocssd, "chunk_states", None)
        if table is not None:
            state, _, wear = table(chunks)
            return state, wear
        info = self.ocssd.chunk_info(chunks)
        return (np.array([c.state for c in info], np.int64), np.array([c.wear_index for c in info], np.int64))

    def take_over(self) -> None:
        """Leave every usable chunk FREE: pad OPEN chunks to their end, reset the written ones."""
        if getattr(self.ocssd, "readonly", False):
            return
        g = self.ocssd.geometry
        state, _ = self.states()
        info = self.ocssd.chunk_info(np.flatnonzero(state == ChunkState.OPEN))
        if info:
            wp = np.array([c.wp for c in info], np.int64)
            cs = np.array([c.chunk for c in info], np.int64)
            self.ocssd.write(ranges(cs * g.sectors + wp, g.sectors - wp),
                             np.zeros(int((g.sectors - wp).sum()) * SECTOR, np.uint8))
        dirty = np.flatnonzero((state == ChunkState.OPEN) | (state == ChunkState.CLOSED))
        if dirty.size:
            try:
                self.ocssd.reset(dirty)
            except DeviceIOError:             # the failed chunks are OFFLINE now: never bound
                self.retired += int((self.states(dirty)[0] == ChunkState.OFFLINE).sum())

    def rescore(self, chunks: np.ndarray | None = None) -> None:
        """Read the free chunks' wear from the device's log: all of it, or only ``chunks``."""
        state, wear = self.states(chunks)
        free = np.where((state == ChunkState.FREE) & (self.owner[chunks if chunks is not None else slice(None)] < 0),
                        wear, _NONE)
        if chunks is None:
            self._free_wear = free.reshape(-1, self.ocssd.geometry.chunks)      # (PU, chunk)
        else:
            self._free_wear.reshape(-1)[chunks] = free

    def pick(self, s: int) -> np.ndarray | None:
        """Per PU of set ``s``, its unbound FREE chunk of lowest wear; None if a PU has none. From
        the pool's copy of the free chunks' wear, checked against the log for the chunks picked; the
        whole log is read again when they differ (a chunk the device retired behind the view's
        back) or when a PU seems to have none."""
        g = self.ocssd.geometry
        pus = self.sets[s]
        for fresh in (False, True):
            if fresh:
                self.rescore()
            score = self._free_wear[pus] if pus.size != self._free_wear.shape[0] else self._free_wear
            best = score.argmin(axis=1)
            low = score[np.arange(pus.size), best]
            if (low == _NONE).any():
                continue
            chunks = pus * g.chunks + best
            state, wear = self.states(chunks)
            if (state == ChunkState.FREE).all() and (wear == low).all():
                return chunks
        return None

    def claim(self, z: int, chunks: np.ndarray) -> None:
        """Zone ``z`` owns ``chunks`` (``pick``'s) from now on: no longer free."""
        self.owner[chunks] = z
        self._free_wear.reshape(-1)[chunks] = _NONE

    def release(self, chunks: np.ndarray) -> None:
        """The bound ones of ``chunks`` (-1: unbound slots) belong to no zone any more."""
        self.owner[chunks[chunks >= 0]] = -1

    def place(self, z: int, stream: int, gc: bool) -> None:
        """Zone ``z`` is written by GC (``gc``) or user ``stream`` (``OcssdZonedView.place_zone``):
        with more than one set, GC's zones open on the last set, stream ``s``'s on set
        ``s % (sets - 1)``."""
        n = self.sets.shape[0]
        self.writer[z] = "gc" if gc else f"stream {int(stream)}"
        if n > 1:
            self._pref[z] = n - 1 if gc else int(stream) % (n - 1)

    def set_order(self, z: int) -> list[int]:
        """The PU sets zone z may open on, best first: its own, then the next ones round, the GC set
        (the last) last for a user zone (so GC's data and users' meet only when all else is full)."""
        n, first = self.sets.shape[0], int(self._pref[z])
        order = [(first + i) % n for i in range(n)]
        if n > 1 and self.writer.get(z, "gc") != "gc":
            order.remove(n - 1)
            order.append(n - 1)
        return order

    def backable(self, live: np.ndarray) -> bool:
        """Whether the chunks not offline (free, or bound to a live zone) can back every live zone
        (``live``: per zone, not OFFLINE)."""
        state, _ = self.states()
        owner = self.owner
        usable = (state != ChunkState.OFFLINE) & ((owner < 0) | live[np.maximum(owner, 0)])
        per_pu = usable.reshape(-1, self.ocssd.geometry.chunks).sum(axis=1)
        return int(per_pu[self.sets].min(axis=1).sum()) >= int(live.sum())
