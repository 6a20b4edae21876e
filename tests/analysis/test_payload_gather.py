"""Payloads of recorded frames gathered in one native call (driver/analysis/payload_gather.py): the bytes after
each frame's header, joined in order; a frame outside the buffer or shorter than a header is refused whole."""

from __future__ import annotations

import mmap
import struct
from pathlib import Path

import numpy as np
import pytest

from driver.analysis.payload_gather import gather_payloads


def frame(payload: bytes) -> bytes:
    header = struct.pack("<iBBHiiiiq", 32 + len(payload), 0, 0xC0, 1, 0, 1, 2, 3, 0)
    return (header + payload).ljust((32 + len(payload) + 31) & -32, b"\0")


def test_payloads_are_joined_in_the_order_given_from_a_read_only_mapping(tmp_path: Path) -> None:
    payloads = [b"first", b"", b"x" * 1000, bytes(range(256)), b"last"]
    frames = [frame(p) for p in payloads]
    offsets = np.cumsum([0] + [len(f) for f in frames[:-1]])
    path = tmp_path / "segment"
    path.write_bytes(b"".join(frames))
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        lengths = np.array([32 + len(p) for p in payloads])
        assert gather_payloads(data, offsets, lengths).tobytes() == b"".join(payloads)
        order = [3, 0, 2]
        assert gather_payloads(data, offsets[order], lengths[order]).tobytes() == b"".join(
            payloads[i] for i in order
        )
        assert gather_payloads(data, offsets[:0], lengths[:0]).tobytes() == b""


def test_a_frame_outside_the_buffer_or_shorter_than_a_header_is_refused() -> None:
    data = frame(b"abc") + frame(b"def")
    with pytest.raises(ValueError, match="outside the buffer or shorter"):
        gather_payloads(data, np.array([0, 96]), np.array([35, 35]))  # runs past the end
    with pytest.raises(ValueError, match="outside the buffer or shorter"):
        gather_payloads(data, np.array([0, 32]), np.array([35, 31]))
    with pytest.raises(ValueError, match="outside the buffer or shorter"):
        gather_payloads(data, np.array([-32]), np.array([35]))
    with pytest.raises(ValueError, match="differ in count"):
        gather_payloads(data, np.array([0, 32]), np.array([35]))
