"""Emulated Open-Channel SSD 2.0 (``ocssd://``): the host addresses groups, parallel units (PUs),
chunks and sectors directly and the device enforces the spec's chunk rules:

- a write to a chunk starts at its write pointer and runs on sequentially, a multiple of ``ws_min``
  sectors per chunk per command; a FREE chunk becomes OPEN on its first write, CLOSED when written
  to its end; a CLOSED chunk takes no writes until reset;
- a sector is readable once its chunk is CLOSED or ``mw_cunits`` more sectors were written after it
  (before that it is in the device's write cache: "not yet readable");
- a reset (erase) makes a FREE or CLOSED chunk FREE and adds one to its wear index; an OPEN chunk
  cannot be reset (the spec's early-reset capability is not offered); an OFFLINE chunk (a failed
  reset, or ``set_offline``) refuses everything.

Data lives in memory or a sparse file (``Backing``), with the chunk states beside it
(``PATH.chunks``) and the geometry in ``PATH.json``; timing is ``ssdsim.OcssdSSD`` or none.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from ..errors import DeviceIOError, DeviceSpecError, InvalidIOError, ZoneStateError
from .backing import PersistedState, save_sidecar
from .base import Buffer, DeviceStats, IoCounters, ModelClock, as_bytes_view
from .chunk import CHUNK_TYPE_SEQUENTIAL, ChunkInfo, ChunkState, OcssdGeometry
from .fingerprint import make_backing

_READ, _WRITE, _RESET = 0, 1, 2


def _load_vector():
    """``(ffi, lib)`` with the C vector write checks (``native/ocssd_vector.c``), or None when the
    extension is not built or older than them (the numpy checks alone then)."""
    try:
        from .._native import ffi, lib
        lib.ocv_check                     # noqa: B018 (an older build without ocssd_vector.c)
    except (ImportError, AttributeError):
        return None
    return ffi, lib


_VECTOR = _load_vector()
_STATE, _WP, _WEAR = 0, 1, 2          # columns of the chunk table
_STATES = tuple(int(s) for s in ChunkState)
_OPEN, _CLOSED, _OFFLINE = int(ChunkState.OPEN), int(ChunkState.CLOSED), int(ChunkState.OFFLINE)


def check_chunk_file(cpath: str, g: OcssdGeometry) -> None:
    """Refuse a ``PATH.chunks`` this device could not have written: wrong size, unknown states,
    write pointers that do not fit the state, negative wear."""
    want = g.nr_chunks * 3 * 8
    have = os.path.getsize(cpath)
    if have != want:
        raise DeviceSpecError(f"{cpath} is corrupt: {have} bytes, a {g.nr_chunks}-chunk device keeps {want}")
    t = np.fromfile(cpath, dtype="<i8").reshape(g.nr_chunks, 3)
    st, wp, wear = t[:, _STATE], t[:, _WP], t[:, _WEAR]
    bad = ~np.isin(st, _STATES) | (wp < 0) | (wp > g.sectors) | (wear < 0) | \
        ((st == ChunkState.FREE) & (wp != 0)) | ((st == ChunkState.CLOSED) & (wp != g.sectors)) | \
        ((st == ChunkState.OPEN) & ((wp == 0) | (wp >= g.sectors) | (wp % g.ws_min != 0)))
    if bad.any():
        c = int(np.flatnonzero(bad)[0])
        raise DeviceSpecError(f"{cpath} is corrupt: chunk {c} has state {int(st[c])}, write pointer {int(wp[c])} "
                              f"and wear {int(wear[c])} ({g.sectors} sectors, ws_min {g.ws_min})")


def _runs(ppas: np.ndarray, chunk: np.ndarray, cut: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The vector as requests: maximal runs (in vector order) of consecutive addresses in one chunk,
    also starting wherever ``cut`` is True. Returns (first ppa, sectors) per run."""
    start = np.ones(ppas.size, bool)
    start[1:] = (ppas[1:] != ppas[:-1] + 1) | (chunk[1:] != chunk[:-1])
    if cut is not None:
        start |= cut
    first = np.flatnonzero(start)
    return ppas[first], np.diff(np.append(first, ppas.size))


