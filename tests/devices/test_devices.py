"""Emulated-device behaviour beyond the conformance suite: URLs, persistence, failure injection,
conventional devices."""

import sys

import numpy as np
import pytest

from zswap_host.devices import (BlockDevice, DeviceScheme, EmulatedBlockDevice, EmulatedZonedDevice,
                                FileBlockDevice, ZoneCond, ZonedBlockView, ZonedDevice, open_device,
                                register_scheme, schemes)
from zswap_host.devices import url as url_registry
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


def test_reopen_leaves_zones_without_data_empty(tmp_path):
    """A power cycle closes open zones that hold data and empties those that do not, as QEMU's
    namespace does (hw/nvme/ns.c, nvme_clear_zone): a process killed between opening a zone and its
    first write must not leave a CLOSED zone with nothing in it (tests/store/test_store_crash.py met one)."""
    path = tmp_path / "z.img"
    dev = open_device(f"emu://{path}?{SMALL}&preset=none")
    dev.open_zone(0)                                   # explicitly open, never written
    dev.open_zone(1)
    dev.close_zone(1)                                  # closed, never written
    dev.write(2 << 20, np.ones(4096, np.uint8))        # implicitly open, holds data
    dev.close()
    report = open_device(f"emu://{path}").report_zones()
    assert [z.cond for z in report[:3]] == [ZoneCond.EMPTY, ZoneCond.EMPTY, ZoneCond.CLOSED]
    assert [z.written for z in report[:3]] == [0, 0, 4096]


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
    with pytest.raises(DeviceIOError, match="offline zone 1"):          # a batch touching it
        dev.read_batch(np.array([0, (2 << 20) - 4096], np.int64), np.array([4096, 4096], np.int64))
    assert dev.read_batch(np.array([0, 4096], np.int64), np.array([4096, 4096], np.int64))[0][0] == 3
    with pytest.raises(DeviceIOError):
        dev.reset_zone(1)
    # the two zones gave back their active resources: three more zones can be opened
    for z in (2, 3, 4):
        dev.write(z << 20, np.zeros(4096, np.uint8))
    assert dev.describe()["active_zones"] == 3


def test_an_offline_zone_stays_offline_when_reopened(tmp_path):
    url = f"emu://{tmp_path}/z.img?{SMALL}&preset=none"
    with open_device(url) as dev:
        dev.write(1 << 20, np.full(4096, 4, np.uint8))
        dev.set_zone_condition(1, ZoneCond.OFFLINE)
    with open_device(f"emu://{tmp_path}/z.img") as dev:
        with pytest.raises(DeviceIOError, match="offline zone 1"):
            dev.read_batch(np.array([1 << 20], np.int64), np.array([4096], np.int64))


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
    t0 = dev.now()
    got, done = dev.read_batch(offs, lens, qd=4)
    assert np.array_equal(got, want) and done.shape == (3,)
    if dev.model is None:             # timing off: no clock, every request completes at 0
        assert not done.any() and dev.now() == 0.0
    else:                             # each completes after the batch was issued; the clock ends at the last
        assert (done > t0).all() and done.max() == dev.now()
    assert dev.stats().read_size_histogram == {4096: 1, 8192: 2}
    with pytest.raises(InvalidIOError, match="not aligned"):
        dev.read_batch(np.array([0, 100]), np.array([4096, 4096]))


# -------------------------------------------------------------------------------- the protocols
def _file(tmp_path, size=1 << 20):
    f = tmp_path / "plain.img"
    f.write_bytes(bytes(size))
    return str(f)


# every device kind open_device gives on this machine (the Linux ones: test_linux_devices.py, tests/qemu)
DEVICE_KINDS = {
    "emu": lambda tmp: open_device(f"emu://?{SMALL}&preset=none"),
    "emu-timed": lambda tmp: open_device("emu://?zones=4&zone_size=1MiB&preset=thesis-ssd"),
    "emu-file": lambda tmp: open_device(f"emu://{tmp}/z.img?{SMALL}&preset=none"),
    "emu-conv": lambda tmp: open_device("emu-conv://?size=1MiB&preset=none"),
    "emu-conv-timed": lambda tmp: open_device("emu-conv://?size=4MiB&preset=thesis-ssd&idle_gc=1"),
    "file": lambda tmp: open_device(_file(tmp)),
    "view-of-emu-conv": lambda tmp: ZonedBlockView(open_device("emu-conv://?size=4MiB&preset=thesis-ssd"), 1 << 20),
    "view-of-file": lambda tmp: ZonedBlockView(open_device(_file(tmp, 2 << 20)), 1 << 20),
    "fdp": lambda tmp: open_device("fdp://?size=1MiB&ruhs=4&preset=none"),
    "fdp-file": lambda tmp: open_device(f"fdp://{tmp}/f.img?size=1MiB&ruhs=2&preset=none"),
    "fdp-timed": lambda tmp: open_device("fdp://?size=4MiB&ruhs=4&preset=thesis-ssd&idle_gc=1"),
}
CLOCKS = {"emu": "none", "emu-timed": "modeled", "emu-file": "none", "emu-conv": "none",
          "emu-conv-timed": "modeled", "file": "wall", "view-of-emu-conv": "modeled", "view-of-file": "wall",
          "fdp": "none", "fdp-file": "none", "fdp-timed": "modeled"}


