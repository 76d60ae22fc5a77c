"""Marks for the HOST-side QEMU tests (test_*.py here): slow, and skipped with the reason when the
guest cannot boot (QEMU, a kernel in /boot, virtme-ng or a static busybox missing) or with
ZSWAP_QEMU=0. They run last; their guests boot early, in the background, while the rest of the
suite runs (early.py). The guest-side files (guest_*.py) run inside the guest and are left alone."""

from __future__ import annotations

import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)


def _host(items) -> list:
    return [it for it in items if os.path.basename(str(it.fspath)).startswith("test_")
            and os.path.dirname(str(it.fspath)) == os.path.dirname(os.path.abspath(__file__))]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    host = _host(items)
    if not host:
        return
    last = set(map(id, host))
    items.sort(key=lambda it: id(it) in last)           # stable: the guests' tests after all others
    from emulator.zns_vm import missing

    gone = missing()
    for it in host:
        it.add_marker(pytest.mark.slow)
        if gone:
            it.add_marker(pytest.mark.skip(reason="QEMU guest needs: " + "; ".join(gone)))
        elif os.environ.get("ZSWAP_QEMU") == "0":
            it.add_marker(pytest.mark.skip(reason="ZSWAP_QEMU=0"))


def pytest_collection_finish(session):
    """Start the selected modules' guest runs (``boot``) in the background, in their test order."""
    import early

    if session.config.option.collectonly:
        return
    jobs, seen = [], set()
    for it in _host(session.items):
        mod = it.module
        if mod.__name__ in seen or not hasattr(mod, "boot") or it.get_closest_marker("skip"):
            continue
        seen.add(mod.__name__)
        work = session.config._tmp_path_factory.mktemp(mod.__name__.rsplit(".", 1)[-1])
        jobs.append((mod.__name__, mod.boot, work))
    if jobs:
        early.RUNS.start(jobs)


def pytest_sessionfinish(session):
    import early

    early.RUNS.cancel_pending()
