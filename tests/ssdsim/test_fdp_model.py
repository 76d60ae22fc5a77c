"""NVMe Flexible Data Placement in the conventional FTL (``FdpSSD``): one handle is exactly a
``ConvSSD``; handles keep streams apart; per-handle counters add up; bad handles are rejected.
Modeled quantities only, no wall-clock timing."""
from __future__ import annotations

import numpy as np
import pytest

from zswap_host.ssdsim import READ, TRIM, WRITE, ConvSSD, FdpSSD, get_preset
from zswap_host.ssdsim.model import ffi, lib

KiB, MiB = 1 << 10, 1 << 20
THESIS = get_preset("thesis-ssd")
ZN540 = get_preset("zn540")


def _mixed(m, seed=3, handles_of=None, idle=0.002):
    """Fill, then bursts of random writes/overwrites/trims/reads of 4-128 KiB at several queue
    depths with idle gaps.  handles_of(rng, n) gives per-request handles (None: no handles)."""
    rng = np.random.default_rng(seed)
    units = m.logical_bytes // 4096
    offs = np.arange(0, m.logical_bytes, 128 * KiB)
    outs = [m.submit(WRITE, offs, np.full(offs.size, 128 * KiB), qd=32)]
    for qd in (1, 4, 32, 8, 2):
        n = 3000
        r = rng.random(n)
        ops = np.where(r < 0.35, READ, WRITE).astype(np.uint8)
        ops[r > 0.97] = TRIM
        lens = rng.choice([1, 1, 1, 2, 4, 32], n).astype(np.int64) * 4096
        offs = rng.integers(0, units - 32, n).astype(np.int64) * 4096
        kw = {} if handles_of is None else {"handles": handles_of(rng, n)}
        outs.append(m.submit(ops, offs, lens, qd=qd, **kw))
        m.advance(idle)
    return np.concatenate(outs)


def _device_sums(m):
    rows = m.ruh_counters()
    return tuple(sum(r[k] for r in rows) for k in ("host_write_bytes", "media_write_bytes", "gc_write_bytes"))


# ---------------------------------------------------------------- one handle = ConvSSD

@pytest.mark.parametrize("preset,size,kw", [(THESIS, 32 * MiB, {}),
                                            (THESIS, 32 * MiB, {"idle_gc": True, "suspend": True}),
                                            (ZN540, 256 * MiB, {})])
def test_one_handle_is_exactly_a_conv_ssd(preset, size, kw):
    conv = ConvSSD(preset, size, **kw)
    fdp = FdpSSD(preset, size, ruhs=1, **kw)
    zeros = FdpSSD(preset, size, ruhs=1, **kw)           # handle 0 named explicitly
    assert (fdp.blocks_per_die, fdp.pages_per_block, fdp.raw_bytes) == \
        (conv.blocks_per_die, conv.pages_per_block, conv.raw_bytes)
    want = _mixed(conv)
    assert _mixed(fdp).tobytes() == want.tobytes()
    assert _mixed(zeros, handles_of=lambda rng, n: np.zeros(n, np.int64)).tobytes() == want.tobytes()
    for m in (fdp, zeros):
        assert m.counters() == conv.counters() and m.free_blocks == conv.free_blocks
        m.check_invariants()
    (row,) = fdp.ruh_counters()
    c = conv.counters()
    assert (row["handle"], row["host_write_bytes"], row["media_write_bytes"], row["gc_write_bytes"]) == \
        (0, c["host_write_bytes"], c["media_write_bytes"], c["gc_write_bytes"])
    assert row["write_amplification"] == c["write_amplification"]


# ---------------------------------------------------------------- isolation

def _hot_and_cold(m, split, ratio=4, seed=1):
    """A long-lived stream (the first 80 % of the device, written once) interleaved with a
    short-lived one (random rewrites of the last 20 %), then the short-lived one alone: 6 device
    capacities in all.  split: cold on handle 0, hot on handle 1; else both on handle 0."""
    units = m.logical_bytes // 4096
    hot_n = units // 5
    cold_n = units - hot_n
    rng = np.random.default_rng(seed)
    hot = cold_n + rng.integers(0, hot_n, cold_n * ratio + 2 * units)
    offs = np.empty(cold_n * (ratio + 1), np.int64)
    handles = np.ones(offs.size, np.int64)
    offs[::ratio + 1], handles[::ratio + 1] = np.arange(cold_n), 0
    for k in range(ratio):
        offs[k + 1::ratio + 1] = hot[k:cold_n * ratio:ratio]
    offs = np.concatenate([offs, hot[cold_n * ratio:]]) * 4096
    handles = np.concatenate([handles, np.ones(offs.size - handles.size, np.int64)])
    m.submit(WRITE, offs, np.full(offs.size, 4096), qd=32, handles=handles if split else 0)
    return m


