"""The Open-Channel paths' numpy oracle: the rules the package runs in C (``native/ocssd_stripe.c``,
``ocssd_read.c``, ``ocssd_vector.c``) written again in numpy, for ``tests/devices/test_ocssd_native.py``
to compare the C with. Nothing in ``zswap_host`` imports this; it is the reference, not a fallback.

- ``OracleView``: ``OcssdZonedView`` whose commit (which sectors of which chunks go down, in which
  order, split into which appends; the tail kept) and read plan (zone/slot/sector -> ppa, device
  or held, the run depth, each request's completion) are numpy.
"""
from __future__ import annotations

import numpy as np

from zswap_host.devices.buffers import as_bytes_view
from zswap_host.devices.chunk import SECTOR, ChunkState
from zswap_host.devices.ocssd import EmulatedOcssdDevice
from zswap_host.devices.chunk_pool import ranges
from zswap_host.devices.ocssd_view import OcssdZonedView, per_chunk
from zswap_host.errors import DeviceIOError, InvalidIOError, ZoneStateError

_READ, _WRITE = 0, 1


def stripe_position(r: np.ndarray, width: int, unit: int) -> tuple[np.ndarray, np.ndarray]:
    """(chunk slot, sector within the chunk) of zone-relative sectors ``r``."""
    k, o = np.divmod(r, unit)
    row, slot = np.divmod(k, width)
    return slot, row * unit + o


def run_qd(qd: int, ppa: np.ndarray, req: np.ndarray) -> int:
    """The device-run depth that keeps ``qd`` of the caller's requests in flight: depth = qd x runs
    per request (a run: consecutive ppas of one request)."""
    new = np.ones(ppa.size, bool)
    new[1:] = (req[1:] != req[:-1]) | (ppa[1:] != ppa[:-1] + 1)
    runs, reqs = int(new.sum()), int(np.unique(req).size)
    return max(1, int(round(qd * runs / reqs)))


