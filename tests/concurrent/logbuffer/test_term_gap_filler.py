"""TermGapFiller (docs/logbuffer.md section 7): a gap still all zero becomes a committed PAD frame carrying the
default header, the gap's term offset and term id; a gap with anything in it is left alone."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.logbuffer import log_buffer_descriptor as lbd
from driver.concurrent.logbuffer.term_gap_filler import try_fill_gap
from driver.concurrent.logbuffer.term_gap_scanner import scan_for_gap
from driver.protocol.frames import DATA_HEADER, HDR_TYPE_DATA, HDR_TYPE_PAD, create_default_header

T = 64 * 1024


@pytest.fixture
def buffers() -> Iterator[tuple[AtomicBuffer, AtomicBuffer]]:
    meta = AtomicBuffer(bytearray(lbd.LOG_META_DATA_LENGTH))
    lbd.store_default_frame_header(meta, create_default_header(42, 7, 100))
    term = AtomicBuffer(bytearray(T))
    yield meta, term
    term.close()
    meta.close()


def test_fills_an_empty_gap_with_padding(buffers) -> None:
    meta, term = buffers
    DATA_HEADER.pack_into(term.view, 0, 64, 0, 0xC0, HDR_TYPE_DATA, 0, 42, 7, 103, 0)
    DATA_HEADER.pack_into(term.view, 256, 64, 0, 0xC0, HDR_TYPE_DATA, 256, 42, 7, 103, 0)
    assert try_fill_gap(meta, term, 103, 64, 192)
    assert DATA_HEADER.unpack_from(term.view, 64) == (192, 0, 0xC0, HDR_TYPE_PAD, 64, 42, 7, 103, 0)
    assert term.get_bytes(96, 160) == bytes(160)
    assert scan_for_gap(term, 103, 0, 320) == (320, 320, 0)


def test_leaves_a_gap_that_is_no_longer_empty(buffers) -> None:
    meta, term = buffers
    DATA_HEADER.pack_into(term.view, 128, 64, 0, 0xC0, HDR_TYPE_DATA, 128, 42, 7, 103, 0)
    before = term.get_bytes(0, T)
    assert not try_fill_gap(meta, term, 103, 64, 192)
    assert term.get_bytes(0, T) == before


def test_template_can_be_passed_and_bad_gaps_are_refused(buffers) -> None:
    meta, term = buffers
    template = lbd.default_frame_header(meta)
    assert not try_fill_gap(meta, term, 103, T - 32, 64, template)  # past the term
    assert not try_fill_gap(meta, term, 103, 16, 64, template)
    assert not try_fill_gap(meta, term, 103, 0, 0, template)
    assert try_fill_gap(meta, term, 103, T - 64, 64, template)
    assert term.get_int32(T - 64) == 64
