"""CRC32C of frames (native/include/amd_crc.h): the archive's checksum sidecar (docs/archive.md section 19) is
made of these entries, each covering a run of whole frames: one frame (``frame_checksums``) or a recorded block
(``run_checksum``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from driver._native import ffi, lib

FRAME_ALIGNMENT = 32
HEADER_LENGTH = 32
TYPE_OFFSET = 6
TYPE_PAD = 0
ENTRY_DTYPE = np.dtype([("position", "<i8"), ("length", "<i4"), ("crc", "<u4")])
"""A run of whole frames: its stream position, its length, the CRC32C of its bytes (of a padding frame, which
is always a run of its own, only its header)."""


def crc32c(data: Any, crc: int = 0) -> int:
    """CRC32C of ``data``, continuing ``crc``."""
    return lib.amd_crc32c(crc, ffi.from_buffer(data), len(data))


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


def run_checksum(data: Any, offset: int, length: int) -> int:
    """The CRC32C an entry keeps for the run of frames ``data[offset:offset + length]``: of its bytes, or of the
    header alone when it is a padding frame."""
    buffer = ffi.from_buffer(data)
    padding = int.from_bytes(data[offset + TYPE_OFFSET : offset + TYPE_OFFSET + 2], "little") == TYPE_PAD
    return lib.amd_crc32c(0, buffer + offset, HEADER_LENGTH if padding else length)


def first_mismatch(data: Any, base: int, entries: np.ndarray) -> int:
    """Index of the first of ``entries`` whose run is not all in ``data`` (which starts at stream position
    ``base``) or whose CRC differs; ``len(entries)`` when all hold."""
    entries = np.ascontiguousarray(entries, ENTRY_DTYPE)
    return lib.amd_check_checksums(
        ffi.from_buffer(data), len(data), base, ffi.from_buffer(entries), len(entries)
    )
