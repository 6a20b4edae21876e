"""Header flyweight: the fields of the frame being delivered, and the position after it."""

from __future__ import annotations

import pytest

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.logbuffer.header import Header
from driver.protocol.frames import DATA_HEADER, HDR_TYPE_DATA

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1


@pytest.fixture
def term() -> AtomicBuffer:
    buffer = AtomicBuffer(bytearray(64 * 1024))
    yield buffer
    buffer.close()


def put_frame(
    term: AtomicBuffer, offset: int, frame_length: int, flags: int, term_id: int, **kw: int
) -> None:
    DATA_HEADER.pack_into(
        term.view,
        offset,
        frame_length,
        0,
        flags,
        kw.get("type", HDR_TYPE_DATA),
        kw.get("term_offset", offset),
        kw.get("session_id", 77),
        kw.get("stream_id", 1001),
        term_id,
        kw.get("reserved_value", 0),
    )


def test_fields_of_the_frame_it_points_at(term: AtomicBuffer) -> None:
    put_frame(term, 0, 40, 0xC0, 9)
    put_frame(term, 64, 1408, 0x80, 9, session_id=-3, stream_id=-4, reserved_value=-(2**62))
    header = Header(initial_term_id=7, position_bits_to_shift=16, context="ctx")
    assert header.context == "ctx"
    assert "unset" in repr(header)
    header.buffer = term
    header.offset = 64
    assert header.frame_length == 1408
    assert header.flags == 0x80  # unsigned, unlike Java's byte
    assert header.type == HDR_TYPE_DATA
    assert header.term_offset == 64
    assert header.session_id == -3
    assert header.stream_id == -4
    assert header.term_id == 9
    assert header.reserved_value == -(2**62)
    assert header.position == (2 << 16) + 64 + 1408
    assert "flags=0x80" in repr(header)
    header.offset = 0
    assert header.frame_length == 40
    assert header.position == (2 << 16) + 64  # end of the frame, aligned to 32


def test_position_with_term_ids_wrapping_past_the_int_range(term: AtomicBuffer) -> None:
    put_frame(term, 1024, 33, 0xC0, INT32_MIN + 1)
    header = Header(INT32_MAX, 16)
    header.buffer = term
    header.offset = 1024
    assert header.position == (2 << 16) + 1024 + 64


def test_position_with_negative_initial_term_id(term: AtomicBuffer) -> None:
    put_frame(term, 65536 - 64, 64, 0x40, -1)
    header = Header(-6, 16)
    header.buffer = term
    header.offset = 65536 - 64
    assert header.position == 6 << 16  # the frame ends the term: the position is the next term's start
