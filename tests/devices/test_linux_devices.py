"""Host tests of the Linux block-device backend and the safety refusals (devices/safety.py).

Loop devices stand in for disks (losetup; needs root). When loop devices are unavailable the loop
tests skip with the reason and the regular-file tests still run. The zoned backend itself is tested
against a real zoned namespace in tests/qemu/.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest
from click.testing import CliRunner

from zswap_host import open_device
from zswap_host.cli import main
from zswap_host.devices import BlockDevice, safety, sysfs
from zswap_host.devices import url as url_registry
from zswap_host.devices.blockdev import FileBlockDevice
from zswap_host.devices.direct_io import held_here
from zswap_host.errors import DeviceIOError, DeviceSpecError, InvalidIOError, NotZonedError, UnsafeDeviceError
from loop_devices import loopdev, needs_loop  # noqa: F401  (loopdev: a fixture)


def _run(*argv: str):
    return subprocess.run(list(argv), capture_output=True, text=True)


@needs_loop
def test_plain_loop_device_is_a_conventional_block_device(loopdev):
    dev_path, _ = loopdev
    dev = open_device(dev_path)
    try:
        assert dev.kind == "linux-block" and dev.size == 32 << 20 and dev.stats().clock == "wall"
        data = np.random.default_rng(1).integers(0, 256, 3 * 4096, dtype=np.uint8)
        dev.write(8192, data)
        assert np.array_equal(dev.read(8192, 3 * 4096), data)
        out, done = dev.read_batch(np.array([8192, 16384]), np.array([4096, 4096]))
        assert np.array_equal(out, data[np.r_[0:4096, 8192:12288]]) and done.size == 2
        dev.discard(0, 1 << 20)
        s = dev.stats()
        assert s.device_write_bytes == 3 * 4096 and s.write_size_histogram == {3 * 4096: 1}
    finally:
        dev.close()


@needs_loop
def test_zoned_mode_on_conventional_device_says_what_to_do(loopdev):
    dev_path, _ = loopdev
    with pytest.raises(NotZonedError) as e:
        open_device(dev_path, zoned=True)
    assert "--baseline-device" in str(e.value) and "not a zoned" in str(e.value).replace("not zoned", "not a zoned")
    r = CliRunner().invoke(main, ["zones", dev_path])
    assert r.exit_code == 2 and "zoned" in r.output


@needs_loop
@pytest.mark.skipif(not shutil.which("mkfs.ext4"), reason="mkfs.ext4 not installed")
def test_file_system_signature_is_refused_unless_forced(loopdev):
    dev_path, _ = loopdev
    assert _run("mkfs.ext4", "-q", "-F", dev_path).returncode == 0
    with pytest.raises(UnsafeDeviceError) as e:
        open_device(dev_path)
    assert "file system (ext" in str(e.value) and "--force" in str(e.value)
    open_device(dev_path, force=True).close()
    r = CliRunner().invoke(main, ["bench", "--quick", "--baseline-device", dev_path])
    assert r.exit_code == 2 and "file system" in r.output


@needs_loop
@pytest.mark.skipif(not shutil.which("mkswap"), reason="mkswap not installed")
def test_swap_signature_is_refused(loopdev):
    dev_path, _ = loopdev
    assert _run("mkswap", dev_path).returncode == 0
    with pytest.raises(UnsafeDeviceError, match="swap signature"):
        open_device(dev_path)


@needs_loop
def test_partition_table_is_refused(loopdev):
    dev_path, img = loopdev
    # a protective MBR and a GPT header, as written by any partitioning tool (no sfdisk needed)
    with open(img, "r+b") as f:
        mbr = bytearray(512)
        mbr[446:462] = bytes([0, 0, 2, 0, 0xEE, 0xFF, 0xFF, 0xFF]) + (1).to_bytes(4, "little") + (0xFFFFFFFF).to_bytes(4, "little")
        mbr[510:512] = b"\x55\xaa"
        f.write(mbr)
        f.write(b"EFI PART" + bytes(504))
    with open(dev_path, "rb") as f:      # drop cached blocks the loop device may hold
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    with pytest.raises(UnsafeDeviceError, match="partition table"):
        open_device(dev_path)


@needs_loop
def test_device_open_exclusively_elsewhere_is_refused(loopdev):
    dev_path, _ = loopdev
    fd = os.open(dev_path, os.O_RDONLY | os.O_EXCL)
    try:
        with pytest.raises(UnsafeDeviceError, match="exclusively"):
            open_device(dev_path)
        r = CliRunner().invoke(main, ["bench", "--quick", "--baseline-device", dev_path])
        assert r.exit_code == 2 and "exclusively" in r.output
    finally:
        os.close(fd)
    open_device(dev_path).close()          # free again


@needs_loop
@pytest.mark.skipif(not shutil.which("mkfs.ext4"), reason="mkfs.ext4 not installed")
def test_mounted_device_is_refused_even_after_wiping_nothing(loopdev, tmp_path):
    dev_path, _ = loopdev
    assert _run("mkfs.ext4", "-q", "-F", dev_path).returncode == 0
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = _run("mount", dev_path, str(mnt))
    if r.returncode != 0:
        pytest.skip(f"mount is not permitted here: {r.stderr.strip()}")
    try:
        with pytest.raises(UnsafeDeviceError, match="mounted"):
            open_device(dev_path)
        assert safety.mounted_at(dev_path)
        # inspecting is allowed: info opens read-only and claims nothing
        r = CliRunner().invoke(main, ["info", dev_path, "--json"])
        assert r.exit_code == 0, r.output
        assert '"size": %d' % (32 << 20) in r.output
        dev = open_device(dev_path, readonly=True)
        try:
            with pytest.raises(DeviceIOError, match="EBADF"):
                dev.write(0, np.zeros(4096, np.uint8))
        finally:
            dev.close()
        assert safety.mounted_at(dev_path)
    finally:
        _run("umount", str(mnt))


@needs_loop
def test_a_device_our_store_wrote_is_not_mistaken_for_a_file_system(loopdev):
    dev_path, _ = loopdev
    dev = open_device(dev_path)
    dev.write(0, np.random.default_rng(7).integers(0, 256, 1 << 20, dtype=np.uint8))
    dev.close()
    open_device(dev_path).close()


def test_regular_file_with_swap_signature_is_refused(tmp_path):
    f = tmp_path / "swapfile"
    head = bytearray(1 << 20)
    head[4096 - 10:4096] = b"SWAPSPACE2"
    f.write_bytes(bytes(head))
    with pytest.raises(UnsafeDeviceError, match="swap signature"):
        open_device(str(f))
    assert isinstance(open_device(str(f), force=True), FileBlockDevice)
    with safety.forced():
        open_device(str(f)).close()
    r = CliRunner().invoke(main, ["bench", "--quick", "--baseline-device", str(f)])
    assert r.exit_code == 2 and "swap signature" in r.output


def test_plain_file_is_accepted(tmp_path):
    f = tmp_path / "plain.img"
    f.write_bytes(bytes(1 << 20))
    open_device(str(f)).close()


def test_reset_asks_before_destroying_zones_that_hold_data(tmp_path):
    url = f"emu://{tmp_path}/z.img?zones=4&zone_size=1MiB&preset=none"
    dev = open_device(url)
    dev.write(0, np.ones(4096, np.uint8))
    dev.close()
    r = CliRunner().invoke(main, ["reset", url, "--all"], input="n\n")
    assert r.exit_code != 0 and "hold data" in r.output
    assert open_device(url).report_zones()[0].wp == 4096
    r = CliRunner().invoke(main, ["reset", url, "--all", "--yes"])
    assert r.exit_code == 0
    assert open_device(url).report_zones()[0].wp == 0


@pytest.mark.parametrize("head, found", [
    (b"XFSB", "xfs"),
    (bytes(65536 + 64) + b"_BHRfS_M", "btrfs"),
    (bytes(1024) + (0xF2F52010).to_bytes(4, "little"), "f2fs"),
])
def test_magic_probe_recognises_file_systems(head, found):
    assert found in safety._magic_signature(head + bytes(128 << 10))


def test_magic_probe_ignores_random_data():
    rng = np.random.default_rng(3)
    for _ in range(50):
        assert safety._magic_signature(rng.integers(0, 256, 128 << 10, dtype=np.uint8).tobytes()) is None


@needs_loop
def test_second_handle_in_the_same_process_shares_the_claim(loopdev):
    """bench opens the baseline device for one run while an earlier handle is still open: that is us,
    not another program; a different process still sees the device as busy."""
    dev_path, _ = loopdev
    first = open_device(dev_path)
    try:
        second = open_device(dev_path)
        second.close()
        r = subprocess.run([os.sys.executable, "-c", f"from zswap_host import open_device; open_device({dev_path!r})"],
                           capture_output=True, text=True)
        assert r.returncode != 0 and "exclusively" in r.stderr
    finally:
        first.close()
    open_device(dev_path).close()


@needs_loop
def test_linux_block_device_implements_the_block_protocol(loopdev):
    dev_path, _ = loopdev
    dev = open_device(dev_path)
    try:
        assert isinstance(dev, BlockDevice) and not dev.zoned and dev.kind == "linux-block"
        assert dev.describe()["zoned"] is False and dev.url == dev_path
        t0 = dev.now()
        dev.advance(3600.0)                        # a wall clock: idle time is not the host's to add
        assert t0 <= dev.now() < t0 + 3600.0
        data = np.random.default_rng(2).integers(0, 256, 3 * 4096, dtype=np.uint8)
        with pytest.raises(InvalidIOError, match="outside the device"):
            dev.write_batch(np.array([0, dev.size - 4096]), data, np.array([4096, 8192]))
        with pytest.raises(InvalidIOError, match="lengths add up"):
            dev.write_batch(np.array([0]), data, np.array([4096]))
        assert dev.stats().device_write_bytes == 0 and not dev.read(0, 4096).any()   # nothing written
        done = dev.write_batch(np.array([65536, 0]), data, np.array([8192, 4096]))
        assert done.shape == (2,) and done[0] <= done[1] <= dev.now()
        assert np.array_equal(dev.read(65536, 8192), data[:8192]) and np.array_equal(dev.read(0, 4096), data[8192:])
        got, done = dev.read_groups(np.array([65536, 0]), np.array([8192, 4096]), np.array([1, 1]), np.array([1, 1]))
        assert np.array_equal(got, data) and done.shape == (2,)
        with pytest.raises(InvalidIOError, match="not aligned"):
            dev.read_batch(np.array([0, 100]), np.array([4096, 4096]))
    finally:
        dev.close()


@needs_loop
def test_sysfs_describes_a_loop_device_and_the_claim_is_released(loopdev):
    dev_path, _ = loopdev
    assert sysfs.zoned_model(dev_path) == "none" and not sysfs.is_nvme_namespace(dev_path)
    lim = sysfs.queue_zone_limits(sysfs.queue_dir(dev_path))
    assert lim.zone_sectors == lim.nr_zones == 0 and lim.block_size in (512, 4096)
    assert os.path.basename(sysfs.sysfs_dir(dev_path)) == os.path.basename(dev_path)
    assert not held_here(dev_path)
    dev = open_device(dev_path)
    assert held_here(dev_path)
    dev.close()
    dev.close()                                    # twice is allowed
    assert not held_here(dev_path)


def test_a_bare_path_goes_to_the_scheme_of_its_file_type(tmp_path):
    f = tmp_path / "plain.img"
    f.write_bytes(bytes(1 << 20))
    assert url_registry._scheme_for(str(f)) == ("file", str(f))
    with pytest.raises(DeviceSpecError, match="neither a regular file nor a block device"):
        open_device(str(tmp_path))
    if os.path.exists("/dev/loop-control") and os.path.exists("/dev/loop0"):
        assert url_registry._scheme_for("/dev/loop0") == ("block", "/dev/loop0")
