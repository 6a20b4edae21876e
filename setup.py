"""Only here because cffi builds its extension through setuptools' ``cffi_modules``."""

from setuptools import setup

setup(cffi_modules=["native/build_ffi.py:ffibuilder"])
