"""Read planning (``store/readpath.plan_reads``, the C rule ``native/read_plan.c``) against its
per-slot Python twin (``reference``, the oracle): requests, each slot's row and request, and the
prefetch window's extra slots, for sorted input (GC's reads take a path without a sort) and
shuffled input (small batches sorted by insertion, large ones by radix passes)."""
from __future__ import annotations

import numpy as np
import pytest

from zswap_host.store.readpath import plan_reads

SPZ, WRITTEN = 64, 50          # slots per zone, data pages written in every zone


def reference(slots: np.ndarray, window: int, max_pages: int, spz: int = SPZ, written: int = WRITTEN):
    s = sorted(slots.tolist())
    reqs: list[list[int]] = []
    for x in s:
        z0 = x // spz * spz
        if window > 0:
            lo = z0 + (x - z0) // window * window
            if not reqs or reqs[-1][0] != lo:
                reqs.append([lo, min(lo + window, z0 + written)])
        elif reqs and reqs[-1][1] == x and x // spz == reqs[-1][0] // spz and reqs[-1][1] - reqs[-1][0] < max_pages:
            reqs[-1][1] = x + 1
        else:
            reqs.append([x, x + 1])
    rows, row, r = {}, 0, {}
    for k, (a, b) in enumerate(reqs):
        for y in range(a, b):
            rows[y], r[y] = row, k
            row += 1
    want = set(s)
    extra = [y for a, b in reqs for y in range(a, b) if y not in want]
    return ([a for a, _ in reqs], [b - a for a, b in reqs], [rows[x] for x in slots.tolist()],
            [r[x] for x in slots.tolist()], extra, [rows[y] for y in extra])


@pytest.mark.parametrize("window,max_pages", [(0, 4), (0, 128), (8, 128)])
@pytest.mark.parametrize("ordered", [True, False])
def test_plans_match_the_per_slot_reference(window, max_pages, ordered):
    rng = np.random.default_rng(window * 7 + max_pages + ordered)
    # without a window every slot may be asked for (runs then meet at zone ends); a window needs
    # the zone's written end
    pool = np.array([s for s in range(SPZ * 8) if window == 0 or s % SPZ < WRITTEN], np.int64)
    for _ in range(300):
        if rng.random() < 0.3:                       # runs of adjacent slots, across zone ends
            a = int(rng.integers(0, pool.size - 1))
            slots = pool[a:a + int(rng.integers(1, 200))].copy()
        else:
            slots = rng.choice(pool, size=int(rng.integers(1, 200)), replace=False)
        slots = np.sort(slots) if ordered else rng.permutation(slots)
        p = plan_reads(slots, SPZ, np.full(8, WRITTEN, np.int64), window, max_pages)
        assert _got(p) == list(reference(slots, window, max_pages))


def _got(p) -> list:
    return [g.tolist() for g in (p.starts, p.lengths, p.row_of_request, p.request_of_slot, p.extra_slots,
                                 p.extra_rows)]


@pytest.mark.parametrize("window", [0, 32])
def test_large_batches_of_large_slots(window):
    """Thousands of slots in zones of 2**20 slots, up to 2**36: several radix passes."""
    spz, written, zones = 1 << 20, (1 << 20) - 100, 1 << 16
    rng = np.random.default_rng(window)
    for n in (65, 3000, 20000):
        z = rng.integers(0, zones, n)
        slots = np.unique(z * spz + rng.integers(0, written, n))
        slots = rng.permutation(slots)
        p = plan_reads(slots, spz, np.full(zones, written, np.int64), window, 16)
        assert _got(p) == list(reference(slots, window, 16, spz, written))


def test_an_empty_batch_is_no_request():
    p = plan_reads(np.zeros(0, np.int64), SPZ, np.full(8, WRITTEN, np.int64), 8, 4)
    assert _got(p) == [[]] * 6


@pytest.mark.parametrize("slots,window,max_pages", [
    ([3, -1], 0, 4),                     # a negative slot
    ([3, 4], 0, 0),                      # max_pages below 1
    ([WRITTEN], 8, 4),                   # at the zone's written end: nothing there to read
    ([SPZ * 8 + 1], 8, 4),               # beyond the zones
])
def test_bad_input_raises(slots, window, max_pages):
    with pytest.raises(ValueError):
        plan_reads(np.array(slots, np.int64), SPZ, np.full(8, WRITTEN, np.int64), window, max_pages)
