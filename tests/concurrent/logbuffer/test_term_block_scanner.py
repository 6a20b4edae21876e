"""TermBlockScanner (archive recording): a block of whole committed frames; padding is a block of its own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.logbuffer.term_block_scanner import scan, scan_counting
from driver.protocol.frames import DATA_HEADER, HDR_TYPE_DATA, HDR_TYPE_PAD
from driver.util.bit_util import align

T = 64 * 1024


@pytest.fixture
def term() -> Iterator[AtomicBuffer]:
    buffer = AtomicBuffer(bytearray(T))
    yield buffer
    buffer.close()


def put(term: AtomicBuffer, offset: int, frame_length: int, frame_type: int = HDR_TYPE_DATA) -> int:
    DATA_HEADER.pack_into(term.view, offset, frame_length, 0, 0xC0, frame_type, offset, 1, 2, 3, 0)
    return offset + align(abs(frame_length), 32)


def test_block_of_whole_frames_within_the_limit(term: AtomicBuffer) -> None:
    offset = put(term, 0, 100)  # 128
    offset = put(term, offset, 200)  # 224
    put(term, offset, 64)
    assert scan(term, 0, T) == 416
    assert scan(term, 0, 400) == 352  # the last frame would cross the limit
    assert scan(term, 0, 100) == 0
    assert scan(term, 416, T) == 416  # nothing committed there


def test_stops_at_uncommitted_frames(term: AtomicBuffer) -> None:
    offset = put(term, 0, 64)
    put(term, offset, -64)
    assert scan(term, 0, T) == 64


def test_padding_is_its_own_block(term: AtomicBuffer) -> None:
    offset = put(term, 0, 64)
    pad_at = offset
    offset = put(term, offset, 1024, HDR_TYPE_PAD)
    put(term, offset, 64)
    assert scan(term, 0, T) == pad_at  # padding not first: the block ends before it
    assert scan(term, pad_at, T) == pad_at + 1024  # padding first: the block is the padding
    assert scan(term, pad_at, pad_at + 64) == pad_at + 1024  # even past the limit, as Aeron


def test_limit_is_clamped_to_the_term(term: AtomicBuffer) -> None:
    put(term, T - 64, 64)
    assert scan(term, T - 64, T + 4096) == T


def test_the_counting_scan_finds_the_same_block_and_counts_its_messages(term: AtomicBuffer) -> None:
    """Messages: unfragmented or first fragments; middle and last fragments and padding are not messages."""
    offset = 0
    for flags in (0xC0, 0x80, 0x00, 0x40, 0xC0):  # whole, begin, middle, end, whole: three messages
        DATA_HEADER.pack_into(term.view, offset, 64, 0, flags, HDR_TYPE_DATA, offset, 1, 2, 3, 0)
        offset += 64
    pad_at = offset
    put(term, offset, 1024, HDR_TYPE_PAD)
    assert scan_counting(term, 0, T) == (pad_at, 3) == (scan(term, 0, T), term.count_messages(0, pad_at))
    assert scan_counting(term, 64, 200) == (192, 1)  # begin and middle: one message starts in the block
    assert scan_counting(term, pad_at, T) == (pad_at + 1024, 0)
