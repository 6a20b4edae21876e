"""Here because cffi builds its extension through setuptools' ``cffi_modules``, and for the client's CPython
fast path (native/src/amd_fastpath*.c, native/README.md)."""

from setuptools import Extension, setup

FASTPATH = Extension(
    "driver.concurrent.logbuffer._fastpath",
    # The module, its offers, its polls and message stream; its private headers (amd_fastpath.h, amd_pyint.h)
    # sit beside them in native/src.
    sources=[
        "native/src/amd_fastpath.c",
        "native/src/amd_fastpath_offers.c",
        "native/src/amd_fastpath_polls.c",
        "native/src/amd_publication.c",
        "native/src/amd_term.c",
    ],
    include_dirs=["native/include"],
    depends=["native/src/amd_fastpath.h", "native/src/amd_pyint.h"],
    extra_compile_args=["-O2", "-std=gnu11", "-Wall", "-Wextra"],
    # A Python whose C API it does not build against gets the cffi paths (same results; fastpath.status()).
    optional=True,
)

setup(cffi_modules=["native/build_ffi.py:ffibuilder"], ext_modules=[FASTPATH])
