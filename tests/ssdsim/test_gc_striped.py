"""Where the conventional FTL's GC re-programs a victim's valid data: on the victim's own die
(the model before ``gc_striped``) or striped over all dies (``controller.gc_striped``, a drive's
superblock GC).  The victim is still chosen per die, greedy, in both."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from zswap_host.devices import open_device
from zswap_host.ssdsim.conv_model import ConvSSD
from zswap_host.ssdsim.fdp_model import FdpSSD
from zswap_host.ssdsim.presets import get_preset

THESIS = get_preset("thesis-ssd")
MiB, GiB = 1 << 20, 1 << 30
U = 4096


def _cold_and_hot(m, rng, rounds: int = 6, handles=None):
    """Write every unit once in random order (hot and cold units share blocks), then overwrite
    the first half (hot) `rounds` times over.  Returns the cold units' offsets and their dies
    before the overwrites: only GC can move a cold unit."""
    n = m.logical_bytes // U
    kw = {} if handles is None else {"handles": handles}
    m.submit(1, rng.permutation(n) * U, np.full(n, U), qd=32, **kw)
    cold = np.arange(n // 2, n) * U
    before = m.dies_of(cold)
    for _ in range(rounds):
        m.submit(1, rng.integers(0, n // 2, n) * U, np.full(n, U), qd=32, **kw)
    return cold, before


@pytest.mark.parametrize("make", [
    lambda s: ConvSSD(THESIS, 64 * MiB, gc_striped=s),
    lambda s: FdpSSD(THESIS, 64 * MiB, ruhs=4, isolation="persistent", gc_striped=s),
    lambda s: FdpSSD(THESIS, 64 * MiB, ruhs=4, isolation="initial", gc_striped=s),
    lambda s: ConvSSD(THESIS, 64 * MiB, op=0.05, idle_gc=True, gc_striped=s),
], ids=["conv", "fdp-persistent", "fdp-initial", "conv-op5-idle"])
def test_own_die_keeps_data_on_its_die_striped_spreads_it(make):
    rng = np.random.default_rng(7)
    own = make(False)
    cold, before = _cold_and_hot(own, rng)
    own.check_invariants()
    assert own.counters()["gc_write_bytes"] > 0
    assert np.array_equal(own.dies_of(cold), before)          # GC moved data, never off its die

    rng = np.random.default_rng(7)
    st = make(True)
    cold, before = _cold_and_hot(st, rng)
    st.check_invariants()
    after = st.dies_of(cold)
    moved = after != before
    assert moved.mean() > 0.3                                   # most cold units were relocated ...
    assert np.bincount(after[moved], minlength=THESIS.n_dies).min() > 0   # ... onto every die
    assert (after >= 0).all()


def test_striped_gc_bounds_the_longest_read_wait_at_a_real_erase_block():
    """6 MiB erase blocks (the preset's real block): a victim's relocation re-programmed on its own
    die holds that die for ~100 ms of programs, and a read queued behind it waits that long.
    Striped, the die holds only its reads and erase.  Modeled and deterministic."""
    worst = {}
    for striped in (False, True):
        m = ConvSSD(THESIS, 2 * GiB, erase_block=THESIS.block_bytes, gc_striped=striped)
        n = m.logical_bytes // U
        rng = np.random.default_rng(3)
        m.submit(1, rng.permutation(n) * U, np.full(n, U), qd=64)
        big = 256 * 1024
        k = n // 64
        m.submit(1, rng.integers(0, n // 64, k) * big, np.full(k, big), qd=16)
        g = 4000                              # groups: one 256 KiB write with 8 4 KiB reads, all at once
        ops = np.tile(np.array([1] + [0] * 8, np.uint8), g)
        offs = np.where(ops == 1, 0, rng.integers(0, n, ops.size) * U)
        offs[ops == 1] = rng.integers(0, n // 64, g) * big
        lens = np.where(ops == 1, big, U)
        t0 = m.now
        done = m.submit_groups(ops, offs, lens, np.full(g, 9), np.full(g, 9)).reshape(g, 9)
        starts = np.concatenate([[t0], done.max(axis=1)[:-1]])
        worst[striped] = float((done[:, 1:] - starts[:, None]).max())
        m.check_invariants()
        assert m.counters()["gc_write_bytes"] > 0
    assert worst[True] < 0.5 * worst[False], worst


def test_dies_of_unmapped_trimmed_and_out_of_range():
    m = ConvSSD(THESIS, 16 * MiB)
    m.submit(1, [0, U], [U, U])
    m.submit(2, [U], [U])                                        # trim the second unit
    d = m.dies_of([0, U, 2 * U, 16 * MiB, -U])
    assert 0 <= d[0] < THESIS.n_dies and list(d[1:]) == [-1, -1, -1, -1]


def test_the_preset_decides_and_the_url_overrides():
    striped = dataclasses.replace(THESIS, name="thesis-striped",
                                  controller=dataclasses.replace(THESIS.controller, gc_striped=True))
    assert ConvSSD(striped, 16 * MiB).gc_striped is True
    assert ConvSSD(striped, 16 * MiB, gc_striped=False).gc_striped is False
    assert ConvSSD(THESIS, 16 * MiB).gc_striped is False
    assert open_device("emu-conv://?size=16MiB").model.options["gc_striped"] is False
    assert open_device("emu-conv://?size=16MiB&gc_striped=1").model.options["gc_striped"] is True
    assert open_device("fdp://?size=16MiB&gc_striped=1").model.options["gc_striped"] is True