class EmulatedOcssdDevice(PersistedState, ModelClock):
    """An Open-Channel SSD 2.0 in memory (``path=None``) or in a sparse file with its chunk table
    beside it (``PATH.chunks``: state, write pointer and wear per chunk) and its description in
    ``PATH.json``. ``model``: a ``zswap_host.ssdsim.OcssdSSD`` of the same geometry, or None
    (timing off). Thread-safe: one lock serialises the device.

    Reopening a file checks ``PATH.chunks`` against the geometry and refuses a corrupt one with
    ``DeviceSpecError``; OPEN chunks stay OPEN with their data (the write cache is flushed at power
    off). ``readonly=True`` never writes or creates a file; writes and resets then raise
    ``DeviceIOError``. Errors: see ``devices.base.OpenChannelDevice``."""

    kind = "emulated-ocssd"
    word_reads = True       # read_timed(..., words=True)
    zoned = False
    interface = "ocssd"
    open_channel = True
    overlapped_io = False      # the timing model sees one request stream, in order
    # write_vectors and read_timed check and plan in C when the extension has it
    # (native/ocssd_vector.c); False: the numpy paths only (the reference: tests compare the two)
    native_checks = True
    _vector_p = None           # (chunk log, scratch) pointers for the C checks, made at first use
    # chunks this object took OFFLINE so far (set_offline, failed resets): the only ways a chunk goes
    # offline, so a host that found its chunks online at count k need not look again while it is k
    retirements = 0

    def __init__(self, geometry: OcssdGeometry, path: str | None = None, model=None,
                 preset: str | None = None, url: str | None = None, readonly: bool = False,
                 payload: bool = True) -> None:
        self.geometry = g = geometry
        self.payload = bool(payload)
        self.path = path
        self.model = model
        self.preset = preset
        self.url = url or f"ocssd://{path or ''}"
        self._lock = threading.RLock()
        self._io = IoCounters()
        self._resets = 0
        self._fail_resets = 0
        self.readonly = readonly = bool(readonly and path is not None)
        if model is not None and (model.nr_chunks, model.sectors) != (g.nr_chunks, g.sectors):
            raise DeviceSpecError(f"the timing model has {model.nr_chunks} chunks of {model.sectors} sectors, the "
                                  f"device {g.nr_chunks} of {g.sectors}")
        fresh = self._check_files(path, readonly)
        self._backing = make_backing(g.size, path, readonly, payload, g.sector_size, new=fresh)
        self._table = self._open_table(path, fresh, readonly)
        self._state = self._table[:, _STATE]
        self._wp = self._table[:, _WP]
        self._wear = self._table[:, _WEAR]
        if fresh:
            self._state[:] = ChunkState.FREE
        elif model is not None:
            for c in np.flatnonzero(self._wp > 0).tolist():      # per chunk, at open only
                model.restore(c, int(self._wp[c]))

    # -- opening -----------------------------------------------------------------------------------
    def _check_files(self, path: str | None, readonly: bool) -> bool:
        """Whether the device is new; a half-present file device is a DeviceSpecError."""
        if path is None:
            return True
        cpath = path + ".chunks"
        fresh = not os.path.exists(cpath)
        # a new device may take an existing empty file (the safety check let it through)
        taken = os.path.exists(path) and not (fresh and os.path.isfile(path) and os.path.getsize(path) == 0)
        if fresh == taken:
            raise DeviceSpecError(f"{path}: incomplete emulated device ({cpath if fresh else path} is missing); "
                                  f"restore it or remove {path}*")
        if fresh and readonly:
            raise DeviceSpecError(f"{path}: no such emulated device ({cpath} is missing; a read-only open "
                                  f"creates nothing)")
        if not fresh:
            check_chunk_file(cpath, self.geometry)
        return fresh

    def _open_table(self, path: str | None, fresh: bool, readonly: bool) -> np.ndarray:
        shape = (self.geometry.nr_chunks, 3)
        if path is None:
            return np.zeros(shape, np.int64)
        cpath = path + ".chunks"
        if readonly:
            return np.array(np.memmap(cpath, dtype=np.int64, mode="r", shape=shape))
        table = np.memmap(cpath, dtype=np.int64, mode="w+" if fresh else "r+", shape=shape)
        save_sidecar(path, {"kind": "ocssd", **self.geometry.as_dict(), "preset": self.preset})
        return table

    # -- checks ------------------------------------------------------------------------------------
    def _writable(self) -> None:
        if self.readonly:
            raise DeviceIOError(f"{self.path} is open read-only")

    def _where(self, ppa: int) -> str:
        g, p, c, s = self.geometry.address(ppa)
        return f"ppa {ppa} (group {g}, PU {p}, chunk {c}, sector {s})"

    def _ppas(self, ppas) -> np.ndarray:
        """A vector of sector addresses as int64, each inside the device (InvalidIOError)."""
        a = np.asarray(ppas)
        if a.dtype.kind not in "iu" or a.ndim > 1:
            raise InvalidIOError(f"sector addresses must be a 1-D array of integers, not {a.dtype} {a.shape}")
        a = a.astype(np.int64).reshape(-1)
        if a.size == 0:
            raise InvalidIOError("an empty vector of sector addresses")
        n = self.geometry.total_sectors
        if int(a.min()) < 0 or int(a.max()) >= n:
            bad = int(a[np.flatnonzero((a < 0) | (a >= n))[0]])
            raise InvalidIOError(f"ppa {bad} is outside the device (sectors 0..{n - 1})")
        return a

    def _offline(self, chunks: np.ndarray, ppas: np.ndarray | None, what: str) -> None:
        off = self._state[chunks] == ChunkState.OFFLINE
        if off.any():
            i = int(np.flatnonzero(off)[0])
            c = int(chunks[i])
            where = self._where(int(ppas[i])) if ppas is not None else f"chunk {c}"
            raise DeviceIOError(f"{what} of {where}: chunk {c} is offline",
                                offset=(int(ppas[i]) if ppas is not None else c * self.geometry.sectors) * 4096)

    def _check_write(self, ppas: np.ndarray, chunk: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The chunks a vector write touches and its sectors per chunk, after the chunk rules."""
        g = self.geometry
        self._offline(chunk, ppas, "write")
        closed = self._state[chunk] == ChunkState.CLOSED
        if closed.any():
            i = int(np.flatnonzero(closed)[0])
            raise ZoneStateError(f"write of {self._where(int(ppas[i]))}: chunk {int(chunk[i])} is CLOSED (reset it "
                                 f"before writing it again)", zone=int(chunk[i]))
        order = np.argsort(chunk, kind="stable")
        cs = chunk[order]
        first = np.flatnonzero(np.append(True, cs[1:] != cs[:-1]))
        counts = np.diff(np.append(first, cs.size))
        rank = np.arange(cs.size) - np.repeat(first, counts)
        want = cs * g.sectors + self._wp[cs] + rank          # where each sector must go
        bad = ppas[order] != want
        if bad.any():
            k = int(order[np.flatnonzero(bad)].min())        # the first offender in vector order
            j = int(np.flatnonzero(order == k)[0])
            raise ZoneStateError(f"write of {self._where(int(ppas[k]))}: chunk {int(chunk[k])} takes sector "
                                 f"{int(want[j]) - int(chunk[k]) * g.sectors} next (writes run on from the write "
                                 f"pointer, in vector order)", zone=int(chunk[k]))
        uniq = cs[first]
        short = counts % g.ws_min != 0
        if short.any():
            i = int(np.flatnonzero(short)[0])
            raise ZoneStateError(f"write of {self._where(int(ppas[order[first[i]]]))}: {int(counts[i])} sectors to "
                                 f"chunk {int(uniq[i])} is not a multiple of ws_min={g.ws_min}", zone=int(uniq[i]))
        return uniq, counts

    def _check_read(self, ppas: np.ndarray, chunk: np.ndarray) -> None:
        g = self.geometry
        self._offline(chunk, ppas, "read")
        rel = ppas - chunk * g.sectors
        ok = (self._state[chunk] == ChunkState.CLOSED) | (rel < self._wp[chunk] - g.mw_cunits)
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            c = int(chunk[i])
            raise ZoneStateError(f"read of {self._where(int(ppas[i]))}: not yet readable (chunk {c} is "
                                 f"{ChunkState(int(self._state[c])).name}, write pointer at sector {int(self._wp[c])}, "
                                 f"mw_cunits={g.mw_cunits})", zone=c)

    def _chunks(self, chunks) -> np.ndarray:
        a = np.asarray(chunks)
        if a.dtype.kind not in "iu" or a.ndim > 1:
            raise InvalidIOError(f"chunks must be a 1-D array of integers, not {a.dtype} {a.shape}")
        a = a.astype(np.int64).reshape(-1)
        n = self.geometry.nr_chunks
        if a.size and (int(a.min()) < 0 or int(a.max()) >= n):
            bad = int(a[np.flatnonzero((a < 0) | (a >= n))[0]])
            raise InvalidIOError(f"chunk {bad} does not exist (the device has {n} chunks)")
        return a

    # -- commands ----------------------------------------------------------------------------------
    def write(self, ppas, data: Buffer) -> None:
        """See ``OpenChannelDevice.write``. Nothing is written when it raises."""
        self.write_vectors(ppas, data)

    def write_vectors(self, ppas, data: Buffer, counts=None, *, words: bool = False) -> None:
        """Vectored writes one after another in one call: the i-th is the next ``counts[i]`` sectors
        of ``ppas`` (and of ``data``); None: one write. Each write keeps ``write``'s chunk rules (a
        multiple of ``ws_min`` per chunk it touches), and the device's state and modeled time are
        those of that many ``write`` calls. All are checked before any is written: nothing is
        written when it raises (``InvalidIOError`` also for counts that do not add up to the vector).
        ``words``: ``data`` is the first 64-bit word of each sector (uint64), the rest of the sector
        zeros: what a payload-free device keeps, given without building the sectors."""
        with self._lock:
            if not (self.native_checks and _VECTOR is not None and self._write_native(ppas, data, counts, words)):
                self._write_checked(ppas, data, counts, words)

    def _write_native(self, ppas, data: Buffer, counts, words: bool) -> bool:
        """``write_vectors`` with its checks and the model's requests from one C pass
        (``native/ocssd_vector.c``): the same state, data, counters and model calls. Declines
        (False, nothing changed) what it does not take — arguments of other types, a read-only
        device, a model without ``submit_writes``, a write that breaks a rule — and
        ``_write_checked`` then does it or raises."""
        g = self.geometry
        if type(ppas) is not np.ndarray or ppas.dtype != np.int64 or ppas.ndim != 1 or self.readonly \
                or type(data) is not np.ndarray or (words and data.dtype != np.uint64) \
                or (self.model is not None and not hasattr(self.model, "submit_writes")):
            return False
        if counts is not None:
            if type(counts) is not np.ndarray and type(counts) is not list:
                return False
            try:
                counts = np.asarray(counts)
            except (TypeError, ValueError):
                return False
            if counts.dtype.kind not in "iu" or counts.size == 0:     # (no counts: none split the vector)
                return False
            counts = np.ascontiguousarray(counts, np.int64).reshape(-1)
        view = np.ascontiguousarray(data).reshape(-1) if words else as_bytes_view(data)
        n = ppas.size
        if view.size * (8 if words else 1) != n * (8 if words else g.sector_size):
            return False
        ffi, lib = _VECTOR
        if self._vector_p is None:            # the chunk log and a chunk -> index scratch, once
            self._scratch = np.full(g.nr_chunks, -1, np.int64)
            self._vector_p = (ffi.from_buffer("int64_t[]", self._table, require_writable=True),
                              ffi.from_buffer("int64_t[]", self._scratch, require_writable=True))
        table_p, scratch_p = self._vector_p
        nw = 0 if counts is None else counts.size
        out = np.empty((5, n), np.int64)       # uniq, per, run_first, run_len, tmp
        runs = np.empty(max(nw, 1), np.int64)
        nuniq = ffi.new("int64_t *")
        p = ffi.cast("int64_t *", ffi.from_buffer("int64_t[]", out, require_writable=True))
        nr = lib.ocv_check(n, ffi.from_buffer("int64_t[]", ppas), nw,
                           ffi.NULL if counts is None else ffi.from_buffer("int64_t[]", counts),
                           g.nr_chunks, g.sectors, g.ws_min, g.ws_opt, table_p, _CLOSED, _OFFLINE, scratch_p,
                           p, p + n, nuniq, p + 2 * n, p + 3 * n,
                           ffi.from_buffer("int64_t[]", runs, require_writable=True), p + 4 * n)
        if nr < 0:
            return False
        blockwise = getattr(self._backing, "scatter_block_words", None) if words else None
        if blockwise is not None and self._backing.block == g.sector_size:
            blockwise(ppas, view)               # a payload-free medium: a word per sector, by index
        else:
            (self._backing.scatter_words if words else self._backing.scatter)(
                ppas * g.sector_size, np.full(n, g.sector_size, np.int64), view, g.sector_size)
        lib.ocv_apply(nuniq[0], p, p + n, table_p, g.sectors, _OPEN, _CLOSED)
        if nw <= 1:
            self._io.wrote(n * g.sector_size)
        else:
            self._io.wrote_many(counts[counts > 0] * g.sector_size)
        if self.model is not None:      # per write, one request per run cut at ws_opt, all in flight at once
            # exactly one submit per write that has runs, as _write_checked makes them
            self.model.submit_writes(out[2, :nr], out[3, :nr], runs)
        return True

    def _write_checked(self, ppas, data: Buffer, counts, words: bool) -> None:
        """``write_vectors`` in numpy: the reference for ``_write_native`` and the one that
        explains a refused write."""
        g = self.geometry
        self._writable()
        ppas = self._ppas(ppas)
        view = np.ascontiguousarray(data, np.uint64).reshape(-1) if words else as_bytes_view(data)
        if view.size * (8 if words else 1) != ppas.size * (8 if words else g.sector_size):
            raise InvalidIOError(f"write of {ppas.size} sectors with {view.nbytes} bytes of data "
                                 f"({ppas.size * (8 if words else g.sector_size)} needed)")
        chunk = ppas // g.sectors
        uniq, per = self._check_write(ppas, chunk)
        ends = self._vector_ends(counts, ppas, chunk)
        (self._backing.scatter_words if words else self._backing.scatter)(
            ppas * g.sector_size, np.full(ppas.size, g.sector_size, np.int64), view, g.sector_size)
        self._wp[uniq] += per
        self._state[uniq] = np.where(self._wp[uniq] == g.sectors, ChunkState.CLOSED, ChunkState.OPEN)
        sizes = np.diff(np.asarray([0, *ends], np.int64)) * g.sector_size
        if sizes.size == 1:
            self._io.wrote(int(sizes[0]))
        else:
            self._io.wrote_many(sizes[sizes > 0])
        if self.model is not None:  # per write, one request per run cut at ws_opt, all in flight at once
            cut = (ppas % g.sectors) % g.ws_opt == 0
            for a, b in zip([0, *ends[:-1]], ends):
                if b > a:
                    first, n = _runs(ppas[a:b], chunk[a:b], cut[a:b])
                    self.model.submit(_WRITE, first, n, qd=first.size)

    def _vector_ends(self, counts, ppas: np.ndarray, chunk: np.ndarray) -> list[int]:
        """Where each write of ``write_vectors`` ends in the vector, after checking ``counts`` and
        the ``ws_min`` rule per write (the whole vector's other rules are checked already)."""
        if counts is None:
            return [ppas.size]
        c = np.asarray(counts, np.int64).reshape(-1)
        if (c < 0).any() or int(c.sum()) != ppas.size:
            raise InvalidIOError(f"write counts {c.tolist()} do not split a vector of {ppas.size} sectors")
        if c.size > 1:
            key = np.repeat(np.arange(c.size, dtype=np.int64), c) * self.geometry.nr_chunks + chunk
            keys, per = np.unique(key, return_counts=True)
            bad = np.flatnonzero(per % self.geometry.ws_min != 0)
            if bad.size:
                w, c = divmod(int(keys[bad[0]]), self.geometry.nr_chunks)
                raise ZoneStateError(f"write {w} of the vector: {int(per[bad[0]])} sectors to chunk {c} is not a "
                                     f"multiple of ws_min={self.geometry.ws_min}", zone=c)
        return np.cumsum(c).tolist()

    def read(self, ppas) -> np.ndarray:
        """See ``OpenChannelDevice.read``."""
        return self.read_timed(ppas)[0]

    def read_timed(self, ppas, qd: int | None = None, *, words: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``read`` that also returns each sector's completion time on ``now()``'s clock (zeros
        with timing off). ``qd``: runs in flight at once (None: the whole vector). ``words``: the
        first 64-bit word of each sector (uint64) instead of its bytes. Errors as ``read``."""
        with self._lock:
            if self.native_checks and _VECTOR is not None:
                got = self._read_native(ppas, qd, words)
                if got is not None:
                    return got
            return self._read_checked(ppas, qd, words)

    def _read_native(self, ppas, qd: int | None, words: bool) -> tuple[np.ndarray, np.ndarray] | None:
        """``read_timed`` with its checks and the model's requests from one C pass
        (``native/ocssd_vector.c``: ``ocv_read_check``): the same data, counters and model call.
        Declines (None, nothing changed) what it does not take — ppas not a 1-D int64 array, a
        model without ``submit_reads``, a read that breaks a rule — and ``_read_checked`` then
        does it or raises."""
        if type(ppas) is not np.ndarray or ppas.dtype != np.int64 or ppas.ndim != 1 or ppas.size == 0:
            return None
        c = self._read_c
        if c is None:                         # the per-device constants of this path, once
            c = self._read_c = self._read_consts()
        if c is False:                        # (see _read_consts)
            return None
        check, fb, table_p, nr_chunks, sectors, mw, ss, submit = c
        n = ppas.size
        ppas = np.ascontiguousarray(ppas)
        runs = np.empty(2 * n, np.int64)       # run_first, then run_len
        p = fb("int64_t[]", runs, require_writable=True)
        nr = check(n, fb("int64_t[]", ppas), nr_chunks, sectors, mw, table_p, _CLOSED, _OFFLINE, p, p + n)
        if nr < 0:
            return None
        blockwise = getattr(self._backing, "gather_block_words", None) if words else None
        if blockwise is not None and self._backing.block == ss:
            out = blockwise(ppas)               # a payload-free medium: a word per sector, by index
        else:
            out = (self._backing.gather_words if words else self._backing.gather)(
                ppas * ss, np.full(n, ss, np.int64), ss)
        self._io.read(n * ss)
        if submit is None:
            return out, np.zeros(n)
        lens = runs[n:n + nr]
        done = submit(runs[:nr], lens, nr if qd is None else max(1, min(qd, nr)))
        return out, (done if nr == n else done.repeat(lens))

    _read_c = None             # _read_native's constants (a tuple), or False: it declines all reads

    def _read_consts(self):
        """``_read_native``'s per-device constants: (check, from_buffer, chunk log, chunks,
        sectors, mw_cunits, sector bytes, the model's submit_reads or None), or False for a
        model without ``submit_reads`` or an extension without ``ocv_read_check``."""
        g, m = self.geometry, self.model
        ffi, lib = _VECTOR
        if (m is not None and not hasattr(m, "submit_reads")) or not hasattr(lib, "ocv_read_check"):
            return False                      # (an extension built before ocv_read_check: numpy reads)
        if self._vector_p is None:            # the chunk log and a chunk -> index scratch, once
            self._scratch = np.full(g.nr_chunks, -1, np.int64)
            self._vector_p = (ffi.from_buffer("int64_t[]", self._table, require_writable=True),
                              ffi.from_buffer("int64_t[]", self._scratch, require_writable=True))
        return (lib.ocv_read_check, ffi.from_buffer, self._vector_p[0], g.nr_chunks, g.sectors, g.mw_cunits,
                g.sector_size, None if m is None else m.submit_reads)

    def _read_checked(self, ppas, qd: int | None, words: bool) -> tuple[np.ndarray, np.ndarray]:
        """``read_timed`` in numpy: the reference for ``_read_native`` and the one that explains a
        refused read."""
        g = self.geometry
        ppas = self._ppas(ppas)
        chunk = ppas // g.sectors
        self._check_read(ppas, chunk)
        out = (self._backing.gather_words if words else self._backing.gather)(
            ppas * g.sector_size, np.full(ppas.size, g.sector_size, np.int64), g.sector_size)
        self._io.read(ppas.size * g.sector_size)
        if self.model is None:
            return out, np.zeros(ppas.size)
        first, n = _runs(ppas, chunk)
        done = self.model.submit(_READ, first, n, qd=first.size if qd is None else max(1, min(qd, first.size)))
        return out, np.repeat(np.asarray(done, np.float64), n)

    def reset(self, chunks) -> None:
        """See ``OpenChannelDevice.reset``. Every chunk is checked before any is reset. A reset that
        fails (``inject_reset_failures``) takes its chunk OFFLINE; the vector's other chunks are
        reset, then ``DeviceIOError`` names the failed ones."""
        g = self.geometry
        with self._lock:
            self._writable()
            cs = self._chunks(chunks)
            if np.unique(cs).size != cs.size:
                raise InvalidIOError("a chunk is named twice in one reset")
            self._offline(cs, None, "reset")
            busy = self._state[cs] == ChunkState.OPEN
            if busy.any():
                c = int(cs[np.flatnonzero(busy)[0]])
                raise ZoneStateError(f"reset of chunk {c}: it is OPEN (write it to its end first; the device does "
                                     f"not reset open chunks)", zone=c)
            failed, cs = cs[:self._fail_resets], cs[self._fail_resets:]
            self._fail_resets -= failed.size
            for c in cs.tolist():                              # per chunk, not per sector
                if self._wp[c]:
                    self._backing.zero(c * g.chunk_bytes, int(self._wp[c]) * g.sector_size)
            self._state[cs] = ChunkState.FREE
            self._wp[cs] = 0
            self._wear[cs] += 1
            self._state[failed] = ChunkState.OFFLINE
            self.retirements += int(failed.size)
            self._resets += cs.size
            if self.model is not None and cs.size:
                self.model.submit(_RESET, cs * g.sectors, np.full(cs.size, g.sectors), qd=cs.size)
            if failed.size:
                raise DeviceIOError(f"reset of chunk(s) {', '.join(map(str, failed.tolist()))} failed: now offline",
                                    offset=int(failed[0]) * g.chunk_bytes)

    def chunk_states(self, chunks=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``chunk_info``'s state, write pointer and wear index as int64 arrays, one entry per chunk
        (or per index in ``chunks``): what a host that scans the whole log on every zone it opens
        reads without building a ``ChunkInfo`` per chunk. ``InvalidIOError`` for a bad index."""
        with self._lock:
            t = np.array(self._table) if chunks is None else self._table[self._chunks(chunks)]   # a copy either way
        return t[:, _STATE], t[:, _WP], t[:, _WEAR]

    def chunk_info(self, chunks=None) -> list[ChunkInfo]:
        """See ``OpenChannelDevice.chunk_info``."""
        g = self.geometry
        with self._lock:
            cs = np.arange(g.nr_chunks) if chunks is None else self._chunks(chunks)
            rows = self._table[cs].tolist()
        return [ChunkInfo(c, ChunkState(st), CHUNK_TYPE_SEQUENTIAL, wear, c * g.sectors, g.sectors, wp)
                for c, (st, wp, wear) in zip(cs.tolist(), rows)]

    # -- failure injection (tests) -----------------------------------------------------------------
    def set_offline(self, chunk: int) -> None:
        """Retire a chunk, as a drive does with a bad block: it becomes OFFLINE for good (its data is
        unreadable, writes and resets fail)."""
        with self._lock:
            self._writable()
            self._state[self._chunks([chunk])] = ChunkState.OFFLINE
            self.retirements += 1

    def inject_reset_failures(self, n: int) -> None:
        """Fail the next ``n`` chunk resets (erase failures): each takes its chunk OFFLINE."""
        with self._lock:
            self._fail_resets = int(n)

    # -- misc --------------------------------------------------------------------------------------
    def state_counts(self) -> dict[str, int]:
        """How many chunks are in each state (FREE, OPEN, CLOSED, OFFLINE)."""
        with self._lock:
            n = np.bincount(self._state, minlength=max(_STATES) + 1)
        return {s.name: int(n[s]) for s in (ChunkState.FREE, ChunkState.OPEN, ChunkState.CLOSED, ChunkState.OFFLINE)}

    def stats(self) -> DeviceStats:
        with self._lock:
            if self.model is None:
                s = DeviceStats(clock="none", media_write_bytes=self._io.write_bytes, erase_count=self._resets)
            else:
                m = self.model
                s = DeviceStats(clock="modeled", device_time_s=float(m.now), media_write_bytes=int(m.media_write_bytes),
                                erase_count=int(m.erase_count))
            return self._io.fill(s)

    def describe(self) -> dict:
        g = self.geometry
        return {"url": self.url, "kind": self.kind, "zoned": False, "open_channel": True, "path": self.path,
                "geometry": g.as_dict(), "size": g.size, "preset": self.preset,
                "clock": "modeled" if self.model is not None else "none", "chunk_states": self.state_counts(),
                **self.timing_options()}

    _persisted = property(lambda self: self._table)      # PersistedState's table
