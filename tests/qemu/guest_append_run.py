"""GUEST side: the io_uring device's writer of append runs on a real ring and a real zoned namespace
(``native/uring_store.c``: ``ur_run_check`` / ``ur_run_append`` through the ``zs_run_writer`` that
``LinuxZonedDevice.run_writer`` hands a caller's C call), driven directly, without the store: what
the store's usual ``swap_out`` call relies on. The host checks the writer's refusals
(tests/devices/test_uring_run.py); only here do the appends reach NVMe Zone Append through
/dev/ng0n2. Not collected on the host; tests/qemu/test_qemu_zns.py runs it in the guest's one pytest
session and checks its outcomes."""

import os

import numpy as np
import pytest

from zswap_host import open_device
from zswap_host.devices.zone import ZoneCond
from zswap_host.errors import ZoneStateError

DEVICE = os.environ.get("ZSWAP_ZNS_DEVICE", "/dev/nvme0n2")
LANDED, OTHER, REFUSED = 1, 2, 3                 # append_run.h's ZS_RUN_* statuses of an append


@pytest.fixture
def dev():
    d = open_device(DEVICE, zoned=True, io_engine="uring")
    d.reset_all()
    yield d
    d.reset_all()
    d.close()


class Run:
    """A caller's ``zs_run`` (filled through the store's module, ``zswap_host._native``, as
    ``st_out_call`` fills it) and the device's writer for it."""

    def __init__(self, dev):
        from zswap_host import _native
        self.ffi = ffi = _native.ffi
        self.run = ffi.new("zs_run *")
        self.port = dev.run_writer(int(ffi.cast("uintptr_t", self.run)))
        assert self.port is not None, dev.engine_stats()     # the uring-cmd path
        self.w = ffi.cast("zs_run_writer *", self.port.writer)
        self._keep = []

    def fill(self, segs, units, expect: int, version: int = 1) -> None:
        """``units``: (zone, length) per unit, cut in order from ``segs`` (one or two uint8 arrays)."""
        ffi, r = self.ffi, self.run
        segs = list(segs) + [None] * (2 - len(segs))
        ptrs = [ffi.from_buffer("uint8_t[]", s) if s is not None else ffi.NULL for s in segs]
        self._keep = [segs, ptrs]
        r.version, r.nunits, r.expect = version, len(units), expect
        r.seg0, r.seg0_len = ptrs[0], 0 if segs[0] is None else segs[0].nbytes
        r.seg1, r.seg1_len = ptrs[1], 0 if segs[1] is None else segs[1].nbytes
        for i, (z, n) in enumerate(units):
            r.zones[i], r.lens[i] = z, n

    def check(self) -> int:
        return self.w.check(self.w.ctx, self.run)

    def append(self, qd: int = 1) -> tuple[int, int]:
        """(status, units) as the caller's C call returns them through the device's port."""
        rc = self.port(qd, lambda: (self.w.append(self.w.ctx, self.run) << 8) | self.run.nunits)
        return rc >> 8, rc & 255


def data(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


def zone(dev, z: int):
    return dev.report_zones()[z]


def test_a_run_from_two_buffers_lands_back_to_back_and_is_counted(dev):
    g = dev.geometry
    top, mine = data(2 * (128 << 10), 1), data(g.max_append, 2)      # a buffer's unit + the caller's
    r = Run(dev)
    start = zone(dev, 0).start
    r.fill([top, mine], [(0, 128 << 10), (0, 128 << 10), (0, g.max_append)], expect=start)
    assert r.check() == 0
    before = dev.stats().device_write_bytes
    assert r.append(qd=1) == (LANDED, 3)
    n = top.nbytes + mine.nbytes
    assert zone(dev, 0).wp == start + n
    assert np.array_equal(dev.read(start, n), np.concatenate([top, mine]))
    assert dev.stats().device_write_bytes - before == n


def test_a_run_past_the_append_limit_in_units_of_the_limit_lands(dev):
    g = dev.geometry
    k = 4                                               # 4 units of the largest append: 2 MiB at 512 KiB
    buf = data(k * g.max_append, 3)
    r = Run(dev)
    start = zone(dev, 1).start
    r.fill([buf], [(1, g.max_append)] * k, expect=start)
    assert r.append(qd=1) == (LANDED, k)
    assert np.array_equal(dev.read(start, buf.nbytes), buf)


def test_a_run_that_lands_elsewhere_says_where_and_loses_nothing(dev):
    """A zone already holding data (expect behind its write pointer) and units spread over two
    zones at depth 4: not back to back, so the device gives each unit's offset."""
    g = dev.geometry
    head = data(64 << 10, 4)
    dev.append(2, head)
    units = [(2, 64 << 10), (3, 128 << 10), (2, 64 << 10), (3, 64 << 10)]
    buf = data(sum(n for _, n in units), 5)
    r = Run(dev)
    r.fill([buf], units, expect=zone(dev, 2).start)
    status, k = r.append(qd=4)
    assert (status, k) == (OTHER, 4)
    offsets, failures = r.port.results((status << 8) | k, 4, (buf,))
    assert failures == []
    cut = np.cumsum([0] + [n for _, n in units])
    for i, (z, n) in enumerate(units):
        zs = zone(dev, z)
        assert zs.start <= offsets[i] < zs.start + g.zone_size
        assert np.array_equal(dev.read(int(offsets[i]), n), buf[cut[i]:cut[i + 1]])
    assert zone(dev, 2).wp == zone(dev, 2).start + (64 << 10) * 3
    assert zone(dev, 3).wp == zone(dev, 3).start + (192 << 10)
    assert np.array_equal(dev.read(zone(dev, 2).start, head.nbytes), head)


def test_units_into_a_full_zone_fail_typed_and_the_others_land(dev):
    dev.finish_zone(4)
    assert zone(dev, 4).cond == ZoneCond.FULL
    units = [(5, 64 << 10), (4, 64 << 10), (5, 64 << 10)]
    buf = data(3 * (64 << 10), 6)
    r = Run(dev)
    r.fill([buf], units, expect=zone(dev, 5).start)
    status, k = r.append(qd=1)
    assert status == OTHER
    offsets, failures = r.port.results((status << 8) | k, 1, (buf,))
    assert [i for i, _ in failures] == [1] and isinstance(failures[0][1], ZoneStateError), failures
    assert offsets[1] == -1
    start = zone(dev, 5).start
    assert sorted(offsets[[0, 2]].tolist()) == [start, start + (64 << 10)]
    for i in (0, 2):
        assert np.array_equal(dev.read(int(offsets[i]), 64 << 10), buf[i * (64 << 10):(i + 1) * (64 << 10)])


@pytest.mark.parametrize("what", ["version", "zone", "length", "too_long"])
def test_a_run_the_device_cannot_take_sends_nothing(dev, what):
    g = dev.geometry
    units = [(6, 64 << 10)]
    version = 1
    if what == "version":
        version = 2
    elif what == "zone":
        units = [(g.nr_zones, 64 << 10)]
    elif what == "length":
        units = [(6, (64 << 10) + 512)]
    else:
        units = [(6, g.max_append + g.block_size)]
    buf = data(units[0][1], 7)
    r = Run(dev)
    r.fill([buf], units, expect=zone(dev, 6).start, version=version)
    assert r.check() == (-11 if what == "version" else -9)
    if what != "version":                           # the append refuses the same run, nothing sent
        assert r.append(qd=1)[0] == REFUSED
    assert zone(dev, 6).wp == zone(dev, 6).start and zone(dev, 6).cond == ZoneCond.EMPTY
