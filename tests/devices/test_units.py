"""Placement units (``devices/units.py``): every interface's units through one registry, their
traits telling the truth about the device underneath, and one store on all four without asking
which device it is on."""
from __future__ import annotations

import numpy as np
import pytest

from zswap_host.devices import (UnitTraits, ZonedBlockView, interfaces, open_device, placement_units,
                                register_interface)
from zswap_host.devices import units as units_module
from zswap_host.errors import DeviceSpecError, ZoneStateError
from zswap_host.store import StoreConfig, SwapStore

PS = 4096
ZONE = 256 << 10
URLS = {
    "zns": "emu://?zones=16&zone_size=256KiB&max_open=6&max_active=6&preset=none",
    "conventional": "emu-conv://?size=4MiB&preset=none",
    "fdp": "fdp://?size=4MiB&ruhs=4&preset=thesis-ssd",
    "ocssd": "ocssd://?groups=2&pus=2&chunks=16&sectors=16&ws_min=4&ws_opt=8&mw_cunits=4&preset=none",
}
EXPECTED = {   # interface: (unit, sequential_only, collector, reset, handles)
    "zns": ("zone", True, "host", "zone reset", 0),
    "conventional": ("LBA range", False, "host+device", "discard", 0),
    "fdp": ("LBA range", False, "host+device", "discard", 4),
    "ocssd": ("chunk stripe", True, "host", "chunk reset", 0),
}


def units_of(interface: str):
    return placement_units(open_device(URLS[interface]), zone_size=ZONE)


@pytest.mark.parametrize("interface", list(URLS))
def test_each_interface_has_units_with_its_traits(interface):
    u = units_of(interface)
    t = u.unit_traits()
    assert (t.unit, t.sequential_only, t.collector, t.reset, t.handles) == EXPECTED[interface]
    assert t.interface == u.interface == interface
    g = u.geometry
    assert (t.count, t.size_bytes, t.usable_bytes, t.max_open, t.max_active) == \
        (g.nr_zones, g.zone_size, g.zone_capacity, g.max_open, g.max_active)
    assert u.describe()["units"] == t.as_dict()
    assert placement_units(u) is u                  # units are their own units
    u.close()


def test_sequential_only_says_whether_the_device_itself_refuses_a_write_off_the_pointer():
    zns = open_device(URLS["zns"])
    with pytest.raises(ZoneStateError):
        zns.write(8 * PS, np.zeros(PS, np.uint8))   # zone 0's write pointer is at 0
    oc = open_device(URLS["ocssd"])
    with pytest.raises(ZoneStateError):
        oc.write(np.array([4, 5, 6, 7]), np.zeros(4 * PS, np.uint8))   # chunk 0's pointer is at 0
    for name in ("conventional", "fdp"):       # the view keeps the rule; the device takes the write
        u = units_of(name)
        u.block.write(8 * PS, np.ones(PS, np.uint8))
        assert u.unit_traits().sequential_only is False
        with pytest.raises(ZoneStateError):
            u.write(8 * PS, np.ones(PS, np.uint8))


def test_reset_does_what_the_traits_say():
    for name in ("conventional", "fdp"):
        u = units_of(name)
        u.append(1, np.ones(4 * PS, np.uint8))
        before = u.block.stats().discard_bytes
        u.reset_zone(1)
        assert u.block.stats().discard_bytes - before == 4 * PS
    u = units_of("ocssd")
    u.append(2, np.ones(u.geometry.zone_capacity, np.uint8))
    chunks = u.zone_chunks(2)
    wear = [c.wear_index for c in u.ocssd.chunk_info(chunks)]
    u.reset_zone(2)
    assert [c.wear_index for c in u.ocssd.chunk_info(chunks)] == [w + 1 for w in wear]


