"""GUEST side: the store's property test (tests/test_properties.py's state machine against a dict
oracle) and its long read-back run, on the real zoned namespace: every append goes through NVMe Zone
Append passthrough, every reset through BLKRESETZONE. Fewer examples than on the host (guest Python
under TCG is slow); fault injection is emulator-only and is not repeated here."""

import os

import numpy as np
from hypothesis import HealthCheck, settings

import test_properties as tp
from zswap_host import StoreConfig, SwapStore, open_device

DEVICE = os.environ.get("ZSWAP_ZNS_DEVICE", "/dev/nvme0n2")
ENGINE = os.environ.get("ZSWAP_IO_ENGINE") or None     # uring (default) or sync: the suite runs with both


def make_real_store():
    dev = open_device(DEVICE, zoned=True, io_engine=ENGINE)
    return SwapStore(dev, StoreConfig(placement="temporal", victim="greedy", write_size=128 << 10,
                                      prefetch_buffer_pages=64, max_streams=1))


class RealStoreMachine(tp.BackendMachine):
    factory = staticmethod(make_real_store)

    def teardown(self):
        dev = self.b.device
        self.b.close()
        dev.close()


RealStoreMachine.TestCase.settings = settings(max_examples=4, stateful_step_count=20, deadline=None,
                                              suppress_health_check=list(HealthCheck), database=None)
TestRealStoreMachine = RealStoreMachine.TestCase


def test_all_pages_back_after_overwrites_on_real_namespace():
    b = make_real_store()
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
