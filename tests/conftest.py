import os
import sys

# the helpers the tests share (tests/support/), importable by name from every folder of tests
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
# a pager deadlock (a thread touching paged memory with the GIL held) aborts instead of hanging CI
os.environ.setdefault("ZSWAP_PAGER_ABORT_S", "120")


def pytest_sessionstart(session):
    """Before collection (tests/qemu/conftest.py checks at collection whether the guest can boot):
    install the Debian packages the suite needs where we may, once (tests/support/system_packages.py)."""
    import system_packages

    system_packages.ensure()
