"""I/O engines of the Linux device backends: how a batch of ``O_DIRECT`` reads, writes or NVMe zone
appends reaches the kernel.

- ``uring`` (:class:`UringEngine`): io_uring through liburing (``native/uring.c``, the
  ``zswap_host._uring`` extension). A whole batch goes down at the requested queue depth,
  completions are reaped in bulk, the caller's buffer is registered for the batch (pinned once, not
  per request), and data moves straight between the device and that buffer. Zone appends go as
  NVMe commands through ``IORING_OP_URING_CMD`` on the namespace's generic char device
  (``/dev/ngXnY``), several in flight to one zone.
- ``sync`` (:class:`SyncEngine`): one blocking ``pread``/``pwrite`` (or one passthrough ioctl) after
  another: queue depth 1, whatever was asked.

Both take the same arguments: a buffer holding the batch's data back to back, byte offsets and
lengths per request; they return per request the result (bytes, or ``-errno``) and the
``time.perf_counter()`` second at which it completed. They raise nothing for a request's failure:
the device turns results into its typed errors. :func:`open_engine` picks one; when ``uring`` is
asked for but cannot run, it falls back to ``sync`` and says why in one line on stderr.
"""

from __future__ import annotations

import contextlib
import errno
import sys
import time
from typing import Protocol

import numpy as np

from ..errors import DeviceSpecError

ENGINES = ("uring", "sync")
DEFAULT_DEPTH = 64          # ring entries; a batch's qd is clipped to it
_default = {"name": None}   # what open_engine(None) picks; set by engine_default (the CLI's --io-engine)


def check_engine(name: str | None) -> str | None:
    """``name`` itself when it is an engine (or None); ``DeviceSpecError`` otherwise."""
    if name is not None and name not in ENGINES:
        raise DeviceSpecError(f"unknown I/O engine {name!r}: use one of {', '.join(ENGINES)}")
    return name


@contextlib.contextmanager
def engine_default(name: str | None):
    """Within this block real devices opened without an explicit engine get ``name`` (None: uring)."""
    old = _default["name"]
    _default["name"] = check_engine(name)
    try:
        yield
    finally:
        _default["name"] = old


