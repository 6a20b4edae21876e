"""Segment file naming, position math and crash recovery on real files (docs/archive.md sections 7 and 12)."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from driver.archive.catalog import Catalog
from driver.archive.segment_file import (
    SegmentPosition,
    create_segment_file,
    lookup_index_1_15_1,
    parse_segment_file_name,
    recover_stop_position,
    scan_stop_offset,
    segment_base_position,
    segment_file_name,
    segment_indexes,
    segment_path,
    segment_position,
    validate_segment_length,
)

TERM = 64 * 1024


def test_names() -> None:
    assert segment_file_name(12, 3) == "12-3.rec"
    assert parse_segment_file_name("12-3.rec") == (12, 3)
    for other in ("12-3.rec.tmp", "12-.rec", "a-1.rec", "archive.catalog", "1-2-3.rec"):
        assert parse_segment_file_name(other) is None


def test_segment_length_must_be_a_power_of_two_in_range() -> None:
    validate_segment_length(128 * 1024 * 1024)
    with pytest.raises(ValueError, match="not a power of 2"):
        validate_segment_length(100_000)
    with pytest.raises(ValueError, match="not in valid range"):
        validate_segment_length(32 * 1024)


def test_aligned_start_agrees_with_1_15_1_lookup() -> None:
    segment = 4 * TERM
    for position in (2 * TERM, 2 * TERM + 32, 6 * TERM - 32, 6 * TERM, 11 * TERM + 4096):
        index, offset = segment_position(2 * TERM, position, TERM, segment)
        assert index == lookup_index_1_15_1(2 * TERM, position, segment)
        assert offset == (position - 2 * TERM) % segment


def test_late_join_layout_is_from_the_term_base() -> None:
    """The example of docs/archive.md section 12: start 10560, frame at 66592 lives in segment 1 at offset 1056,
    where 1.15.1's lookup looks in segment 0."""
    assert segment_position(10560, 10560, TERM, TERM) == SegmentPosition(0, 10560)
    assert segment_position(10560, 66592, TERM, TERM) == SegmentPosition(1, 1056)
    assert lookup_index_1_15_1(10560, 66592, TERM) == 0
    assert segment_base_position(10560, 3, TERM, TERM) == 3 * TERM
    assert segment_base_position(3 * TERM + 64, 1, TERM, 2 * TERM) == 5 * TERM


def record(archive_dir: Path, recording_id: int, start: int, end: int, frame: int, segment: int) -> int:
    """Writes frame headers from start to end as 1.15.1's writer lays them out: a frame that would cross a term
    end is preceded by a padding frame to it. Returns the start of the last frame."""
    position = last = start
    while position < end:
        term_remaining = TERM - (position & (TERM - 1))
        length, frame_type = (frame, 1) if frame <= term_remaining else (term_remaining, 0)
        index, offset = segment_position(start, position, TERM, segment)
        path = segment_path(archive_dir, recording_id, index)
        if not path.exists():
            create_segment_file(path, segment)
        fd = os.open(path, os.O_RDWR)
        try:
            os.pwrite(fd, struct.pack("<iBBhi", length, 0xC0, 0, frame_type, offset), offset)
        finally:
            os.close(fd)
        last = position
        position += length
    return last


def test_files_are_presized_sparse(tmp_path: Path) -> None:
    record(tmp_path, 4, 0, 96, 96, TERM)
    path = segment_path(tmp_path, 4, 0)
    assert path.stat().st_size == TERM
    assert path.stat().st_blocks * 512 < TERM
    assert segment_indexes(tmp_path, 4) == [0]
    assert segment_indexes(tmp_path, 40) == []


@pytest.mark.parametrize(("start", "frame"), [(0, 1024), (10560, 1024), (2 * TERM + 1056, 96), (10560, 4000)])
def test_recovery_finds_the_end_of_the_last_whole_frame(tmp_path: Path, start: int, frame: int) -> None:
    end = start + 37 * frame + 3 * TERM
    last = record(tmp_path, 0, start, end, frame, TERM)
    end = last + frame
    assert recover_stop_position(tmp_path, 0, start, TERM, TERM) == _reference_stop(last, end)


def _reference_stop(last_frame_start: int, end: int) -> int:
    """A last frame whose first and last bytes are on different 4 KiB pages may be torn: recovery drops it."""
    return end if last_frame_start // 4096 == (end - 1) // 4096 else last_frame_start


