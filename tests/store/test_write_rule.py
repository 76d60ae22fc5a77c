"""The store's write rule (zswap_host/store/write_rule.py, native/store_plan.c: the one implementation)
against its pure-Python oracle (tests/support/write_rule_oracle.py): on random inputs, every
decision and error the same; then in stores on identical devices driven by the same random
swap-outs, replacements, discards, GC steps and flushes over several streams, to zone ends and a
full store — the same cuts asked in the same order, the same answers, the same state, and the
express path (whose C plans each usual call with the same rule) agreeing too. Each test counts the C's decisions, so it
fails if the C did not run."""

from __future__ import annotations

import numpy as np
import pytest

from zswap_host import StoreConfig, SwapStore, open_device
from zswap_host.errors import SwapFullError
from zswap_host.store.write_rule import BatchPlan, Decline, NativeWriteRule

from store_pages import pages_for
from store_twins import same, state
from write_rule_oracle import OracleWriteRule

# 64-page write units (256 KiB appends), 32-page least, ~380-page zones: zone ends every few calls
URL = "emu://?zones=20&zone_size=2MiB&zone_capacity=1536KiB&max_open=8&max_active=8&max_append=256KiB&preset=none"


def outcome(fn):
    try:
        return "ok", fn()
    except ValueError:
        return ("ValueError",)


def test_the_c_rule_decides_as_the_oracle_on_random_inputs():
    rng = np.random.default_rng(31)
    asked = planned = split = phase2 = units_declined = cuts_at_the_end = 0
    for _ in range(300):
        unit = int(rng.choice([1, 2, 7, 32, 64, 126, 128]))
        least = int(rng.integers(1, unit + 1))
        zone_pages = int(rng.choice([0, unit, 5 * unit + 3, 380, 3072]))
        c, o = NativeWriteRule(unit, least, zone_pages), OracleWriteRule(unit, least, zone_pages)
        for _ in range(60):
            n = int(rng.choice([rng.integers(0, 4 * unit + 3), rng.integers(0, zone_pages + 2 * unit + 1), -1]))
            room = int(rng.choice([rng.integers(0, zone_pages + 1), zone_pages, zone_pages + 1, -1]))
            least_cut = int(rng.choice([least, 1, unit, unit + 1, 0]))
            got = outcome(lambda: c.cut(n, least_cut, room))
            assert got == outcome(lambda: o.cut(n, least_cut, room)), (unit, least, zone_pages, n, least_cut, room)
            if got[0] == "ok" and 0 < room < n and sum(got[1]) == room:
                cuts_at_the_end += 1
            buffered = int(rng.choice([0, rng.integers(0, unit + 1), unit, unit + 1, least - 1, -1]))
            phase = int(rng.choice([1, 1, 1, 2, 3]))
            at = int(rng.integers(-1, max(n, 0) + 2))
            max_units = [None, None, int(rng.integers(0, 6)), 64][int(rng.integers(0, 4))]
            split_ok = bool(rng.integers(0, 2))
            args = (7, n, buffered, room, split_ok, phase, at, max_units)
            got = outcome(lambda: c.plan_batch(*args))
            assert got == outcome(lambda: o.plan_batch(*args)), (unit, least, zone_pages, args)
            if got[0] == "ok":
                asked += 1
                plan = got[1]
                if isinstance(plan, BatchPlan):
                    planned += 1
                    split += plan.w2 > 0
                    phase2 += plan.phase == 2
                    assert sum(plan.units) == plan.b + plan.w and plan.b + plan.w <= room
                else:
                    units_declined += plan == Decline.UNITS
        assert c.calls == o.calls
    # the C decided every call (a ValueError is the only other outcome) and the cases were all met
    assert asked > 3000 and planned > 800 and split > 80 and phase2 > 150 and units_declined > 100
    assert cuts_at_the_end > 100


