"""Builds the C parts in native/ through cffi (out-of-line API mode) at install time."""
from setuptools import setup

setup(cffi_modules=["native/build_native.py:ffibuilder", "native/build_native.py:zoned_ffibuilder"])
