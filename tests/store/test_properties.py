"""Property-based tests (hypothesis) of both swap backends under space pressure: random sequences of
swap_out / swap_in / discard / flush (and gc_step / idle on the store) against a dict oracle. The
store runs on all four interfaces through ``placement_units``: ZNS, a conventional and an FDP SSD
(``ZonedBlockView``), and Open-Channel 2.0 (``OcssdZonedView``, both layouts).

- every swap_in returns exactly the bytes last swapped out for that id;
- SwapFullError only when the live pages really do not fit (``capacity_pages``);
- after any error, every page that was readable is still readable with the same bytes;
- GC and idle windows move pages without changing a byte, and a GC step relocates at most what it
  was allowed (one page at least);
- host byte counters count exactly the pages handed over and returned.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

from zswap_host import StoreConfig, SwapStore, open_device
from zswap_host.devices import placement_units

from store_machine import BackendMachine, page

KiB = 1 << 10
# every zoned device: 6 open/active zones and 128 KiB appends, as the ZNS one
LIMITS = dict(max_open=6, max_active=6, max_append=128 * KiB)


def zns(preset="none"):
    """8 zones of 256 KiB (2 MiB)."""
    return open_device(f"emu://?zones=8&zone_size=256KiB&max_open=6&max_active=6&max_append=128KiB&preset={preset}")


def conv_view(preset="none"):
    """10 zones of 256 KiB with 192 KiB capacity (1.9 MiB usable) on a 2.5 MiB conventional SSD: the
    zone-size/capacity gap is exercised too."""
    return placement_units(open_device(f"emu-conv://?size=2560KiB&preset={preset}"), 256 * KiB, 192 * KiB, **LIMITS)


def fdp_view(preset="none"):
    """8 zones of 256 KiB on a 2 MiB FDP SSD with 4 handles: user streams 0/1 write handles 0/1,
    GC handle 3 (``ZonedBlockView.place_zone``)."""
    return placement_units(open_device(f"fdp://?size=2MiB&ruhs=4&preset={preset}"), 256 * KiB, **LIMITS)


# Open-Channel: the timing model only takes the preset's own 8 groups x 2 PUs and chunks of whole
# 12-sector program units, so a timed 16-PU stripe has zones of >= 768 KiB; 4 of them (3 MiB) are
# refused (3 write groups + 1 GC reserve leave no capacity) and 5 leave one zone of data. So
# "stripe" runs untimed on 2 groups x 2 PUs (8 zones of 4 chunks x 64 KiB) and "isolate" timed:
# a zone per group's 2 PUs, 16 zones of 2 x 48 KiB (1.5 MiB); with 2 chunks per PU a group backs
# only 2 zones at a time, so streams' zones also spill onto other groups.
OCSSD = {
    "stripe": "ocssd://?groups=2&pus=2&chunks=8&sectors=16&ws_min=4&ws_opt=8&mw_cunits=4&preset={preset}",
    "isolate": "ocssd://?groups=8&pus=2&chunks=2&sectors=12&ws_min=4&ws_opt=12&mw_cunits=8&preset={preset}",
}


def ocssd_view(layout, preset="none"):
    return placement_units(open_device(OCSSD[layout].format(preset=preset)), layout=layout, max_open=6,
                           max_active=6)


def make_store(placement="temporal", victim="greedy", preset="none", device=zns):
    return SwapStore(device(preset), StoreConfig(placement=placement, victim=victim, write_size=128 << 10,
                                                 prefetch_buffer_pages=64, max_streams=2))


def make_conventional():
    from zswap_host import ConventionalSwap

    return ConventionalSwap(open_device("emu-conv://?size=1MiB&preset=none"))


BACKENDS = {
    "store-temporal-greedy": lambda: make_store(),
    "store-hotness-costbenefit": lambda: make_store("hotness", "cost-benefit"),
    "store-stream-fifo-timed": lambda: make_store("stream", "fifo", "thesis-ssd"),
    "store-single": lambda: make_store("single"),
    "conventional": make_conventional,
    # the store on the other three interfaces (timed: FDP and Open-Channel isolate)
    "store-convview-temporal-greedy": lambda: make_store(device=conv_view),
    "store-fdpview-stream-costbenefit-timed": lambda: make_store("stream", "cost-benefit", "thesis-ssd", fdp_view),
    "store-ocssd-stripe-hotness": lambda: make_store("hotness", device=lambda p: ocssd_view("stripe", p)),
    "store-ocssd-isolate-stream-timed": lambda: make_store("stream", "fifo", "thesis-ssd",
                                                          lambda p: ocssd_view("isolate", p)),
}


SETTINGS = settings(max_examples=40, stateful_step_count=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


for _name, _factory in BACKENDS.items():
    _machine = type(f"Machine_{_name}", (BackendMachine,), {"factory": staticmethod(_factory)})
    _machine.TestCase.settings = SETTINGS
    globals()[f"TestStateMachine_{_name.replace('-', '_')}"] = _machine.TestCase


INTERFACES = {"zns": zns, "conv-view": conv_view, "fdp-view": fdp_view,
              "ocssd-stripe": lambda p: ocssd_view("stripe", p), "ocssd-isolate": lambda p: ocssd_view("isolate", p)}


@pytest.mark.parametrize("interface", list(INTERFACES))
def test_every_sequence_ends_with_all_pages_back(interface):
    """A long deterministic run to 98% of capacity with overwrites, then a full read-back."""
    b = make_store(device=INTERFACES[interface])
    rng = np.random.default_rng(0)
    oracle = {}
    for v in range(200):
        ids = rng.choice(int(b.capacity_pages * 0.98), 40, replace=False)
        b.swap_out(ids.astype(np.int64), np.stack([page(int(i), v) for i in ids]))
        oracle.update({int(i): v for i in ids})
    ids = np.array(sorted(oracle))
    assert np.array_equal(b.swap_in(ids), np.stack([page(i, oracle[i]) for i in ids.tolist()]))
    b.check()
    assert b.gc_write_bytes > 0                # the run did go through GC
