"""``SwapStore(open_device(url))`` with no other argument on every registered device URL scheme:
each interface's default placement units (devices/units.py) carry a store whose pages come back
equal. A scheme registered later fails here until it gets a small URL below."""
from __future__ import annotations

import os

import numpy as np
import pytest

from zswap_host import SwapStore, open_device
from zswap_host.devices import url as url_registry
from zswap_host.devices.units import default_unit_size
from loop_devices import LOOP_REASON, loopdev  # noqa: F401  (loopdev: a fixture)

PS = 4096


def _file(tmp_path, request) -> str:
    path = tmp_path / "swap.img"
    path.write_bytes(b"")
    os.truncate(path, 32 << 20)                     # empty (all zeros): taken and marked as ours
    return str(path)


def _block(tmp_path, request) -> str:
    if LOOP_REASON is not None:
        pytest.skip(LOOP_REASON)
    return request.getfixturevalue("loopdev")[0]    # a 32 MiB loop device: a conventional block device


# scheme -> (a small device of it, its interface)
SMALL = {
    "emu": (lambda tmp_path, request: "emu://?zones=16&zone_size=1MiB", "zns"),
    "emu-conv": (lambda tmp_path, request: "emu-conv://?size=64MiB", "conventional"),
    "fdp": (lambda tmp_path, request: "fdp://?size=64MiB", "fdp"),
    "ocssd": (lambda tmp_path, request: "ocssd://?chunks=16&sectors=48", "ocssd"),
    "file": (_file, "conventional"),
    "block": (_block, "conventional"),
}


@pytest.mark.parametrize("scheme", list(url_registry.known_schemes))
def test_a_store_with_defaults_on_every_scheme_returns_what_it_was_given(scheme, tmp_path, request):
    assert scheme in SMALL, f"give the registered scheme {scheme!r} a small URL in SMALL"
    make, interface = SMALL[scheme]
    dev = open_device(make(tmp_path, request))
    unit = default_unit_size(dev) if interface in ("conventional", "fdp") else None
    store = SwapStore(dev)                          # no zone_size, no config: the interface's defaults
    try:
        assert store.units.interface == interface
        if unit is not None:                        # the documented default: LBA ranges of default_unit_size
            assert store.units.size_bytes == unit and store.units.count == dev.size // unit
        if interface == "fdp":
            assert unit % dev.ru_bytes == 0         # whole reclaim units
        rng = np.random.default_rng(1)
        n = min(store.capacity_pages // 2, 2048)
        ids = rng.permutation(1 << 20)[:n].astype(np.int64)
        pages = rng.integers(0, 256, (n, PS), dtype=np.uint8)
        store.swap_out(ids, pages)
        again = rng.choice(n, n // 2, replace=False)
        pages[again] = rng.integers(0, 256, (again.size, PS), dtype=np.uint8)
        store.swap_out(ids[again], pages[again])    # replaced: the old copies go stale
        store.flush()
        order = rng.permutation(n)
        assert np.array_equal(store.swap_in(ids[order]), pages[order])
        assert store.stats().device_write_bytes >= n * PS
        store.check()
    finally:
        store.close()
        store.device.close()
