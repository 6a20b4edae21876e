"""CRC32C of frames (native/include/amd_crc.h): the archive's checksum sidecar (docs/archive.md section 19) is
made of these entries."""

from __future__ import annotations

from typing import Any

import numpy as np

from driver._native import ffi, lib

FRAME_ALIGNMENT = 32
ENTRY_DTYPE = np.dtype([("position", "<i8"), ("length", "<i4"), ("crc", "<u4")])
"""One frame: its stream position, its frame length, the CRC32C of its bytes (of a padding frame, its header)."""


def crc32c(data: Any) -> int:
    return lib.amd_crc32c(0, ffi.from_buffer(data), len(data))


def frame_checksums(
    data: Any, position: int, offset: int = 0, length: int | None = None, out: np.ndarray | None = None
) -> np.ndarray:
    """The entries of the whole frames in ``data[offset:offset + length]``, which starts at stream ``position``
    (a view of ``out`` when it is given and large enough)."""
    if length is None:
        length = len(data) - offset
    capacity = max(length // FRAME_ALIGNMENT, 1)
    if out is None or len(out) < capacity:
        out = np.empty(capacity, ENTRY_DTYPE)
    count = lib.amd_frame_checksums(
        ffi.from_buffer(data) + offset, length, position, ffi.from_buffer(out), capacity
    )
    return out[:count]
