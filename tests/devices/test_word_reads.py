"""Word reads: ``read_batch(..., words=True)`` on the emulated devices and ``SwapStore.swap_in_words``
return the first 64-bit word of each page the byte reads return, with the same modeled time,
counters and errors — on devices with bytes and payload-free ones, on every interface."""

import numpy as np
import pytest

from zswap_host.bench.plan import READ_QD
from zswap_host.devices import open_device, placement_units
from zswap_host.devices.fingerprint import first_words
from zswap_host.store import StoreConfig, SwapStore
from zswap_host.workloads import synthetic_dlrm_trace
from zswap_host.workloads.page_words import PageImages, PageVersions
from zswap_host.workloads.trace import DISCARD, IDLE, SWAP_IN, SWAP_OUT

URLS = {"zns": "emu://?zones=24&zone_size=1MiB&zone_capacity=768KiB&preset=thesis-ssd",
        "conventional": "emu-conv://?size=20MiB&preset=thesis-ssd&idle_gc=1",
        "fdp": "fdp://?size=20MiB&preset=thesis-ssd&ruhs=4",
        "ocssd": "ocssd://?chunks=11&sectors=24&preset=thesis-ssd"}


def _url(iface: str, payload: bool) -> str:
    return URLS[iface] + ("" if payload else "&payload=0")


def _store(iface: str, payload: bool, **cfg):
    units = placement_units(open_device(_url(iface, payload), zoned=None), 1 << 20, 768 << 10)
    return SwapStore(units, StoreConfig(read_qd=READ_QD, **cfg)), units


def _stats(store, units) -> dict:
    out = {k: v for k, v in store.stats().as_dict().items() if "wall" not in k}
    out["clock"] = units.now()
    return out


class _NoWordReads:
    """A device wrapper without ``word_reads``: the store must fall back to byte reads."""

    def __init__(self, dev) -> None:
        self._d = dev

    def __getattr__(self, name):
        if name == "word_reads":
            raise AttributeError(name)
        return getattr(self._d, name)


@pytest.mark.parametrize("payload", [True, False])
@pytest.mark.parametrize("iface", sorted(URLS))
def test_device_word_reads_are_the_first_words_of_the_byte_reads(iface, payload):
    a, b = (placement_units(open_device(_url(iface, payload), zoned=None), 1 << 20, 768 << 10) for _ in "ab")
    assert a.word_reads
    ps = a.geometry.block_size
    rng = np.random.default_rng(5)
    data = rng.integers(0, 256, (192, ps), np.uint8)
    for d in (a, b):
        d.append(0, data[:128])
        d.append(1, data[128:])          # zone 1 stays open: on Open-Channel part of it is an unreadable tail
    zs = a.geometry.zone_size
    offsets = np.concatenate([rng.permutation(128)[:60] * ps, zs + np.arange(0, 64, 3) * ps]).astype(np.int64)
    lengths = np.full(offsets.size, ps, np.int64)
    lengths[::7] = 2 * ps                # some requests span two pages
    lengths[offsets == 127 * ps] = ps
    got_bytes, t_bytes = a.read_batch(offsets, lengths, 32)
    got_words, t_words = b.read_batch(offsets, lengths, 32, words=True)
    assert got_words.dtype == np.uint64
    np.testing.assert_array_equal(got_words, first_words(got_bytes.reshape(-1, ps)))
    np.testing.assert_array_equal(t_words, t_bytes)
    assert a.now() == b.now() and a.stats() == b.stats()


@pytest.mark.parametrize("payload", [True, False])
@pytest.mark.parametrize("iface", sorted(URLS))
def test_swap_in_words_equals_swap_in_on_a_twin_store(iface, payload):
    """Two stores fed the same trace; one reads with swap_in, the other with swap_in_words (GC,
    buffered pages and repeats included): the same words back, the same stats and clock."""
    trace = synthetic_dlrm_trace(3000, dram_fraction=0.25, batch_pages=256, iterations=40, idle_s=0.002,
                                 seed=3, discard_faulted=True)
    (sa, ua), (sb, ub) = _store(iface, payload), _store(iface, payload)
    vers, images = PageVersions(trace.pages), PageImages(sa.page_size)
    reads = 0
    for k in range(len(trace)):
        op, ids = int(trace.ops[k]), trace.event_ids(k)
        if op == SWAP_OUT:
            pages = images.of(vers.stamp(ids))
            sa.swap_out(ids, pages, int(trace.streams[k]))
            sb.swap_out(ids, pages, int(trace.streams[k]))
        elif op == SWAP_IN:
            ask = np.concatenate([ids, ids[:3]])                # repeats come back at every position
            want = first_words(sa.swap_in(ask))
            np.testing.assert_array_equal(sb.swap_in_words(ask), want)
            np.testing.assert_array_equal(want, vers.words(ask))
            reads += 1
        elif op == DISCARD:
            sa.discard(ids)
            sb.discard(ids)
        elif op == IDLE:
            sa.idle(float(trace.idle_s[k]))
            sb.idle(float(trace.idle_s[k]))
    assert reads > 10
    assert _stats(sa, ua) == _stats(sb, ub)
    assert _stats(sa, ua)["gc_write_bytes"] > 0                 # GC relocated pages in between


def test_swap_in_words_of_buffered_prefetched_and_unknown_pages():
    store, units = _store("zns", True, prefetch=True)
    ps = store.page_size
    ids = np.arange(600, dtype=np.int64)
    store.swap_out(ids, np.repeat(ids.astype(np.uint64)[:, None], ps // 8, axis=1).view(np.uint8), 0)
    buffered = np.array([599, 598], np.int64)                   # the tail still waits in a write buffer
    np.testing.assert_array_equal(store.swap_in_words(buffered), buffered.astype(np.uint64))
    got = store.swap_in_words(np.array([5, 3, 5, 598], np.int64))     # prefetch reads whole units
    np.testing.assert_array_equal(got, np.array([5, 3, 5, 598], np.uint64))
    np.testing.assert_array_equal(store.swap_in_words(np.array([6, 4], np.int64)), np.array([6, 4], np.uint64))
    with pytest.raises(KeyError):
        store.swap_in_words(np.array([1, 10_000], np.int64))
    assert store.swap_in_words(np.zeros(0, np.int64)).shape == (0,)


def test_swap_in_words_without_word_reads_reads_bytes():
    dev = open_device(_url("zns", False), zoned=True)
    store = SwapStore(_NoWordReads(dev), StoreConfig(read_qd=READ_QD))
    assert not store.reads.word_reads
    ids = np.arange(700, dtype=np.int64)
    store.swap_out(ids, PageImages(store.page_size).of(ids.astype(np.uint64) + np.uint64(7)), 0)
    store.flush()
    np.testing.assert_array_equal(store.swap_in_words(ids[::-1]), ids[::-1].astype(np.uint64) + np.uint64(7))
