"""Zoned-device conformance suite: the NVMe ZNS rules every ZonedDevice must follow.

Each test takes a ``zdev`` fixture: a ZonedDevice with every zone EMPTY and geometry like QEMU's
test namespace (at least 5 zones, zone capacity < zone size, max_open >= 2, max_active = max_open + 1).
The same tests run against the emulated device (tests/devices/test_conformance.py) and against QEMU's ZNS
namespace inside the guest (tests/qemu/). Only the device's own geometry is assumed.
"""

from __future__ import annotations

import numpy as np
import pytest

from zswap_host.devices import ZoneCond
from zswap_host.errors import InvalidIOError, ZoneStateError, ZswapError


def blocks(dev, n: int, seed: int = 0) -> np.ndarray:
    """n blocks of recognisable random bytes."""
    return np.random.default_rng(seed).integers(0, 256, n * dev.geometry.block_size, dtype=np.uint8)


def zone(dev, z: int):
    return dev.report_zones()[z]


def conds(dev) -> list[ZoneCond]:
    return [z.cond for z in dev.report_zones()]


def test_fresh_device_reports_empty_zones(zdev):
    g = zdev.geometry
    report = zdev.report_zones()
    assert len(report) == g.nr_zones
    for i, z in enumerate(report):
        assert (z.index, z.start, z.len, z.capacity) == (i, i * g.zone_size, g.zone_size, g.zone_capacity)
        assert z.cond == ZoneCond.EMPTY and z.wp == z.start


def test_write_at_wp_implicitly_opens_and_reads_back(zdev):
    bs = zdev.geometry.block_size
    data = blocks(zdev, 3, seed=1)
    start = zone(zdev, 1).start
    zdev.write(start, data)
    z = zone(zdev, 1)
    assert z.cond == ZoneCond.IMPLICIT_OPEN and z.wp == start + 3 * bs
    zdev.write(z.wp, data[:bs])
    assert zone(zdev, 1).wp == start + 4 * bs
    assert np.array_equal(zdev.read(start, 3 * bs), data)
    assert np.array_equal(zdev.read(start + 3 * bs, bs), data[:bs])


@pytest.mark.parametrize("delta_blocks", [1, -1])
def test_write_away_from_wp_fails_and_changes_nothing(zdev, delta_blocks):
    bs = zdev.geometry.block_size
    start = zone(zdev, 0).start
    zdev.write(start, blocks(zdev, 2))
    with pytest.raises(ZoneStateError):
        zdev.write(start + (2 + delta_blocks) * bs, blocks(zdev, 1))
    assert zone(zdev, 0).wp == start + 2 * bs


def test_write_ahead_of_wp_in_empty_zone_fails(zdev):
    start = zone(zdev, 2).start
    with pytest.raises(ZoneStateError):
        zdev.write(start + zdev.geometry.block_size, blocks(zdev, 1))
    assert zone(zdev, 2).cond == ZoneCond.EMPTY


