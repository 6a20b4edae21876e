"""cffi (API mode) build of ``driver._native`` from the C sources in ``native/``.

The header doubles as the cdef: preprocessor lines are dropped before it is handed to cffi.
"""

from pathlib import Path

from cffi import FFI

NATIVE = Path(__file__).resolve().parent
HEADERS = ["amd_atomic.h", "amd_term.h", "amd_publication.h", "amd_udp.h", "amd_rebuild.h", "amd_rebuild_batch.h", "amd_timer.h", "amd_crc.h", "amd_watch.h", "amd_step.h", "amd_cycle.h", "amd_gather.h"]
SOURCES = ["amd_atomic.c", "amd_term.c", "amd_publication.c", "amd_udp.c", "amd_rebuild.c", "amd_timer.c", "amd_crc.c", "amd_watch.c", "amd_step.c", "amd_cycle.c", "amd_gather.c"]


def _cdef(header: Path) -> str:
    return "\n".join(line for line in header.read_text().splitlines() if not line.lstrip().startswith("#"))


ffibuilder = FFI()
for name in HEADERS:
    ffibuilder.cdef(_cdef(NATIVE / "include" / name))

ffibuilder.set_source(
    "driver._native",
    "\n".join(f'#include "{name}"' for name in HEADERS),
    sources=[str((NATIVE / "src" / s).relative_to(NATIVE.parent)) for s in SOURCES],
    include_dirs=[str((NATIVE / "include").relative_to(NATIVE.parent))],
    extra_compile_args=["-O2", "-std=gnu11", "-Wall", "-Wextra"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