@pytest.mark.parametrize("interface", list(URLS))
def test_one_store_runs_on_every_interface(interface):
    u = units_of(interface)
    s = SwapStore(u, StoreConfig(write_size=128 << 10, max_streams=2))
    assert s.units == u.unit_traits()
    ids = np.arange(int(s.capacity_pages * 0.9), dtype=np.int64)
    data = np.zeros((ids.size, PS), np.uint8)
    data[:, :8] = ids.view(np.uint8).reshape(-1, 8)
    s.swap_out(ids, data)
    rng = np.random.default_rng(0)
    for rnd in range(8):                            # scattered overwrites: GC has to relocate
        pick = np.sort(rng.choice(ids.size, ids.size // 3, replace=False))
        s.swap_out(ids[pick], data[pick], stream=rnd % 2)
    assert np.array_equal(s.swap_in(ids), data)
    assert s.gc_write_bytes > 0
    s.check()
    s.close()
    u.close()


def test_the_store_opens_every_interface_as_it_is_with_default_units():
    s = SwapStore(open_device(URLS["ocssd"]))
    assert s.units.unit == "chunk stripe"
    conv = SwapStore(open_device(URLS["conventional"]))      # 4 MiB: 16 MiB halved to the 256 KiB floor
    assert (conv.units.unit, conv.units.size_bytes, conv.units.count) == ("LBA range", 256 << 10, 16)
    fdp = open_device("fdp://?size=256MiB&ruhs=4")            # 16 MiB halved to 4 MiB (64 units), whole RUs
    ru = fdp.ru_bytes
    u = placement_units(fdp)
    assert u.unit_traits().size_bytes == -(-(4 << 20) // ru) * ru and u.unit_traits().size_bytes % ru == 0
    assert u.unit_traits().size_bytes != 4 << 20              # thesis-ssd's RU does not divide 4 MiB
    assert placement_units(open_device("emu-conv://?size=8GiB&payload=0&preset=none")).unit_traits().size_bytes \
        == units_module.DEFAULT_UNIT_BYTES
    with pytest.raises(DeviceSpecError, match="multiple of the block size"):
        placement_units(open_device(URLS["conventional"]), zone_size=1000)


def test_fdp_units_write_streams_and_gc_under_handles_of_their_own():
    u = units_of("fdp")
    s = SwapStore(u, StoreConfig(placement="stream", write_size=128 << 10, max_streams=2))
    ids = np.arange(int(s.capacity_pages * 0.9), dtype=np.int64)
    data = np.zeros((ids.size, PS), np.uint8)
    s.swap_out(ids, data)
    rng = np.random.default_rng(0)
    for rnd in range(8):
        pick = np.sort(rng.choice(ids.size, ids.size // 3, replace=False))
        s.swap_out(ids[pick], data[pick], stream=rnd % 2)
    s.flush()
    assert s.gc_write_bytes > 0
    used = {r["handle"] for r in u.block.ruh_stats() if r["host_write_bytes"]}
    assert used == {0, 1, 3}                        # streams 0 and 1, GC on the last handle


def test_an_interface_is_registered_by_name_and_an_unknown_one_is_refused():
    class Tape:                                     # a block device of a new interface
        zoned = False
        interface = "tape-ssd"
        url = "tape://0"
    with pytest.raises(DeviceSpecError, match="no placement units for interface 'tape-ssd'"):
        placement_units(Tape())
    conv = open_device(URLS["conventional"])
    conv.interface = "tape-ssd"
    register_interface("tape-ssd", lambda dev, zone_size, zone_capacity: ZonedBlockView(dev, ZONE, ZONE // 2))
    try:
        assert "tape-ssd" in interfaces()
        u = placement_units(conv)
        assert u.unit_traits().usable_bytes == ZONE // 2
        s = SwapStore(u)
        s.swap_out(np.arange(4), np.ones((4, PS), np.uint8))
        assert np.array_equal(s.swap_in(np.arange(4)), np.ones((4, PS), np.uint8))
    finally:
        units_module._ADAPTERS.pop("tape-ssd")


def test_traits_refuse_an_unknown_collector():
    with pytest.raises(ValueError, match="collector"):
        UnitTraits("zns", "zone", True, "device", "zone reset", 1, 1, 1, 0, 0)
    t = UnitTraits("zns", "zone", True, "host", "zone reset", 1, 1, 1, 0, 6)
    assert t.write_concurrency == 6
    assert UnitTraits("zns", "zone", True, "host", "zone reset", 1, 1, 1, 0, 0).write_concurrency == 1 << 30