def test_write_up_to_capacity_fills_zone(zdev):
    g = zdev.geometry
    start = zone(zdev, 0).start
    chunk = 64 * g.block_size
    data = blocks(zdev, chunk // g.block_size)
    written = 0
    while written + chunk <= g.zone_capacity:
        zdev.write(start + written, data)
        written += chunk
    rest = g.zone_capacity - written
    if rest:
        zdev.write(start + written, data[:rest])
    z = zone(zdev, 0)
    assert z.cond == ZoneCond.FULL and z.wp == z.start + g.zone_size
    with pytest.raises(ZoneStateError):
        zdev.write(start + g.zone_capacity, blocks(zdev, 1))
    assert zone(zdev, 0).cond == ZoneCond.FULL


def test_write_past_capacity_fails_whole(zdev):
    g = zdev.geometry
    start = zone(zdev, 0).start
    fill = g.zone_capacity - g.block_size
    zdev.write(start, np.zeros(fill, np.uint8))
    with pytest.raises(ZoneStateError):
        zdev.write(start + fill, blocks(zdev, 2))
    z = zone(zdev, 0)
    assert z.wp == start + fill and z.cond.is_open


def test_write_not_block_aligned_is_invalid(zdev):
    with pytest.raises(InvalidIOError):
        zdev.write(zone(zdev, 0).start, np.zeros(100, np.uint8))
    with pytest.raises(InvalidIOError):
        zdev.read(7, zdev.geometry.block_size)


def test_implicit_open_beyond_max_open_closes_oldest_implicit(zdev):
    g = zdev.geometry
    n = g.max_open
    for z in range(n):
        zdev.write(zone(zdev, z).start, blocks(zdev, 1))
    assert conds(zdev)[:n] == [ZoneCond.IMPLICIT_OPEN] * n
    zdev.write(zone(zdev, n).start, blocks(zdev, 1))
    c = conds(zdev)
    assert c[0] == ZoneCond.CLOSED
    assert c[1:n + 1] == [ZoneCond.IMPLICIT_OPEN] * n
    assert zone(zdev, 0).wp == zone(zdev, 0).start + g.block_size


def test_closed_zone_keeps_data_and_reopens_on_write(zdev):
    bs = zdev.geometry.block_size
    data = blocks(zdev, 2, seed=5)
    start = zone(zdev, 3).start
    zdev.write(start, data[:bs])
    zdev.close_zone(3)
    assert zone(zdev, 3).cond == ZoneCond.CLOSED
    zdev.write(start + bs, data[bs:])
    assert zone(zdev, 3).cond == ZoneCond.IMPLICIT_OPEN
    assert np.array_equal(zdev.read(start, 2 * bs), data)


def test_exceeding_max_active_fails_with_eoverflow(zdev):
    g = zdev.geometry
    for z in range(g.max_active):
        zdev.write(zone(zdev, z).start, blocks(zdev, 1))
    with pytest.raises(ZoneStateError) as e:
        zdev.write(zone(zdev, g.max_active).start, blocks(zdev, 1))
    assert e.value.errno_name == "EOVERFLOW"
    c = conds(zdev)
    assert c[g.max_active] == ZoneCond.EMPTY
    assert sum(x.is_active for x in c) == g.max_active


def test_finish_frees_an_active_slot(zdev):
    g = zdev.geometry
    for z in range(g.max_active):
        zdev.write(zone(zdev, z).start, blocks(zdev, 1))
    zdev.finish_zone(0)
    assert zone(zdev, 0).cond == ZoneCond.FULL
    zdev.write(zone(zdev, g.max_active).start, blocks(zdev, 1))
    assert zone(zdev, g.max_active).cond == ZoneCond.IMPLICIT_OPEN


def test_explicit_open_close_finish_transitions(zdev):
    zdev.open_zone(0)
    assert zone(zdev, 0).cond == ZoneCond.EXPLICIT_OPEN
    zdev.open_zone(0)  # already open: no change
    assert zone(zdev, 0).cond == ZoneCond.EXPLICIT_OPEN
    zdev.write(zone(zdev, 0).start, blocks(zdev, 1))
    assert zone(zdev, 0).cond == ZoneCond.EXPLICIT_OPEN  # a write keeps it explicitly open
    zdev.close_zone(0)
    assert zone(zdev, 0).cond == ZoneCond.CLOSED
    zdev.close_zone(0)  # closing a closed zone is fine
    zdev.open_zone(0)
    assert zone(zdev, 0).cond == ZoneCond.EXPLICIT_OPEN
    zdev.finish_zone(0)
    assert zone(zdev, 0).cond == ZoneCond.FULL
    zdev.finish_zone(0)  # finishing a full zone is fine
    with pytest.raises(ZoneStateError):
        zdev.open_zone(0)
    with pytest.raises(ZoneStateError):
        zdev.close_zone(0)


def test_implicit_open_becomes_explicit(zdev):
    zdev.write(zone(zdev, 1).start, blocks(zdev, 1))
    zdev.open_zone(1)
    assert zone(zdev, 1).cond == ZoneCond.EXPLICIT_OPEN


def test_close_empty_zone_is_an_error(zdev):
    with pytest.raises(ZoneStateError):
        zdev.close_zone(0)
    assert zone(zdev, 0).cond == ZoneCond.EMPTY


def test_finish_empty_zone(zdev):
    zdev.finish_zone(4)
    z = zone(zdev, 4)
    assert z.cond == ZoneCond.FULL and z.wp == z.start + z.len


def test_explicit_open_closes_implicit_when_at_limit(zdev):
    g = zdev.geometry
    for z in range(g.max_open):
        zdev.write(zone(zdev, z).start, blocks(zdev, 1))
    zdev.open_zone(g.max_open)
    c = conds(zdev)
    assert c[g.max_open] == ZoneCond.EXPLICIT_OPEN
    assert c[0] == ZoneCond.CLOSED


def test_explicit_open_beyond_limit_fails_with_etoomanyrefs(zdev):
    g = zdev.geometry
    for z in range(g.max_open):
        zdev.open_zone(z)
    with pytest.raises(ZoneStateError) as e:
        zdev.open_zone(g.max_open)
    assert e.value.errno_name == "ETOOMANYREFS"
    assert zone(zdev, g.max_open).cond == ZoneCond.EMPTY
    # a write into a further zone cannot open it either: every open zone is explicitly open
    with pytest.raises(ZoneStateError):
        zdev.write(zone(zdev, g.max_open).start, blocks(zdev, 1))
    assert zone(zdev, g.max_open).cond == ZoneCond.EMPTY


def test_reset_returns_zone_to_empty_with_zeros(zdev):
    g = zdev.geometry
    start = zone(zdev, 2).start
    zdev.write(start, blocks(zdev, 4, seed=9))
    zdev.reset_zone(2)
    z = zone(zdev, 2)
    assert z.cond == ZoneCond.EMPTY and z.wp == start
    assert not zdev.read(start, 4 * g.block_size).any()
    zdev.write(start, blocks(zdev, 1))  # writable from the start again
    zdev.reset_zone(2)
    zdev.reset_zone(2)  # resetting an empty zone is fine


def test_reset_full_and_closed_zones_frees_resources(zdev):
    g = zdev.geometry
    for z in range(g.max_active):
        zdev.write(zone(zdev, z).start, blocks(zdev, 1))
    zdev.finish_zone(1)
    for z in range(g.max_active):
        zdev.reset_zone(z)
    assert all(c == ZoneCond.EMPTY for c in conds(zdev))
    for z in range(g.max_open):
        zdev.write(zone(zdev, z).start, blocks(zdev, 1))


def test_append_returns_offset_at_wp(zdev):
    bs = zdev.geometry.block_size
    start = zone(zdev, 1).start
    a = blocks(zdev, 2, seed=3)
    b = blocks(zdev, 1, seed=4)
    assert zdev.append(1, a) == start
    assert zdev.append(1, b) == start + 2 * bs
    assert zone(zdev, 1).cond == ZoneCond.IMPLICIT_OPEN
    assert np.array_equal(zdev.read(start, 3 * bs), np.concatenate([a, b]))


def test_append_larger_than_limit_is_refused(zdev):
    g = zdev.geometry
    assert g.max_append >= g.block_size
    if g.max_append + g.block_size > g.zone_capacity:
        pytest.skip("append limit not below zone capacity")
    with pytest.raises(ZswapError):
        zdev.append(0, np.zeros(g.max_append + g.block_size, np.uint8))
    assert zone(zdev, 0).wp == zone(zdev, 0).start
    zdev.append(0, np.zeros(g.max_append, np.uint8))
    assert zone(zdev, 0).wp == zone(zdev, 0).start + g.max_append


def test_append_to_full_zone_fails(zdev):
    zdev.finish_zone(0)
    with pytest.raises(ZoneStateError):
        zdev.append(0, blocks(zdev, 1))


def test_read_unwritten_returns_zeros_and_across_zones(zdev):
    g = zdev.geometry
    assert not zdev.read(zone(zdev, 3).start, 2 * g.block_size).any()
    data = blocks(zdev, 1, seed=2)
    zdev.write(zone(zdev, 1).start, data)
    got = zdev.read(zone(zdev, 1).start - g.block_size, 2 * g.block_size)
    assert not got[:g.block_size].any() and np.array_equal(got[g.block_size:], data)


def test_write_stats_count_requests(zdev):
    before = zdev.stats()
    zdev.write(zone(zdev, 0).start, blocks(zdev, 2))
    after = zdev.stats()
    bs = zdev.geometry.block_size
    assert after.device_write_bytes - before.device_write_bytes == 2 * bs
    assert after.write_size_histogram.get(2 * bs, 0) == before.write_size_histogram.get(2 * bs, 0) + 1
