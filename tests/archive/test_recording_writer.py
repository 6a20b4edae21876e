"""RecordingWriter's segments reserved ahead (docs/archive.md section 15): the next segment file is reserved on a
background thread under a staged name half way through the current one, renamed into place at the roll-over, and
never left behind as a segment file that recovery could mistake for the last one."""

from __future__ import annotations

import struct
from pathlib import Path

from driver.archive.recording_writer import RecordingWriter
from driver.archive.segment_file import (
    SegmentReserver,
    recover_stop_position,
    remove_staged_segments,
    segment_path,
    staged_segment_path,
)
from driver.concurrent.atomic_buffer import AtomicBuffer

TERM_LENGTH = 64 * 1024
FRAME = 4096


def frames_term() -> AtomicBuffer:
    term = AtomicBuffer(bytearray(TERM_LENGTH))
    for offset in range(0, TERM_LENGTH, FRAME):
        header = struct.pack("<iBBHiiiiq", FRAME, 0, 0xC0, 1, offset, 1, 2, 5, 0)
        term.view[offset : offset + FRAME] = header + bytes([offset // FRAME]) * (FRAME - len(header))
    return term


def write(writer: RecordingWriter, term: AtomicBuffer, start: int, end: int) -> None:
    for offset in range(start, end, FRAME):
        writer.on_block(term, offset % TERM_LENGTH, FRAME, 1, 5)


def test_the_next_segment_is_reserved_ahead_and_renamed_at_the_roll_over(tmp_path: Path) -> None:
    reserver = SegmentReserver()
    writer = RecordingWriter(tmp_path, 7, 0, TERM_LENGTH, TERM_LENGTH, reserver=reserver)
    term = frames_term()
    try:
        writer.init(0)
        write(writer, term, 0, TERM_LENGTH // 2)
        assert writer._next is not None
        writer._next.result(10)
        staged = staged_segment_path(segment_path(tmp_path, 7, 1))
        assert staged.stat().st_size == TERM_LENGTH and not segment_path(tmp_path, 7, 1).exists()
        write(writer, term, TERM_LENGTH // 2, TERM_LENGTH + FRAME)
        assert not staged.exists()
        second = segment_path(tmp_path, 7, 1).read_bytes()
        assert second[:FRAME] == term.view[:FRAME] and second[FRAME:] == bytes(TERM_LENGTH - FRAME)
        assert segment_path(tmp_path, 7, 0).read_bytes() == bytes(term.view)
        assert recover_stop_position(tmp_path, 7, 0, TERM_LENGTH, TERM_LENGTH) == TERM_LENGTH + FRAME
    finally:
        writer.close()
        writer.discard_reserved()
        reserver.close()
        term.close()


def test_a_stop_before_the_next_segment_leaves_only_the_segments_written(tmp_path: Path) -> None:
    reserver = SegmentReserver()
    writer = RecordingWriter(tmp_path, 3, 0, TERM_LENGTH, TERM_LENGTH, reserver=reserver)
    term = frames_term()
    writer.init(0)
    write(writer, term, 0, TERM_LENGTH * 3 // 4)
    writer.close()
    writer.discard_reserved()
    reserver.close()
    term.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["3-0.rec"]
    assert recover_stop_position(tmp_path, 3, 0, TERM_LENGTH, TERM_LENGTH) == TERM_LENGTH * 3 // 4


def test_staged_segments_a_crash_left_are_removed_at_start_up(tmp_path: Path) -> None:
    """A kill between the reservation and the roll-over leaves a staged file: recovery ignores it (the last
    segment is still the one written) and start-up removes it."""
    term = frames_term()
    writer = RecordingWriter(tmp_path, 4, 0, TERM_LENGTH, TERM_LENGTH)
    writer.init(0)
    write(writer, term, 0, TERM_LENGTH // 2)
    writer.close()
    term.close()
    staged = staged_segment_path(segment_path(tmp_path, 4, 1))
    staged.write_bytes(bytes(TERM_LENGTH))
    assert recover_stop_position(tmp_path, 4, 0, TERM_LENGTH, TERM_LENGTH) == TERM_LENGTH // 2
    assert remove_staged_segments(tmp_path) == [staged.name]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["4-0.rec"]
