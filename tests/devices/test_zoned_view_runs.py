"""A zoned view sends a batch's usual appends to its block device as runs (``write_run``): the same
data, zone state, counters and modeled time as the appends one by one; and the request counters'
histograms, however a batch is counted."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from zswap_host.devices import ZonedBlockView, open_device
from zswap_host.devices.io_counters import IoCounters
from zswap_host.errors import DeviceIOError

ZONE = 256 << 10
PS = 4096


def _scattered(block):
    """``block`` written all over in random 4 KiB pieces: the appends' overwrites leave its erase
    blocks part valid, so its FTL moves data when it collects."""
    rng = np.random.default_rng(1)
    for _ in range(40):
        offsets = rng.integers(0, block.size // PS, 64) * PS
        block.write_batch(offsets, rng.integers(0, 255, 64 * PS, dtype=np.uint8), np.full(64, PS))
    return block


def _views(url: str):
    """The same view twice: one as the device runs it, one whose appends go one by one (an
    ``append`` set on the instance makes ``append_batch`` call it per unit), and a count of the
    first's ``write_run`` calls."""
    runs = ZonedBlockView(_scattered(open_device(url)), ZONE)
    one_by_one = ZonedBlockView(_scattered(open_device(url)), ZONE)
    one_by_one.append = one_by_one.append
    calls = []
    real = runs.block.write_run

    def counted(starts, views, handles=None):
        calls.append(len(starts))
        return real(starts, views, handles)

    runs.block.write_run = counted
    return runs, one_by_one, calls


def _workload(dev, rng: np.random.Generator):
    """Batches of appends of 1-24 pages over a few zones, zones reset when full (their data
    discarded on the block device), streams placed on FDP: the device's FTL collects."""
    nz = dev.geometry.nr_zones
    offsets, wps = [], np.zeros(nz, np.int64)
    for step in range(300):
        zones = rng.integers(0, min(nz, 14), rng.integers(1, 9))    # within the active limit
        lengths = rng.integers(1, 25, zones.size) * PS
        for z in np.unique(zones):
            dev.place_zone(int(z), int(z) % 3, gc=bool(z % 2))
            if wps[z] + lengths[zones == z].sum() > ZONE:
                dev.reset_zone(int(z))
                wps[z] = 0
            wps[z] += lengths[zones == z].sum()
        data = rng.integers(0, 255, int(lengths.sum()), dtype=np.uint8)
        got, failures = dev.append_batch(zones, data, lengths)
        assert not failures
        offsets.append(got)
    return np.concatenate(offsets)


@pytest.mark.parametrize("url", ["emu-conv://?size=4MiB&preset=thesis-ssd",
                                 "fdp://?size=4MiB&preset=thesis-ssd&ruhs=4",
                                 "emu-conv://?size=4MiB&preset=thesis-ssd&payload=0"])
def test_runs_write_what_appends_one_by_one_write(url):
    runs, one_by_one, calls = _views(url)
    a = _workload(runs, np.random.default_rng(7))
    b = _workload(one_by_one, np.random.default_rng(7))
    assert calls and max(calls) > 1                         # the runs path ran, with runs
    np.testing.assert_array_equal(a, b)
    assert runs.block.now() == one_by_one.block.now() > 0
    sa, sb = runs.stats(), one_by_one.stats()
    assert sa == sb and sa.gc_write_bytes > 0                       # the FTL collected
    assert runs.report_zones() == one_by_one.report_zones()
    if runs.block.payload:
        np.testing.assert_array_equal(runs.block.read(0, runs.block.size), one_by_one.block.read(0, one_by_one.block.size))
    else:
        offs = np.arange(0, runs.block.size, PS, dtype=np.int64)
        lens = np.full(offs.size, PS, np.int64)
        np.testing.assert_array_equal(runs.block.read_batch(offs, lens, words=True)[0],
                                      one_by_one.block.read_batch(offs, lens, words=True)[0])
    if hasattr(runs.block, "ruh_stats"):
        assert runs.block.ruh_stats() == one_by_one.block.ruh_stats()


def test_an_injected_write_failure_lands_on_its_append():
    """With a failure pending the view writes one by one: the failing append raises, the ones
    before it are written, the zone's write pointer stops at them."""
    view = ZonedBlockView(open_device("emu-conv://?size=4MiB&preset=none"), ZONE)
    view.append_batch([0], np.ones(PS, np.uint8), [PS])             # the zone is open
    view.block.inject_write_failures(1)
    with pytest.raises(DeviceIOError):
        view.append_batch([0, 0, 0], np.full(3 * PS, 2, np.uint8), [PS, PS, PS])
    assert view.report_zones()[0].wp == PS
    assert view.block.injected_failures() == (0, 0)
    got, failures = view.append_batch([0, 0], np.full(2 * PS, 3, np.uint8), [PS, PS])
    assert not failures and got.tolist() == [PS, 2 * PS]
    assert view.block.read(PS, PS)[0] == 3


def test_request_histograms_count_every_request():
    rng = np.random.default_rng(3)
    io, reads, writes = IoCounters(), Counter(), Counter()
    for k in range(800):            # past the batches kept before counting
        kind = k % 4
        if kind == 0:
            lengths = np.full(rng.integers(1, 40), PS, np.int64)
        elif kind == 1:
            lengths = rng.integers(1, 130, rng.integers(1, 40)) * 512           # sectors: a bincount
        elif kind == 2:
            lengths = rng.integers(1, 5000, rng.integers(9, 40))                 # any bytes: a sort
        else:
            io.read_alike(8192, 5)
            reads[8192] += 5
            continue
        io.read_many(lengths)
        io.wrote_many(lengths)
        reads.update(lengths.tolist())
        writes.update(lengths.tolist())
    assert io.read_hist == reads and io.write_hist == writes
    assert io.read_bytes == sum(n * c for n, c in reads.items())
    assert io.write_bytes == sum(n * c for n, c in writes.items())
