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

from .._native import ffi, lib           # the chunk rules of a vectored write and read (native/ocssd_vector.c)
from ..errors import DeviceIOError, DeviceSpecError, InvalidIOError, ZoneStateError
from .backing import PersistedState, save_sidecar
from .base import DeviceStats
from .buffers import Buffer, as_bytes_view
from .chunk import CHUNK_TYPE_SEQUENTIAL, ChunkInfo, ChunkState, OcssdGeometry
from .clocks import ModelClock
from .fingerprint import make_backing
from .io_counters import IoCounters

_RESET = 2                            # the model's op code of a chunk reset
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

    @staticmethod
    def _ppas(ppas) -> np.ndarray:
        """A vector of sector addresses as a contiguous int64 array (``InvalidIOError`` for another
        shape or type, or none); whether each lies inside the device is the chunk checks' to say."""
        if type(ppas) is np.ndarray and ppas.dtype == np.int64 and ppas.ndim == 1 and ppas.size:
            return np.ascontiguousarray(ppas)
        a = np.asarray(ppas)
        if a.dtype.kind not in "iu" or a.ndim > 1:
            raise InvalidIOError(f"sector addresses must be a 1-D array of integers, not {a.dtype} {a.shape}")
        a = np.ascontiguousarray(a.astype(np.int64).reshape(-1))
        if a.size == 0:
            raise InvalidIOError("an empty vector of sector addresses")
        return a

    def _pointers(self) -> tuple:
        """(chunk log, a chunk -> index scratch, err[3]) as C pointers, made once: the arrays are
        updated in place, never replaced."""
        if self._vector_p is None:
            self._scratch = np.full(self.geometry.nr_chunks, -1, np.int64)
            self._err = np.zeros(3, np.int64)
            fb = ffi.from_buffer
            self._vector_p = (fb("int64_t[]", self._table, require_writable=True),
                              fb("int64_t[]", self._scratch, require_writable=True),
                              fb("int64_t[]", self._err, require_writable=True))
        return self._vector_p

    def _offline(self, chunks: np.ndarray) -> None:
        """``DeviceIOError`` for a reset of an OFFLINE chunk (the first in ``chunks``)."""
        off = self._state[chunks] == ChunkState.OFFLINE
        if off.any():
            c = int(chunks[int(np.flatnonzero(off)[0])])
            raise DeviceIOError(f"reset of chunk {c}: chunk {c} is offline", offset=c * self.geometry.sectors * 4096)

    def _refused(self, code: int, err: np.ndarray, ppas: np.ndarray, counts: np.ndarray | None, what: str) -> Exception:
        """The error of a write or read the C checks refused (``OCV_*`` code, ``err``: the offender)."""
        g = self.geometry
        i = int(err[0])
        if code == lib.OCV_COUNTS:
            return InvalidIOError(f"write counts {counts.tolist()} do not split a vector of {ppas.size} sectors")
        if code == lib.OCV_WRITE_WS_MIN:
            return ZoneStateError(f"write {i} of the vector: {int(err[2])} sectors to chunk {int(err[1])} is not a "
                                  f"multiple of ws_min={g.ws_min}", zone=int(err[1]))
        p = int(ppas[i])
        c = p // g.sectors
        where = f"{what} of {self._where(p)}"
        if code == lib.OCV_OUTSIDE:
            return InvalidIOError(f"ppa {p} is outside the device (sectors 0..{g.total_sectors - 1})")
        if code == lib.OCV_OFFLINE:
            return DeviceIOError(f"{where}: chunk {c} is offline", offset=p * 4096)
        if code == lib.OCV_CLOSED:
            return ZoneStateError(f"{where}: chunk {c} is CLOSED (reset it before writing it again)", zone=c)
        if code == lib.OCV_ORDER:
            return ZoneStateError(f"{where}: chunk {c} takes sector {int(err[1])} next (writes run on from the write "
                                  f"pointer, in vector order)", zone=c)
        if code == lib.OCV_WS_MIN:
            return ZoneStateError(f"{where}: {int(err[1])} sectors to chunk {c} is not a multiple of "
                                  f"ws_min={g.ws_min}", zone=c)
        if code == lib.OCV_UNREADABLE:
            return ZoneStateError(f"{where}: not yet readable (chunk {c} is {ChunkState(int(self._state[c])).name}, "
                                  f"write pointer at sector {int(self._wp[c])}, mw_cunits={g.mw_cunits})", zone=c)
        return RuntimeError(f"{what}: the chunk checks returned {code}")

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
        zeros: what a payload-free device keeps, given without building the sectors. The checks
        and the model's requests come from one C pass (``native/ocssd_vector.c``: ``ocv_check``;
        its numpy oracle is ``tests/support/ocssd_oracle.py``); the model is an ``OcssdSSD``
        (``submit_writes``: one call for all the writes)."""
        g = self.geometry
        with self._lock:
            self._writable()
            ppas = self._ppas(ppas)
            n = ppas.size
            view = np.ascontiguousarray(data, np.uint64).reshape(-1) if words else as_bytes_view(data)
            if counts is not None:
                counts = np.ascontiguousarray(np.asarray(counts, np.int64).reshape(-1))
            table_p, scratch_p, err_p = self._pointers()
            nw = -1 if counts is None else counts.size
            out = np.empty((5, n), np.int64)       # uniq, per, run_first, run_len, tmp
            runs = np.empty(max(nw, 1), np.int64)
            nuniq = ffi.new("int64_t *")
            p = ffi.cast("int64_t *", ffi.from_buffer("int64_t[]", out, require_writable=True))
            nr = lib.ocv_check(n, ffi.from_buffer("int64_t[]", ppas), nw,
                               ffi.from_buffer("int64_t[]", counts) if nw > 0 else ffi.NULL,
                               g.nr_chunks, g.sectors, g.ws_min, g.ws_opt, table_p, _CLOSED, _OFFLINE, scratch_p,
                               p, p + n, nuniq, p + 2 * n, p + 3 * n,
                               ffi.from_buffer("int64_t[]", runs, require_writable=True), p + 4 * n, err_p)
            if nr == lib.OCV_OUTSIDE:
                raise self._refused(nr, self._err, ppas, counts, "write")
            if view.size * (8 if words else 1) != n * (8 if words else g.sector_size):
                raise InvalidIOError(f"write of {n} sectors with {view.nbytes} bytes of data "
                                     f"({n * (8 if words else g.sector_size)} needed)")
            if nr < 0:
                raise self._refused(nr, self._err, ppas, counts, "write")
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
                self.model.submit_writes(out[2, :nr], out[3, :nr], runs)

    def read(self, ppas) -> np.ndarray:
        """See ``OpenChannelDevice.read``."""
        return self.read_timed(ppas)[0]

    def read_timed(self, ppas, qd: int | None = None, *, words: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``read`` that also returns each sector's completion time on ``now()``'s clock (zeros
        with timing off). ``qd``: runs in flight at once (None: the whole vector). ``words``: the
        first 64-bit word of each sector (uint64) instead of its bytes. Errors as ``read``. The
        checks and the model's requests (runs of consecutive sectors of one chunk) come from one
        C pass (``native/ocssd_vector.c``: ``ocv_read_check``; oracle: ``tests/support/ocssd_oracle.py``)."""
        with self._lock:
            c = self._read_c
            if c is None:                         # the per-device constants of this path, once
                c = self._read_c = self._read_consts()
            check, fb, table_p, err_p, nr_chunks, sectors, mw, ss, submit = c
            ppas = self._ppas(ppas)
            n = ppas.size
            runs = np.empty(2 * n, np.int64)       # run_first, then run_len
            p = fb("int64_t[]", runs, require_writable=True)
            nr = check(n, fb("int64_t[]", ppas), nr_chunks, sectors, mw, table_p, _CLOSED, _OFFLINE, p, p + n, err_p)
            if nr < 0:
                raise self._refused(nr, self._err, ppas, None, "read")
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

    _read_c = None             # read_timed's constants, made at first use

    def _read_consts(self) -> tuple:
        """``read_timed``'s per-device constants: (check, from_buffer, chunk log, err, chunks,
        sectors, mw_cunits, sector bytes, the model's submit_reads or None)."""
        g, m = self.geometry, self.model
        table_p, _, err_p = self._pointers()
        return (lib.ocv_read_check, ffi.from_buffer, table_p, err_p, g.nr_chunks, g.sectors, g.mw_cunits,
                g.sector_size, None if m is None else m.submit_reads)

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
            self._offline(cs)
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
