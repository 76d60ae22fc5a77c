"""Marks for the HOST-side QEMU tests (test_*.py here): slow, and skipped with the reason when the
guest cannot boot (QEMU, a kernel in /boot, virtme-ng or a static busybox missing) or with
ZSWAP_QEMU=0. The guest-side files (guest_*.py) run inside the guest and are left alone."""

from __future__ import annotations

import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)


def pytest_collection_modifyitems(config, items):
    host = [it for it in items if os.path.basename(str(it.fspath)).startswith("test_")
            and os.path.dirname(str(it.fspath)) == os.path.dirname(os.path.abspath(__file__))]
    if not host:
        return
    from emulator.zns_vm import missing

    gone = missing()
    for it in host:
        it.add_marker(pytest.mark.slow)
        if gone:
            it.add_marker(pytest.mark.skip(reason="QEMU guest needs: " + "; ".join(gone)))
        elif os.environ.get("ZSWAP_QEMU") == "0":
            it.add_marker(pytest.mark.skip(reason="ZSWAP_QEMU=0"))