class IoEngine(Protocol):
    name: str
    depth: int

    def rw(self, fd: int, write: bool, buf: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, qd: int,
           zones: np.ndarray | None = None, nzones: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Read into / write from ``buf`` (uint8, contiguous; requests back to back). ``zones``: a
        zone per request; writes to one zone go in order, one in flight (writes at the write
        pointer). Returns (int32 results: bytes or -errno, float64 completion times)."""

    def stats(self) -> dict:
        """Counters since the engine was opened."""

    def close(self) -> None: ...


def _uring_lib():
    from .._uring import ffi, lib    # ImportError: built without liburing
    return ffi, lib


def _ptr(ffi, a: np.ndarray, ctype: str):
    """A C pointer to contiguous ``a``'s data (through the buffer protocol: ``a.ctypes`` builds a
    ctypes object per call, which costs more than the I/O call itself in a slow guest)."""
    return ffi.from_buffer(ctype.replace(" *", "[]"), a)


class SyncEngine:
    """Blocking syscalls one after another (depth 1)."""

    name = "sync"
    depth = 1
    fixed = False           # no registered buffers on blocking calls

    def __init__(self) -> None:
        self._n = {"batches": 0, "requests": 0, "max_in_flight": 0, "appends": 0, "max_appends_per_zone": 0}

    def rw(self, fd, write, buf, offsets, lengths, qd, zones=None, nzones=0):
        from .blkzoned import zoned_lib
        ffi, lib = zoned_lib()
        n = offsets.size
        res = np.empty(n, np.int32)
        done = np.empty(n)
        base, pos = buf.ctypes.data, 0
        call = lib.zd_pwrite if write else lib.zd_pread
        for k, (off, ln) in enumerate(zip(offsets.tolist(), lengths.tolist())):
            res[k] = call(fd, ffi.cast("void *", base + pos), ln, off)
            done[k] = time.perf_counter()
            pos += ln
        self._n["batches"] += 1
        self._n["requests"] += n
        self._n["max_in_flight"] = max(self._n["max_in_flight"], int(n > 0))
        return res, done

    def stats(self) -> dict:
        return {"engine": self.name, "depth": self.depth, **self._n}

    def close(self) -> None:
        pass


class UringEngine:
    """io_uring through liburing. ``passthrough``: the ring takes NVMe commands (big SQEs/CQEs)."""

    name = "uring"

    def __init__(self, depth: int = DEFAULT_DEPTH, passthrough: bool = False, registered: bool = False) -> None:
        ffi, lib = _uring_lib()
        self._ffi, self._lib = ffi, lib
        out = ffi.new("ur_engine **")
        r = lib.ur_open(depth, int(passthrough), out)
        if r < 0:
            import os
            raise OSError(-r, os.strerror(-r))
        self._e = out[0]
        self._st = None
        self._small = None         # append_small's arrays and pointers
        self._ptr_cache: dict = {}  # id(array) -> (array, pointer): append_run's reused plan arrays
        self._final: dict = {}
        self.depth = depth
        self.passthrough = passthrough
        self.fixed = registered

    @property
    def ffi(self):
        """The cffi FFI of the engine's C module (``zswap_host._uring``): what builds the pointers
        its C calls take."""
        return self._ffi

    @property
    def lib(self):
        """The engine's C module (``zswap_host._uring``'s lib): ``ur_run_check`` / ``ur_run_append``
        are the writer of append runs a caller's own C call reaches (``uring_store.py``)."""
        return self._lib

    @property
    def handle(self):
        """The ring (the C ``ur_engine *``), or None once closed: a caller's C call that holds it
        must check it is still this engine's before each use."""
        return self._e

    def address(self, buf: np.ndarray) -> int:
        """The address of contiguous ``buf``'s first byte (NVMe DMA needs it dword aligned)."""
        ffi = self._ffi
        return int(ffi.cast("uintptr_t", ffi.from_buffer("uint8_t[]", buf)))

    @property
    def fixed(self) -> bool:
        """True when batches use registered buffers: the batch's buffer is registered for the batch
        (one slot of a sparse table, updated per batch) and the requests go as READ_FIXED /
        WRITE_FIXED. Off by default: in the QEMU guest, registering 1 MiB per batch of 256 reads cost
        more (26.5 ms a batch) than pinning per request saved (18.9 ms without); see
        docs/real-devices.md."""
        return bool(self._lib.ur_fixed(self._e))

    @fixed.setter
    def fixed(self, on: bool) -> None:
        self._lib.ur_set_fixed(self._e, int(on))

    def _arrays(self, n: int):
        return np.empty(n, np.int32), np.empty(n, np.int64)

    def rw(self, fd, write, buf, offsets, lengths, qd, zones=None, nzones=0):
        ffi, lib = self._ffi, self._lib
        n = offsets.size
        res, done_ns = self._arrays(n)
        offsets = np.ascontiguousarray(offsets, np.int64)
        lengths = np.ascontiguousarray(lengths, np.int64)
        z = np.ascontiguousarray(zones, np.int64) if zones is not None else None
        r = lib.ur_rw(self._e, fd, int(write), _ptr(ffi, buf, "uint8_t *"),
                      _ptr(ffi, offsets, "int64_t *"), _ptr(ffi, lengths, "int64_t *"), n, max(1, qd),
                      _ptr(ffi, z, "int64_t *") if z is not None else ffi.NULL, nzones,
                      _ptr(ffi, res, "int32_t *"), _ptr(ffi, done_ns, "int64_t *"))
        if r == -22 and n:                  # EINVAL from the call itself: a bad length or zone
            raise ValueError("io_uring batch refused: a length is not positive or a zone is out of range")
        return res, done_ns / 1e9

    def append(self, ngfd: int, nsid: int, lba_size: int, zone_lbas: int, units: list[np.ndarray] | None,
               lengths: np.ndarray, zones: np.ndarray, nzones: int, qd: int, addrs: list[int] | None = None):
        """NVMe Zone Appends through ``IORING_OP_URING_CMD``, request i from ``units[i]`` (a
        contiguous, dword-aligned uint8 array kept alive by the caller until this returns), or from
        the address ``addrs[i]`` (memory the caller keeps alive): returns (results: 0, -errno or
        NVMe status; the LBA each landed at; completion times)."""
        ffi, lib = self._ffi, self._lib
        n = lengths.size
        res, done_ns = self._arrays(n)
        alba = np.empty(n, np.uint64)
        lengths = np.ascontiguousarray(lengths, np.int64)
        z = np.ascontiguousarray(zones, np.int64)
        if addrs is None:
            addrs = [u.ctypes.data for u in units]
        addr = np.array(addrs, np.uint64)
        fb = ffi.from_buffer
        r = lib.ur_zone_append(self._e, ngfd, nsid, lba_size, zone_lbas, fb("uint64_t[]", addr),
                               fb("int64_t[]", lengths), fb("int64_t[]", z), nzones, n,
                               max(1, qd), fb("int32_t[]", res), fb("uint64_t[]", alba),
                               fb("int64_t[]", done_ns))
        if r == -22 and n:
            raise ValueError("zone append batch refused: a length is not whole blocks or a zone is out of range")
        if r == -95:                       # EOPNOTSUPP: a ring without big SQEs
            raise ValueError("this ring was opened without passthrough")
        return res, alba, done_ns / 1e9

    SMALL = 64          # requests a batch of ``append_small`` takes

    def append_small(self, ngfd: int, nsid: int, lba_size: int, zone_lbas: int, nzones: int, qd: int,
                     zones: list[int], lengths: list[int], addrs: list[int]) -> tuple[list[int], np.ndarray]:
        """``append`` of at most ``SMALL`` requests given as int lists (the store's batch of write
        units), through arrays and C pointers made once per engine: no array allocation and no
        ``from_buffer`` per batch (each costs more than the ring's work in a slow guest). Returns
        (results as ints, the LBA each landed at, a new int64 array). Callers serialise batches
        (the arrays are the engine's); ``ValueError`` as ``append``."""
        sc = self._small
        if sc is None:
            sc = self._small = self._make_small()
        (addr, lens, zone, res, alba, _), p = sc
        n = len(lengths)
        addr[:n] = addrs
        lens[:n] = lengths
        zone[:n] = zones
        r = self._lib.ur_zone_append(self._e, ngfd, nsid, lba_size, zone_lbas, p[0], p[1], p[2], nzones, n,
                                     max(1, qd), p[3], p[4], p[5])
        if r == -22 and n:
            raise ValueError("zone append batch refused: a length is not whole blocks or a zone is out of range")
        if r == -95:
            raise ValueError("this ring was opened without passthrough")
        return res[:n].tolist(), alba[:n].astype(np.int64)

    def append_run(self, ngfd: int, nsid: int, lba_size: int, zone_lbas: int, nzones: int, qd: int, segs: tuple,
                   lengths: np.ndarray, zones: np.ndarray, expect_lba: int, max_len: int) -> tuple:
        """The store's usual batch in one C call (``ur_append_run``): the appends of ``lengths`` /
        ``zones`` (int64 arrays the caller reuses: their pointers are cached) cut back to back from
        ``segs`` (one or two C-contiguous arrays), each at most ``max_len`` bytes. Returns
        (1, None, None) when every append landed back to back in order from ``expect_lba``;
        (0, results, LBAs) as ``append_small`` when they completed otherwise; (-errno, None, None)
        when the batch was refused with nothing sent (not aligned, not adding up, too many: the
        caller takes the general path). Callers serialise batches (the result arrays are the
        engine's)."""
        n = lengths.size
        if n > self.SMALL or not 0 < len(segs) <= 2:
            return -errno.E2BIG, None, None
        for s in segs:
            if type(s) is not np.ndarray or not s.flags.c_contiguous:
                return -errno.EINVAL, None, None
        sc = self._small
        if sc is None:
            sc = self._small = self._make_small()
        (_, _, _, res, alba, _), p = sc
        fb = self._ffi.from_buffer
        pc = self._ptr_cache
        lp = pc.get(id(lengths))
        if lp is None or lp[0] is not lengths:
            if len(pc) > 512:
                pc.clear()
            lp = pc[id(lengths)] = (lengths, fb("int64_t[]", lengths))
        zp = pc.get(id(zones))
        if zp is None or zp[0] is not zones:
            zp = pc[id(zones)] = (zones, fb("int64_t[]", zones))
        s0 = segs[0]
        if len(segs) == 2:
            s1 = segs[1]
            a1, b1 = fb("uint8_t[]", s1), s1.nbytes
        else:
            a1, b1 = self._ffi.NULL, 0
        r = self._lib.ur_append_run(self._e, ngfd, nsid, lba_size, zone_lbas, fb("uint8_t[]", s0), s0.nbytes, a1, b1,
                                    lp[1], max_len, zp[1], nzones, n, max(1, qd), expect_lba, p[3], p[4])
        if r:
            return r, None, None
        return 0, res[:n].tolist(), alba[:n].astype(np.int64)

    def small_arrays(self) -> tuple:
        """``append_small``'s arrays (addresses, lengths, zones, results, LBAs, times; ``SMALL`` each)
        and their C pointers, made once per engine: what a caller holding the device's append lock
        hands to a C call of its own (``devices/uring_store.py``)."""
        if self._small is None:
            self._small = self._make_small()
        return self._small

    def _make_small(self) -> tuple:
        n = self.SMALL
        arrays = (np.zeros(n, np.uint64), np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int32),
                  np.zeros(n, np.uint64), np.zeros(n, np.int64))
        fb = self._ffi.from_buffer
        types = ("uint64_t[]", "int64_t[]", "int64_t[]", "int32_t[]", "uint64_t[]", "int64_t[]")
        return arrays, tuple(fb(t, a) for t, a in zip(types, arrays))

    def max_appends_per_zone(self) -> int:
        """The most appends seen in flight to one zone at once."""
        if self._e is None:
            return int(self._final.get("max_appends_per_zone", 0))
        st = self._st
        if st is None:
            st = self._st = self._ffi.new("ur_stats *")     # one struct for every batch's look
        self._lib.ur_get_stats(self._e, st)
        return int(st.max_appends_per_zone)

    def stats(self) -> dict:
        if self._e is None:
            return self._final
        st = self._ffi.new("ur_stats *")
        self._lib.ur_get_stats(self._e, st)
        return {"engine": self.name, "depth": self.depth, "registered_buffers": self.fixed,
                "batches": st.batches, "requests": st.requests, "submit_calls": st.submit_calls,
                "fixed_batches": st.fixed_batches, "max_in_flight": st.max_in_flight,
                "appends": st.appends, "max_appends_per_zone": st.max_appends_per_zone}

    def close(self) -> None:
        if self._e is not None:
            self._final = self.stats()          # counters stay readable after close
            e, self._e = self._e, None
            self._lib.ur_close(e)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def uring_unavailable() -> str | None:
    """Why an io_uring engine cannot be opened here, or None when it can."""
    try:
        _uring_lib()
    except ImportError:
        return "zswap-host was built without liburing (apt install liburing-dev, then pip install -e . again)"
    try:
        UringEngine(2).close()
    except OSError as e:
        return f"io_uring_setup failed: {e.strerror} (kernel.io_uring_disabled or a seccomp policy?)"
    return None


def open_engine(name: str | None, depth: int = DEFAULT_DEPTH, what: str = "") -> IoEngine:
    """The engine ``name`` (``uring``, the default, or ``sync``) at ``depth``. ``uring`` that cannot
    run here falls back to ``sync`` with one line on stderr naming the reason. ``DeviceSpecError``
    for another name or a depth outside 1..4096."""
    name = check_engine(name) or _default["name"] or "uring"
    if not 1 <= depth <= 4096:
        raise DeviceSpecError(f"I/O depth must be 1..4096, not {depth}")
    if name == "sync":
        return SyncEngine()
    try:
        return UringEngine(depth)
    except ImportError:
        why = uring_unavailable()
    except OSError as e:
        why = f"io_uring_setup failed: {e.strerror}"
    print(f"zswap-host: {what + ': ' if what else ''}I/O engine sync instead of uring: {why}", file=sys.stderr)
    return SyncEngine()
