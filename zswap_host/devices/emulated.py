"""Emulated ZNS device: enforces the NVMe ZNS zone rules the way QEMU's NVMe ZNS namespace does,
keeps data in memory or a sparse file, and charges every operation to the SSD timing model.

The zone state machine and resource accounting (QEMU's ``hw/nvme`` ``nvme_zrm_*`` functions) are
the device's ``ZoneStates`` (``zone_states.py``). A write that reaches zone capacity finishes the
zone (FULL).
"""

from __future__ import annotations

import threading

import numpy as np

from ..errors import DeviceIOError, DeviceSpecError, InvalidIOError, ZoneStateError
from .backing import Backing, PersistedState, save_sidecar
from .base import DeviceStats
from .buffers import Buffer, as_bytes_view
from .clocks import ModelClock
from .fingerprint import make_backing
from .injected_failures import InjectedFailures
from .io_counters import IoCounters
from .request_checks import check_aligned, check_append, check_append_batch, check_batch, check_zone_write
from .serial_batches import SerialAppends
from .units import ZoneUnits
from .zone import Zone, ZoneCond, ZoneGeometry
from .zone_states import ZoneStates, check_zone_file

_READ, _WRITE = 0, 1


class EmulatedZonedDevice(PersistedState, ModelClock, SerialAppends, ZoneUnits):
    """A ZNS namespace in memory (``path=None``) or in a sparse file with its zone states beside it
    (``PATH.zones``) and its description in ``PATH.json``.

    ``model`` is a ``zswap_host.ssdsim.ZNSSSD`` (modeled clock) or None (timing off).
    Thread-safe: one lock serialises the device, as a single submission queue would.

    Reopening a file checks ``PATH.zones`` against the geometry (size, conditions, write pointers,
    open/active limits) and refuses a corrupt one with ``DeviceSpecError``. ``readonly=True``
    (inspection: ``zswap-host info``/``zones``) never writes or creates a file; writes and zone
    changes then raise ``DeviceIOError``.
    """

    overlapped_io = False      # the timing model sees one request stream, in order

    kind = "emulated-zns"
    word_reads = True       # read_batch(..., words=True)
    zoned = True
    interface = "zns"

    def __init__(self, geometry: ZoneGeometry, path: str | None = None, model=None,
                 preset: str | None = None, url: str | None = None, readonly: bool = False,
                 payload: bool = True) -> None:
        self.geometry = geometry
        self.payload = bool(payload)
        self.path = path
        self.model = model
        self.preset = preset
        self.url = url or f"emu://{path or ''}"
        self._lock = threading.RLock()
        self._io = IoCounters()
        self._faults = InjectedFailures()
        self.readonly = readonly = bool(readonly and path is not None)
        nz = geometry.nr_zones
        fresh = True
        if path is not None:
            import os
            zpath = path + ".zones"
            fresh = not os.path.exists(zpath)
            # a new device may take an existing empty file (the safety check let it through)
            taken = os.path.exists(path) and not (fresh and os.path.isfile(path) and os.path.getsize(path) == 0)
            if fresh == taken:
                raise DeviceSpecError(f"{path}: incomplete emulated device ({zpath if fresh else path} is "
                                      f"missing); restore it or remove {path}*")
            if not fresh:
                check_zone_file(zpath, geometry)
            elif readonly:
                raise DeviceSpecError(f"{path}: no such emulated device ({zpath} is missing; a read-only "
                                      f"open creates nothing)")
        self._backing = make_backing(geometry.size, path, readonly, payload, geometry.block_size, new=fresh)
        if path is None:
            self._state = np.zeros((nz, 2), dtype=np.int64)
        elif readonly:
            self._state = np.array(np.memmap(zpath, dtype=np.int64, mode="r", shape=(nz, 2)))
        else:
            self._state = np.memmap(zpath, dtype=np.int64, mode="w+" if fresh else "r+", shape=(nz, 2))
            save_sidecar(path, {"kind": "zns", **geometry.as_dict(), "preset": preset})
        self._zones = ZoneStates(geometry, self._state, fresh=path is None or fresh)
        # the data path reads and moves the zone table itself: its two columns, as ZoneStates does
        self._wp = self._zones.wp          # write pointer relative to zone start
        self._cond = self._zones.cond      # ZoneCond value

    def _writable(self) -> None:
        if self.readonly:
            raise DeviceIOError(f"{self.path} is open read-only")

    # -- zone management -------------------------------------------------------------------------
    def _zone_index(self, z: int) -> int:
        if not 0 <= z < self.geometry.nr_zones:
            raise InvalidIOError(f"zone {z} does not exist (the device has {self.geometry.nr_zones} zones)")
        return int(z)

    def report_zones(self) -> list[Zone]:
        g = self.geometry
        with self._lock:
            wp = self._wp.copy()
            cond = self._cond.copy()
        out = []
        for z in range(g.nr_zones):
            c = ZoneCond(int(cond[z]))
            start = z * g.zone_size
            abs_wp = start + g.zone_size if c == ZoneCond.FULL else start + int(wp[z])
            out.append(Zone(z, start, g.zone_size, g.zone_capacity, abs_wp, c))
        return out

    def zone_condition(self, z: int) -> ZoneCond:
        return self._zones.cond_of(self._zone_index(z))

    def open_zone(self, z: int) -> None:
        with self._lock:
            self._writable()
            self._zones.open(self._zone_index(z), implicit=False)

    def close_zone(self, z: int) -> None:
        with self._lock:
            self._writable()
            self._zones.close(self._zone_index(z))

    def finish_zone(self, z: int) -> None:
        with self._lock:
            self._writable()
            z = self._zone_index(z)
            if self._zones.finish(z):
                self._media_finish(z)

    def reset_zone(self, z: int) -> None:
        with self._lock:
            self._writable()
            z = self._zone_index(z)
            written = self._zones.reset(z)
            if written is not None:
                self._media_reset(z, written)

    # -- data path -------------------------------------------------------------------------------
    def _write_at_wp(self, z: int, rel: int, view: np.ndarray, action: str) -> int:
        g = self.geometry
        n = view.size
        self._writable()
        cond = self._zones.cond_of(z)
        if cond in (ZoneCond.FULL, ZoneCond.READ_ONLY, ZoneCond.OFFLINE):
            raise self._zones.bad_state(z, cond, action)
        if rel != int(self._wp[z]):
            raise ZoneStateError(
                f"zone {z}: write at +{rel} but the write pointer is at +{int(self._wp[z])}", zone=z)
        if rel + n > g.zone_capacity:
            raise ZoneStateError(
                f"zone {z}: {n} bytes at +{rel} would pass the zone capacity {g.zone_capacity}", zone=z)
        self._zones.open(z, implicit=True)
        if self._faults.writes and self._faults.fires("write"):
            raise DeviceIOError(f"injected write failure in zone {z}", offset=g.zone_start(z) + rel)
        start = g.zone_start(z) + rel
        self._media_write(start, view)
        self._wp[z] = rel + n
        if rel + n == g.zone_capacity:
            self._zones.set(z, ZoneCond.FULL)
        self._io.wrote(n)
        return start

    def write(self, offset: int, data: Buffer) -> None:
        view = as_bytes_view(data)
        g = self.geometry
        z = check_zone_write(g, offset, view.size)
        with self._lock:
            self._write_at_wp(z, offset - g.zone_start(z), view, "write")

    def append(self, z: int, data: Buffer) -> int:
        view = as_bytes_view(data)
        g = self.geometry
        check_append(g, view.size)
        with self._lock:
            z = self._zone_index(z)
            rel = int(self._wp[z])
            cond = int(self._cond[z])
            # the usual append: into an open zone, short of its capacity, nothing injected, so no
            # zone state changes (everything else takes the full path below)
            if (cond == ZoneCond.IMPLICIT_OPEN or cond == ZoneCond.EXPLICIT_OPEN) and not self._faults.writes \
                    and rel + view.size < g.zone_capacity and not self.readonly:
                start = z * g.zone_size + rel
                self._media_write(start, view)
                self._wp[z] = rel + view.size
                self._io.wrote(view.size)
                return start
            return self._write_at_wp(z, rel, view, "append")

    def append_batch(self, zones, data, lengths, qd: int = 32) -> tuple[np.ndarray, list]:
        """See ``ZonedDevice.append_batch``: one ``append`` after another (``SerialAppends``), checked
        once for the batch and with ``append``'s usual case inline (the same writes and charges in
        the same order). An ``append`` replaced on the instance (a test's spy) is called per unit."""
        if "append" in self.__dict__:
            return SerialAppends.append_batch(self, zones, data, lengths, qd)
        zones, _, units = check_append_batch(self.geometry, zones, data, lengths)
        g = self.geometry
        cap, zsize = g.zone_capacity, g.zone_size
        wp, conds = self._wp, self._cond
        # this class's medium (not a view's): the backing written inline, the model charged once for
        # a run of usual appends (one queue of depth 1 is the same charges one after the other)
        own = type(self)._media_write is EmulatedZonedDevice._media_write
        media = self._backing.data if own and type(self._backing) is Backing else None
        write = self._backing.write if own else None
        # a view whose appends may wait (``_deferrable``) writes a run of them at once (``_media_write_units``)
        defer = None if own else self._deferrable
        io = self._io
        whist = io.write_hist
        faults = self._faults
        offsets, failures, charged, pending = [], [], [], []
        with self._lock:
            for k, (z, view) in enumerate(zip(zones.tolist(), units)):
                rel = int(wp[z])
                cond = int(conds[z])
                n = view.size
                if (cond == ZoneCond.IMPLICIT_OPEN or cond == ZoneCond.EXPLICIT_OPEN) and not faults.writes \
                        and rel + n < cap and not self.readonly:
                    start = z * zsize + rel
                    if media is not None:
                        media[start:start + n] = view
                    elif write is not None:
                        write(start, view)
                    elif defer is not None and defer(z):
                        pending.append((start, view))
                    else:
                        if pending:                         # the writes stay in the batch's order
                            self._media_write_units(pending)
                        self._media_write(start, view)
                    if own:
                        charged.append(k)
                    wp[z] = rel + n
                    io.write_bytes += n
                    whist[n] += 1
                    offsets.append(start)
                    continue
                self._charge_appends(offsets, units, charged)
                if pending:
                    self._media_write_units(pending)
                try:
                    offsets.append(self._write_at_wp(z, rel, view, "append"))
                except (DeviceIOError, ZoneStateError) as e:
                    offsets.append(-1)
                    failures.append((k, e))
            self._charge_appends(offsets, units, charged)
            if pending:
                self._media_write_units(pending)
        return np.array(offsets, np.int64), failures

    def _charge_appends(self, offsets: list, units: list, charged: list) -> None:
        """Charge the appends ``charged`` (unit indices, written) as one serial queue; empties it."""
        if charged and self.model is not None:
            self._charge_batch(_WRITE, np.array([offsets[k] for k in charged], np.int64),
                               np.array([units[k].size for k in charged], np.int64), 1)
        charged.clear()

    def read(self, offset: int, length: int) -> np.ndarray:
        g = self.geometry
        check_aligned(offset, length, g.block_size, g.size, "read")
        with self._lock:
            first, last = g.zone_of(offset), g.zone_of(offset + length - 1)
            offline = np.nonzero(self._cond[first:last + 1] == ZoneCond.OFFLINE)[0]
            if offline.size:
                raise DeviceIOError(f"read of offline zone {first + int(offline[0])}", offset=offset)
            if self._faults.reads and self._faults.fires("read"):
                raise DeviceIOError(f"injected read failure at {offset}", offset=offset)
            out = self._media_read(offset, length)
            self._io.read(length)
            return out

    def read_batch(self, offsets: np.ndarray, lengths: np.ndarray, qd: int = 32, *,
                   words: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Read many ranges as one queue of requests (at most ``qd`` in flight). Returns the bytes
        concatenated in request order and each request's completion time on ``now()``'s clock.
        ``words`` (``word_reads``): instead of the bytes, the first 64-bit word of every block
        (uint64), all a payload-free medium keeps, without building the blocks; same checks, time
        and counters."""
        offsets = np.asarray(offsets, np.int64)
        lengths = np.asarray(lengths, np.int64)
        g = self.geometry
        check_batch(offsets, lengths, g.block_size, g.size, "read")
        with self._lock:
            if self._zones.nr_offline:       # only then find which zones the reads touch
                zs = np.unique(np.concatenate([offsets // g.zone_size, (offsets + lengths - 1) // g.zone_size]))
                bad = zs[self._cond[zs] == ZoneCond.OFFLINE]
                if bad.size:
                    raise DeviceIOError(f"read of offline zone {int(bad[0])}")
            if self._faults.reads and self._faults.fires("read"):
                raise DeviceIOError("injected read failure", offset=int(offsets[0]))
            n = int(lengths[0]) if lengths.size else 0
            if lengths.size > 8 and not (lengths != n).any():   # equal requests (a page each): one count
                self._io.read_alike(n, lengths.size)
            else:
                self._io.read_many(lengths)
            return self._media_read_batch(offsets, lengths, qd, words)

    # -- the medium: data in the backing, time in the SSD model (a zoned view overrides these) -----
    # ``_deferrable(z)``: a view whose usual appends to zone z cannot fail may take them in runs
    # (``_media_write_units``, the same writes in the same order); None: one ``_media_write`` each
    _deferrable = None

    def _media_write_units(self, units: list) -> None:
        for start, view in units:
            self._media_write(start, view)
        units.clear()

    def _media_write(self, start: int, view: np.ndarray) -> None:
        self._backing.write(start, view)
        self._charge(_WRITE, start, view.size)

    def _media_read(self, offset: int, length: int) -> np.ndarray:
        out = self._backing.read(offset, length)
        self._charge(_READ, offset, length)
        return out

    def _media_read_batch(self, offsets: np.ndarray, lengths: np.ndarray, qd: int,
                          words: bool = False) -> tuple[np.ndarray, np.ndarray]:
        gather = self._backing.gather_words if words else self._backing.gather
        out = gather(offsets, lengths, self.geometry.block_size)
        return out, self._charge_batch(_READ, offsets, lengths, qd)

    def _media_reset(self, z: int, written: int) -> None:
        if written:
            self._backing.zero(self.geometry.zone_start(z), written)
        if self.model is not None:
            self.model.reset(z)

    def _media_finish(self, z: int) -> None:
        if self.model is not None:
            self.model.finish(z)

    # -- failure injection (tests): ``injected_failures.py`` -----------------------------------------
    def inject_write_failures(self, n: int, after: int = 0) -> None:
        """Fail ``n`` writes/appends with DeviceIOError, after letting the next ``after`` succeed;
        nothing is written, the write pointer stays. Replaces an earlier injection."""
        with self._lock:
            self._faults.arm_writes(n, after)

    def inject_read_failures(self, n: int, after: int = 0) -> None:
        """Fail ``n`` reads (``read`` or ``read_batch`` calls) with DeviceIOError, after letting the
        next ``after`` succeed. Replaces an earlier injection."""
        with self._lock:
            self._faults.arm_reads(n, after)

    def injected_failures(self) -> tuple[int, int]:
        """(reads, writes) injected failures not raised yet: a test sees whether an operation
        reached the request it aimed at."""
        with self._lock:
            return self._faults.reads, self._faults.writes

    def set_zone_condition(self, z: int, cond: ZoneCond) -> None:
        """Make a zone READ_ONLY (readable, never writable again) or OFFLINE (nothing readable),
        as a drive does when flash wears out; releases the zone's open/active resources."""
        if cond not in (ZoneCond.READ_ONLY, ZoneCond.OFFLINE):
            raise ValueError("only READ_ONLY and OFFLINE can be injected")
        with self._lock:
            self._zones.set(self._zone_index(z), cond)

    # -- misc ------------------------------------------------------------------------------------

    def stats(self) -> DeviceStats:
        with self._lock:
            if self.model is None:
                s = DeviceStats(clock="none")
                self._io.fill(s)
                s.media_write_bytes = self._io.write_bytes
                return s
            m = self.model
            s = DeviceStats(clock="modeled", device_time_s=float(m.now),
                            media_write_bytes=int(m.media_write_bytes), erase_count=int(m.erase_count))
            return self._io.fill(s)

    def describe(self) -> dict:
        d = {"url": self.url, "kind": self.kind, "zoned": True, "path": self.path,
             "geometry": self.geometry.as_dict(), "preset": self.preset,
             "clock": "modeled" if self.model is not None else "none", "payload": self.payload,
             "open_zones": self._zones.nr_open, "active_zones": self._zones.nr_active, **self.timing_options(),
             "units": self.unit_traits().as_dict()}
        return d

    _persisted = property(lambda self: self._state)      # PersistedState's table
