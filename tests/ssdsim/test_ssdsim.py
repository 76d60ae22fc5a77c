"""Behaviour of the SSD timing model (modeled time is deterministic, so modeled quantities are
asserted directly; nothing here depends on wall-clock speed)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from golden import check_golden, regen_main
from zswap_host.ssdsim import APPEND, PRESETS, READ, TRIM, WRITE, ControllerModel, ConvSSD, ZNSSSD, get_preset

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
THESIS = get_preset("thesis-ssd")
ZN540 = get_preset("zn540")


def wr(m, offsets, length=4096, qd=1):
    offsets = np.asarray(offsets, np.int64)
    return m.submit(np.full(offsets.size, WRITE, np.uint8), offsets, np.full(offsets.size, length, np.int64), qd=qd)


def rd(m, offsets, length=4096, qd=1):
    offsets = np.asarray(offsets, np.int64)
    return m.submit(np.full(offsets.size, READ, np.uint8), offsets, np.full(offsets.size, length, np.int64), qd=qd)


def fill_seq(m, bs=128 * KiB, drain=False):
    wr(m, np.arange(0, m.logical_bytes, bs), bs, qd=32)
    if drain:   # let the buffered programs finish so later reads find idle dies
        m.advance(0.5)


def random_overwrites(m, n, seed=0, lo=0, hi=None, qd=32):
    rng = np.random.default_rng(seed)
    hi = m.logical_bytes if hi is None else hi
    offs = rng.integers(lo // 4096, hi // 4096, n).astype(np.int64) * 4096
    wr(m, offs, qd=qd)


def waf_of_next(m, fn):
    h0, w0 = m.host_write_bytes, m.media_write_bytes
    fn()
    return (m.media_write_bytes - w0) / (m.host_write_bytes - h0)


# ---------------------------------------------------------------- presets

def test_presets_and_lookup():
    assert {"zn540", "thesis-ssd"} <= set(PRESETS)
    assert get_preset("ZN540") is ZN540
    with pytest.raises(ValueError, match="thesis-ssd"):
        get_preset("nope")
    z = ZN540
    assert (z.channels, z.dies_per_channel, z.page_size) == (8, 4, 32 * KiB)
    assert (z.t_prog_us, z.channel_mb_s) == (561.0, 450.0)           # NVMeVirt's; tR is fitted
    assert z.controller.write_path_mb_s > 0 and THESIS.controller == ControllerModel()
    assert z.zone_size == 2 * GiB and z.max_open == z.max_active == 14
    for p in PRESETS.values():
        assert p.source
        assert p.zone_capacity % (p.block_bytes * p.n_dies) == 0     # whole erase blocks, one set per die
        assert p.zone_size >= p.zone_capacity and p.zone_size & (p.zone_size - 1) == 0
        assert p.pages_per_block % p.oneshot_pages == 0
    assert 0.07 <= THESIS.conv_op <= 0.15


# ---------------------------------------------------------------- the controller (ControllerModel)

def _with(preset, **ctrl):
    return dataclasses.replace(preset, controller=ControllerModel(**ctrl))


def test_controller_read_time_bounds_deep_reads():
    m = ZNSSSD(_with(THESIS, ctrl_read_us=10.0), 4, THESIS.zone_size, THESIS.zone_capacity)
    wr(m, np.arange(0, 8 * MiB, 128 * KiB), 128 * KiB, qd=4)
    m.advance(1.0)
    t0 = m.now
    n = 2000
    rd(m, (np.arange(n) * 7919 % 2048) * 4096, qd=64)
    assert n / (m.now - t0) == pytest.approx(1e5, rel=0.02)         # one read per 10 us, however deep


def test_append_costs_its_controller_time_and_latency_and_only_zoned_models_take_it():
    p = _with(THESIS, ctrl_write_us=3.0, ctrl_append_us=4.0, t_append_us=2.0)
    m = ZNSSSD(p, 4, THESIS.zone_size, THESIS.zone_capacity)
    w = m.submit([WRITE], [0], [4096])[0] - 0.0
    t = m.now
    a = m.submit([APPEND], [4096], [4096])[0] - t
    link = 4096 / (p.host_link_mb_s * 1e6)
    assert w == pytest.approx((p.cmd_overhead_us + max(3.0, link * 1e6)) * 1e-6, rel=1e-6)
    assert a == pytest.approx((p.cmd_overhead_us + max(4.0, link * 1e6) + 2.0) * 1e-6, rel=1e-6)
    with pytest.raises(ValueError):
        ConvSSD(THESIS, 64 * MiB).submit([APPEND], [0], [4096])


def test_read_command_latency_lengthens_reads_only_on_every_model():
    """t_read_cmd_us: a read's firmware path slower than a write's (NVMeVirt's 970 PRO: 21.5 vs 4 us)."""
    p = _with(THESIS, t_read_cmd_us=17.5)
    for make in (lambda q: ConvSSD(q, 64 * MiB), lambda q: ZNSSSD(q, 4, THESIS.zone_size, THESIS.zone_capacity)):
        lat = {}
        for q in (THESIS, p):
            m = make(q)
            w = wr(m, [0])[0]
            wr(m, np.arange(4096, THESIS.stripe_bytes * 2, 4096), qd=4)   # program the page read below
            m.advance(1.0)
            t = m.now
            lat[q.controller.t_read_cmd_us] = (w, rd(m, [0])[0] - t)
        assert lat[17.5][0] == lat[0.0][0]                                # writes unchanged
        assert lat[17.5][1] - lat[0.0][1] == pytest.approx(17.5e-6, abs=1e-9)


def test_write_path_is_the_write_ceiling():
    p = _with(THESIS, write_path_mb_s=400.0)
    m = ZNSSSD(p, 8, THESIS.zone_size, THESIS.zone_capacity)
    offs = np.arange(0, 64 * MiB, 128 * KiB)
    c = wr(m, offs, 128 * KiB, qd=8)
    assert offs.size * 128 * KiB / c[-1] == pytest.approx(400e6, rel=0.02)


def test_finish_pads_the_zone_only_where_the_drive_does():
    cap = THESIS.zone_capacity
    for pads in (False, True):
        m = ZNSSSD(_with(THESIS, finish_pads_zone=pads, write_path_mb_s=1000.0), 4, THESIS.zone_size, cap)
        wr(m, [0], 4096)
        m.advance(1.0)
        t0, pad0 = m.now, m.counters()["pad_bytes"]
        end = m.finish(0)
        pad = m.counters()["pad_bytes"] - pad0
        if pads:        # the rest of the zone, through the 1 GB/s write path, and the clock moves
            assert pad == cap - 4096 and m.now == end
            assert end - t0 == pytest.approx(cap / 1e9, rel=0.05)
        else:           # the partial program unit, in the background
            assert pad == THESIS.program_unit_bytes - 4096 and m.now == t0
        e0 = m.now
        assert m.finish(1) == pytest.approx(e0 + (THESIS.cmd_overhead_us * 1e-6 if pads else 0))  # empty zone


def test_reset_cost_by_occupancy():
    p = _with(THESIS, t_reset_us=100.0, t_reset_written_us=1000.0, reset_us_per_mib=50.0, reset_exponent=0.5)
    m = ZNSSSD(p, 4, THESIS.zone_size, THESIS.zone_capacity)
    wr(m, np.arange(0, 16 * MiB, 128 * KiB), 128 * KiB, qd=4)
    m.advance(1.0)
    t0 = m.now
    assert m.reset(0) - t0 == pytest.approx((p.cmd_overhead_us + 100 + 1000 + 50 * 16 ** 0.5) * 1e-6, rel=1e-6)
    t0 = m.now
    assert m.reset(1) - t0 == pytest.approx((p.cmd_overhead_us + 100) * 1e-6, rel=1e-6)   # empty


def test_conventional_erase_block_given_or_scaled():
    scaled = ConvSSD(THESIS, 64 * MiB)
    assert scaled.pages_per_block < THESIS.pages_per_block           # small device: scaled down
    real = ConvSSD(THESIS, 64 * MiB, erase_block=THESIS.block_bytes)
    assert real.pages_per_block == THESIS.pages_per_block
    # GC's blocks per die: a 6 MiB block on a 64 MiB device needs far more raw flash than 15% OP
    assert real.effective_op > 0.5 > THESIS.conv_op
    for bad in (100 * KiB, 0, -THESIS.program_unit_bytes):
        with pytest.raises(ValueError, match="program unit"):
            ConvSSD(THESIS, 64 * MiB, erase_block=bad)


# ---------------------------------------------------------------- timing model

def test_unwritten_read_costs_command_and_link_only():
    m = ConvSSD(THESIS, 64 * MiB)
    c = rd(m, [0])[0]
    expect = THESIS.cmd_overhead_us * 1e-6 + 4096 / (THESIS.host_link_mb_s * 1e6)
    assert c == pytest.approx(expect, abs=2e-9)
    assert m.media_read_bytes == 0


def test_large_read_stripes_across_dies():
    m = ConvSSD(THESIS, 64 * MiB)
    fill_seq(m, drain=True)
    t0 = m.now
    big = rd(m, [0], 128 * KiB)[0] - t0
    t1 = m.now
    serial = rd(m, np.arange(0, 128 * KiB, 4096), 4096, qd=1)[-1] - t1
    assert big < serial / 4
    # the 128 KiB read touches more than one die: faster than reading its pages one die at a time
    pages = 128 * KiB // THESIS.page_size
    assert big < pages * THESIS.t_read_us * 1e-6


def test_queue_depth_overlaps_requests():
    res = {}
    for qd in (1, 8):
        m = ConvSSD(THESIS, 64 * MiB)
        fill_seq(m, drain=True)
        rng = np.random.default_rng(3)
        offs = rng.integers(0, m.logical_bytes // 4096, 2000) * 4096
        t0 = m.now
        c = rd(m, offs, qd=qd)
        res[qd] = m.now - t0
        if qd == 1:
            assert np.all(np.diff(c) > 0)        # strictly one after another
        assert m.now == pytest.approx(c.max())
    assert res[8] < res[1] / 3


def test_first_qd_requests_issue_together():
    m = ConvSSD(THESIS, 64 * MiB)
    c = rd(m, np.zeros(4, np.int64), qd=4)          # unwritten: cmd + link each, link serializes
    link = 4096 / (THESIS.host_link_mb_s * 1e6)
    assert c[0] == pytest.approx(THESIS.cmd_overhead_us * 1e-6 + link, abs=2e-9)
    assert c[3] == pytest.approx(THESIS.cmd_overhead_us * 1e-6 + 4 * link, abs=5e-9)


def test_host_link_limits_bandwidth():
    slow = dataclasses.replace(THESIS, host_link_mb_s=200.0)
    m = ConvSSD(slow, 64 * MiB)
    fill_seq(m, drain=True)
    t0 = m.now
    rd(m, np.arange(0, 32 * MiB, 128 * KiB), 128 * KiB, qd=32)
    bw = 32 * MiB / (m.now - t0) / 1e6
    assert bw <= 200.0 * 1.0001
    assert bw > 190.0
    fast = ConvSSD(THESIS, 64 * MiB)
    fill_seq(fast, drain=True)
    t0 = fast.now
    rd(fast, np.arange(0, 32 * MiB, 128 * KiB), 128 * KiB, qd=32)
    assert 32 * MiB / (fast.now - t0) / 1e6 > 1000


def test_write_ack_from_buffer_then_drain_rate():
    m = ConvSSD(THESIS, 256 * MiB)
    c = wr(m, [0])
    # a lone write is acknowledged from DRAM: command + link, no program time
    assert c[0] < THESIS.t_prog_us * 1e-6 / 10
    # a long sequential stream runs at the NAND program rate
    t0 = m.now
    wr(m, np.arange(0, 128 * MiB, 128 * KiB), 128 * KiB, qd=32)
    bw = 128 * MiB / (m.now - t0) / 1e6
    assert bw == pytest.approx(THESIS.program_mb_s, rel=0.1)


def test_advance_and_validation():
    m = ConvSSD(THESIS, 64 * MiB)
    m.advance(0.5)
    assert m.now == pytest.approx(0.5)
    assert rd(m, [0])[0] > 0.5
    with pytest.raises(ValueError):
        rd(m, [100])
    with pytest.raises(ValueError):
        rd(m, [64 * MiB])
    with pytest.raises(ValueError):
        ConvSSD(THESIS, 1000)
    assert m.submit(np.zeros(0, np.uint8), np.zeros(0, np.int64), np.zeros(0, np.int64)).size == 0


def test_deterministic():
    outs = []
    for _ in range(2):
        m = ConvSSD(THESIS, 64 * MiB)
        fill_seq(m)
        random_overwrites(m, 20000, seed=5)
        outs.append((m.now, m.media_write_bytes, m.erase_count))
    assert outs[0] == outs[1]


# ---------------------------------------------------------------- conventional FTL + GC

def test_sequential_overwrite_has_no_gc():
    m = ConvSSD(THESIS, 128 * MiB)
    fill_seq(m)
    assert waf_of_next(m, lambda: [fill_seq(m) for _ in range(3)]) == pytest.approx(1.0)
    assert m.gc_write_bytes == 0
    assert m.erase_count > 0                         # blocks were reclaimed (all invalid)
    m.check_invariants()


def test_greedy_gc_steady_state_and_invariants():
    m = ConvSSD(THESIS, 128 * MiB)
    fill_seq(m)
    units = m.logical_bytes // 4096
    wafs = []
    for i in range(4):
        wafs.append(waf_of_next(m, lambda: random_overwrites(m, units, seed=i)))
        m.check_invariants()
        assert m.free_blocks >= THESIS.gc_low_blocks * THESIS.n_dies
        assert m.valid_bytes == m.logical_bytes     # nothing lost, nothing duplicated
    assert wafs[0] > 1.5
    assert wafs[-1] == pytest.approx(wafs[-2], rel=0.05)  # steady state
    assert m.gc_runs > 0 and m.erase_count > 0
    # accounting: what reached flash = host writes + GC relocations
    assert m.media_write_bytes == m.host_write_bytes + m.gc_write_bytes
    # every LPN is still readable from flash (mapped)
    before = m.media_read_bytes
    rd(m, np.arange(0, m.logical_bytes, 128 * KiB), 128 * KiB, qd=32)
    assert m.media_read_bytes - before + m.counters()["buffer_read_bytes"] >= m.logical_bytes


def test_more_over_provisioning_lowers_waf():
    wafs = []
    for op in (0.07, 0.15, 0.28):
        m = ConvSSD(THESIS, 128 * MiB, op=op)
        fill_seq(m)
        units = m.logical_bytes // 4096
        random_overwrites(m, 2 * units, seed=1)
        wafs.append(waf_of_next(m, lambda: random_overwrites(m, units, seed=2)))
    assert wafs[0] > wafs[1] > wafs[2] > 1.0


def test_waf_near_known_greedy_values():
    # greedy page mapping, uniform random 4 KiB overwrites: ~7 at 7% OP, ~2-2.3 at 28%
    res = {}
    for op in (0.07, 0.28):
        m = ConvSSD(THESIS, 512 * MiB, op=op)
        fill_seq(m)
        units = m.logical_bytes // 4096
        random_overwrites(m, 2 * units, seed=1)
        res[op] = waf_of_next(m, lambda: random_overwrites(m, units, seed=2))
    assert 5.5 < res[0.07] < 9.0
    assert 1.8 < res[0.28] < 2.6


def test_trim_reduces_gc():
    gc = {}
    for trim in (False, True):
        m = ConvSSD(THESIS, 128 * MiB)
        fill_seq(m)
        if trim:   # the host discards the half of the space it will not use again
            m.submit(np.array([TRIM], np.uint8), np.array([64 * MiB], np.int64), np.array([64 * MiB], np.int64))
        units = m.logical_bytes // 4096
        g0 = m.gc_write_bytes
        random_overwrites(m, 2 * units, seed=4, hi=64 * MiB)
        gc[trim] = m.gc_write_bytes - g0
        m.check_invariants()
    assert gc[True] < gc[False] / 3


def test_trimmed_reads_are_free_and_rewrites_work():
    m = ConvSSD(THESIS, 64 * MiB)
    fill_seq(m)
    m.submit(np.array([TRIM], np.uint8), np.array([0], np.int64), np.array([1 * MiB], np.int64))
    before = m.media_read_bytes
    rd(m, np.arange(0, 1 * MiB, 4096), qd=4)
    assert m.media_read_bytes == before
    assert m.valid_bytes == 63 * MiB
    wr(m, np.arange(0, 1 * MiB, 4096))
    assert m.valid_bytes == 64 * MiB
    m.check_invariants()


def test_sequential_beats_random_writes_in_steady_state():
    m = ConvSSD(THESIS, 256 * MiB)
    fill_seq(m)
    units = m.logical_bytes // 4096
    random_overwrites(m, 2 * units, seed=1)
    t0 = m.now
    random_overwrites(m, units // 2, seed=2)
    rand_bw = (units // 2) * 4096 / (m.now - t0)
    wr(m, np.arange(units) * 4096, qd=32)                 # sequential pass undoes the random layout
    t0 = m.now
    wr(m, np.arange(units // 2) * 4096, qd=32)
    seq_bw = (units // 2) * 4096 / (m.now - t0)
    assert seq_bw > 3 * rand_bw


def test_large_capacity_is_compact():
    m = ConvSSD(THESIS, 32 * GiB)                      # 8 M mapping entries, uint32 each way
    assert m.raw_bytes >= m.logical_bytes / (1 - THESIS.conv_op) * 0.999
    assert m.pages_per_block == THESIS.pages_per_block  # large enough for the real erase block
    wr(m, [32 * GiB - 4096])
    assert m.valid_bytes == 4096


# ---------------------------------------------------------------- ZNS

def test_zns_geometry_any_zone_size():
    for p in (ZN540, THESIS):
        z = ZNSSSD(p, 8, 16 * MiB, 12 * MiB)
        assert 1 <= z.dies_per_zone <= p.n_dies
        c = z.submit(np.array([WRITE], np.uint8), np.array([16 * MiB], np.int64), np.array([12 * MiB], np.int64))
        assert c[0] > 0 and z.zone_written(1) == 12 * MiB
    tiny = ZNSSSD(ZN540, 4, 1 * MiB, 192 * KiB)       # 2 program units: 2 dies
    assert tiny.dies_per_zone == 2
    full = ZNSSSD(ZN540, 2, ZN540.zone_size, ZN540.zone_capacity)
    assert full.dies_per_zone == ZN540.n_dies


def test_zns_small_zone_uses_fewer_dies_and_is_slower():
    pu = ZN540.program_unit_bytes
    bws = {}
    for cap in (2 * pu, 640 * pu):                   # 2 dies vs all 32
        z = ZNSSSD(ZN540, 4, 64 * MiB, cap)
        n = 640 * pu // cap
        t0 = z.now
        for _ in range(n):   # fill zone 0, reset it, again (same zone: its dies only)
            offs = np.arange(0, cap, pu)
            z.submit(np.full(offs.size, WRITE, np.uint8), offs, np.full(offs.size, pu, np.int64), qd=8)
            z.reset(0)
        bws[cap] = n * cap / (z.now - t0)
    assert bws[640 * pu] > 4 * bws[2 * pu]


def test_zns_reset_erases_and_counts():
    p = THESIS
    z = ZNSSSD(p, 4, p.zone_size, p.zone_capacity)
    offs = np.arange(0, p.zone_capacity, 512 * KiB)
    z.submit(np.full(offs.size, WRITE, np.uint8), offs, np.full(offs.size, 512 * KiB, np.int64), qd=4)
    assert z.host_write_bytes == p.zone_capacity
    assert z.media_write_bytes == p.zone_capacity
    assert z.erase_count == 0
    now = z.now
    t = z.reset(0)
    assert t >= now + p.t_erase_us * 1e-6 and z.now == pytest.approx(t)
    assert z.erase_count == p.n_dies                     # one block per die
    assert z.zone_written(0) == 0
    z.reset(1)                                           # empty zone: nothing to erase
    assert z.erase_count == p.n_dies
    # reads after reset cost no flash access
    before = z.media_read_bytes
    z.submit(np.array([READ], np.uint8), np.array([0], np.int64), np.array([128 * KiB], np.int64))
    assert z.media_read_bytes == before


def test_zns_finish_pads_partial_program_unit():
    p = THESIS                  # a preset whose finish pads only the unit (zn540's pads the zone)
    z = ZNSSSD(p, 2, 16 * MiB, 12 * MiB)
    z.submit(np.array([WRITE], np.uint8), np.array([0], np.int64), np.array([4096], np.int64))
    assert z.media_write_bytes == 4096 and z.pad_bytes == 0
    # data still in the write buffer: a read does not touch flash
    z.submit(np.array([READ], np.uint8), np.array([0], np.int64), np.array([4096], np.int64))
    assert z.media_read_bytes == 0
    z.finish(0)
    assert z.pad_bytes == p.program_unit_bytes - 4096
    assert z.media_write_bytes == p.program_unit_bytes
    z.advance(0.01)
    z.submit(np.array([READ], np.uint8), np.array([0], np.int64), np.array([4096], np.int64))
    assert z.media_read_bytes == 4096
    z.reset(0)
    assert z.erase_count == 1


def test_zns_striped_zone_reads_fast_and_rejects_trim():
    p = ZN540
    z = ZNSSSD(p, 2, 64 * MiB, 48 * MiB)
    offs = np.arange(0, 48 * MiB, 256 * KiB)
    z.submit(np.full(offs.size, WRITE, np.uint8), offs, np.full(offs.size, 256 * KiB, np.int64), qd=8)
    z.advance(0.1)
    t0 = z.now
    z.submit(np.full(offs.size, READ, np.uint8), offs, np.full(offs.size, 256 * KiB, np.int64), qd=8)
    assert 48 * MiB / (z.now - t0) / 1e6 > 1000           # striped over 32 dies
    with pytest.raises(ValueError):
        z.submit(np.array([TRIM], np.uint8), np.array([0], np.int64), np.array([4096], np.int64))
    with pytest.raises(ValueError):
        z.reset(2)


# ---------------------------------------------------------------- erase cost (issue 9)

def _erase_ns_per_byte(m):
    return m.erase_ns / m.erase_bytes


def test_erase_costs_the_same_per_byte_on_both_ftls():
    for p in (THESIS, ZN540):
        real = p.t_erase_us * 1e3 / p.block_bytes                 # ns per byte of a real block
        conv = ConvSSD(p, 256 * MiB)                               # scaled-down blocks
        assert conv.pages_per_block < p.pages_per_block
        fill_seq(conv)
        random_overwrites(conv, 2 * conv.logical_bytes // 4096, seed=3)
        assert conv.erase_count > 0
        assert conv.erase_bytes == conv.erase_count * conv.pages_per_block * p.page_size
        assert _erase_ns_per_byte(conv) == pytest.approx(real, rel=1e-4)    # (erase times are whole ns)
        # ZNS zones whose per-die slice is far smaller than the real block (768 KiB, 384 KiB)
        cap = 12 * MiB                                            # whole stripes on both presets
        z = ZNSSSD(p, 4, 16 * MiB, cap)
        for zone in range(4):
            z.submit(np.array([WRITE], np.uint8), np.array([zone * 16 * MiB], np.int64), np.array([cap], np.int64))
        z.advance(0.1)
        t0 = z.now
        t = [z.reset(zone) for zone in range(4)]
        slice_bytes = cap // z.dies_per_zone
        assert z.dies_per_zone == p.n_dies and slice_bytes <= p.block_bytes / 8
        assert z.erase_bytes == 4 * cap
        assert _erase_ns_per_byte(z) == pytest.approx(real, rel=1e-4)
        # one reset: the slices erase in parallel, each for its share of t_erase; a preset with the
        # drive's own reset cost completes then instead (the erases run on behind it)
        erase_s = p.t_erase_us * 1e-6 * slice_bytes / p.block_bytes
        c = p.controller
        own_s = (c.t_reset_us + c.t_reset_written_us + c.reset_us_per_mib * 12 ** c.reset_exponent) * 1e-6
        assert t[0] - t0 == pytest.approx(p.cmd_overhead_us * 1e-6 + (own_s if own_s else erase_s), abs=2e-9)


def test_zns_reset_of_a_full_preset_zone_is_unchanged():
    # default geometry: each die's slice is one real erase block -> exactly t_erase
    z = ZNSSSD(THESIS, 2, THESIS.zone_size, THESIS.zone_capacity)
    offs = np.arange(0, THESIS.zone_capacity, 512 * KiB)
    z.submit(np.full(offs.size, WRITE, np.uint8), offs, np.full(offs.size, 512 * KiB, np.int64), qd=4)
    z.advance(1.0)
    t0 = z.now
    assert z.reset(0) - t0 == pytest.approx((THESIS.cmd_overhead_us + THESIS.t_erase_us) * 1e-6, abs=1e-9)
    assert z.erase_ns == THESIS.n_dies * round(THESIS.t_erase_us * 1e3)


# ---------------------------------------------------------------- options off: unchanged model

def _mixed_workload(m, seed=11, idle=0.0):
    """Fill, then bursts of mixed random 4 KiB writes/reads/trims at several depths."""
    rng = np.random.default_rng(seed)
    fill_seq(m)
    units = m.logical_bytes // 4096
    outs = []
    for burst in range(4):
        n = 6000
        ops = np.where(rng.random(n) < 0.3, READ, WRITE).astype(np.uint8)
        ops[rng.random(n) < 0.01] = TRIM
        offs = rng.integers(0, units, n).astype(np.int64) * 4096
        outs.append(m.submit(ops, offs, np.full(n, 4096, np.int64), qd=(1, 8, 32, 4)[burst]))
        m.advance(idle)
    return np.concatenate(outs)


def test_options_off_reproduce_the_model_bit_for_bit():
    base = _mixed_workload(ConvSSD(THESIS, 64 * MiB), idle=0.01)
    off = ConvSSD(THESIS, 64 * MiB, idle_gc=False, suspend=False)
    assert np.array_equal(_mixed_workload(off, idle=0.01), base)
    # values of the model before the options existed (update only for intended model changes)
    assert int(round(base[-1] * 1e9)) == 1_022_760_553
    assert int(round(base.sum() * 1e9)) == 14_033_051_876_016
    # idle-time GC only acts in idle time: without advance() it changes nothing
    a = _mixed_workload(ConvSSD(THESIS, 64 * MiB))
    b = _mixed_workload(ConvSSD(THESIS, 64 * MiB, idle_gc=True))
    assert np.array_equal(a, b)
    # suspend only acts on reads: a write-only stream is unchanged
    m_off, m_on = ConvSSD(THESIS, 64 * MiB), ConvSSD(THESIS, 64 * MiB, suspend=True)
    for m in (m_off, m_on):
        fill_seq(m)
        random_overwrites(m, 20000, seed=2)
    assert m_off.now == m_on.now and m_on.suspend_count == 0


# ---------------------------------------------------------------- idle-time GC (conventional)

def _bursts_with_idle(idle_gc, bursts=6, burst_bytes=4 * MiB, idle_s=0.2):
    m = ConvSSD(THESIS, 128 * MiB, idle_gc=idle_gc)
    fill_seq(m)
    units = m.logical_bytes // 4096
    random_overwrites(m, 2 * units, seed=1)              # steady-state GC
    m.advance(0.5)
    rng = np.random.default_rng(9)
    k = burst_bytes // 4096
    durs = []
    c0 = m.counters()
    for _ in range(bursts):
        t0 = m.now
        c = wr(m, rng.integers(0, units, k) * 4096, qd=32)
        durs.append(c.max() - t0)
        m.advance(idle_s)
    c1 = m.counters()
    m.check_invariants()
    return m, np.array(durs), {k_: c1[k_] - c0[k_] for k_ in c0}


def test_idle_gc_cleans_in_idle_windows_and_shortens_bursts():
    off, d_off, c_off = _bursts_with_idle(False)
    on, d_on, c_on = _bursts_with_idle(True)
    assert c_off["gc_bg_write_bytes"] == 0 and c_off["gc_bg_runs"] == 0
    assert c_on["gc_bg_write_bytes"] > 0 and c_on["gc_bg_runs"] > 0
    assert c_on["gc_write_bytes"] >= c_on["gc_bg_write_bytes"]          # background is part of GC
    assert on.media_write_bytes == on.host_write_bytes + on.gc_write_bytes
    # the foreground stall: the bursts run much faster when idle time was used for GC
    assert d_on.mean() < 0.6 * d_off.mean()
    # idle GC stopped at its target (every die), above the foreground watermark
    assert on.idle_gc_blocks > THESIS.gc_high_blocks
    assert on.free_blocks >= on.idle_gc_blocks * THESIS.n_dies
    assert on.options == {"idle_gc": True, "suspend": False, "gc_striped": False}


def test_idle_gc_starts_work_only_inside_the_window():
    def after_burst():
        m = ConvSSD(THESIS, 128 * MiB, idle_gc=True)
        fill_seq(m)
        random_overwrites(m, 2 * m.logical_bytes // 4096, seed=1)
        return m

    runs = {}
    for window in (1e-6, 0.005, 0.05):
        m = after_burst()
        m.advance(window)
        runs[window] = m.gc_bg_runs
        m.check_invariants()
    assert runs[1e-6] == 0           # 1 us: every die is still busy with the burst's queued work
    assert 0 < runs[0.005] < runs[0.05]


# ---------------------------------------------------------------- program/erase suspend

def _read_latency_under_writes(m, write_offsets, read_offsets, rounds=30, seed=3):
    """Rounds of (a burst of queued writes, then 16 reads one at a time); per-read latencies."""
    rng = np.random.default_rng(seed)
    lats = []
    for _ in range(rounds):
        wr(m, write_offsets(rng), qd=32)
        t0 = m.now
        c = rd(m, read_offsets(rng), qd=1)
        lats.append(np.diff(np.concatenate([[t0], c])))
    return np.concatenate(lats)


def test_suspend_cuts_read_latency_under_writes_on_both_ftls():
    res = {}
    for sus in (False, True):
        m = ConvSSD(THESIS, 128 * MiB, suspend=sus)
        fill_seq(m, drain=True)
        u = m.logical_bytes // 4096
        conv = _read_latency_under_writes(m, lambda g: g.integers(0, u, 256) * 4096,
                                          lambda g: g.integers(0, u, 16) * 4096)
        m.check_invariants()
        z = ZNSSSD(THESIS, 8, THESIS.zone_size, THESIS.zone_capacity, suspend=sus)
        for zi in range(2):
            o = zi * THESIS.zone_size + np.arange(0, THESIS.zone_capacity, 512 * KiB)
            z.submit(np.full(o.size, WRITE, np.uint8), o, np.full(o.size, 512 * KiB, np.int64), qd=8)
        z.advance(0.5)
        pos = [2 * THESIS.zone_size]

        def zw(g):
            o = pos[0] + np.arange(256) * 4096
            pos[0] += 256 * 4096
            return o
        zns = _read_latency_under_writes(
            z, zw, lambda g: g.integers(0, 2, 16) * THESIS.zone_size + g.integers(0, THESIS.zone_capacity // 4096, 16) * 4096)
        res[sus] = (conv, zns, m.suspend_count, z.suspend_count)
    for i in (0, 1):
        off, on = res[False][i], res[True][i]
        assert on.mean() < 0.6 * off.mean()
        assert np.percentile(on, 99) < THESIS.t_prog_us * 1e-6 / 2     # never a whole program
    assert res[False][2] == res[False][3] == 0
    assert res[True][2] > 0 and res[True][3] > 0


def test_suspend_bounds_a_read_behind_queued_programs():
    p = THESIS
    lat = {}
    for sus in (False, True):
        m = ConvSSD(p, 64 * MiB, suspend=sus)
        fill_seq(m)                 # not drained: the dies still have the buffer's programs queued
        t0 = m.now
        lat[sus] = rd(m, [0], qd=1)[0] - t0
    # with suspend: command, at most the suspend latency, the sense, the channel (possibly behind
    # one program unit's transfer) and the link
    bound = (p.cmd_overhead_us + p.t_suspend_us + p.t_read_us) * 1e-6 \
        + (p.program_unit_bytes + 4096) / (p.channel_mb_s * 1e6) + 4096 / (p.host_link_mb_s * 1e6)
    assert lat[True] <= bound + 1e-9
    assert lat[False] > p.t_prog_us * 1e-6 / 2      # without it, the read waits for a program


def test_device_urls_select_the_options():
    from zswap_host.devices.url import open_device
    from zswap_host.errors import DeviceSpecError

    dev = open_device("emu-conv://?size=64MiB&idle_gc=1&suspend=1")
    d = dev.describe()
    assert d["idle_gc"] is True and d["suspend"] is True
    assert dev.model.idle_gc and dev.model.suspend
    dev.write_batch(np.arange(0, 64 * MiB, 128 * KiB), np.zeros(64 * MiB, np.uint8), np.full(512, 128 * KiB))
    rng = np.random.default_rng(0)
    offs = rng.integers(0, 64 * MiB // 4096, 40000) * 4096
    dev.write_batch(offs, np.zeros(offs.size * 4096, np.uint8), np.full(offs.size, 4096))
    dev.advance(0.2)
    assert dev.model.gc_bg_write_bytes > 0
    plain = open_device("emu-conv://?size=64MiB").describe()
    assert plain["idle_gc"] is False and plain["suspend"] is False
    z = open_device("emu://?zones=4&suspend=1")
    assert z.describe()["suspend"] is True and z.model.suspend
    with pytest.raises(DeviceSpecError):
        open_device("emu://?zones=4&idle_gc=1")        # no device GC on a zoned device
    with pytest.raises(DeviceSpecError):
        open_device("emu-conv://?size=64MiB&suspend=yes")


# ---------------------------------------------------------------- timing golden (regression)
# tests/data/ssdsim_golden.npz holds completion times and counters of a fixed mixed workload on
# both FTLs and both presets, suspend and idle-time GC on and off.  Any change to the model's
# timing fails this test.  Regenerate only for an intended model change, and say so in the commit:
#     PYTHONPATH=tests/support python tests/ssdsim/test_ssdsim.py --regen-golden

_COUNTER_KEYS = ("host_write_bytes", "host_read_bytes", "host_trim_bytes", "media_write_bytes",
                 "media_read_bytes", "gc_write_bytes", "pad_bytes", "erase_count", "gc_runs",
                 "buffer_read_bytes", "nand_read_ops", "nand_prog_ops", "die_busy_ns", "erase_ns",
                 "erase_bytes", "gc_bg_write_bytes", "gc_bg_runs", "suspend_count")


def _digest(t):
    """Sum, xor and count of completion times in ns: any changed time changes it."""
    ns = np.round(np.asarray(t) * 1e9).astype(np.int64)
    return np.array([int(ns.sum()), int(np.bitwise_xor.reduce(ns)) if ns.size else 0, ns.size], np.int64)


def _golden_conv(out, preset, size, suspend, idle_gc):
    m = ConvSSD(preset, size, idle_gc=idle_gc, suspend=suspend)
    key = f"conv-{preset.name}-s{int(suspend)}-i{int(idle_gc)}"
    rng = np.random.default_rng(5)
    units = size // 4096
    warm = [wr(m, np.arange(0, size, 128 * KiB), 128 * KiB, qd=32)]
    warm.append(wr(m, rng.integers(0, units, 2 * units) * 4096, qd=32))      # into steady-state GC
    times = []
    for qd in (1, 4, 32, 2):
        n = 150
        r = rng.random(n)
        ops = np.where(r < 0.4, READ, WRITE).astype(np.uint8)
        ops[r > 0.95] = TRIM
        lens = rng.choice([1, 1, 1, 2, 8, 32], n).astype(np.int64) * 4096
        offs = rng.integers(0, units - 32, n).astype(np.int64) * 4096
        times.append(m.submit(ops, offs, lens, qd=qd))
        m.advance(0.004)
    m.check_invariants()
    out[key + "-times"] = np.concatenate(times)
    out[key + "-warm"] = _digest(np.concatenate(warm))
    c = m.counters()
    out[key + "-counters"] = np.array([c[k] for k in _COUNTER_KEYS] + [m.free_blocks], np.int64)


def _golden_zns(out, preset, zone_size, zone_cap, nz, suspend):
    m = ZNSSSD(preset, nz, zone_size, zone_cap, suspend=suspend)
    key = f"zns-{preset.name}-s{int(suspend)}"
    rng = np.random.default_rng(6)
    wp = np.zeros(nz, np.int64)
    times, resets = [], []
    for rnd in range(12):
        ops, offs, lens = [], [], []
        for _ in range(24):                                   # appends to random zones, in order
            z = int(rng.integers(0, nz))
            ln = min(int(rng.choice([4, 16, 64, 256])) * KiB, zone_cap - int(wp[z]))
            if ln > 0:
                ops.append(WRITE), offs.append(z * zone_size + int(wp[z])), lens.append(ln)
                wp[z] += ln
        for _ in range(24):                                   # reads of written (or unwritten) data
            z = int(rng.integers(0, nz))
            off = z * zone_size + (int(rng.integers(0, wp[z] // 4096)) * 4096 if wp[z] else 0)
            ops.append(READ), offs.append(off), lens.append(min(int(rng.choice([1, 2, 8])) * 4096,
                                                                (z + 1) * zone_size - off))
        times.append(m.submit(np.array(ops, np.uint8), np.array(offs, np.int64), np.array(lens, np.int64),
                              qd=(1, 8, 32)[rnd % 3]))
        if rnd % 3 == 2:
            z = int(rng.integers(0, nz))
            m.finish(z)
            wp[z] = min(-(-int(wp[z]) // preset.program_unit_bytes) * preset.program_unit_bytes, zone_cap)
        if rnd % 4 == 3:
            z = int(np.argmax(wp))
            resets.append(m.reset(z))
            wp[z] = 0
        m.advance(0.0005)
    out[key + "-times"] = np.concatenate(times + [np.array(resets)])
    c = m.counters()
    out[key + "-counters"] = np.array([c[k] for k in _COUNTER_KEYS], np.int64)


def _golden_run() -> dict:
    out = {}
    for s in (False, True):
        for i in (False, True):
            _golden_conv(out, THESIS, 32 * MiB, s, i)
    _golden_conv(out, ZN540, 512 * MiB, True, True)
    for s in (False, True):
        _golden_zns(out, THESIS, 8 * MiB, 6 * MiB, 12, s)
        _golden_zns(out, ZN540, 16 * MiB, 12 * MiB, 8, s)
    return out


def test_timing_matches_the_committed_golden():
    """Completion times and counters are bit-identical to tests/data/ssdsim_golden.npz."""
    check_golden(_golden_run(), "ssdsim_golden.npz", "the model's timing",
                 "PYTHONPATH=tests/support python tests/ssdsim/test_ssdsim.py --regen-golden")


@pytest.mark.parametrize("zoned", [False, True])
def test_submit_groups_is_one_submit_per_group(zoned):
    """Serial groups in one call (a thread's faults or reclaim chunks) time exactly as one submit per
    group, on both FTLs: group g + 1 is issued when group g's last request completes."""
    p = get_preset("thesis-ssd")

    def make():
        return ZNSSSD(p, 8, 16 * MiB, 12 * MiB) if zoned else ConvSSD(p, 64 * MiB)

    a, b = make(), make()
    w = np.arange(0, 8 * MiB, 128 * KiB)                        # sequential writes fill zone 0's capacity
    for m in (a, b):
        m.submit(WRITE, w, np.full(w.size, 128 * KiB), qd=8)
    rng = np.random.default_rng(9)
    sizes = rng.integers(1, 5, 25)
    qds = np.maximum(1, sizes - rng.integers(0, 2, 25))
    offs = rng.integers(0, 2048, int(sizes.sum())) * 4096
    ops = np.where(rng.random(offs.size) < 0.7, READ, WRITE).astype(np.uint8)
    if zoned:                                                    # a zoned device only reads where it may
        ops[:] = READ
    done = a.submit_groups(ops, offs, np.full(offs.size, 4096), sizes, qds)
    parts, lo = [], 0
    for n, qd in zip(sizes.tolist(), qds.tolist()):
        parts.append(b.submit(ops[lo:lo + n], offs[lo:lo + n], np.full(n, 4096), qd=qd))
        lo += n
    assert np.concatenate(parts).tobytes() == done.tobytes() and a.now == b.now
    assert a.counters() == b.counters()
    with pytest.raises(ValueError, match="group sizes"):
        a.submit_groups(ops, offs, np.full(offs.size, 4096), sizes[:-1], qds[:-1])


if __name__ == "__main__":
    regen_main("ssdsim_golden.npz", _golden_run)


def _twins(kind: str):
    p = get_preset("thesis-ssd")
    if kind == "zns":
        return [ZNSSSD(p, 8, 16 << 20, 12 << 20) for _ in range(2)], 8 * (16 << 20)
    if kind == "fdp":
        from zswap_host.ssdsim import FdpSSD
        return [FdpSSD(p, 64 << 20, ruhs=4) for _ in range(2)], 64 << 20
    return [ConvSSD(p, 64 << 20) for _ in range(2)], 64 << 20


@pytest.mark.parametrize("kind", ["conv", "fdp", "zns"])
def test_charge_of_checked_requests_is_submit(kind):
    # what the emulated devices call with their own (checked) requests: the same times and state
    (a, b), size = _twins(kind)
    rng = np.random.default_rng(4)
    for step in range(60):
        n = int(rng.integers(1, 40))
        op = WRITE if step % 3 == 0 else READ
        if kind == "zns" and step % 3 == 0:             # sequential writes into zone step // 3 % 8
            z = step // 3 % 8
            a.reset(z), b.reset(z)
            offs = z * (16 << 20) + np.arange(n, dtype=np.int64) * 8192
        else:
            offs = rng.integers(0, size // 8192 - 1, n).astype(np.int64) * 8192
        lens = np.full(n, 8192 if step % 2 else 4096, np.int64)
        kw = {}
        if kind == "fdp":                               # an int, or one (checked) uint16 per request
            kw["handles"] = int(rng.integers(0, 4)) if step % 2 else rng.integers(0, 4, n).astype(np.uint16)
        if step % 4 == 1:
            sizes, qds = np.array([n // 2, n - n // 2]), np.array([1, 8])
            got = a.charge_groups(op, offs, lens, sizes, qds, **kw)
            want = b.submit_groups(np.full(n, op, np.uint8), offs, lens, sizes, qds, **kw)
        else:
            got = a.charge(op, offs, lens, 4, **kw)
            want = b.submit(np.full(n, op, np.uint8), offs, lens, 4, **kw)
        assert np.array_equal(got, want) and a.now == b.now
    assert a.counters() == b.counters() and a.counters()["host_write_bytes"] > 0


def test_a_device_of_blocks_smaller_than_the_models_unit_still_has_its_requests_checked():
    from zswap_host.devices import open_device

    dev = open_device("emu-conv://?size=16MiB&block_size=512&preset=thesis-ssd")
    assert not dev._model_takes_checked()
    with pytest.raises(ValueError, match="4 KiB aligned"):
        dev.write(512, np.zeros(512, np.uint8))
    assert open_device("emu-conv://?size=16MiB&preset=thesis-ssd")._model_takes_checked()