@pytest.fixture(params=sorted(DEVICE_KINDS))
def anydev(request, tmp_path):
    dev = DEVICE_KINDS[request.param](tmp_path)
    yield request.param, dev
    dev.close()


def test_every_device_kind_implements_its_whole_protocol(anydev):
    name, dev = anydev
    proto = ZonedDevice if dev.zoned else BlockDevice
    assert isinstance(dev, proto) and not isinstance(dev, BlockDevice if dev.zoned else ZonedDevice)
    d = dev.describe()
    assert d["zoned"] is dev.zoned and d["kind"] == dev.kind and d["url"] == dev.url
    assert dev.stats().clock == CLOCKS[name]


def test_now_and_advance_follow_the_device_clock(anydev):
    name, dev = anydev
    t0 = dev.now()
    dev.advance(0.25)
    dev.advance(0.0)
    dev.advance(-1.0)                      # nothing: a clock never goes back
    t1 = dev.now()
    if CLOCKS[name] == "modeled":          # idle time passes on the model's clock, exactly
        assert t1 == pytest.approx(t0 + 0.25, abs=1e-12)
    elif CLOCKS[name] == "none":           # no timing model: no clock
        assert t0 == t1 == 0.0
    else:                                  # the wall clock: time goes on by itself, advance adds nothing
        assert t0 <= t1
        dev.advance(3600.0)
        assert t1 <= dev.now() < t0 + 3600.0


def test_io_moves_a_modeled_clock_and_no_other(anydev):
    name, dev = anydev
    t0 = dev.now()
    dev.write(0, np.ones(8192, np.uint8))
    t1 = dev.now()
    dev.read(0, 4096)
    t2 = dev.now()
    if CLOCKS[name] == "modeled":
        assert t0 < t1 < t2
    elif CLOCKS[name] == "none":
        assert t0 == t1 == t2 == 0.0
    else:
        assert t0 <= t1 <= t2


def _limit(dev):
    return dev.geometry.size if dev.zoned else dev.size


def test_read_batch_checks_every_range_before_reading_any(anydev):
    _, dev = anydev
    dev.write(0, np.full(8192, 5, np.uint8))
    before = dev.stats().device_read_bytes
    for offs, lens, words in [
        ([0, 100], [4096, 4096], "not aligned"),
        ([0, _limit(dev)], [4096, 4096], "outside the device"),
        ([0, 4096], [4096, 0], "outside the device"),
        ([0, 4096], [4096], "2 offsets but 1 lengths"),
    ]:
        with pytest.raises(InvalidIOError, match=words):
            dev.read_batch(np.array(offs), np.array(lens))
    assert dev.stats().device_read_bytes == before          # the good first range was not read either
    got, done = dev.read_batch(np.zeros(0, np.int64), np.zeros(0, np.int64))
    assert got.size == 0 and done.size == 0
    got, done = dev.read_batch(np.array([4096, 0]), np.array([4096, 8192]), qd=1)
    assert got.dtype == np.uint8 and got.size == 12288 and (got == 5).all() and done.shape == (2,)
    assert dev.stats().device_read_bytes == before + 12288


BLOCK_KINDS = sorted(k for k in DEVICE_KINDS if k.startswith(("emu-conv", "file", "fdp")))


@pytest.mark.parametrize("kind", BLOCK_KINDS)
def test_write_batch_checks_everything_before_writing_anything(kind, tmp_path):
    dev = DEVICE_KINDS[kind](tmp_path)     # block devices only: a zoned one writes at write pointers
    data = np.arange(3 * 4096, dtype=np.uint32).view(np.uint8)[:3 * 4096].copy()
    for offs, lens, words in [
        ([0, 8192], [4096, 4096], "lengths add up to 8192, data holds 12288"),
        ([0, 100], [4096, 8192], "not aligned"),
        ([0, dev.size - 4096], [4096, 8192], "outside the device"),
        ([0], [4096, 8192], "1 offsets but 2 lengths"),
    ]:
        with pytest.raises(InvalidIOError, match=words):
            dev.write_batch(np.array(offs), data, np.array(lens))
    assert dev.stats().device_write_bytes == 0 and not dev.read(0, 4096).any()
    done = dev.write_batch(np.array([8192, 0]), data, np.array([4096, 8192]), qd=2)
    assert done.shape == (2,) and done.max() <= dev.now()
    assert np.array_equal(dev.read(8192, 4096), data[:4096]) and np.array_equal(dev.read(0, 8192), data[4096:])
    assert dev.stats().write_size_histogram == {4096: 1, 8192: 1}
    dev.close()


