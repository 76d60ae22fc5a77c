"""The I/O engines (devices/io_engine.py, native/uring.c) on a real kernel: io_uring through
liburing against the synchronous engine on loop devices (root), a regular file for short reads, and
the fallback when the ring cannot run. Zone appends through io_uring passthrough need an NVMe zoned
namespace: they are tested in the QEMU guest (tests/qemu/guest_conformance.py and guest_store.py run
with both engines, tests/qemu/test_fio_parity.py counts appends in flight per zone)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from zswap_host.cli import main
from zswap_host.devices import io_engine
from zswap_host.devices.direct_io import aligned_empty
from zswap_host.devices.io_engine import SyncEngine, UringEngine, engine_default, open_engine, uring_unavailable
from zswap_host.devices.linux_block import LinuxBlockDevice
from zswap_host.errors import DeviceIOError, DeviceSpecError

from loop_devices import loopdev, needs_loop  # noqa: F401  (loopdev: a fixture)

URING = uring_unavailable()
needs_uring = pytest.mark.skipif(URING is not None, reason=URING or "")
PAGE = 4096


def _pages(n: int, seed: int) -> np.ndarray:
    buf = aligned_empty(n * PAGE)
    buf[:] = np.random.default_rng(seed).integers(0, 256, buf.size, dtype=np.uint8)
    return buf


@needs_uring
@needs_loop
@pytest.mark.parametrize("fixed", [True, False])
def test_uring_batches_read_back_what_sync_wrote(loopdev, fixed):
    path, _ = loopdev
    fd = os.open(path, os.O_RDWR | os.O_DIRECT)
    try:
        ring, sync = UringEngine(64), SyncEngine()
        ring.fixed = fixed
        n = 300                                   # more than the ring: the engine refills it
        offs = (np.random.default_rng(1).permutation(8192)[:n] * PAGE).astype(np.int64)
        lens = np.full(n, PAGE, np.int64)
        data = _pages(n, 2)
        res, _ = sync.rw(fd, True, data, offs, lens, 1)
        assert (res == PAGE).all()
        out = aligned_empty(n * PAGE)
        res, done = ring.rw(fd, False, out, offs, lens, 32)
        assert (res == PAGE).all() and np.array_equal(out, data)
        assert np.isfinite(done).all()
        st = ring.stats()
        assert st["requests"] == n and st["max_in_flight"] == 32
        assert st["fixed_batches"] == int(fixed)
    finally:
        os.close(fd)


@needs_uring
@needs_loop
def test_writes_with_one_zone_key_keep_their_order(loopdev):
    """Writes sharing a zone key go one at a time, in order: the last write to a block wins. Other
    keys run beside them."""
    path, _ = loopdev
    fd = os.open(path, os.O_RDWR | os.O_DIRECT)
    try:
        ring = UringEngine(64)
        n = 64
        offs = np.where(np.arange(n) % 2 == 0, 0, (np.arange(n) + 10) * PAGE).astype(np.int64)
        zones = (np.arange(n) % 2).astype(np.int64)         # key 0: 32 writes to block 0
        data = _pages(n, 3)
        res, _ = ring.rw(fd, True, data, offs, np.full(n, PAGE, np.int64), 32, zones=zones, nzones=2)
        assert (res == PAGE).all()
        out = aligned_empty(PAGE)
        os.preadv(fd, [out], 0)
        assert np.array_equal(out, data[(n - 2) * PAGE:(n - 1) * PAGE])
    finally:
        os.close(fd)


@needs_uring
def test_short_read_is_reported_as_bytes(tmp_path):
    f = tmp_path / "short"
    f.write_bytes(b"x" * 6144)
    fd = os.open(f, os.O_RDONLY)
    try:
        out = aligned_empty(2 * PAGE)
        res, _ = UringEngine(4).rw(fd, False, out, np.array([0, PAGE], np.int64), np.full(2, PAGE, np.int64), 2)
        assert res.tolist() == [PAGE, 2048]
        assert bytes(out[:6144]) == b"x" * 6144
    finally:
        os.close(fd)


@needs_loop
@pytest.mark.parametrize("engine", ["uring", "sync"])
def test_device_batches_on_both_engines(loopdev, engine):
    if engine == "uring" and URING:
        pytest.skip(URING)
    path, _ = loopdev
    dev = LinuxBlockDevice(path, io_engine=engine, io_depth=16)
    try:
        assert dev.io_engine == engine and dev.io_depth == (16 if engine == "uring" else 1)
        n = 40
        offs = (np.arange(n)[::-1] * 3 * PAGE).astype(np.int64)
        lens = np.full(n, PAGE, np.int64)
        lens[::5] = 2 * PAGE
        data = _pages(int(lens.sum()) // PAGE, 4)
        done = dev.write_batch(offs, data, lens, qd=8)
        assert done.shape == (n,) and (done >= 0).all()
        out, done = dev.read_batch(offs, lens, qd=8)
        assert np.array_equal(out, data) and out.ctypes.data % PAGE == 0
        st = dev.stats()
        assert st.device_write_bytes == st.device_read_bytes == int(lens.sum())
        assert dev.engine_stats()["requests"] == 2 * n
        assert dev.engine_stats()["max_batches_at_once"] == 1          # one thread: never two at once
        assert dev.describe()["io_engine"]["engine"] == engine
    finally:
        dev.close()


@needs_loop
@pytest.mark.parametrize("engine", ["uring", "sync"])
def test_failed_batch_raises_device_io_error_with_offset_and_errno(loopdev, engine):
    """A kernel error on one request (EBADF: the fd cannot read) is DeviceIOError naming the first
    failed request's offset and errno, raised after the batch completed."""
    if engine == "uring" and URING:
        pytest.skip(URING)
    path, _ = loopdev
    dev = LinuxBlockDevice(path, io_engine=engine)
    wfd = os.open(path, os.O_WRONLY | os.O_DIRECT)
    real, dev._fd = dev._fd, wfd
    try:
        with pytest.raises(DeviceIOError) as e:
            dev.read_batch(np.array([3 * PAGE, 0], np.int64), np.full(2, PAGE, np.int64))
        assert e.value.offset == 3 * PAGE and e.value.errno == errno.EBADF
        assert "EBADF" in str(e.value)
    finally:
        dev._fd = real
        os.close(wfd)
        dev.close()


