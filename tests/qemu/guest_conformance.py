"""GUEST side: the device conformance suite (tests/conformance.py, unchanged) against the real zoned
namespace of QEMU's NVMe controller, through the kernel's zoned block layer. Not collected on the host
(the name does not match test_*.py); tests/qemu/test_qemu_zns.py runs it inside the guest with
``pytest tests/qemu/guest_conformance.py``. ``ZSWAP_ZNS_DEVICE`` overrides the device path."""

import os

import pytest

from conformance import *  # noqa: F401,F403  (the suite)
from zswap_host.devices import open_device

DEVICE = os.environ.get("ZSWAP_ZNS_DEVICE", "/dev/nvme0n2")
ENGINE = os.environ.get("ZSWAP_IO_ENGINE") or None     # uring (default) or sync: the suite runs with both


@pytest.fixture
def zdev():
    dev = open_device(DEVICE, zoned=True, io_engine=ENGINE)     # the safety checks run too: the namespace must pass them
    dev.reset_all()                           # every zone EMPTY, open/active resources released
    yield dev
    dev.close()