class OracleView(OcssdZonedView):
    """The zoned view with its commit and read plan in numpy."""

    def _commit(self, z: int, r0: int, rows: np.ndarray, appends: list | None = None) -> None:
        g = self.ocssd.geometry
        if self._chunk[z, 0] < 0:
            self._bind(z)
        n = rows.shape[0]
        h_old = per_chunk(r0, self.width, self.unit)
        h_new = per_chunk(r0 + n, self.width, self.unit)
        c_old = self._dwp[z]
        c_new = h_new // g.ws_min * g.ws_min
        slot, sec = stripe_position(r0 + np.arange(n, dtype=np.int64), self.width, self.unit)
        tail = self._tail[z]
        # commit whole ws_min runs: the held tail (c_old..h_old) from host memory, then the new sectors
        held = np.maximum(np.minimum(h_old, c_new) - c_old, 0)
        t_slot = np.repeat(np.arange(self.width, dtype=np.int64), held)
        t_sec = ranges(c_old, held)
        new = sec < c_new[slot]
        slots, secs = np.concatenate([t_slot, slot[new]]), np.concatenate([t_sec, sec[new]])
        data = np.concatenate([tail[t_slot, t_sec % self._ring], rows[new]])
        if slots.size:
            if appends is None:
                order, counts = np.lexsort((secs, slots)), None
            else:                           # the append that committed each sector: the first whose point passes it
                ends = r0 + np.cumsum(appends)
                points = np.stack([per_chunk(e, self.width, self.unit) for e in ends.tolist()]) // g.ws_min * g.ws_min
                write = (secs[None, :] >= points[:, slots]).sum(axis=0)
                order, counts = np.lexsort((secs, slots, write)), np.bincount(write, minlength=len(appends))
            ppas = self._chunk[z, slots[order]] * g.sectors + secs[order]
            self._write_vector(z, ppas, data[order], counts)
        keep = sec >= h_new[slot] - self._ring          # the last `ring` sectors of each chunk
        tail[slot[keep], sec[keep] % self._ring] = rows[keep]
        self._dwp[z] = c_new
        self._hw[z] = r0 + n
        if (c_new == g.sectors).all():
            self._tail.pop(z, None)                     # every chunk closed: all readable

    def _media_read_batch(self, offsets: np.ndarray, lengths: np.ndarray, qd: int,
                          words: bool = False) -> tuple[np.ndarray, np.ndarray]:
        g = self.ocssd.geometry
        counts = lengths // SECTOR
        z, r = np.divmod(ranges(offsets // SECTOR, counts), self._zs)
        slot, sec = stripe_position(r, self.width, self.unit)
        chunk, dwp = self._chunk[z, slot], self._dwp[z, slot]
        written = (r < self._hw[z]) & (chunk >= 0)     # beyond: never written, or finish's zeros
        on_dev = written & ((dwp == g.sectors) | (sec < dwp - g.mw_cunits))
        held = written & ~on_dev                        # in an open chunk's not-yet-readable tail
        out = np.zeros(r.size, np.uint64) if words else np.zeros((r.size, SECTOR), np.uint8)
        t = np.full(r.size, self.ocssd.now())
        if on_dev.any():
            ppa = chunk[on_dev] * g.sectors + sec[on_dev]
            try:
                data, done = self.ocssd.read_timed(ppa, run_qd(qd, ppa, np.repeat(np.arange(counts.size),
                                                                                   counts)[on_dev]), words=words)
            except DeviceIOError:
                self._lose_broken(np.unique(z[on_dev]))
                raise
            out[on_dev] = data if words else data.reshape(-1, SECTOR)
            t[on_dev] = done
        if held.any():
            self._reader.read_held(out, (np.flatnonzero(held), z[held], slot[held], sec[held]), words)
        done = np.maximum.reduceat(t, np.cumsum(counts) - counts) if counts.size else np.zeros(0)
        return out.reshape(-1), done


def runs(ppas: np.ndarray, chunk: np.ndarray, cut: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The vector as requests: maximal runs (in vector order) of consecutive addresses in one chunk,
    also starting wherever ``cut`` is True. Returns (first ppa, sectors) per run."""
    start = np.ones(ppas.size, bool)
    start[1:] = (ppas[1:] != ppas[:-1] + 1) | (chunk[1:] != chunk[:-1])
    if cut is not None:
        start |= cut
    first = np.flatnonzero(start)
    return ppas[first], np.diff(np.append(first, ppas.size))


class OracleDevice(EmulatedOcssdDevice):
    """The emulated Open-Channel device with its write and read checks in numpy."""

    def _inside(self, ppas) -> np.ndarray:
        a = self._ppas(ppas)
        n = self.geometry.total_sectors
        if int(a.min()) < 0 or int(a.max()) >= n:
            bad = int(a[np.flatnonzero((a < 0) | (a >= n))[0]])
            raise InvalidIOError(f"ppa {bad} is outside the device (sectors 0..{n - 1})")
        return a

    def _offline_of(self, chunks: np.ndarray, ppas: np.ndarray, what: str) -> None:
        off = self._state[chunks] == ChunkState.OFFLINE
        if off.any():
            i = int(np.flatnonzero(off)[0])
            c = int(chunks[i])
            raise DeviceIOError(f"{what} of {self._where(int(ppas[i]))}: chunk {c} is offline", offset=int(ppas[i]) * 4096)

    def _check_write(self, ppas: np.ndarray, chunk: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        g = self.geometry
        self._offline_of(chunk, ppas, "write")
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

    def _vector_ends(self, counts, ppas: np.ndarray, chunk: np.ndarray) -> list[int]:
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

    def write_vectors(self, ppas, data, counts=None, *, words: bool = False) -> None:
        g = self.geometry
        with self._lock:
            self._writable()
            ppas = self._inside(ppas)
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
                        first, n = runs(ppas[a:b], chunk[a:b], cut[a:b])
                        self.model.submit(_WRITE, first, n, qd=first.size)

    def read_timed(self, ppas, qd: int | None = None, *, words: bool = False) -> tuple[np.ndarray, np.ndarray]:
        g = self.geometry
        with self._lock:
            ppas = self._inside(ppas)
            chunk = ppas // g.sectors
            self._offline_of(chunk, ppas, "read")
            rel = ppas - chunk * g.sectors
            ok = (self._state[chunk] == ChunkState.CLOSED) | (rel < self._wp[chunk] - g.mw_cunits)
            if not ok.all():
                i = int(np.flatnonzero(~ok)[0])
                c = int(chunk[i])
                raise ZoneStateError(f"read of {self._where(int(ppas[i]))}: not yet readable (chunk {c} is "
                                     f"{ChunkState(int(self._state[c])).name}, write pointer at sector "
                                     f"{int(self._wp[c])}, mw_cunits={g.mw_cunits})", zone=c)
            out = (self._backing.gather_words if words else self._backing.gather)(
                ppas * g.sector_size, np.full(ppas.size, g.sector_size, np.int64), g.sector_size)
            self._io.read(ppas.size * g.sector_size)
            if self.model is None:
                return out, np.zeros(ppas.size)
            first, n = runs(ppas, chunk)
            done = self.model.submit(_READ, first, n, qd=first.size if qd is None else max(1, min(qd, first.size)))
            return out, np.repeat(np.asarray(done, np.float64), n)


def oracle_device(url: str) -> OracleDevice:
    """The in-memory device ``open_device(url)`` makes (the same geometry, a fresh timing model of
    the same preset, payload or not), with the numpy checks."""
    from zswap_host.devices import open_device

    d = open_device(url)
    return OracleDevice(d.geometry, model=d.model, preset=d.preset, url=d.url, payload=d.payload)


class CountingLib:
    """The extension's ``lib`` with a count of the calls of each C function: installed in place of
    the devices' ``lib`` it shows that the C path ran (there is no other in the package; the
    count makes a test fail should one come back)."""

    def __init__(self, lib) -> None:
        self.lib = lib
        self.calls: dict[str, int] = {}

    def __getattr__(self, name: str):
        f = getattr(self.lib, name)
        if not callable(f):
            return f

        def counted(*args):
            self.calls[name] = self.calls.get(name, 0) + 1
            return f(*args)
        return counted