@needs_loop
def test_short_device_read_is_a_device_io_error(loopdev, tmp_path):
    path, _ = loopdev
    dev = LinuxBlockDevice(path)
    f = tmp_path / "short"
    f.write_bytes(b"y" * 6144)
    ffd = os.open(f, os.O_RDONLY)
    real, dev._fd = dev._fd, ffd
    try:
        with pytest.raises(DeviceIOError, match="short read at 4096: 2048 of 4096"):
            dev.read_batch(np.array([0, PAGE], np.int64), np.full(2, PAGE, np.int64))
    finally:
        dev._fd = real
        os.close(ffd)
        dev.close()


def test_uring_that_cannot_run_falls_back_to_sync_with_one_line(monkeypatch, capsys):
    def missing():
        raise ImportError("no _uring")

    monkeypatch.setattr(io_engine, "_uring_lib", missing)
    e = open_engine("uring", what="/dev/x")
    assert isinstance(e, SyncEngine)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "/dev/x" in err[0] and "liburing" in err[0]


def test_engine_names_and_depths_are_checked():
    with pytest.raises(DeviceSpecError, match="unknown I/O engine"):
        open_engine("aio")
    with pytest.raises(DeviceSpecError, match="1..4096"):
        open_engine("sync", depth=0)
    with engine_default("sync"):
        assert open_engine(None).name == "sync"
    with pytest.raises(DeviceSpecError):
        with engine_default("posix"):
            pass


