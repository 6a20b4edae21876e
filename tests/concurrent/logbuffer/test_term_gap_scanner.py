"""TermGapScanner (docs/logbuffer.md section 7): the first gap after the rebuild offset, Aeron's way, and (beyond
Aeron) every gap below the limit; both agree with a pure-Python reference on random layouts."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from driver.concurrent.atomic_buffer import AtomicBuffer, FrameBatch
from driver.concurrent.logbuffer.term_gap_scanner import scan_for_gap, scan_for_gaps
from driver.protocol.frames import DATA_HEADER, HDR_TYPE_DATA, HDR_TYPE_PAD
from driver.util.bit_util import align

T = 64 * 1024
TERM_ID = 9


@pytest.fixture
def term() -> Iterator[AtomicBuffer]:
    buffer = AtomicBuffer(bytearray(T))
    yield buffer
    buffer.close()


def put(term: AtomicBuffer, offset: int, frame_length: int, frame_type: int = HDR_TYPE_DATA) -> int:
    DATA_HEADER.pack_into(term.view, offset, frame_length, 0, 0xC0, frame_type, offset, 1, 2, TERM_ID, 0)
    if frame_type == HDR_TYPE_DATA and frame_length > 32:
        term.put_bytes(offset + 32, b"\x01" * (frame_length - 32))
    return offset + align(frame_length, 32)


def reference_scan_for_gap(term: AtomicBuffer, offset: int, limit: int) -> tuple[int, int]:
    """Aeron's TermGapScanner.scanForGap, line for line (with a guarded first read)."""
    while offset < limit:
        frame_length = term.get_int32(offset)
        if frame_length <= 0:
            break
        offset += align(frame_length, 32)
    gap_begin = offset
    if offset < limit:
        last = limit - 32
        while offset < last:
            offset += 32
            if term.get_int32(offset) != 0:
                offset -= 32
                break
        return gap_begin, offset - gap_begin + 32
    return gap_begin, 0


def reference_scan_for_gaps(term: AtomicBuffer, offset: int, limit: int, max_gaps: int) -> tuple[int, list]:
    rebuild, length = reference_scan_for_gap(term, offset, limit)
    gaps = []
    offset = rebuild
    while length and len(gaps) < max_gaps:
        gaps.append((offset, length))
        offset, length = reference_scan_for_gap(term, offset + length, limit)
    return rebuild, gaps


def test_no_gap_when_contiguous_up_to_the_limit(term: AtomicBuffer) -> None:
    end = put(term, put(term, 0, 100), 200)
    assert scan_for_gap(term, TERM_ID, 0, end) == (end, end, 0)
    assert scan_for_gaps(term, 0, end, 16) == (end, [])


def test_first_gap_runs_to_the_next_frame(term: AtomicBuffer) -> None:
    put(term, 0, 64)
    put(term, 160, 64)  # hole [64, 160)
    assert scan_for_gap(term, TERM_ID, 0, 224) == (64, 64, 96)


def test_gap_at_the_limit_runs_to_the_limit(term: AtomicBuffer) -> None:
    put(term, 0, 64)
    assert scan_for_gap(term, TERM_ID, 0, 256) == (64, 64, 192)
    assert scan_for_gap(term, TERM_ID, 0, T) == (64, 64, T - 64)


def test_observed_java_hole(term: AtomicBuffer) -> None:
    """docs/wire.md section 9: a 96-byte hole at 160 is NAKed as (160, 96)."""
    offset = 0
    for _ in range(5):
        offset = put(term, offset, 32)
    put(term, 256, 160)
    assert scan_for_gap(term, TERM_ID, 0, 416) == (160, 160, 96)


def test_padding_is_stepped_over(term: AtomicBuffer) -> None:
    put(term, 0, 64)
    put(term, 64, T - 64, HDR_TYPE_PAD)
    assert scan_for_gap(term, TERM_ID, 0, T) == (T, T, 0)


def test_every_gap_is_reported(term: AtomicBuffer) -> None:
    put(term, 0, 64)
    put(term, 128, 64)
    put(term, 320, 100)
    put(term, 1024, 32)
    rebuild, gaps = scan_for_gaps(term, 0, 2048, 16)
    assert rebuild == 64
    assert gaps == [(64, 64), (192, 128), (448, 576), (1056, 992)]
    assert scan_for_gaps(term, 0, 2048, 2) == (64, [(64, 64), (192, 128)])
    assert scan_for_gaps(term, 64, 2048, 16)[1] == gaps  # from the gap itself
    assert scan_for_gaps(term, 0, 200, 16) == (64, [(64, 64), (192, 32)])  # limit inside a gap


def test_own_batch_for_many_gaps(term: AtomicBuffer) -> None:
    for offset in range(0, 200 * 64, 64):
        put(term, offset, 32)
    rebuild, gaps = scan_for_gaps(term, 0, 200 * 64, 500, FrameBatch(500))
    assert rebuild == 32
    assert len(gaps) == 200
    assert gaps[0] == (32, 32)


def test_rebuild_offset_must_be_a_frame_offset(term: AtomicBuffer) -> None:
    with pytest.raises(ValueError):
        scan_for_gap(term, TERM_ID, 16, 100)
    with pytest.raises(ValueError):
        scan_for_gaps(term, T + 32, T, 4)


@settings(max_examples=300, deadline=None)
@given(
    frames=st.lists(st.tuples(st.integers(1, 400), st.booleans()), min_size=1, max_size=80),
    start_index=st.integers(0, 80),
    limit_delta=st.integers(-600, 600),
    max_gaps=st.integers(1, 40),
)
def test_native_scans_agree_with_the_reference(frames, start_index, limit_delta, max_gaps) -> None:
    term = AtomicBuffer(bytearray(T))
    offset = 0
    offsets = [0]
    for payload, present in frames:
        frame_length = payload + 32
        if present:
            put(term, offset, frame_length)
        offset += align(frame_length, 32)
        offsets.append(offset)
    rebuild = offsets[min(start_index, len(offsets) - 1)]
    limit = max(rebuild, min(T, offset + limit_delta))
    if limit == rebuild:
        limit = min(T, rebuild + 32)

    expected_gap = reference_scan_for_gap(term, rebuild, limit)
    assert scan_for_gap(term, TERM_ID, rebuild, limit) == (expected_gap[0], *expected_gap)
    assert scan_for_gaps(term, rebuild, limit, max_gaps) == reference_scan_for_gaps(
        term, rebuild, limit, max_gaps
    )
    term.close()
