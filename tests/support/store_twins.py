"""Two stores doing the same thing (tests/store/: the fast path, the express path): one with the C
bookkeeping (``NativeBook``) and one with its pure-Python oracle (``book=OracleBook``,
tests/support/book_oracle.py), on identical emulated devices, with
write failures injected at the n-th append; what each returned or raised and everything each
holds compared."""

from __future__ import annotations

import numpy as np

from zswap_host import StoreConfig, SwapStore, open_device
from zswap_host.store.native import NativeBook

from book_oracle import OracleBook

PS = 4096
GUEST = "emu://?zones=64&zone_size=16MiB&zone_capacity=12MiB&max_open=14&max_active=14&max_append=512KiB&preset=none"
GUEST_504 = GUEST.replace("max_append=512KiB", "max_append=504KiB")
SMALL = "emu://?zones=24&zone_size=2MiB&zone_capacity=1536KiB&max_open=8&max_active=8&max_append=128KiB&preset=none"


class FailAt:
    """Fail the device's ``n``-th append from now (and ``count - 1`` more after it)."""

    def __init__(self, dev) -> None:
        self.dev, self.calls, self.at, self.count = dev, 0, None, 1
        self._orig = dev.append
        dev.append = self

    def arm(self, n: int, count: int = 1) -> None:
        self.calls, self.at, self.count = 0, n, count

    def __call__(self, z, data):
        self.calls += 1
        if self.at is not None and self.calls == self.at:
            self.dev.inject_write_failures(self.count)
            self.at = None
        return self._orig(z, data)


def state(st: SwapStore) -> dict:
    """Everything a store holds, through its rooms' public members (and that its bookkeeping ran:
    its ``Bookkeeper``, or the express path's C prepare)."""
    s = st.state
    assert not s.idmap.n or st.book.calls or st.fast_path["prepared"], "the store's bookkeeping never ran"
    keys, vals = s.idmap.items()
    order = np.argsort(keys)
    loc, rmap, valid = s.slots.arrays
    zones = np.arange(st.device.geometry.nr_zones)
    return {
        "loc": loc.copy(), "rmap": rmap.copy(), "valid": valid.copy(),
        "ids": keys[order], "handles": vals[order], "next": s.idmap.handles, "n": s.idmap.n,
        "free": s.idmap.reusable_handles().tolist(), "buffer_of": s.buffer_of.copy(), "in_flight": s.in_flight.copy(),
        "lost": s.lost.copy(), "lost_count": s.lost_count, "swap_outs": s.swap_outs.copy(),
        "prefetch_pos": s.prefetch_pos.copy(), "prefetch_ids": s.prefetch.ids.copy(),
        "live": s.live, "capacity": st.capacity_pages,
        "buffers": [(b.n, b.ids[:b.n].copy(), b.data[:b.n].copy()) for b in s.buffers],
        "written": s.zones.cursors.copy(), "zstate": s.zones.states(), "clock": s.zones.clock,
        "last_write": s.zones.history(zones)[0].copy(), "stats": st.stats(),
    }


def same(a: dict, b: dict) -> None:
    for k in a:
        x, y = a[k], b[k]
        if k == "buffers":
            assert len(x) == len(y)
            for (n1, i1, d1), (n2, i2, d2) in zip(x, y):
                assert n1 == n2 and np.array_equal(i1, i2) and np.array_equal(d1, d2), k
        elif isinstance(x, np.ndarray):
            assert np.array_equal(x, y), k
        else:
            assert x == y, k


def with_append_run(dev):
    """Give an emulated device ``LinuxZonedDevice.append_run``'s contract (True when the units
    landed back to back from ``expect``, else ``append_batch``'s result): the store's path for it."""
    def append_run(zones, segs, lengths, qd, expect):
        offsets, failures = dev.append_batch(zones, segs, lengths, qd)
        starts = expect + np.concatenate(([0], np.cumsum(lengths)[:-1]))
        return True if not failures and np.array_equal(offsets, starts) else (offsets, failures)
    dev.append_run = append_run
    return dev


def pair(url: str, cfg: StoreConfig, run: bool = False, express: bool = True):
    """A store with the C bookkeeping and one with the oracle's on identical devices (``run``: the
    first device has ``append_run``; ``express=False``: the first store without its express
    path, store/express.py, so that the C helpers' steps are what runs)."""
    devs = [open_device(url), open_device(url)]
    fails = [FailAt(d) for d in devs]
    if run:
        with_append_run(devs[0])
    stores = [SwapStore(devs[0], cfg), SwapStore(devs[1], cfg, book=OracleBook)]
    assert isinstance(stores[0].book, NativeBook) and isinstance(stores[1].book, OracleBook)
    if not express:
        stores[0]._express = None
    return stores, devs, fails


def both(stores, fn):
    """Run ``fn`` on both stores; they must return or raise the same."""
    out = []
    for st in stores:
        try:
            out.append(("ok", fn(st)))
        except Exception as e:              # noqa: BLE001 - compared below
            out.append(("raise", type(e), str(e), getattr(e, "page_ids", None)))
    a, b = out
    assert a[0] == b[0], out
    if a[0] == "ok":
        if isinstance(a[1], np.ndarray):
            assert np.array_equal(a[1], b[1])
        else:
            assert a[1] == b[1]
    else:
        assert a[1:3] == b[1:3]
        if a[3] is not None:
            assert np.array_equal(a[3], b[3])
    return a