def test_zoned_read_batch_refuses_an_offline_zone_and_reads_across_zones():
    dev = open_device(f"emu://?{SMALL}&preset=none")
    cap = dev.geometry.zone_capacity
    dev.write(0, np.full(cap, 1, np.uint8))
    dev.write(1 << 20, np.full(4096, 2, np.uint8))
    got, _ = dev.read_batch(np.array([cap - 4096]), np.array([(1 << 20) - cap + 8192]))
    assert got[0] == 1 and not got[4096:-4096].any() and got[-1] == 2      # past capacity reads as zeros
    dev.set_zone_condition(2, ZoneCond.OFFLINE)
    with pytest.raises(DeviceIOError, match="offline zone 2"):
        dev.read_batch(np.array([0, 2 << 20]), np.array([4096, 4096]))


def test_zoned_view_hands_idle_time_to_its_block_device():
    block = open_device("emu-conv://?size=4MiB&preset=thesis-ssd&idle_gc=1")
    view = ZonedBlockView(block, 1 << 20)
    t0 = block.now()
    view.advance(0.5)
    assert block.now() == pytest.approx(t0 + 0.5) and view.now() == block.now()
    assert view.describe()["preset"] == "thesis-ssd" and view.url == f"zoned-view:{block.url}"
    view.close()


# -------------------------------------------------------------------------------- the scheme registry
def test_unknown_scheme_lists_the_registered_ones():
    with pytest.raises(DeviceSpecError) as e:
        open_device("nope://x")
    assert str(e.value) == ("unknown device URL scheme 'nope' in 'nope://x'; use emu://, emu-conv://, fdp://, "
                            "ocssd:// or a path")
    assert "\n" not in str(e.value)
    with pytest.raises(DeviceSpecError, match="malformed device URL"):
        open_device("emu://[x")


def test_the_built_in_schemes_are_listed():
    got = {s["name"]: s for s in schemes()}
    assert {"emu", "emu-conv", "fdp", "ocssd", "file", "block"} <= set(got)
    assert got["emu"]["form"] == "emu://" and got["file"]["form"] == got["block"]["form"] == "PATH"
    assert got["emu"]["available"] and got["emu"]["summary"]


@pytest.mark.parametrize("url,words", [
    ("emu-conv://?zones=4", "unknown parameter 'zones'.*known: block_size, erase_block, gc_striped, idle_gc, op, payload, preset, size, suspend"),
    ("emu://?size=1MiB", "unknown parameter 'size'.*known: block_size, max_active, max_append"),
    ("emu://?idle_gc=1", "unknown parameter 'idle_gc'"),
    ("emu://?suspend=2", "bad value for suspend.*must be 0 or 1"),
    ("emu-conv://?idle_gc=yes", "bad value for idle_gc.*must be 0 or 1"),
    ("emu-conv://?op=0.5&op=0.1", "parameter op given twice"),
    ("emu-conv://?op=-0.1", r"op must be in \[0, 1\)"),
    ("emu://?zones=-3", "not a whole number"),
    ("emu://?zones=99999999999", "too large"),
    ("emu://?zone_size=2048TiB", "more than an emulated device may have"),
    ("emu://?zones=4#frag", "no #fragment"),
    ("emu-conv://?size=1MiB&preset=nope", "nope"),
])
def test_each_scheme_checks_its_own_parameters(url, words):
    with pytest.raises(DeviceSpecError, match=words) as e:
        open_device(url)
    assert "\n" not in str(e.value)


class _MemScheme(DeviceScheme):
    """A test scheme: mem://?size=…&slow=0|1 is an untimed emulated conventional device."""

    name = "mem"
    summary = "test scheme"
    params = {"size": "size", "slow": "flag", "copies": "count"}

    def open(self, url, *, zoned=None, force=None, readonly=False):
        path, p = self.parse(url)
        dev = EmulatedBlockDevice(p.get("size", 1 << 20), url=url)
        dev.opened_with = (path, p)
        return dev


@pytest.fixture
def mem_scheme():
    register_scheme("mem", _MemScheme)
    yield
    url_registry.unregister_scheme("mem")


