"""TermReader: committed frames delivered in order, padding stepped over, stops at uncommitted frames; the
native walk must agree with a frame-by-frame Python walk (the pre-native reader) on any term layout."""

from __future__ import annotations

import struct
import threading
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.logbuffer import term_reader
from driver.concurrent.logbuffer.header import Header
from driver.concurrent.logbuffer.term_reader import TermReader
from driver.protocol.frames import DATA_HEADER, HDR_TYPE_DATA, HDR_TYPE_PAD, HEADER_LENGTH, TYPE_OFFSET
from driver.util.bit_util import align

T = 64 * 1024
_U16 = struct.Struct("<H")


def python_read(
    term: AtomicBuffer, term_offset: int, handler, fragments_limit: int, header: Header
) -> tuple[int, int]:
    """Aeron's TermReader loop in Python: one acquire load per frame."""
    header.buffer = term
    fragments_read = 0
    offset = term_offset
    while fragments_read < fragments_limit and offset < term.capacity:
        frame_length = term.get_int32_acquire(offset)
        if frame_length <= 0:
            break
        frame_offset = offset
        offset += align(frame_length, 32)
        if _U16.unpack_from(term.view, frame_offset + TYPE_OFFSET)[0] != HDR_TYPE_PAD:
            header.offset = frame_offset
            handler(term, frame_offset + HEADER_LENGTH, frame_length - HEADER_LENGTH, header)
            fragments_read += 1
    return fragments_read, offset


@pytest.fixture
def term() -> Iterator[AtomicBuffer]:
    buffer = AtomicBuffer(bytearray(T))
    yield buffer
    buffer.close()


def put(
    term: AtomicBuffer, offset: int, frame_length: int, frame_type: int = HDR_TYPE_DATA, fill: int = 0
) -> int:
    """Write a frame (a negative length is a frame not yet committed); returns the next frame's offset."""
    DATA_HEADER.pack_into(term.view, offset, frame_length, 0, 0xC0, frame_type, offset, 1, 2, 3, 0)
    length = abs(frame_length)
    if frame_type == HDR_TYPE_DATA and length > 32:
        term.put_bytes(offset + 32, bytes([fill]) * (length - 32))
    return offset + align(length, 32)


