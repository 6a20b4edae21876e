"""TermScanner.scanForAvailability (sender): whole committed frames up to a limit, padding reported apart."""

from __future__ import annotations

import struct
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.logbuffer.term_scanner import scan_for_availability
from driver.protocol.frames import DATA_HEADER, HDR_TYPE_DATA, HDR_TYPE_PAD, TYPE_OFFSET
from driver.util.bit_util import align

T = 64 * 1024
_U16 = struct.Struct("<H")


def python_scan(term: AtomicBuffer, offset: int, max_length: int) -> tuple[int, int]:
    """Aeron's loop, frame by frame."""
    limit = min(max_length, term.capacity - offset)
    available = padding = 0
    while True:
        frame_offset = offset + available
        frame_length = term.get_int32_acquire(frame_offset)
        if frame_length <= 0:
            break
        aligned = align(frame_length, 32)
        if _U16.unpack_from(term.view, frame_offset + TYPE_OFFSET)[0] == HDR_TYPE_PAD:
            padding = aligned - 32
            aligned = 32
        available += aligned
        if available > limit:
            available -= aligned
            padding = 0
            break
        if padding or available >= limit:
            break
    return available, padding


@pytest.fixture
def term() -> Iterator[AtomicBuffer]:
    buffer = AtomicBuffer(bytearray(T))
    yield buffer
    buffer.close()


def put(term: AtomicBuffer, offset: int, frame_length: int, frame_type: int = HDR_TYPE_DATA) -> int:
    DATA_HEADER.pack_into(term.view, offset, frame_length, 0, 0xC0, frame_type, offset, 1, 2, 3, 0)
    return offset + align(abs(frame_length), 32)


def test_nothing_committed(term: AtomicBuffer) -> None:
    assert scan_for_availability(term, 0, 1408) == (0, 0)
    put(term, 0, -100)
    assert scan_for_availability(term, 0, 1408) == (0, 0)


def test_whole_frames_up_to_the_limit(term: AtomicBuffer) -> None:
    offset = put(term, 0, 100)  # 128
    offset = put(term, offset, 1000)  # 1024
    put(term, offset, 300)  # 320
    assert scan_for_availability(term, 0, 1408) == (1152, 0)  # the third frame would exceed 1408
    assert scan_for_availability(term, 0, 1472) == (1472, 0)
    assert scan_for_availability(term, 0, 127) == (0, 0)  # not even the first frame fits
    assert scan_for_availability(term, 128, 1408) == (1344, 0)


def test_padding_counts_only_its_header_and_ends_the_scan(term: AtomicBuffer) -> None:
    offset = put(term, 0, 64)
    put(term, offset, T - offset, HDR_TYPE_PAD)
    assert scan_for_availability(term, 0, 1408) == (96, T - 64 - 32)
    assert scan_for_availability(term, 64, 1408) == (32, T - 96)


def test_padding_header_beyond_the_limit_is_left_for_the_next_scan(term: AtomicBuffer) -> None:
    offset = put(term, 0, 1376)  # 1376 aligned
    put(term, offset, T - offset, HDR_TYPE_PAD)
    assert scan_for_availability(term, 0, 1400) == (1376, 0)
    assert scan_for_availability(term, 0, 1408) == (1408, T - 1376 - 32)


def test_the_term_end_limits_the_scan(term: AtomicBuffer) -> None:
    put(term, T - 64, 64)
    assert scan_for_availability(term, T - 64, 1408) == (64, 0)
    assert scan_for_availability(term, T, 1408) == (0, 0)


@settings(max_examples=200, deadline=None)
@given(
    lengths=st.lists(st.integers(-200, 3000).filter(lambda n: abs(n) >= 32), max_size=40),
    pads=st.sets(st.integers(0, 39)),
    pad_to_end=st.booleans(),
    max_length=st.integers(0, 70000),
    data=st.data(),
)
def test_native_scan_agrees_with_the_python_scan(
    lengths: list[int], pads: set[int], pad_to_end: bool, max_length: int, data: st.DataObject
) -> None:
    term = AtomicBuffer(bytearray(T))
    try:
        offset = 0
        boundaries = [0]
        for i, length in enumerate(lengths):
            if offset + align(abs(length), 32) > T:
                break
            offset = put(term, offset, length, HDR_TYPE_PAD if i in pads else HDR_TYPE_DATA)
            boundaries.append(offset)
        if pad_to_end and offset < T:
            put(term, offset, T - offset, HDR_TYPE_PAD)
        start = data.draw(st.sampled_from(boundaries))
        assert scan_for_availability(term, start, max_length) == python_scan(term, start, max_length)
    finally:
        term.close()
