"""GUEST side: the store's property test (tests/support/store_machine.py's state machine against a dict
oracle) and its long read-back run, on the real zoned namespace: every append goes through NVMe Zone
Append passthrough, every reset through BLKRESETZONE. Fewer examples than on the host (guest Python
under TCG is slow); fault injection is emulator-only and is not repeated here."""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

import store_machine as tp
from zswap_host import StoreConfig, SwapStore, open_device

DEVICE = os.environ.get("ZSWAP_ZNS_DEVICE", "/dev/nvme0n2")
# both I/O engines in one process (each interpreter start-up costs about 30 s under TCG); every test
# name carries its engine
ENGINES = os.environ.get("ZSWAP_IO_ENGINES", "uring,sync").split(",")


def make_real_store(engine: str):
    dev = open_device(DEVICE, zoned=True, io_engine=engine)
    return SwapStore(dev, StoreConfig(placement="temporal", victim="greedy", write_size=128 << 10,
                                      prefetch_buffer_pages=64, max_streams=1))


def _machine(engine: str):
    class RealStoreMachine(tp.BackendMachine):
        factory = staticmethod(lambda: make_real_store(engine))

        def teardown(self):
            dev = self.b.device
            self.b.close()
            dev.close()

    RealStoreMachine.TestCase.settings = settings(max_examples=4, stateful_step_count=20, deadline=None,
                                                  suppress_health_check=list(HealthCheck), database=None)
    return RealStoreMachine.TestCase


for _engine in ENGINES:
    globals()[f"TestRealStoreMachine_{_engine}"] = _machine(_engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_all_pages_back_after_overwrites_on_real_namespace(engine):
    b = make_real_store(engine)
    try:
        rng = np.random.default_rng(0)
        oracle = {}
        for v in range(30):
            ids = rng.choice(4000, 40, replace=False)
            b.swap_out(ids.astype(np.int64), np.stack([tp.page(int(i), v) for i in ids]))
            oracle.update({int(i): v for i in ids})
        b.flush()
        ids = np.array(sorted(oracle))
        assert np.array_equal(b.swap_in(ids), np.stack([tp.page(i, oracle[i]) for i in ids.tolist()]))
        b.check()
        s = b.device.stats()
        # after the flush every live page is on the namespace: at least one 4 KiB write each
        assert s.clock == "wall" and s.device_write_bytes >= len(oracle) * 4096
    finally:
        dev = b.device
        b.close()
        dev.close()


@pytest.mark.parametrize("engine", ENGINES)
def test_gc_moves_whole_victims_with_reads_beside_appends(engine):
    """Foreground-sized GC (gc_step: whole victims) on the real namespace after overwrites: every
    page comes back. With the uring engine the device has overlapped_io (appends on their own
    passthrough ring) and the victim's next chunk is read on the reader thread while the last one
    is appended; the most batches the device saw running at once is printed (not asserted: whether
    two batches met in time is the scheduler's business)."""
    dev = open_device(DEVICE, zoned=True, io_engine=engine)
    dev.reset_all()
    b = SwapStore(dev, StoreConfig(write_size=128 << 10, max_streams=1))
    try:
        rng = np.random.default_rng(3)
        # a third of the namespace: each overwrite round leaves every zone with stale pages, so a whole
        # victim is still about 60% valid (several chunks read beside the appends) at 0.3 as at 0.8,
        # for well under half the bytes through TCG's NVMe emulation
        n = int(b.capacity_pages * 0.3)
        ids = np.arange(n, dtype=np.int64)
        version = np.zeros(n, np.int64)
        words = np.arange(512, dtype=np.int64)

        def pages(sel, v):
            return ((sel[:, None] * 1000003 + v[:, None]) * 7919 + words).view(np.uint8).reshape(sel.size, 4096)

        for i in range(0, n, 1024):
            b.swap_out(ids[i:i + 1024], pages(ids[i:i + 1024], version[i:i + 1024]))
        for v in (1, 2):
            hot = np.sort(rng.choice(n, n // 5, replace=False))
            version[hot] = v
            for i in range(0, hot.size, 1024):
                b.swap_out(hot[i:i + 1024], pages(hot[i:i + 1024], version[hot[i:i + 1024]]))
        b.flush()
        moved = [b.gc_step() for _ in range(3)]
        assert max(moved) > 0, moved
        b.check()
        for i in range(0, n, 2048):
            assert np.array_equal(b.swap_in(ids[i:i + 2048]), pages(ids[i:i + 2048], version[i:i + 2048]))
        st = dev.engine_stats()
        print(f"GC moved {moved}; overlapped_io {dev.overlapped_io}; engine {st}")
        assert dev.overlapped_io == (st["engine"] == "uring" and st["append_path"] == "uring-cmd")
        if dev.overlapped_io:
            assert b._read_pool is not None                 # the victims' chunks were read on the reader thread
    finally:
        b.close()
        dev.close()
