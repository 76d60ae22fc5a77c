"""GUEST side: the device conformance suite (tests/support/conformance.py, unchanged) against the real zoned
namespace of QEMU's NVMe controller, through the kernel's zoned block layer. Not collected on the host
(the name does not match test_*.py); tests/qemu/test_qemu_zns.py runs it inside the guest with
``pytest tests/qemu/guest_conformance.py``. ``ZSWAP_ZNS_DEVICE`` overrides the device path."""

import os

import pytest

from conformance import *  # noqa: F401,F403  (the suite)
from zswap_host.devices import open_device

DEVICE = os.environ.get("ZSWAP_ZNS_DEVICE", "/dev/nvme0n2")
# both I/O engines in one process (each interpreter start-up costs about 30 s under TCG); the test ids
# carry the engine, e.g. test_x[uring] or test_x[sync-4096]
ENGINES = os.environ.get("ZSWAP_IO_ENGINES", "uring,sync").split(",")


@pytest.fixture(params=ENGINES)
def zdev(request):
    dev = open_device(DEVICE, zoned=True, io_engine=request.param)     # the safety checks run too: the namespace must pass them
    dev.reset_all()                           # every zone EMPTY, open/active resources released
    yield dev
    dev.close()
