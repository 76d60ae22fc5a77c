"""``StoreConfig.gc_step_bytes``: how much a background GC step relocates, its victim pages read as
one queue. 0 reads a whole victim at once (as foreground GC does), the default one write unit per
step; the pages stay intact either way."""

import numpy as np
import pytest

from zswap_host import StoreConfig, SwapStore, open_device
from zswap_host.store.gcport import GcPort

PS = 4096
GEOM = "zone_size=2MiB&zone_capacity=1052672&max_open=6&max_active=6&max_append=128KiB"


def run(monkeypatch, step):
    reads = []
    orig = GcPort.read_slots
    monkeypatch.setattr(GcPort, "read_slots", lambda self, slots: reads.append(slots.size) or orig(self, slots))
    d = open_device(f"emu://?zones=24&{GEOM}&preset=thesis-ssd")
    st = SwapStore(d, StoreConfig(gc_step_bytes=step))
    n = int(st.capacity_pages * 0.8)
    version = np.zeros(n, np.int64)
    page = lambda ids: ((ids * 1000003 + version[ids])[:, None] * np.ones((1, PS // 8), np.int64)).view(np.uint8)  # noqa: E731
    st.swap_out(np.arange(n), page(np.arange(n)))
    rng = np.random.default_rng(5)
    for _ in range(60):
        out = rng.choice(n, 400, replace=False)
        version[out] += 1
        st.swap_out(out, page(out))
    ids = np.arange(n)
    assert np.array_equal(st.swap_in(ids), page(ids))
    st.check()
    return st.stats().extra, reads


def test_a_whole_victim_step_reads_each_victim_in_one_queue(monkeypatch):
    unit, unit_reads = run(monkeypatch, None)
    whole, whole_reads = run(monkeypatch, 0)
    assert unit["gc_runs_background"] > 0 and whole["gc_runs_background"] > 0
    victims = lambda x: x["gc_runs_background"] + x["gc_runs_foreground"]  # noqa: E731
    # a write unit (32 pages on this device) per step: many reads per victim
    assert len(unit_reads) > 2 * victims(unit) and np.median(unit_reads) <= 32
    # a victim per step: its pages in one read (and at most one more for pages a swap-out replaced meanwhile)
    assert len(whole_reads) <= 2 * victims(whole) and np.median(whole_reads) > 32


@pytest.mark.parametrize("bad", [-1, 1.5, "4096"])
def test_a_bad_step_is_refused(bad):
    with pytest.raises(ValueError, match="gc_step_bytes"):
        StoreConfig(gc_step_bytes=bad)
