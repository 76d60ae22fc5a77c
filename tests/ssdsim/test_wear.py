"""Flash wear: erases per physical erase block on every SSD model (``erase_counts()``: conventional,
FDP, ZNS, Open-Channel), the emulated devices and zoned views that report it, and the
``wear_spread`` summary.  Modeled time only."""
from __future__ import annotations

import math

import numpy as np
import pytest

from zswap_host.devices import OcssdZonedView, ZonedBlockView, open_device, wear_spread
from zswap_host.devices.blockdev import FileBlockDevice
from zswap_host.errors import DeviceIOError
from zswap_host.ssdsim import READ, RESET, TRIM, WRITE, ConvSSD, OcssdSSD, ZNSSSD, get_preset
from zswap_host.ssdsim.fdp_model import FdpSSD

THESIS = get_preset("thesis-ssd")
KiB, MiB = 1 << 10, 1 << 20
PU = THESIS.program_unit_bytes          # 48 KiB: 3 pages of 16 KiB
OCSSD = "ocssd://?chunks=2&sectors=48&ws_min=4&ws_opt=12&mw_cunits=8&preset={preset}"


def overwrite(m, size: int, rounds: int = 4, seed: int = 0, **kw) -> None:
    """Fill the model sequentially, then ``rounds`` x its size of random 4 KiB overwrites."""
    n = size // 4096
    m.submit(WRITE, np.arange(n) * 4096, np.full(n, 4096), qd=32, **kw)
    offs = np.random.default_rng(seed).integers(0, n, rounds * n) * 4096
    m.submit(WRITE, offs, np.full(offs.size, 4096), qd=32, **kw)


def sum_relation(m) -> np.ndarray:
    e = m.erase_counts()
    assert e.dtype == np.int64
    assert int(e.sum()) == m.counters()["erase_count"] == m.erase_count
    return e


# ================================================================ the models
def test_conv_counts_one_entry_per_block_die_major_adding_up_to_erase_count():
    m = ConvSSD(THESIS, 32 * MiB)
    assert not sum_relation(m).any()
    overwrite(m, 32 * MiB)
    e = sum_relation(m)
    assert e.size == THESIS.n_dies * m.blocks_per_die
    per_die = e.reshape(THESIS.n_dies, m.blocks_per_die).sum(axis=1)
    assert (per_die > 0).all()                 # the stripe spreads GC over every die
    m.check_invariants()                       # checks the same relation in C
    # TRIM and reads erase nothing
    before = e.copy()
    m.submit(np.array([READ, TRIM]), np.array([0, 4096]), np.array([4096, 4096]))
    assert np.array_equal(m.erase_counts(), before)


@pytest.mark.parametrize("isolation", ["persistent", "initial"])
def test_fdp_counts_like_the_conventional_ftl(isolation):
    m = FdpSSD(THESIS, 32 * MiB, ruhs=4, isolation=isolation)
    n = 32 * MiB // 4096
    lpns = np.concatenate([np.arange(n), np.random.default_rng(2).integers(0, n, 4 * n)])
    m.submit(WRITE, lpns * 4096, np.full(lpns.size, 4096), qd=32, handles=lpns % 4)   # a handle per LBA
    e = sum_relation(m)
    assert e.size == THESIS.n_dies * m.blocks_per_die and e.sum() > 0
    m.check_invariants()


def test_fdp_with_one_handle_wears_exactly_as_conv():
    a, b = ConvSSD(THESIS, 16 * MiB), FdpSSD(THESIS, 16 * MiB, ruhs=1)
    overwrite(a, 16 * MiB)
    overwrite(b, 16 * MiB)
    assert np.array_equal(a.erase_counts(), b.erase_counts())


def test_zns_full_zone_reset_erases_every_block_of_the_zone_once():
    m = ZNSSSD(THESIS, 4, 1 * MiB, 768 * KiB)      # 16 program units: one per die, one block each
    assert (m.dies_per_zone, m.blocks_per_zone) == (16, 16)
    m.submit(WRITE, [2 * MiB], [768 * KiB])
    m.reset(2)
    e = sum_relation(m).reshape(4, 16)
    assert (e[2] == 1).all() and not np.delete(e, 2, axis=0).any()


