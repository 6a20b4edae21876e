"""A full file system under the archive (docs/archive.md section 15): a recording on a small tmpfs stops with an
error to the control session that started it, its stop position is what the segment files hold, the archive
keeps serving, and the recording replays intact up to the stop."""

from __future__ import annotations

import errno
import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from driver.archive.codecs import (
    ControlResponseCode,
    ListRecordingRequest,
    RecordingDescriptor,
    ReplayRequest,
    SourceLocation,
    StartRecordingRequest,
)
from driver.archive.segment_file import recover_stop_position, segment_indexes
from driver.util.bit_util import to_int32
from tests.support import wait_for
from tests.support.archive_env import TERM_LENGTH, Env, archive_env
from tests.support.tmpfs import mounted_tmpfs

SEGMENT_LENGTH = 64 * 1024
PAYLOAD = 992  # frames of 1024 bytes: 64 to a term, no padding


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    with mounted_tmpfs(tmp_path / "tmpfs", "1m") as mount_point:
        yield mount_point


@pytest.fixture
def env(tmp_path: Path, small_tmpfs: Path) -> Iterator[Env]:
    with archive_env(tmp_path, small_tmpfs / "archive", segment_file_length=SEGMENT_LENGTH) as environment:
        yield environment


def message(i: int) -> bytes:
    return struct.pack("<q", i) + bytes([i & 0x7F]) * (PAYLOAD - 8)


def test_a_full_disk_stops_the_recording_at_what_is_on_disk(env: Env, small_tmpfs: Path) -> None:
    archive_dir = small_tmpfs / "archive"
    control, catalog = env.control, env.archive.catalog
    publication = env.aeron.add_exclusive_publication("aeron:ipc", 5001)
    correlation_id = control.next_id()
    control.send(
        StartRecordingRequest(
            control.control_session_id, correlation_id, 5001, SourceLocation.LOCAL, "aeron:ipc"
        )
    )
    assert control.response(correlation_id).code == ControlResponseCode.OK
    wait_for(lambda: catalog.count_entries == 1, 10, "the recording to start")
    errors_before = env.archive.conductor.error_count

    # Publish until the archive says the recording failed: the disk holds far less than this.
    sent = 0
    error: list[Any] = []

    def failed() -> bool:
        nonlocal sent
        for _ in range(16):
            if publication.offer(message(sent)) > 0:
                sent += 1
        control.poll()
        error.extend(m for m in control.received if getattr(m, "correlation_id", None) == correlation_id)
        return bool(error)

    wait_for(failed, 30, "the recording to fail")
    assert sent < 2_000
    assert error[0].code == ControlResponseCode.ERROR
    assert "No space left on device" in error[0].error_message, error[0]
    assert "cannot create segment file" in error[0].error_message
    assert env.archive.conductor.error_count > errors_before  # counted and logged too

    # The stop position is what the files hold: whole segments, and recovery reads the same from them.
    wait_for(lambda: catalog.stop_position(0) >= 0, 10, "the stop position")
    stop = catalog.stop_position(0)
    indexes = segment_indexes(archive_dir, 0)
    assert stop == len(indexes) * SEGMENT_LENGTH > 0
    assert recover_stop_position(archive_dir, 0, 0, TERM_LENGTH, SEGMENT_LENGTH) == stop
    for index in indexes:  # reserved in full: nothing sparse that a later write could fail on
        st = os.stat(archive_dir / f"0-{index}.rec")
        assert st.st_size == SEGMENT_LENGTH and st.st_blocks * 512 >= SEGMENT_LENGTH
    probe = os.open(archive_dir / "probe", os.O_WRONLY | os.O_CREAT)
    try:  # the disk really is full
        with pytest.raises(OSError) as full:
            os.posix_fallocate(probe, 0, SEGMENT_LENGTH)
        assert full.value.errno == errno.ENOSPC
    finally:
        os.close(probe)
        os.unlink(archive_dir / "probe")

    # Still serving, and the recording replays intact up to the stop.
    listed = control.descriptors(ListRecordingRequest, 0, count=1)
    assert isinstance(listed[0], RecordingDescriptor) and listed[0].stop_position == stop
    count = stop // 1024
    response = control.request(ReplayRequest, 0, 0, stop, 5002, "aeron:ipc")
    assert response.code == ControlResponseCode.OK, response
    subscription = env.aeron.add_subscription(f"aeron:ipc?session-id={to_int32(response.relevant_id)}", 5002)
    received: list[bytes] = []

    def on_fragment(buffer: Any, offset: int, length: int, _header: Any) -> None:
        received.append(bytes(buffer.view[offset : offset + length]))

    wait_for(lambda: subscription.poll(on_fragment, 100) >= 0 and len(received) >= count, 20, "the replay")
    assert received == [message(i) for i in range(count)]
    subscription.close()
    publication.close()