@needs_loop
def test_info_shows_the_engine_and_depth(loopdev):
    path, _ = loopdev
    r = CliRunner().invoke(main, ["info", path, "--io-engine", "sync"])
    assert r.exit_code == 0, r.output
    assert "io engine  sync, depth 1" in r.output
    if URING is None:
        r = CliRunner().invoke(main, ["info", path, "--json"])
        assert r.exit_code == 0, r.output
        assert '"engine": "uring"' in r.output and '"depth": 64' in r.output


def test_bad_io_engine_is_a_one_line_usage_error():
    r = subprocess.run([sys.executable, "-m", "zswap_host.cli", "info", "emu://?zones=4", "--io-engine", "aio"], capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "aio" in r.stderr


@needs_uring
@needs_loop
def test_registered_buffers_are_off_by_default_and_can_be_turned_on(loopdev):
    path, _ = loopdev
    dev = LinuxBlockDevice(path, io_engine="uring")
    try:
        assert dev.registered_buffers is False
        offs, lens = np.arange(8, dtype=np.int64) * PAGE, np.full(8, PAGE, np.int64)
        dev.read_batch(offs, lens)
        assert dev.engine_stats()["fixed_batches"] == 0
        dev.registered_buffers = True
        data = _pages(8, 9)
        dev.write_batch(offs, data, lens)
        out, _ = dev.read_batch(offs, lens)
        assert np.array_equal(out, data) and dev.engine_stats()["fixed_batches"] == 2
    finally:
        dev.close()
    sync = LinuxBlockDevice(path, io_engine="sync")
    try:
        sync.registered_buffers = True
        assert sync.registered_buffers is False
    finally:
        sync.close()


@needs_uring
def test_append_run_refuses_bad_batches_before_sending_and_reports_a_refused_command():
    """``UringEngine.append_run`` (``ur_append_run``): a batch whose buffers are not dword aligned,
    do not hold the requests exactly, has a request too long or a zone out of range, or too many
    requests, is refused with nothing sent (the caller's general path names the error). On a file
    that takes no NVMe commands (``/dev/null``) the requests complete without landing where the
    store expects them: 0, with the results and LBAs."""
    eng = UringEngine(16, passthrough=True)
    fd = os.open("/dev/null", os.O_RDWR)
    try:
        data = aligned_empty(6 * PAGE)
        lens = np.array([2 * PAGE, PAGE, 3 * PAGE], np.int64)
        zones = np.array([1, 1, 1], np.int64)

        def run(segs, lengths=lens, zs=zones, max_len=4 * PAGE):
            return eng.append_run(fd, 1, PAGE, 256, 4, 8, segs, lengths, zs, 256, max_len)

        assert run((data[1:6 * PAGE - 3],))[0] == -errno.EINVAL             # not dword aligned
        assert run((data[:5 * PAGE],))[0] == -errno.EINVAL                  # does not add up
        assert run((data[:PAGE], data[PAGE:]))[0] == -errno.EINVAL          # a request across buffers
        assert run((data,), max_len=2 * PAGE)[0] == -errno.EINVAL           # longer than the append limit
        assert run((data,), zs=np.array([1, 1, 4], np.int64))[0] == -errno.EINVAL
        assert run((data.reshape(6, PAGE)[:, :PAGE // 2],))[0] == -errno.EINVAL   # not contiguous
        many = np.full(65, PAGE, np.int64)
        assert run((aligned_empty(65 * PAGE),), many, np.ones(65, np.int64))[0] == -errno.E2BIG
        assert eng.stats()["requests"] == 0
        r, res, alba = run((data[:2 * PAGE], data[2 * PAGE:]))
        assert r == 0 and len(res) == 3 and alba.size == 3
        assert eng.stats()["requests"] == 3
    finally:
        os.close(fd)
        eng.close()
