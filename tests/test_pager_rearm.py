"""Pager(rearm_wp=True) (native/pager.c, "rearm_wp"; the default): the CLOCK hand write-protects a
dirty page again when it clears its referenced bit, so a later write marks it referenced. The
pager's correctness tests of test_pager.py (which run with the default) run again here with the
other setting (every byte checked, RSS bound, the discard_on_write cases, failed writes; with
rearm_wp=True re-arms and re-arm faults must have happened), and a hot set written every round
survives a cold sweep with it on, where without it the hot pages are evicted and read back as
often as FIFO would."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import test_pager as tp
from test_pager import (BUDGET_PAGES, PS, backend, check_stats,  # noqa: F401 - backend: the fixture
                        make_backend)

Pager = tp.Pager

# test_pager's tests, run again below with every Pager(...) defaulting to rearm_wp=True
RERUN = ["test_random_reads_and_writes_from_threads", "test_rss_stays_within_budget",
         "test_clean_pages_are_dropped_without_io", "test_quiesce_leaves_the_backend_to_the_caller",
         "test_discard_on_write_drops_stale_copies", "test_discard_never_hits_a_later_write_out",
         "test_failed_discards_leave_the_copy_for_close", "test_untouched_memory_is_zero_and_free",
         "test_failed_writes_lose_nothing", "test_close_leaves_nothing_registered"]
# of those, the ones whose dirty pages surely meet the hand (re-arms must happen), and the one whose
# random writes surely hit a re-armed page (re-arm faults must happen)
MUST_REARM = {"test_random_reads_and_writes_from_threads", "test_quiesce_leaves_the_backend_to_the_caller"}
MUST_REARM_FAULT = {"test_random_reads_and_writes_from_threads"}


DEFAULT = inspect.signature(Pager.__init__).parameters["rearm_wp"].default
OTHER = not DEFAULT  # test_pager.py runs with the default; here the other way


@pytest.fixture
def rearm_on(monkeypatch):
    """Every Pager test_pager makes defaults to rearm_wp=OTHER; yields the pagers made."""
    made: list = []

    class RearmPager(Pager):
        def __init__(self, *a, **k):
            k.setdefault("rearm_wp", OTHER)
            super().__init__(*a, **k)
            made.append(self)

    monkeypatch.setattr(tp, "Pager", RearmPager)
    yield made


def _rerun(name):
    fn = getattr(tp, name)

    names = list(inspect.signature(fn).parameters)

    def test(rearm_on, **kwargs):
        fn(**kwargs)
        assert rearm_on and all(p.rearm_wp == OTHER for p in rearm_on)
        stats = [p.stats() for p in rearm_on]
        assert all(s.uffd_errors == 0 for s in stats)
        assert all(s.rearm_faults <= s.rearms for s in stats)
        if not OTHER:
            assert all(s.rearms == s.rearm_faults == 0 for s in stats)
        if OTHER and name in MUST_REARM:
            assert sum(s.rearms for s in stats) > 0
        if OTHER and name in MUST_REARM_FAULT:
            assert sum(s.rearm_faults for s in stats) > 0

    test.__name__ = f"{name}_rearm"
    test.__doc__ = f"{name} with rearm_wp={OTHER}: {fn.__doc__}"
    test.__signature__ = inspect.Signature(
        [inspect.Parameter("rearm_on", inspect.Parameter.POSITIONAL_OR_KEYWORD)] +
        [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY) for n in names])
    test.pytestmark = list(getattr(fn, "pytestmark", []))  # the same parametrization
    return test


for _name in RERUN:
    globals()[f"{_name}_rearm"] = _rerun(_name)


def hot_and_cold(rearm_wp: bool, rounds: int = 40, hot: int = 8, cold_per_round: int = 16):
    """Each round writes the same `hot` pages, then `cold_per_round` pages never touched before (a
    sweep). Returns the pager's stats: every page read back from the backend is a hot page evicted
    and faulted in again (cold pages are written once, never read back)."""
    b = make_backend("conv")
    try:
        with Pager(b, BUDGET_PAGES * PS, rearm_wp=rearm_wp) as pager:
            h = pager.alloc((hot, PS), np.uint8)
            c = pager.alloc((rounds * cold_per_round, PS), np.uint8)
            rng = np.random.default_rng(7)
            for r in range(rounds):
                data = rng.integers(0, 256, h.shape, dtype=np.uint8)
                pager.copy(h, data)
                pager.copy(c[r * cold_per_round:(r + 1) * cold_per_round],
                           np.full((cold_per_round, PS), r, np.uint8))
                assert pager.quiesce(timeout=30)
            out = np.empty_like(data)
            pager.copy(out, h)
            assert np.array_equal(out, data)
            s = pager.stats()
            check_stats(pager)
            return s
    finally:
        b.close()


def test_a_hot_set_written_every_round_survives_a_cold_sweep():
    """Without rearm_wp a hot page once dirty gives CLOCK no signal, so the sweep evicts it like a
    cold page and it is read back again and again; with rearm_wp its writes keep it referenced:
    (almost) never evicted. Deterministic in the pages: the cold pages are zero-filled, never read,
    so pages_in counts exactly the hot pages' re-reads."""
    off, on = hot_and_cold(False), hot_and_cold(True)
    assert off.rearms == off.rearm_faults == 0
    assert off.pages_in >= 8  # FIFO-like: the hot set went out (and came back) at least once
    assert on.rearms > 0 and on.rearm_faults > 0
    # how many re-reads remain with it on depends on when the eviction thread's hand runs: 8 on a
    # quiet machine, 24 seen on a loaded one, against off's 80; half is the claim, with margin
    assert on.pages_in * 2 <= off.pages_in, (on.pages_in, off.pages_in)
    # the cold sweep costs the same either way: one zero-fill per cold page, nothing read back
    assert on.zero_fills == off.zero_fills
