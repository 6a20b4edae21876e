"""The files 1.15.1's own archive writes (JavaArchiveRecorder.java: a late-starting IPC recording, 64 KiB terms
and segments) read with our catalog, mark file and segment code (docs/archive.md sections 7, 10 and 11)."""

from __future__ import annotations

import os
import shutil
import struct
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from driver.archive.archive_mark_file import ArchiveMarkFile
from driver.archive.catalog import Catalog
from driver.archive.segment_file import (
    lookup_index_1_15_1,
    recover_stop_position,
    segment_indexes,
    segment_path,
    segment_position,
)
from driver.util.bit_util import align
from tests.support.scratch import scratch_dir

pytestmark = pytest.mark.interop

TERM = 64 * 1024
START = 10560
MESSAGES = 300
PAYLOAD = 1000


@pytest.fixture(scope="module")
def recorded(archive_java: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, int]]:
    with scratch_dir(tmp_path_factory, "java-archive") as base:
        archive_dir = base / "archive"
        aeron_dir = f"/dev/shm/aeron-archive-files-{uuid.uuid4().hex[:12]}"
        try:
            result = archive_java.run(
                "JavaArchiveRecorder", archive_dir, aeron_dir, MESSAGES, timeout=90.0, check=True
            )
        finally:
            shutil.rmtree(aeron_dir, ignore_errors=True)
        recording_id, start, stop = map(int, result.stdout.split())
        assert (recording_id, start) == (0, START)
        yield archive_dir, aeron_dir, stop


def test_catalog_and_mark_file(recorded: tuple[Path, str, int]) -> None:
    archive_dir, aeron_dir, stop = recorded
    with Catalog(archive_dir, read_only=True) as catalog:
        assert catalog.count_entries == 1
        d = catalog.descriptor(0)
    assert d is not None
    assert (d.start_position, d.stop_position, d.initial_term_id) == (START, stop, 5)
    assert (d.term_buffer_length, d.segment_file_length, d.stream_id) == (TERM, TERM, 33)
    assert (d.stripped_channel, d.original_channel) == ("aeron:ipc", "aeron:ipc")
    with ArchiveMarkFile.open(archive_dir) as mark_file:
        header = mark_file.header()
    assert (header.version, header.control_stream_id, header.local_control_stream_id) == (0, 12, 11)
    assert (header.events_channel, header.aeron_directory) == ("aeron:ipc", aeron_dir)
    assert header.pid > 0 and header.activity_timestamp >= header.start_timestamp > 0


def test_every_frame_is_where_segment_position_says(recorded: tuple[Path, str, int]) -> None:
    archive_dir, _, stop = recorded
    assert segment_indexes(archive_dir, 0) == list(
        range(segment_position(START, stop - 1, TERM, TERM).index + 1)
    )
    position, messages, misplaced_by_1_15_1_lookup, last = START, 0, 0, START
    while position < stop:
        index, offset = segment_position(START, position, TERM, TERM)
        with open(segment_path(archive_dir, 0, index), "rb") as f:
            header = os.pread(f.fileno(), 32, offset)
            frame_length, _, _, frame_type, term_offset, _, _, term_id = struct.unpack(
                "<iBBHiiii", header[:24]
            )
            assert (term_offset, term_id) == (position & (TERM - 1), 5 + position // TERM)
            if frame_type == 1:
                payload = os.pread(f.fileno(), PAYLOAD, offset + 32)
                assert payload == bytes((messages + i) & 0x7F for i in range(PAYLOAD))
                messages += 1
        misplaced_by_1_15_1_lookup += lookup_index_1_15_1(START, position, TERM) != index
        last = position
        position += align(frame_length, 32)
    assert (position, messages) == (stop, MESSAGES)
    assert misplaced_by_1_15_1_lookup > 0  # the late start: 1.15.1's lookup formula disagrees with its writer
    # Recovery as if the archive had crashed: the last frame, if it crosses a page, is dropped.
    expected = stop if last // 4096 == (stop - 1) // 4096 else last
    assert recover_stop_position(archive_dir, 0, START, TERM, TERM) == expected
