"""Payloads of recorded frames gathered into one buffer in one native call (native/include/amd_gather.h): the
recording source's message bytes without a Python step per message."""

from __future__ import annotations

from typing import Any

import numpy as np

from driver._native import ffi, lib

HEADER_LENGTH = 32


def gather_payloads(data: Any, offsets: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The bytes after the 32-byte header of each frame (at ``offsets`` of ``data``, ``lengths`` long), joined in
    order into one uint8 array. ValueError when a frame is outside ``data`` or shorter than its header."""
    offsets = np.ascontiguousarray(offsets, np.int64)
    lengths = np.ascontiguousarray(lengths, np.int64)
    if len(offsets) != len(lengths):
        raise ValueError("offsets and lengths differ in count")
    capacity = int(lengths.sum()) - HEADER_LENGTH * len(lengths)
    out = np.empty(max(capacity, 1), np.uint8)
    written = lib.amd_gather_payloads(
        ffi.from_buffer(data), len(data), ffi.cast("const int64_t *", offsets.ctypes.data),
        ffi.cast("const int64_t *", lengths.ctypes.data), len(offsets), ffi.from_buffer(out), len(out),
    )  # fmt: skip
    if written < 0:
        raise ValueError("a frame is outside the buffer or shorter than its header")
    return out[:written]
