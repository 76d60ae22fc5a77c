"""Payload-free emulated devices (``payload=0``, ``devices/fingerprint.py``): a trace replayed over
one gives the same modeled stall, write amplification and GC as over the same device with its
bytes, on every interface; verification still catches a wrong page."""

import numpy as np
import pytest

from zswap_host.bench.plan import READ_QD, linux_swap
from zswap_host.devices import open_device, placement_units
from zswap_host.errors import DeviceSpecError, PageCorruptError
from zswap_host.store import StoreConfig, SwapStore
from zswap_host.workloads import replay, synthetic_dlrm_trace
from zswap_host.workloads.trace import DISCARD

PAGES = 3000
BUDGET = PAGES // 4
URLS = {"zns": "emu://?zones=24&zone_size=1MiB&zone_capacity=768KiB&preset=thesis-ssd",
        "conventional": "emu-conv://?size=20MiB&preset=thesis-ssd&idle_gc=1",
        "fdp": "fdp://?size=20MiB&preset=thesis-ssd&ruhs=4",
        "ocssd": "ocssd://?chunks=11&sectors=24&preset=thesis-ssd"}
RUNS = [("zns", "store"), ("conventional", "store"), ("conventional", "linux"), ("fdp", "store"),
        ("ocssd", "store")]


@pytest.fixture(scope="module")
def trace():
    return synthetic_dlrm_trace(PAGES, dram_fraction=0.25, batch_pages=256, iterations=40, idle_s=0.002,
                                seed=3, discard_faulted=True)


def _backend(iface: str, soft: str, payload: bool):
    dev = open_device(URLS[iface] + ("" if payload else "&payload=0"), zoned=None)
    if soft == "linux":
        return linux_swap(dev, BUDGET), dev.now, dev
    units = placement_units(dev, 1 << 20, 768 << 10)
    return SwapStore(units, StoreConfig(read_qd=READ_QD)), units.now, units


def _run(trace, iface, soft, payload):
    b, clock, dev = _backend(iface, soft, payload)
    tr = trace.without(DISCARD) if soft == "linux" else trace
    replay(b, tr, verify=True, clock=clock)
    out = {k: v for k, v in b.stats().as_dict().items() if "wall" not in k}
    out["clock"] = clock()
    out["erases"] = dev.erase_counts().tolist()
    if soft == "linux":                         # orphans (slots freed at a fault) happened, kept as wide
        out["orphan_pool_width"] = b._table.pool.shape[1] if b._table.pool.shape[0] else None   # as the device keeps pages
        out["pool_rows"] = b._table.pool.shape[0]
    b.close()
    dev.close()
    return out


@pytest.mark.parametrize("iface,soft", RUNS)
def test_same_modeled_stats_without_payload(trace, iface, soft):
    with_bytes, words_only = _run(trace, iface, soft, True), _run(trace, iface, soft, False)
    assert with_bytes["gc_write_bytes"] > 0 or soft == "linux"        # the store GC ran: it reads pages back
    if soft == "linux":
        assert with_bytes.pop("orphan_pool_width") == 4096 and words_only.pop("orphan_pool_width") == 8
        assert with_bytes["pool_rows"] > 0
    assert words_only == with_bytes


def test_payload_free_device_keeps_the_first_word_only():
    dev = open_device("emu://?zones=4&zone_size=1MiB&preset=none&payload=0")
    page = np.arange(8192, dtype=np.uint8).astype(np.uint8).reshape(2, 4096)
    off = dev.append(0, page)
    back = dev.read(off, 8192).reshape(2, 4096)
    assert (back[:, :8] == page[:, :8]).all() and not back[:, 8:].any()
    assert dev.describe()["payload"] is False
    dev.reset_zone(0)
    assert not dev.read(0, 4096).any()


def test_payload_free_devices_are_in_memory_only(tmp_path):
    with pytest.raises(DeviceSpecError, match="payload-free"):
        open_device(f"emu://{tmp_path}/d?zones=4&zone_size=1MiB&payload=0")