def test_zns_reset_counts_only_the_programmed_blocks_of_a_multi_block_slice():
    # 192 MiB capacity: 4096 program units, 256 per die = 768 pages = 2 blocks of 384 per slice
    m = ZNSSSD(THESIS, 2, 256 * MiB, 192 * MiB)
    assert m.blocks_per_zone == 32
    # 16 x 128 + 1 program units: every slice fills its first block, slice 0 starts its second
    step = 16 * PU
    offs = np.arange(128) * step
    m.submit(WRITE, np.append(offs, 128 * step), np.append(np.full(128, step), PU))
    m.reset(0)
    e = sum_relation(m).reshape(2, 16, 2)         # zone, slice, block of the slice
    assert (e[0, :, 0] == 1).all()
    assert e[0, 0, 1] == 1 and not e[0, 1:, 1].any() and not e[1].any()
    # data still in the write buffer was never programmed: nothing to erase
    m.submit(WRITE, [256 * MiB], [4096])
    m.reset(1)
    assert sum_relation(m)[32:].sum() == 0


def test_zns_short_last_block_of_a_slice_is_its_own_entry():
    # 100 MiB: 2134 program units, slices of 134 or 133 (402 or 399 pages): 384 + a short block each
    m = ZNSSSD(THESIS, 3, 128 * MiB, 100 * MiB)
    assert m.blocks_per_zone == 32
    m.submit(WRITE, np.arange(100) * MiB + 128 * MiB, np.full(100, MiB))
    m.reset(1)
    e = sum_relation(m).reshape(3, 32)
    assert (e[1] == 1).all() and not e[0].any() and not e[2].any()


def test_ocssd_counts_per_chunk_add_up_to_erase_count():
    m = OcssdSSD(THESIS, chunks=2, sectors=48)
    m.submit(WRITE, [5 * 48], [48])
    for c in (5, 5, 0, 31):
        m.reset(c)
    e = sum_relation(m)
    assert e.size == m.nr_chunks == 32
    assert (e[5], e[0], e[31], int(e.sum())) == (2, 1, 1, 4)
    m.submit(RESET, [48], [48])
    assert sum_relation(m)[1] == 1


# ================================================================ the devices
def test_conventional_device_at_high_utilisation_spreads_erases_over_many_blocks():
    size = 32 * MiB
    dev = open_device(f"emu-conv://?size={size}&preset=thesis-ssd")
    n = size // 4096
    buf = np.zeros(n * 4096, np.uint8)
    dev.write_batch(np.arange(n) * 4096, buf, np.full(n, 4096))
    rng = np.random.default_rng(3)
    for _ in range(4):                                  # random overwrites of the full device
        dev.write_batch(rng.integers(0, n, n) * 4096, buf, np.full(n, 4096))
    e = dev.erase_counts()
    assert int(e.sum()) == dev.stats().erase_count == dev.model.erase_count > 0
    s = wear_spread(e)
    assert s["blocks"] == e.size == THESIS.n_dies * dev.model.blocks_per_die
    assert (e > 0).mean() > 0.9                         # greedy GC cycles through nearly every block
    assert 1.0 < s["max_over_mean"] < 2.0 and s["cv"] < 0.4   # measured: 1.46 and 0.21
    dev.close()


def test_zns_device_resetting_one_zone_wears_only_its_blocks():
    nz = 8
    dev = open_device(f"emu://?zones={nz}&zone_size=1MiB&zone_capacity=768KiB&preset=thesis-ssd")
    data = np.ones(256 * KiB, np.uint8)
    for _ in range(5):
        for _ in range(3):
            dev.append(0, data)
        dev.reset_zone(0)
    dev.reset_zone(3)                                   # an EMPTY zone: a no-op, no erase
    e = dev.erase_counts()
    bpz = dev.model.blocks_per_zone
    assert e.size == nz * bpz and int(e.sum()) == dev.stats().erase_count == 5 * bpz
    assert (e[:bpz] == 5).all() and not e[bpz:].any()
    s = wear_spread(e)
    assert (s["blocks"], s["erases"], s["max"], s["min"]) == (nz * bpz, 5 * bpz, 5, 0)
    assert s["mean"] == pytest.approx(5 / nz)
    assert s["max_over_mean"] == pytest.approx(nz)      # one zone in nz carries all the wear
    assert s["cv"] == pytest.approx(math.sqrt(nz - 1))
    dev.close()


def test_ocssd_device_counts_agree_with_the_chunk_logs_wear():
    dev = open_device(OCSSD.format(preset="thesis-ssd"))
    g = dev.geometry
    for c in (3, 7):                                     # write whole chunks (CLOSED), then reset
        dev.write(c * g.sectors + np.arange(g.sectors), np.ones(g.sectors * g.sector_size, np.uint8))
    dev.reset([3, 7, 0])
    dev.reset([3])
    dev.inject_reset_failures(1)                         # a failed reset: OFFLINE, not erased
    with pytest.raises(DeviceIOError, match="failed"):
        dev.reset([9, 3])
    e = dev.erase_counts()
    wear = np.array([i.wear_index for i in dev.chunk_info()])
    assert np.array_equal(e, wear)
    assert (e[3], e[7], e[0], e[9]) == (3, 1, 1, 0) and int(e.sum()) == dev.stats().erase_count
    dev.close()