def test_recovery_within_the_first_segment_and_without_files(tmp_path: Path) -> None:
    record(tmp_path, 1, 10560, 10560 + 5 * 96, 96, TERM)
    assert recover_stop_position(tmp_path, 1, 10560, TERM, TERM) == _reference_stop(10560 + 384, 10560 + 480)
    assert recover_stop_position(tmp_path, 2, 10560, TERM, TERM) == 10560
    create_segment_file(segment_path(tmp_path, 3, 0), TERM)
    assert recover_stop_position(tmp_path, 3, 10560, TERM, TERM) == 10560
    assert scan_stop_offset(segment_path(tmp_path, 3, 0), 0, TERM) == 0


def test_catalog_recovery_sets_stop_and_timestamp(tmp_path: Path) -> None:
    with Catalog(tmp_path, max_entries=4) as catalog:
        for _ in range(2):
            catalog.add_new_recording(
                start_position=0, start_timestamp=1, initial_term_id=0, segment_file_length=TERM,
                term_buffer_length=TERM, mtu_length=1408, session_id=1, stream_id=2, stripped_channel="aeron:ipc",
                original_channel="aeron:ipc", source_identity="aeron:ipc",
            )  # fmt: skip
        catalog.recording_stopped(1, 64, 2)
    record(tmp_path, 0, 0, TERM + 4096, 1024, TERM)
    with Catalog(tmp_path) as catalog:
        assert catalog.recover(now_ms=99) == [0]
        d = catalog.descriptor(0)
        # The last frame ends exactly on a page boundary: unlike 1.15.1, recovery keeps it.
        assert d is not None and (d.stop_position, d.stop_timestamp) == (TERM + 4096, 99)
        assert catalog.stop_position(1) == 64


def _write_frames(path: Path, frames: list[tuple[int, int]]) -> None:
    """(offset, length) data frames: a header each, the payload bytes 0x5A (never zero)."""
    create_segment_file(path, TERM)
    fd = os.open(path, os.O_RDWR)
    try:
        for offset, length in frames:
            header = struct.pack("<iBBhi", length, 0, 0xC0, 1, offset)
            os.pwrite(fd, header + bytes([0x5A]) * (length - len(header)), offset)
    finally:
        os.close(fd)


@pytest.mark.parametrize(
    ("frames", "expected"),
    [
        ([(0, 2048), (2048, 2048)], 4096),  # the last frame ends exactly on the page boundary: kept
        ([(0, 2048), (2048, 1024)], 3072),  # ends before it
        ([(0, 2048), (2048, 2560)], 2048),  # crosses it: its tail may be torn, dropped
        ([(0, 4096), (4096, 9000 - 9000 % 32)], 4096),  # a frame longer than a page is never the trusted last
        ([(0, 4096), (4096, 4096)], 8192),  # a whole page, ending on the next boundary
        ([(3968, 128)], 4096),  # starts late in a page, ends on the boundary
    ],
)
def test_recovery_at_a_page_boundary(tmp_path: Path, frames: list[tuple[int, int]], expected: int) -> None:
    path = segment_path(tmp_path, 0, 0)
    _write_frames(path, frames)
    assert scan_stop_offset(path, frames[0][0], TERM) == expected


def test_a_torn_write_loses_only_the_frame_it_cut(tmp_path: Path) -> None:
    """A block of frames whose write stopped at a page boundary: the frame across it has its header but zeros
    after the boundary; every frame before it is recovered, it is not."""
    path = segment_path(tmp_path, 0, 0)
    _write_frames(path, [(i * 1024, 1024) for i in range(7)] + [(7 * 1024, 1536)])
    fd = os.open(path, os.O_RDWR)
    try:
        os.pwrite(fd, bytes(TERM - 8192), 8192)  # the page after the boundary never reached the file
    finally:
        os.close(fd)
    assert scan_stop_offset(path, 0, TERM) == 7 * 1024


def test_a_length_past_the_file_end_ends_the_scan(tmp_path: Path) -> None:
    path = segment_path(tmp_path, 0, 0)
    _write_frames(path, [(0, 1024)])
    fd = os.open(path, os.O_RDWR)
    try:
        os.pwrite(fd, struct.pack("<i", 1 << 30), 1024)  # garbage after the last frame
    finally:
        os.close(fd)
    assert scan_stop_offset(path, 0, TERM) == 1024
