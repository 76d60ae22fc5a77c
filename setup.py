"""Builds the C parts in native/ through cffi (out-of-line API mode) at install time. The io_uring
engine (zswap_host._uring) needs liburing's headers (Debian: liburing-dev); without them it is left
out and the Linux device backends use the synchronous engine, saying so on stderr."""
import os
import sys

from setuptools import setup

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "native"))
from build_native import have_liburing  # noqa: E402

modules = ["native/build_native.py:ffibuilder", "native/build_native.py:zoned_ffibuilder",
           "native/build_native.py:pager_ffibuilder"]
if have_liburing():
    modules.append("native/build_native.py:uring_ffibuilder")
else:
    print("zswap-host: liburing.h not found (apt install liburing-dev): building without the io_uring engine",
          file=sys.stderr)
setup(cffi_modules=modules)