def test_a_registered_scheme_opens_and_parses_its_own_urls(mem_scheme):
    dev = open_device("mem://somewhere?size=2MiB&slow=1&copies=3")
    assert dev.size == 2 << 20 and dev.opened_with == ("somewhere", {"size": 2 << 20, "slow": True, "copies": 3})
    assert "mem" in {s["name"] for s in schemes()}
    with pytest.raises(DeviceSpecError, match="unknown parameter 'zones'.*known: copies, size, slow"):
        open_device("mem://?zones=3")
    with pytest.raises(DeviceSpecError, match="bad value for slow"):
        open_device("mem://?slow=2")
    with pytest.raises(NotZonedError):
        open_device("mem://", zoned=True)
    with pytest.raises(DeviceSpecError, match="use emu://, emu-conv://, fdp://, ocssd://, mem:// or a path"):
        open_device("other://x")


def test_registering_twice_or_a_bad_name_is_refused(mem_scheme):
    with pytest.raises(ValueError, match="already registered"):
        register_scheme("mem", _MemScheme)
    register_scheme("mem", _MemScheme, clobber=True)
    for bad in ("Mem", "1mem", "me m", ""):
        with pytest.raises(ValueError, match="cannot be a device URL scheme"):
            register_scheme(bad, _MemScheme)
    with pytest.raises(ValueError, match="not a DeviceScheme"):
        register_scheme("mem2", object)


def test_a_scheme_whose_import_fails_shows_its_install_hint():
    register_scheme("spdk", "zswap_host.no_such_module:SpdkScheme", install_hint="pip install 'zswap-host[spdk]'")
    try:
        with pytest.raises(DeviceSpecError) as e:
            open_device("spdk://nvme0")
        assert "'spdk' is not available" in str(e.value) and "pip install 'zswap-host[spdk]'" in str(e.value)
        assert "\n" not in str(e.value)
        listed = {s["name"]: s for s in schemes()}["spdk"]
        assert not listed["available"] and listed["install_hint"] == "pip install 'zswap-host[spdk]'"
    finally:
        url_registry.unregister_scheme("spdk")


def test_block_paths_need_the_zoned_extension_and_say_how_to_build_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "zswap_host._zoned", None)      # as if it was never built
    monkeypatch.setitem(sys.modules, "zswap_host.devices.schemes.block", None)
    monkeypatch.setattr(url_registry, "_loaded", {})
    with pytest.raises(DeviceSpecError, match="'block' is not available.*pip install -e \\."):
        url_registry.scheme_class("block")


def test_a_scheme_that_returns_no_device_is_caught(mem_scheme):
    class Broken(_MemScheme):
        def open(self, url, **kw):
            dev = super().open(url, **kw)
            dev.zoned = True                     # claims to be zoned but has no zone calls
            return dev

    register_scheme("mem", Broken, clobber=True)
    with pytest.raises(TypeError, match="does not implement the ZonedDevice protocol"):
        open_device("mem://")


@pytest.mark.parametrize("kind", ["emu-conv", "file"])
def test_read_groups_reads_what_one_read_batch_per_group_reads(kind, tmp_path):
    dev = DEVICE_KINDS[kind](tmp_path)
    data = np.random.default_rng(5).integers(0, 256, 6 * 4096, dtype=np.uint8)
    dev.write(0, data)
    offs, lens = np.array([20480, 0, 8192, 4096]), np.array([4096, 4096, 8192, 4096])
    got, done = dev.read_groups(offs, lens, np.array([1, 3]), np.array([1, 3]))
    want = np.concatenate([data[o:o + n] for o, n in zip(offs, lens)])
    assert np.array_equal(got, want) and done.shape == (4,) and done.max() <= dev.now()
    if kind == "file":                       # the generic one: group sizes must cover the ranges
        with pytest.raises(InvalidIOError, match="read groups"):
            dev.read_groups(offs, lens, np.array([1, 2]), np.array([1, 2]))
    with pytest.raises(InvalidIOError, match="not aligned"):
        dev.read_groups(np.array([0, 100]), np.array([4096, 4096]), np.array([2]), np.array([2]))
    dev.close()


@pytest.mark.parametrize("kind", ["emu-conv", "file"])
def test_write_groups_writes_what_one_write_batch_per_group_writes(kind, tmp_path):
    dev = DEVICE_KINDS[kind](tmp_path)
    offs, lens = np.array([20480, 0, 8192, 4096]), np.array([4096, 4096, 8192, 4096])
    data = np.random.default_rng(6).integers(0, 256, int(lens.sum()), dtype=np.uint8)
    done = dev.write_groups(offs, data, lens, np.array([1, 3]), np.array([1, 3]))
    assert done.shape == (4,) and done.max() <= dev.now()
    got, _ = dev.read_batch(offs, lens)
    assert np.array_equal(got, data)
    with pytest.raises(InvalidIOError, match="write groups"):
        dev.write_groups(offs, data, lens, np.array([1, 2]), np.array([1, 2]))
    with pytest.raises(InvalidIOError, match="lengths add up"):
        dev.write_groups(offs, data[:-4096], lens, np.array([4]), np.array([4]))
    dev.close()