def test_verification_catches_a_corrupted_fingerprint(trace):
    from zswap_host.workloads.page_words import PageVersions

    dev = open_device(URLS["zns"] + "&payload=0")
    store = SwapStore(dev, StoreConfig())
    tr = trace.without(DISCARD)
    k = int(np.flatnonzero(tr.ops == 0)[0])              # the first swap_in
    part = lambda a, b: type(tr)(tr.ops[a:b], tr.streams[a:b], tr.idle_s[a:b],  # noqa: E731
                                 tr.bounds[a:b + 1] - tr.bounds[a], tr.ids[tr.bounds[a]:tr.bounds[b]], tr.meta)
    vers = PageVersions()
    replay(store, part(0, k), verify=True, versions=vers)
    store.flush()
    victim = int(tr.event_ids(k)[-1])
    where = np.flatnonzero(dev._backing.words == vers.words(np.array([victim]))[0])
    assert where.size == 1                               # its one copy, on the device
    dev._backing.corrupt(int(where[0]) * 4096)
    with pytest.raises(PageCorruptError, match=f"page {victim}") as e:
        replay(store, part(k, k + 1), verify=True, versions=vers)
    assert e.value.page_ids.tolist() == [victim]


def test_linux_model_keeps_only_the_word_of_an_orphan_on_a_payload_free_device():
    # over half full, a fault frees the page's slot (vm_swap_full) and the model keeps the page's
    # bytes for a caller that drops it clean; on a payload-free device only its first word, as the
    # device would: a clean re-fault returns the word, zeros after
    from zswap_host.workloads.page_words import PageImages, PageVersions, first_words

    n = 3000
    for payload in (True, False):
        dev = open_device(URLS["conventional"] + ("" if payload else "&payload=0"), zoned=False)
        sw = linux_swap(dev, BUDGET)
        vers, ids = PageVersions(n), np.arange(n)
        pages = PageImages(4096).of(vers.stamp(ids)).copy()
        pages[:, 8:] = 7                                  # bytes a payload-free device drops
        sw.swap_out(ids, pages)
        got = sw.swap_in(ids[:64])
        assert sw.stats().extra["slots_freed_on_fault"] > 0 and sw._table.pool.shape[1] == (4096 if payload else 8)
        again = sw.swap_in(ids[:64])                      # dropped clean, faulted again: from the pool
        assert (first_words(again) == vers.words(ids[:64])).all()
        assert (again == got).all() and (again[:, 8:] == (7 if payload else 0)).all()
        sw.close()
        dev.close()


@pytest.mark.parametrize("payload", [True, False])
def test_gc_relocates_what_the_device_keeps(payload):
    # on a payload-free device GC reads and buffers the pages' first words only; a page waiting in
    # the GC buffer reads back as the device would give it: its word, then zeros
    dev = open_device(URLS["zns"] + ("" if payload else "&payload=0"))
    units = placement_units(dev, 1 << 20, 768 << 10)
    store = SwapStore(units, StoreConfig(read_qd=READ_QD))
    assert store._gc_words is (not payload)
    rng = np.random.default_rng(5)
    n = 2000
    pages = rng.integers(0, 256, (n, 4096), dtype=np.uint8)
    store.swap_out(np.arange(n), pages)
    ids = rng.choice(n, n // 2, replace=False)      # overwrite half: zones of garbage and valid pages
    store.swap_out(ids, pages[ids])
    moved = store._collector.step(10 * 4096, "manual")  # part of a victim: it waits in the GC buffer
    gc = store.state.buffers[store.state.gc_buffer]
    assert moved > 0 and gc.n > 0
    waiting = store.state.idmap.ids[gc.ids[:gc.n]]
    got = store.swap_in(waiting)
    want = pages[waiting].copy()
    if not payload:
        want[:, 8:] = 0
    assert np.array_equal(got, want)
    assert np.array_equal(store.swap_in(np.arange(n))[:, :8], pages[:, :8])


@pytest.mark.parametrize("block", [4096, 520])
def test_fingerprint_ranges_cover_their_blocks_in_order(block):
    """Gathers and scatters of ranges of any number of blocks (shifts for a power-of-two block,
    divisions otherwise) touch the blocks a per-range loop would."""
    from zswap_host.devices.fingerprint import FingerprintBacking

    medium = FingerprintBacking(64 * block, block)
    medium.words[:] = np.arange(64, dtype=np.uint64) * 3
    rng = np.random.default_rng(block)
    for _ in range(20):
        nb = rng.integers(1, 5, rng.integers(1, 9))
        first = rng.integers(0, 60, nb.size)
        offsets, lengths = first * block, nb * block
        want = np.concatenate([np.arange(f, f + n) for f, n in zip(first, nb)])
        np.testing.assert_array_equal(medium.gather_words(offsets, lengths, block), want * 3)