class Collector:
    def __init__(self) -> None:
        self.fragments: list[tuple[int, int, bytes, int]] = []

    def __call__(self, buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
        self.fragments.append((offset, length, buffer.get_bytes(offset, length), header.position))


def test_reads_data_skips_padding_and_stops_at_the_first_empty_frame(term: AtomicBuffer) -> None:
    offset = put(term, 0, 40, fill=1)
    offset = put(term, offset, 64, HDR_TYPE_PAD)
    offset = put(term, offset, 100, fill=2)
    got = Collector()
    assert TermReader().read(term, 0, got, 10, Header(3, 16)) == (2, offset)
    assert got.fragments == [(32, 8, b"\x01" * 8, 64), (160, 68, b"\x02" * 68, 256)]


def test_stops_in_front_of_an_uncommitted_frame(term: AtomicBuffer) -> None:
    offset = put(term, 0, 33)
    blocked = offset
    offset = put(term, offset, -64)
    put(term, offset, 64)  # committed, but behind the uncommitted one
    got = Collector()
    assert TermReader().read(term, 0, got, 10, Header(3, 16)) == (1, blocked)
    assert TermReader().read(term, blocked, got, 10, Header(3, 16)) == (0, blocked)


def test_fragment_limit_leaves_trailing_padding_for_the_next_poll(term: AtomicBuffer) -> None:
    offset = put(term, 0, 64)
    padding_at = offset
    offset = put(term, offset, 96, HDR_TYPE_PAD)
    put(term, offset, 64)
    got = Collector()
    assert TermReader().read(term, 0, got, 1, Header(3, 16)) == (
        1,
        padding_at,
    )  # as Aeron: limit checked first
    assert TermReader().read(term, padding_at, got, 1, Header(3, 16)) == (1, offset + 64)


def test_padding_to_the_end_of_the_term_reaches_the_term_length(term: AtomicBuffer) -> None:
    put(term, 0, T - 128, HDR_TYPE_PAD)
    put(term, T - 128, 128)
    got = Collector()
    assert TermReader().read(term, 0, got, 10, Header(3, 16)) == (1, T)
    assert TermReader().read(term, T, got, 10, Header(3, 16)) == (0, T)
    assert got.fragments[0][3] == 1 << 16


def test_polls_larger_than_the_batch_span_several_scans(term: AtomicBuffer) -> None:
    offset = 0
    for i in range(50):
        offset = put(term, offset, 32 + i, fill=i)
    got = Collector()
    reader = TermReader(batch_capacity=7)
    assert reader.read(term, 0, got, 20, Header(3, 16)) == (20, sum(align(32 + i, 32) for i in range(20)))
    assert reader.read(term, got.fragments[-1][0] - 32 + 64, got, 100, Header(3, 16))[0] == 30
    assert [f[1] for f in got.fragments] == list(range(50))


def test_handler_errors_without_an_error_handler_propagate(term: AtomicBuffer) -> None:
    put(term, put(term, 0, 64), 64)

    def handler(buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
        raise KeyError("boom")

    with pytest.raises(KeyError):
        TermReader().read(term, 0, handler, 10, Header(3, 16))


def test_handler_errors_go_to_the_error_handler_and_the_frame_counts_as_consumed(term: AtomicBuffer) -> None:
    offset = put(term, 0, 64)
    offset = put(term, offset, 80)
    put(term, offset, 64)
    seen: list[int] = []
    errors: list[Exception] = []

    def handler(buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
        seen.append(offset)
        if len(seen) == 2:
            raise ValueError("bad message")

    result = TermReader().read(term, 0, handler, 10, Header(3, 16), errors.append)
    assert result == (1, 64 + 96)  # the failing frame is consumed, not counted as read (as Aeron)
    assert [str(e) for e in errors] == ["bad message"]


def test_handlers_may_read_re_entrantly(term: AtomicBuffer) -> None:
    offset = 0
    for _ in range(5):
        offset = put(term, offset, 64)
    other = AtomicBuffer(bytearray(T))
    for i in range(3):
        put(other, i * 64, 64)
    outer: list[int] = []
    inner = Collector()

    def handler(buffer: AtomicBuffer, frame_offset: int, length: int, header: Header) -> None:
        outer.append(frame_offset)
        term_reader.read(other, 0, inner, 10, Header(0, 16))

    assert term_reader.read(term, 0, handler, 10, Header(3, 16)) == (5, 320)
    assert outer == [32, 96, 160, 224, 288]
    assert len(inner.fragments) == 15
    other.close()


def test_each_thread_gets_its_own_scratch(term: AtomicBuffer) -> None:
    offset = 0
    for i in range(200):
        offset = put(term, offset, 32 + (i % 40), fill=i % 256)
    results: list[list] = []

    def run() -> None:
        got = Collector()
        for _ in range(50):
            got.fragments.clear()
            term_reader.read(term, 0, got, 1000, Header(3, 16))
        results.append(got.fragments)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(results) == 4 and all(r == results[0] for r in results) and len(results[0]) == 200


frame_kinds = st.one_of(
    st.tuples(st.just("data"), st.integers(32, 2000)),
    st.tuples(st.just("pad"), st.integers(32, 3000)),
    st.tuples(st.just("uncommitted"), st.integers(32, 500)),
)


@settings(max_examples=200, deadline=None)
@given(
    layout=st.lists(frame_kinds, max_size=60),
    to_the_end=st.booleans(),
    limit=st.integers(1, 30),
    batch=st.integers(1, 16),
    data=st.data(),
)
def test_native_walk_agrees_with_the_python_walk(
    layout: list[tuple[str, int]], to_the_end: bool, limit: int, batch: int, data: st.DataObject
) -> None:
    term = AtomicBuffer(bytearray(T))
    try:
        offset = 0
        boundaries = [0]
        for i, (kind, length) in enumerate(layout):
            if offset + align(length, 32) > T:
                break
            if kind == "data":
                offset = put(term, offset, length, fill=i % 256)
            elif kind == "pad":
                offset = put(term, offset, length, HDR_TYPE_PAD)
            else:
                offset = put(term, offset, -length)
            boundaries.append(offset)
        if to_the_end and offset < T:
            put(term, offset, T - offset, HDR_TYPE_PAD)
            boundaries.append(T)
        start = data.draw(st.sampled_from(boundaries))
        native, reference = Collector(), Collector()
        header = Header(5, 16)
        reader = TermReader(batch_capacity=batch)
        offset_native, offset_reference = start, start
        for _ in range(len(layout) + 2):
            result = reader.read(term, offset_native, native, limit, header)
            expected = python_read(term, offset_reference, reference, limit, header)
            assert result == expected
            offset_native = offset_reference = result[1]
        assert native.fragments == reference.fragments
    finally:
        term.close()
