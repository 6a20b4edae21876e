"""Here because cffi builds its extension through setuptools' ``cffi_modules``, and for the client's CPython
fast path (native/src/amd_fastpath.c, native/README.md)."""

from setuptools import Extension, setup

FASTPATH = Extension(
    "driver.concurrent.logbuffer._fastpath",
    sources=["native/src/amd_fastpath.c", "native/src/amd_publication.c", "native/src/amd_term.c"],
    include_dirs=["native/include"],
    extra_compile_args=["-O2", "-std=gnu11", "-Wall", "-Wextra"],
    # A Python whose C API it does not build against gets the cffi paths (same results; fastpath.status()).
    optional=True,
)

setup(cffi_modules=["native/build_ffi.py:ffibuilder"], ext_modules=[FASTPATH])
