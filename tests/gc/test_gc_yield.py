"""GC that yields to reads (``StoreConfig.gc_yield_to_reads``) and GC's clock accounting
(``gc_clock_<why>_<what>_s``), on a store over an emulated ZNS device with the timing model on.

The invariant: on the model's clock a GC step never delays a read — no GC work runs inside a
swap-out (in front of the reads of the step that swap-out made room for) or a swap-in, except
foreground GC when a swap-out finds no zone, which is counted (``gc_runs_foreground``)."""

import numpy as np
import pytest

from zswap_host import StoreConfig, SwapStore, open_device
from zswap_host.gc.scheduler import ACTIVITIES

PS = 4096
GEOM = "zone_size=2MiB&zone_capacity=1052672&max_open=6&max_active=6&max_append=128KiB"


def pages_for(ids, version):
    ids = np.asarray(ids, np.int64)
    v = np.broadcast_to(np.asarray(version, np.int64), ids.shape)
    return ((ids * 1000003 + v)[:, None] * np.ones((1, PS // 8), np.int64)).view(np.uint8).reshape(ids.size, PS)


def gc_clock(store) -> dict:
    x = store.stats().extra
    return {k: v for k, v in x.items() if k.startswith("gc_clock_")}


def held(before: dict, after: dict, why: str | None = None) -> float:
    return sum(after[k] - before[k] for k in after if why is None or k.startswith(f"gc_clock_{why}_"))


def train(yield_to_reads: bool, window: float, steps: int = 60, seed: int = 3):
    """Steps of a training loop: evict (swap-out, overwrites), fault (swap-in), compute (idle). Per
    call: the GC clock held inside it, and whether a foreground GC run was counted in it."""
    d = open_device(f"emu://?zones=24&{GEOM}&preset=thesis-ssd")
    st = SwapStore(d, StoreConfig(gc_yield_to_reads=yield_to_reads))
    n = int(st.capacity_pages * 0.8)
    version = np.zeros(n, np.int64)
    st.swap_out(np.arange(n), pages_for(np.arange(n), 0))
    rng = np.random.default_rng(seed)
    calls = []
    for _ in range(steps):
        out = rng.choice(n, 400, replace=False)
        version[out] += 1
        for kind, fn in (("swap_out", lambda: st.swap_out(out, pages_for(out, version[out]))),
                         ("swap_in", lambda: st.swap_in(rng.choice(n, 200, replace=False)))):
            b, fg = gc_clock(st), st.stats().extra["gc_runs_foreground"] + st.stats().extra["gc_foreground_stalls"]
            t0 = d.now()
            fn()
            a = gc_clock(st)
            fg2 = st.stats().extra["gc_runs_foreground"] + st.stats().extra["gc_foreground_stalls"]
            calls.append({"kind": kind, "gc": held(b, a), "fg_gc": held(b, a, "foreground"),
                          "counted": fg2 > fg, "clock": d.now() - t0})
        if window:
            st.idle(window)
    ids = np.arange(n)
    assert np.array_equal(st.swap_in(ids), pages_for(ids, version[ids]))      # nothing lost or stale
    st.check()
    return st, calls


@pytest.mark.parametrize("window", [0.05, 0.0])
def test_no_gc_step_runs_in_front_of_a_read_unless_counted_foreground(window):
    st, calls = train(True, window)
    s = st.stats().extra
    assert s["gc_runs_background"] == 0 and s["gc_yielded"] > 0
    for c in calls:
        assert c["gc"] == pytest.approx(c["fg_gc"], abs=1e-12)     # only foreground GC inside a call ...
        if c["gc"] > 0:
            assert c["kind"] == "swap_out" and c["counted"]         # ... in a swap-out, and counted
    if window:                               # the windows take GC's work: no swap-out had to wait for it
        assert s["gc_runs_idle"] > 0 and not any(c["gc"] for c in calls)
    else:                                    # no windows: GC had to run, as counted foreground GC
        assert s["gc_runs_foreground"] > 0 and s["gc_relocated_bytes"] > 0


def test_by_default_background_gc_runs_in_front_of_the_reads():
    """The control: the same loop without the option runs background GC inside its swap-outs."""
    st, calls = train(False, 0.0)
    assert st.stats().extra["gc_runs_background"] > 0
    assert any(c["gc"] > 0 and not c["counted"] for c in calls if c["kind"] == "swap_out")
    assert st.stats().extra["gc_yielded"] == 0


@pytest.mark.parametrize("yield_to_reads", [False, True])
def test_gc_clock_parts_are_the_gc_time(yield_to_reads):
    """GC's clock by bucket and activity adds up to the GC time the scheduler counts per step, and
    no call's GC part exceeds the clock that call moved."""
    st, calls = train(yield_to_reads, 0.01)
    x = st.stats().extra
    parts = sum(v for k, v in x.items() if k.startswith("gc_clock_"))
    assert x["gc_time_s"] > 0
    # the steps' parts are gc_time_s; beyond it only resets of zones found empty (foreground, no step)
    assert -1e-9 <= parts - x["gc_time_s"] <= x["gc_clock_foreground_reset_s"] + 1e-9
    assert all(x[f"gc_clock_{w}_{a}_s"] >= 0 for w in ("foreground", "background", "idle") for a in ACTIVITIES)
    assert x["gc_clock_idle_read_s"] + x["gc_clock_background_read_s"] + x["gc_clock_foreground_read_s"] > 0
    for c in calls:
        assert c["gc"] <= c["clock"] + 1e-12


def test_the_option_is_checked_and_off_by_default():
    assert StoreConfig().gc_yield_to_reads is False
