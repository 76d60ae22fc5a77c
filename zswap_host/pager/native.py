"""The C core (``zswap_host._pager``, native/pager.c) and the small glue to call it: errno
results turned into ``OSError``, numpy arrays passed as pointers without a copy."""

from __future__ import annotations

import errno
import os

import numpy as np


def pager_lib():
    """(ffi, lib) of the pager core; ``ImportError`` when it was not built
    (``python native/build_native.py zswap_host._pager``)."""
    from .._pager import ffi, lib
    return ffi, lib


def check(rc: int, what: str) -> int:
    """``rc`` when it is a count (>= 0); ``OSError(errno)`` naming ``what`` when it is -errno."""
    if rc < 0:
        raise OSError(-rc, f"{what}: {os.strerror(-rc)} ({errno.errorcode.get(-rc, '?')})")
    return rc


def ptr(ffi, a: np.ndarray, ctype: str):
    """A C pointer to a contiguous numpy array's data (no copy; keep ``a`` alive during the call)."""
    assert a.flags.c_contiguous, "pager: arrays passed to C must be C-contiguous"
    return ffi.from_buffer(ctype.replace(" *", "[]"), a)
