"""``ZonedDevice.append_run`` (devices/base.py): an ``append_batch`` whose caller expects the
requests to land back to back from an offset, answered True when they did and with
``append_batch``'s ``(offsets, failures)`` otherwise, on every interface's placement units (numpy,
``SerialAppends``), with the same time and counters as ``append_batch``."""

import numpy as np
import pytest

from zswap_host import open_device
from zswap_host.devices import placement_units

PS = 4096
URLS = {
    "zns": "emu://?zones=16&zone_size=256KiB&max_open=6&max_active=6&max_append=32KiB",
    "conventional": "emu-conv://?size=4MiB",
    "fdp": "fdp://?size=4MiB&ruhs=4&preset=thesis-ssd",
    "ocssd": "ocssd://?groups=2&pus=2&chunks=16&sectors=16&ws_min=4&ws_opt=8&mw_cunits=4&preset=none",
}


def units(url):
    return placement_units(open_device(url))


@pytest.mark.parametrize("name", list(URLS))
def test_a_run_that_lands_back_to_back_is_true_and_costs_what_append_batch_costs(name):
    a, b = units(URLS[name]), units(URLS[name])
    unit = min(4 * PS, a.geometry.max_append or 4 * PS)
    head = np.full(unit, 7, np.uint8)
    rest = np.arange(3 * unit, dtype=np.int64).astype(np.uint8)
    zones = np.array([2, 2, 2, 2], np.int64)
    lengths = np.full(4, unit, np.int64)
    assert a.append_run(zones, (head, rest), lengths, 4, 2 * a.geometry.zone_size) is True
    offsets, failures = b.append_batch(zones, (head, rest), lengths, 4)
    assert failures == [] and offsets.tolist() == [2 * a.geometry.zone_size + i * unit for i in range(4)]
    assert a.now() == b.now() and a.stats() == b.stats()
    assert np.array_equal(a.read(2 * a.geometry.zone_size, 4 * unit), np.concatenate((head, rest)))
    # one buffer holding the requests: the same
    assert a.append_run(np.array([3], np.int64), (rest[:unit],), lengths[:1], 4, 3 * a.geometry.zone_size) is True


@pytest.mark.parametrize("name", ["zns", "ocssd"])
def test_a_run_that_lands_elsewhere_or_fails_gives_append_batchs_answer(name):
    d = units(URLS[name])
    unit = min(4 * PS, d.geometry.max_append or 4 * PS)
    data = np.zeros(2 * unit, np.uint8)
    zones, lengths = np.array([1, 1], np.int64), np.full(2, unit, np.int64)
    zs = d.geometry.zone_size
    out = d.append_run(zones, (data,), lengths, 4, zs + PS)        # not where it lands
    assert out is not True and out[1] == [] and out[0].tolist() == [zs, zs + unit]
    d.inject_write_failures(1)
    offsets, failures = d.append_run(zones, (data,), lengths, 4, zs + 2 * unit)
    assert [k for k, _ in failures] == [0] and offsets[0] == -1