def test_fdp_device_reports_its_models_wear():
    size = 16 * MiB
    dev = open_device(f"fdp://?size={size}&ruhs=4&preset=thesis-ssd")
    n = size // 4096
    buf = np.zeros(n * 4096, np.uint8)
    rng = np.random.default_rng(4)
    dev.write_batch(np.arange(n) * 4096, buf, np.full(n, 4096), handle=0)
    for h in range(4):
        dev.write_batch(rng.integers(0, n, n) * 4096, buf, np.full(n, 4096), handle=h)
    e = dev.erase_counts()
    assert np.array_equal(e, dev.model.erase_counts())
    assert int(e.sum()) == dev.stats().erase_count > 0
    assert e.size == THESIS.n_dies * dev.model.blocks_per_die
    dev.close()


def test_views_delegate_to_the_device_underneath():
    conv = open_device("emu-conv://?size=8MiB&preset=thesis-ssd")
    v = ZonedBlockView(conv, zone_size=1 * MiB)
    assert np.array_equal(v.erase_counts(), conv.erase_counts())
    oc = open_device(OCSSD.format(preset="thesis-ssd").replace("chunks=2", "chunks=4"))
    ov = OcssdZonedView(oc)
    data = np.ones(ov.geometry.max_append, np.uint8)
    while ov.zone_condition(1).name != "FULL":
        ov.append(1, data)
    chunks = ov.zone_chunks(1)
    ov.reset_zone(1)
    e = ov.erase_counts()
    assert np.array_equal(e, oc.erase_counts())
    assert (e[chunks] == 1).all() and int(e.sum()) == len(chunks)


@pytest.mark.parametrize("url", ["emu://?zones=4&zone_size=1MiB&preset=none", "emu-conv://?size=4MiB&preset=none",
                                 "fdp://?size=4MiB&preset=none", OCSSD.format(preset="none")])
def test_devices_without_a_timing_model_have_no_counts(url):
    dev = open_device(url)
    assert dev.erase_counts() is None
    if url.startswith("emu-conv"):
        assert ZonedBlockView(dev, zone_size=1 * MiB).erase_counts() is None
    elif url.startswith("ocssd"):
        assert OcssdZonedView(dev).erase_counts() is None
    dev.close()


def test_a_real_file_reports_no_wear(tmp_path):
    f = tmp_path / "plain.img"
    f.write_bytes(b"\0" * (1 * MiB))
    dev = FileBlockDevice(str(f))
    assert dev.erase_counts() is None
    assert ZonedBlockView(dev, zone_size=256 * KiB).erase_counts() is None
    dev.close()


# ================================================================ wear_spread
@pytest.mark.parametrize("counts,want", [
    ([1, 2, 3, 6], {"blocks": 4, "erases": 12, "mean": 3.0, "max": 6, "min": 1, "max_over_mean": 2.0,
                    "cv": math.sqrt(3.5) / 3}),          # deviations -2 -1 0 3: variance 14 / 4
    ([5, 5, 5], {"blocks": 3, "erases": 15, "mean": 5.0, "max": 5, "min": 5, "max_over_mean": 1.0, "cv": 0.0}),
    ([4, 0, 0, 0], {"blocks": 4, "erases": 4, "mean": 1.0, "max": 4, "min": 0, "max_over_mean": 4.0,
                    "cv": math.sqrt(3.0)}),              # variance (9 + 1 + 1 + 1) / 4
    ([0, 0], {"blocks": 2, "erases": 0, "mean": 0.0, "max": 0, "min": 0, "max_over_mean": 0.0, "cv": 0.0}),
    ([], {"blocks": 0, "erases": 0, "mean": 0.0, "max": 0, "min": 0, "max_over_mean": 0.0, "cv": 0.0}),
])
def test_wear_spread_of_known_arrays(counts, want):
    got = wear_spread(np.array(counts, np.int64))
    assert got.keys() == want.keys()
    for k, v in want.items():
        assert got[k] == pytest.approx(v), k
    assert isinstance(got["blocks"], int) and isinstance(got["erases"], int) and isinstance(got["max"], int)


def test_wear_spread_refuses_what_is_not_a_count():
    with pytest.raises(ValueError, match="negative"):
        wear_spread(np.array([1, -1]))
    with pytest.raises(ValueError, match="integers"):
        wear_spread(np.array([0.5, 1.0]))