class Recorder:
    """A store's write rule with a log of what it was asked and answered."""

    def __init__(self, rule) -> None:
        self.rule, self.log = rule, []

    def __getattr__(self, name):
        return getattr(self.rule, name)

    def cut(self, *args):
        out = self.rule.cut(*args)
        self.log.append(("cut", args, tuple(out)))
        return out

    def plan_batch(self, *args, **kw):
        out = self.rule.plan_batch(*args, **kw)
        self.log.append(("plan", args, tuple(sorted(kw.items())), out))
        return out


def run_all(stores, fn) -> tuple:
    """``fn`` on each store: they must return or raise the same; the outcome."""
    outs = []
    for st in stores:
        try:
            outs.append(("ok", fn(st)))
        except SwapFullError as e:
            outs.append(("full", str(e), e.page_ids.tolist()))
    assert all(o == outs[0] for o in outs[1:]), outs
    return outs[0]


@pytest.mark.parametrize("placement,streams", [("stream", 4), ("temporal", 1)])
def test_stores_on_the_c_rule_and_on_the_oracle_agree(placement, streams):
    cfg = StoreConfig(placement=placement, max_streams=streams, prefetch=False)
    c_general, oracle, c_express = stores = [SwapStore(open_device(URL), cfg) for _ in range(3)]
    for st in (c_general, oracle):
        st._express = None                                  # the general path asks the rule
    s = oracle.state
    oracle.state.rule = OracleWriteRule(s.unit_pages, s.min_write_pages, s.zones.data_slots)
    c_rule = c_general.state.rule
    assert isinstance(c_rule, NativeWriteRule) and isinstance(c_express.state.rule, NativeWriteRule)
    rec = [Recorder(st.state.rule) for st in (c_general, oracle)]
    c_general.state.rule, oracle.state.rule = rec
    assert c_express._express is not None
    rng = np.random.default_rng(7 + streams)
    universe = c_general.capacity_pages * 9 // 8                   # more than fits: the store fills up
    full = 0
    for step in range(400):
        n = int(rng.choice([3, 20, 40, 64, 100, 130, 200, 300, 450]))
        ids = rng.choice(universe, 2 * n, replace=False).astype(np.int64)
        if step < 200:      # first no page of a call waiting in a buffer, no discards: the express path's calls
            ids = ids[(c_general.state.idmap.lookup(ids) < 0) | (c_general.locate(ids) >= 0)]
        ids = ids[:n]
        stream = int(rng.integers(0, 2 * streams))
        full += run_all(stores, lambda st: st.swap_out(ids, pages_for(ids, step), stream))[0] == "full"
        if step >= 200 and step % 7 == 0:
            gone = rng.choice(universe, int(rng.integers(20, 200)), replace=False).astype(np.int64)
            run_all(stores, lambda st: st.discard(gone))
        if step % 11 == 0:
            budget = int(rng.integers(1, 64)) * 4096
            run_all(stores, lambda st: st.gc_step(budget))
        if step % 50 == 49:
            run_all(stores, lambda st: st.flush())
            a = state(c_general)
            same(a, state(oracle))
            same(a, state(c_express))
    run_all(stores, lambda st: st.flush())
    a = state(c_general)
    same(a, state(oracle))
    same(a, state(c_express))
    for st in stores:
        st.check()
    # the same decisions asked in the same order, answered the same
    assert rec[0].log == rec[1].log
    assert c_rule.calls == len(rec[0].log)                         # every decision was the C's
    # the general path asks how to cut; whether a call is one batch is the express path's C alone
    assert all(e[0] == "cut" for e in rec[0].log) and len(rec[0].log) > 100
    assert sum(e[0] == "cut" and sum(e[2]) < e[1][0] and e[1][2] == sum(e[2]) for e in rec[0].log) > 5   # zone ends
    assert c_general.gc_write_bytes > 0 and full > 0               # GC relocated; the store filled up
    ex = c_express._express
    assert ex.taken > 20 and ex.split > 5, (ex.taken, ex.split, ex.declined)
    assert c_express.stats().extra == c_general.stats().extra
    got = [st.swap_in(st.state.idmap.items()[0][:500]) for st in stores]
    assert np.array_equal(got[0], got[1]) and np.array_equal(got[0], got[2])