@pytest.mark.parametrize("isolation", ["persistent", "initial"])
def test_separate_handles_lower_write_amplification(isolation):
    mixed = _hot_and_cold(FdpSSD(THESIS, 32 * MiB, ruhs=2, isolation=isolation), split=False)
    split = _hot_and_cold(FdpSSD(THESIS, 32 * MiB, ruhs=2, isolation=isolation), split=True)
    assert mixed.host_write_bytes == split.host_write_bytes
    assert mixed.gc_write_bytes > 0                       # the device was under GC pressure
    assert split.write_amplification < mixed.write_amplification
    for m in (mixed, split):
        c = m.counters()
        assert _device_sums(m) == (c["host_write_bytes"], c["media_write_bytes"], c["gc_write_bytes"])
        m.check_invariants()
    cold, hot = split.ruh_counters()[:2]
    units = split.logical_bytes // 4096
    assert cold["host_write_bytes"] == (units - units // 5) * 4096
    assert hot["gc_write_bytes"] > 0
    if isolation == "persistent":
        # the long-lived data fills its own RUs: GC never has a reason to move it
        assert cold["gc_write_bytes"] <= 0.01 * hot["gc_write_bytes"]
        for r in (cold, hot):
            assert r["media_write_bytes"] == r["host_write_bytes"] + r["gc_write_bytes"]
    else:
        mixed_row = split.ruh_counters()[-1]
        assert mixed_row["handle"] == "mixed" and mixed_row["host_write_bytes"] == 0
        # every relocation lands in the shared GC RUs, none in the handles' own
        assert mixed_row["media_write_bytes"] == split.gc_write_bytes
        assert all(r["media_write_bytes"] == r["host_write_bytes"] for r in split.ruh_counters()[:-1])


def test_persistent_gc_keeps_each_handles_data_in_its_own_rus():
    m = FdpSSD(THESIS, 32 * MiB, ruhs=3)
    _mixed(m, handles_of=lambda rng, n: rng.integers(0, 3, n))
    rows = m.ruh_counters()
    assert len(rows) == 3                                 # no mixed entry
    for r in rows:     # a handle's RUs take its host data plus what GC moved out of its own RUs
        assert r["media_write_bytes"] == r["host_write_bytes"] + r["gc_write_bytes"]
    m.check_invariants()


# ---------------------------------------------------------------- rejected and ignored handles

def test_out_of_range_handle_is_rejected_and_changes_nothing():
    m = FdpSSD(THESIS, 16 * MiB, ruhs=4)
    _mixed(m, handles_of=lambda rng, n: rng.integers(0, 4, n))
    before, now = m.counters(), m.now
    ops = np.array([WRITE, READ, WRITE, WRITE], np.uint8)
    offs = np.arange(4) * 4096
    for bad in (4, -1, 70000):
        with pytest.raises(ValueError, match=rf"request 2: handle {bad} is outside 0\.\.3"):
            m.submit(ops, offs, np.full(4, 4096), handles=[1, 0, bad, 2])
        with pytest.raises(ValueError, match=r"request 0: handle"):
            m.submit(WRITE, offs, np.full(4, 4096), handles=bad)
        with pytest.raises(ValueError, match=rf"request 2: handle {bad}"):
            m.submit_groups(ops, offs, np.full(4, 4096), [2, 2], [1, 1], handles=[1, 0, bad, 2])
    with pytest.raises(ValueError, match="3 handles for 4 requests"):
        m.submit(ops, offs, np.full(4, 4096), handles=[0, 1, 2])
    with pytest.raises(ValueError, match="integers"):
        m.submit(ops, offs, np.full(4, 4096), handles=[0.5, 1, 2, 3])
    assert m.counters() == before and m.now == now
    m.check_invariants()


def test_c_rejects_a_write_with_an_unknown_handle():
    """Below the Python checks: conv_submit_h returns -(i+1) for request i."""
    m = FdpSSD(THESIS, 16 * MiB, ruhs=2)
    ops = np.array([WRITE, READ, WRITE], np.uint8)
    offs, lens = np.arange(3, dtype=np.int64) * 4096, np.full(3, 4096, np.int64)
    hs = np.array([1, 9, 2], np.uint16)                  # the read's handle is ignored
    out = np.empty(3)
    rc = lib.conv_submit_h(m._h, 3, ffi.from_buffer("uint8_t[]", ops), ffi.from_buffer("int64_t[]", offs),
                           ffi.from_buffer("int64_t[]", lens), ffi.from_buffer("uint16_t[]", hs), 1,
                           ffi.from_buffer("double[]", out, require_writable=True))
    assert rc == -3
    assert m.ruh_counters()[1]["host_write_bytes"] == 4096
    m.check_invariants()


def test_reads_find_every_handles_unprogrammed_data_in_the_buffer():
    """Data in each handle's partly filled program unit is read from DRAM, not flash."""
    m = FdpSSD(THESIS, 16 * MiB, ruhs=4)
    offs = np.arange(4) * 64 * KiB                        # one unit per handle: no program unit fills
    m.submit(WRITE, offs, np.full(4, 4096), handles=[0, 1, 2, 3])
    m.submit(READ, offs, np.full(4, 4096))
    assert m.counters()["buffer_read_bytes"] == 4 * 4096 and m.media_read_bytes == 0


def test_reads_and_trims_ignore_handles():
    a, b = FdpSSD(THESIS, 16 * MiB, ruhs=4), FdpSSD(THESIS, 16 * MiB, ruhs=4)
    rng = np.random.default_rng(8)
    units = a.logical_bytes // 4096
    w = rng.integers(0, units, 6000) * 4096
    wh = rng.integers(0, 4, w.size)
    for m in (a, b):
        m.submit(WRITE, w, np.full(w.size, 4096), qd=16, handles=wh)
    ops = np.where(rng.random(4000) < 0.8, READ, TRIM).astype(np.uint8)
    offs = rng.integers(0, units - 8, ops.size) * 4096
    lens = rng.integers(1, 9, ops.size) * 4096
    got = a.submit(ops, offs, lens, qd=8, handles=rng.integers(-5, 500, ops.size))   # even out of range
    want = b.submit(ops, offs, lens, qd=8)
    assert got.tobytes() == want.tobytes() and a.counters() == b.counters()
    assert a.ruh_counters() == b.ruh_counters()
    a.check_invariants()


@pytest.mark.parametrize("isolation", ["persistent", "initial"])
@pytest.mark.parametrize("ru_bytes", [None, 4 * THESIS.program_unit_bytes])
def test_invariants_hold_under_heavy_random_use(isolation, ru_bytes):
    m = FdpSSD(THESIS, 16 * MiB, ruhs=4, isolation=isolation, ru_bytes=ru_bytes, idle_gc=True)
    for seed in range(3):
        _mixed(m, seed=seed, handles_of=lambda rng, n: rng.integers(0, 4, n))
        m.check_invariants()
    c = m.counters()
    assert c["gc_write_bytes"] > 0 and c["gc_bg_write_bytes"] > 0
    assert _device_sums(m) == (c["host_write_bytes"], c["media_write_bytes"], c["gc_write_bytes"])
    assert sum(r["handle"] == "mixed" for r in m.ruh_counters()) == (isolation == "initial")


def test_many_handles_fit_on_a_full_device():
    """Room for an open RU per handle per die: a device written many times over with 64 handles
    keeps going (its GC reclaims blocks; the room makes them mostly invalid by then)."""
    m = FdpSSD(THESIS, 16 * MiB, ruhs=64)
    rng = np.random.default_rng(4)
    units = m.logical_bytes // 4096
    for _ in range(10):                                   # past the raw flash: GC must run
        offs = rng.integers(0, units, units) * 4096
        m.submit(WRITE, offs, np.full(units, 4096), qd=32, handles=rng.integers(0, 64, units))
    assert m.gc_runs > 0 and m.erase_count > 0
    m.check_invariants()


def test_submit_groups_with_handles_equals_one_submit_per_group():
    a, b = FdpSSD(THESIS, 16 * MiB, ruhs=3), FdpSSD(THESIS, 16 * MiB, ruhs=3)
    rng = np.random.default_rng(9)
    sizes = rng.integers(1, 6, 400)
    qds = np.maximum(1, sizes - rng.integers(0, 2, sizes.size))
    n = int(sizes.sum())
    offs = rng.integers(0, 4096, n) * 4096
    ops = np.where(rng.random(n) < 0.3, READ, WRITE).astype(np.uint8)
    hs = rng.integers(0, 3, n)
    done = a.submit_groups(ops, offs, np.full(n, 4096), sizes, qds, handles=hs)
    parts, lo = [], 0
    for k, qd in zip(sizes.tolist(), qds.tolist()):
        parts.append(b.submit(ops[lo:lo + k], offs[lo:lo + k], np.full(k, 4096), qd=qd, handles=hs[lo:lo + k]))
        lo += k
    assert np.concatenate(parts).tobytes() == done.tobytes() and a.now == b.now
    assert a.counters() == b.counters() and a.ruh_counters() == b.ruh_counters()


def test_one_handle_for_all_requests_equals_the_array():
    a, b = FdpSSD(THESIS, 16 * MiB, ruhs=4), FdpSSD(THESIS, 16 * MiB, ruhs=4)
    offs = np.random.default_rng(1).integers(0, 4096, 5000) * 4096
    ta = a.submit(WRITE, offs, np.full(offs.size, 4096), qd=8, handles=2)
    tb = b.submit(WRITE, offs, np.full(offs.size, 4096), qd=8, handles=np.full(offs.size, 2, np.uint16))
    assert ta.tobytes() == tb.tobytes()
    assert [r["host_write_bytes"] for r in a.ruh_counters()] == [0, 0, offs.size * 4096, 0]


# ---------------------------------------------------------------- construction and reports

def test_constructor_validation_and_geometry():
    for kw, match in (({"ruhs": 0}, "1..256"), ({"ruhs": 257}, "1..256"), ({"ruhs": 2.0}, "1..256"),
                      ({"isolation": "full"}, "isolation"),
                      ({"ru_bytes": 4096}, "program unit"), ({"ru_bytes": 0}, "program unit"),
                      ({"ru_bytes": THESIS.program_unit_bytes + THESIS.page_size}, "program unit")):
        with pytest.raises(ValueError, match=match):
            FdpSSD(THESIS, 16 * MiB, **kw)
    ru = 2 * THESIS.program_unit_bytes

    def live_blocks(m):
        upb = m.pages_per_block * THESIS.page_size // 4096
        return -(-(m.logical_bytes // 4096) // THESIS.n_dies // upb)

    m = FdpSSD(THESIS, 16 * MiB, ruhs=8, ru_bytes=ru, isolation="initial")
    assert m.pages_per_block == 2 * THESIS.oneshot_pages and m.ru_bytes == ru
    # room per die: 8 host RUs + 1 shared GC RU besides the live data and the GC watermark
    assert m.blocks_per_die >= live_blocks(m) + THESIS.gc_high_blocks + 8 + 1
    p = FdpSSD(THESIS, 16 * MiB, ruhs=8, ru_bytes=ru)
    assert p.blocks_per_die >= live_blocks(p) + THESIS.gc_high_blocks + 8 + 8   # a GC RU per handle
    assert m.options == {"idle_gc": False, "suspend": False, "gc_striped": False, "ruhs": 8, "isolation": "initial"}
    assert "ruhs=8" in repr(m) and "isolation=initial" in repr(m)
    assert int(lib.conv_n_ruh(p._h)) == 8
    assert FdpSSD(THESIS, 16 * MiB).ru_bytes == ConvSSD(THESIS, 16 * MiB).pages_per_block * THESIS.page_size


def test_fdp_stats_log_page():
    m = FdpSSD(THESIS, 16 * MiB, ruhs=2)
    _mixed(m, handles_of=lambda rng, n: rng.integers(0, 2, n))
    c = m.counters()
    assert m.fdp_stats() == {"host_bytes_with_metadata_written": c["host_write_bytes"],
                             "media_bytes_with_metadata_written": c["media_write_bytes"],
                             "media_bytes_erased": c["erase_bytes"]}
    assert c["erase_bytes"] > 0
