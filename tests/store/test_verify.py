"""VerifyingBackend: pages that come back different from what was swapped out are caught, by id."""

from __future__ import annotations

import numpy as np
import pytest

from zswap_host import ConventionalSwap, PageCorruptError, StoreConfig, SwapStore, open_device
from zswap_host.backend import SwapBackend
from zswap_host.verify import VerifyingBackend, page_fingerprints

PAGE = 4096


def _pages(ids, salt=0):
    rng = np.random.default_rng(int(salt))
    return rng.integers(0, 256, (len(ids), PAGE), dtype=np.uint8)


def test_fingerprint_changes_with_any_single_word_and_is_per_row():
    p = _pages(range(4))
    fp = page_fingerprints(p)
    assert fp.dtype == np.uint64 and fp.shape == (4,) and len(set(fp.tolist())) == 4
    for word in (0, 1, 255, 511):
        for delta in (1, 1 << 63, 0x8000):
            q = p.copy()
            w = q.view(np.uint64)
            w[2, word] ^= np.uint64(delta)
            got = page_fingerprints(q)
            assert got[2] != fp[2] and np.array_equal(np.delete(got, 2), np.delete(fp, 2))


@pytest.mark.parametrize("make", [
    lambda: ConventionalSwap(open_device("emu-conv://?size=64MiB&preset=none"), close_device=True),
    lambda: SwapStore(open_device("emu://?zones=32&zone_size=2MiB&preset=none"), StoreConfig()),
], ids=["conventional", "store"])
def test_round_trips_pass_and_are_counted(make):
    v = VerifyingBackend(make())
    ids = np.arange(500, dtype=np.int64)
    v.swap_out(ids, _pages(ids, 1))
    v.swap_out(ids[:100], _pages(ids[:100], 2))         # replaced copies: the new fingerprint counts
    v.discard(ids[400:])
    got = v.swap_in(ids[::-1][100:])                     # ids 399..0
    assert np.array_equal(got[-100:][::-1], _pages(ids[:100], 2))
    assert v.verify_stats() == {"pages_checked": 400, "pages_fingerprinted": 600}
    assert v.stats().host_write_bytes == 600 * PAGE        # the rest of SwapBackend is forwarded
    assert v.swap_in_latencies().size == 400 and v.capacity_pages == v.backend.capacity_pages > 0
    v.close()


@pytest.mark.parametrize("url,make", [
    ("emu-conv://?size=64MiB&preset=thesis-ssd", lambda dev: ConventionalSwap(dev, close_device=True)),
    ("emu://?zones=32&zone_size=2MiB&preset=thesis-ssd", lambda dev: SwapStore(dev, StoreConfig())),
], ids=["conventional", "store"])
def test_the_wrapper_is_a_swap_backend_and_hands_idle_time_on(url, make):
    dev = open_device(url)
    inner = make(dev)
    v = VerifyingBackend(inner)
    assert isinstance(v, SwapBackend) and isinstance(inner, SwapBackend) and v.page_size == PAGE
    t0 = dev.now()
    v.idle(0.5)                                  # nothing to collect yet: the whole window passes on the device
    assert dev.now() == pytest.approx(t0 + 0.5)
    with pytest.raises(ValueError, match="not negative"):
        v.idle(-1.0)
    with pytest.raises(AttributeError):
        v.gc_step                                # not part of SwapBackend: reach it as v.backend
    v.close()


class _Flaky:
    """A backend that returns one page with a bit flipped."""

    def __init__(self, flip_id):
        self.mem, self.flip_id = {}, flip_id

    def swap_out(self, ids, pages, stream=0):
        for i, p in zip(ids.tolist(), pages):
            self.mem[i] = p.copy()

    def swap_in(self, ids):
        out = np.stack([self.mem[i] for i in ids.tolist()])
        k = np.flatnonzero(ids == self.flip_id)
        out[k, 1234] ^= 0x10
        return out

    def discard(self, ids):
        for i in ids.tolist():
            self.mem.pop(i, None)


def test_a_flipped_bit_is_reported_with_the_page_id():
    v = VerifyingBackend(_Flaky(flip_id=7))
    ids = np.arange(10, dtype=np.int64)
    v.swap_out(ids, _pages(ids))
    assert v.swap_in(ids[:5]).shape == (5, PAGE)
    with pytest.raises(PageCorruptError) as e:
        v.swap_in(np.array([3, 7, 9]))
    assert e.value.page_ids.tolist() == [7] and "1 of 3" in str(e.value)


def test_a_page_that_was_never_swapped_out_cannot_come_back():
    v = VerifyingBackend(_Flaky(flip_id=-1))
    v.swap_out(np.array([1, 2]), _pages([1, 2]))
    v.discard(np.array([2]))
    v.backend.mem[2] = _pages([2])[0]                     # the backend kept a page it was told to drop
    with pytest.raises(PageCorruptError, match="never swapped out") as e:
        v.swap_in(np.array([1, 2]))
    assert e.value.page_ids.tolist() == [2]


def test_a_failed_swap_out_keeps_the_old_fingerprint():
    class Failing(_Flaky):
        fail = False

        def swap_out(self, ids, pages, stream=0):
            if self.fail:
                raise OSError("injected")
            super().swap_out(ids, pages, stream)

    v = VerifyingBackend(Failing(flip_id=-1))
    ids = np.arange(3, dtype=np.int64)
    v.swap_out(ids, _pages(ids, 1))
    v.backend.fail = True
    with pytest.raises(OSError):
        v.swap_out(ids, _pages(ids, 2))
    assert np.array_equal(v.swap_in(ids), _pages(ids, 1))
