"""Emulated-device behaviour beyond the conformance suite: URLs, persistence, failure injection,
conventional devices."""

import numpy as np
import pytest

from zswap_host.devices import (EmulatedBlockDevice, EmulatedZonedDevice, FileBlockDevice, ZoneCond,
                                open_device)
from zswap_host.errors import (DeviceIOError, DeviceSpecError, InvalidIOError, NotZonedError,
                               ZoneStateError)
from zswap_host.units import format_size, parse_size

SMALL = "zones=6&zone_size=1MiB&zone_capacity=768KiB&max_open=2&max_active=3"


@pytest.mark.parametrize("text,value", [
    ("4096", 4096), ("4k", 4096), ("16MiB", 16 << 20), ("16M", 16 << 20), ("2GiB", 2 << 30),
    ("1GB", 10**9), ("0.5MiB", 512 << 10), (8192, 8192)])
def test_parse_size(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize("text", ["", "abc", "12XB", "-1", "0.3k"])
def test_parse_size_rejects(text):
    with pytest.raises(ValueError):
        parse_size(text)


def test_format_size():
    assert format_size(16 << 20) == "16MiB" and format_size(1536) == "1.5KiB" and format_size(12) == "12B"


def test_emu_url_geometry_and_defaults():
    dev = open_device(f"emu://?{SMALL}&max_append=128KiB&preset=none")
    g = dev.geometry
    assert (g.nr_zones, g.zone_size, g.zone_capacity, g.max_open, g.max_active, g.max_append) == \
        (6, 1 << 20, 768 << 10, 2, 3, 128 << 10)
    assert isinstance(dev, EmulatedZonedDevice) and dev.model is None
    assert dev.stats().clock == "none"
    dev.close()


@pytest.mark.parametrize("url,words", [
    ("foo://x", "unknown device URL scheme"),
    ("emu://?zones=4&zone_size=1MiB&zone_capacity=2MiB", "larger than the zone size"),
    ("emu://?zones=4&zone_size=1000", "not a multiple of the block size"),
    ("emu://?zones=0", "at least one zone"),
    ("emu://?zones=4&colour=red", "unknown parameter"),
    ("emu://?zones=four", "bad value for zones"),
    ("emu://?zones=4&zone_size=1MiB&preset=nope", "nope"),
    ("emu://?zones=4&zone_size=1MiB&max_open=5&max_active=3", "cannot exceed"),
    ("emu-conv://?size=1000", "multiple of the block size"),
    ("emu-conv://?size=1MiB&op=1.5", "op"),
    ("/no/such/file", "no such file"),
])
def test_bad_urls_raise_spec_errors(url, words):
    with pytest.raises(DeviceSpecError, match=words):
        open_device(url)


def test_zoned_mode_on_conventional_raises_not_zoned(tmp_path):
    with pytest.raises(NotZonedError, match="not a zoned device"):
        open_device("emu-conv://?size=1MiB&preset=none", zoned=True)
    f = tmp_path / "plain.img"
    f.write_bytes(b"\0" * 65536)
    with pytest.raises(NotZonedError):
        open_device(str(f), zoned=True)


def test_file_backed_zns_persists_zone_state(tmp_path):
    path = tmp_path / "z.img"
    url = f"emu://{path}?{SMALL}&preset=none"
    dev = open_device(url)
    data = np.arange(8192, dtype=np.uint32).view(np.uint8)[:8192]
    dev.write(0, data)
    dev.finish_zone(2)
    dev.write(3 << 20, data[:4096])
    dev.close_zone(3)
    dev.close()
    again = open_device(f"emu://{path}")  # geometry comes from the sidecar
    assert again.geometry.zone_capacity == 768 << 10
    report = again.report_zones()
    # reopening acts like a controller reset: open zones come back CLOSED
    assert [z.cond for z in report[:4]] == [ZoneCond.CLOSED, ZoneCond.EMPTY, ZoneCond.FULL, ZoneCond.CLOSED]
    assert report[0].wp == 8192
    assert np.array_equal(again.read(0, 8192), data)
    again.write(8192, data[:4096])  # continues at the saved write pointer
    again.close()


def test_reopen_with_other_geometry_is_refused(tmp_path):
    path = tmp_path / "z.img"
    open_device(f"emu://{path}?{SMALL}&preset=none").close()
    with pytest.raises(DeviceSpecError, match="created with zones=6"):
        open_device(f"emu://{path}?zones=8")
    with pytest.raises(DeviceSpecError, match="not a conventional one"):
        open_device(f"emu-conv://{path}")
    open_device(f"emu-conv://{tmp_path / 'c.img'}?size=1MiB&preset=none").close()
    with pytest.raises(DeviceSpecError, match="not a zoned one"):
        open_device(f"emu://{tmp_path / 'c.img'}")


def test_injected_write_failure_leaves_zone_as_it_was():
    dev = open_device(f"emu://?{SMALL}&preset=none")
    dev.write(0, np.ones(4096, np.uint8))
    dev.inject_write_failures(2)
    for _ in range(2):
        with pytest.raises(DeviceIOError):
            dev.append(0, np.ones(4096, np.uint8))
    assert dev.report_zones()[0].wp == 4096
    assert dev.append(0, np.full(4096, 7, np.uint8)) == 4096
    dev.inject_read_failures(1)
    with pytest.raises(DeviceIOError):
        dev.read(0, 4096)
    assert dev.read(4096, 4096)[0] == 7


def test_read_only_and_offline_zones():
    dev = open_device(f"emu://?{SMALL}&preset=none")
    dev.write(0, np.full(4096, 3, np.uint8))
    dev.write(1 << 20, np.full(4096, 4, np.uint8))
    dev.set_zone_condition(0, ZoneCond.READ_ONLY)
    dev.set_zone_condition(1, ZoneCond.OFFLINE)
    assert dev.read(0, 4096)[0] == 3  # read-only data stays readable
    with pytest.raises(DeviceIOError):
        dev.write(4096, np.zeros(4096, np.uint8))
    with pytest.raises(DeviceIOError):
        dev.read(1 << 20, 4096)
    with pytest.raises(DeviceIOError):
        dev.reset_zone(1)
    # the two zones gave back their active resources: three more zones can be opened
    for z in (2, 3, 4):
        dev.write(z << 20, np.zeros(4096, np.uint8))
    assert dev.describe()["active_zones"] == 3


def test_zone_index_out_of_range():
    dev = open_device(f"emu://?{SMALL}&preset=none")
    with pytest.raises(InvalidIOError):
        dev.reset_zone(6)
    with pytest.raises(InvalidIOError):
        dev.read(6 << 20, 4096)


def test_write_crossing_zone_end_fails():
    dev = open_device("emu://?zones=2&zone_size=64KiB&preset=none")
    dev.write(0, np.zeros(60 << 10, np.uint8))
    with pytest.raises(ZoneStateError):
        dev.write(60 << 10, np.zeros(8192, np.uint8))


@pytest.mark.parametrize("url_fmt", ["emu-conv://?size=1MiB&preset=none", "emu-conv://{tmp}/c.img?size=1MiB&preset=none",
                                     "FILE"])
def test_block_devices_read_write_discard(url_fmt, tmp_path):
    if url_fmt == "FILE":
        f = tmp_path / "plain.img"
        f.write_bytes(b"\0" * (1 << 20))
        dev = open_device(str(f))
        assert isinstance(dev, FileBlockDevice) and dev.stats().clock == "wall"
    else:
        dev = open_device(url_fmt.format(tmp=tmp_path))
        assert isinstance(dev, EmulatedBlockDevice)
    data = np.random.default_rng(0).integers(0, 256, 12288, dtype=np.uint8)
    dev.write(40960, data)
    dev.write(4096, data[:4096])  # anywhere, in any order
    assert np.array_equal(dev.read(40960, 12288), data)
    dev.discard(40960, 8192)
    got = dev.read(40960, 12288)
    assert not got[:8192].any() and np.array_equal(got[8192:], data[8192:])
    with pytest.raises(InvalidIOError):
        dev.write(100, data[:4096])
    with pytest.raises(InvalidIOError):
        dev.read(dev.size, 4096)
    s = dev.stats()
    assert s.device_write_bytes == 16384 and s.write_size_histogram == {12288: 1, 4096: 1}
    assert s.discard_bytes == 8192
    dev.close()


def test_file_backed_conventional_reopens_with_data(tmp_path):
    url = f"emu-conv://{tmp_path}/c.img?size=1MiB&preset=none"
    dev = open_device(url)
    dev.write(8192, np.full(4096, 9, np.uint8))
    dev.close()
    again = open_device(f"emu-conv://{tmp_path}/c.img")
    assert again.size == 1 << 20 and again.read(8192, 4096)[0] == 9
    again.close()


@pytest.mark.parametrize("url", ["emu-conv://?size=1MiB&preset=none", "emu-conv://?size=1MiB&preset=thesis-ssd",
                                 "emu://?zones=4&zone_size=256KiB&preset=none"])
def test_batched_io_matches_single_requests(url):
    dev = open_device(url)
    data = np.random.default_rng(3).integers(0, 256, 5 * 4096, dtype=np.uint8)
    if isinstance(dev, EmulatedZonedDevice):
        dev.write(0, data[:8192])
        dev.write(256 << 10, data[8192:])
        offs, lens = np.array([256 << 10, 0, 4096 + (256 << 10)]), np.array([4096, 8192, 8192])
        want = np.concatenate([data[8192:12288], data[:8192], data[12288:]])
    else:
        done = dev.write_batch(np.array([40960, 0]), data, np.array([12288, 8192]), qd=2)
        assert done.shape == (2,)
        offs, lens = np.array([0, 40960, 45056]), np.array([8192, 4096, 8192])
        want = np.concatenate([data[12288:], data[:4096], data[4096:12288]])
        assert dev.stats().write_size_histogram == {12288: 1, 8192: 1}
    got, done = dev.read_batch(offs, lens, qd=4)
    assert np.array_equal(got, want) and done.shape == (3,)
    assert np.all(done >= 0)
    assert dev.stats().read_size_histogram == {4096: 1, 8192: 2}
    with pytest.raises(InvalidIOError, match="not aligned"):
        dev.read_batch(np.array([0, 100]), np.array([4096, 4096]))
