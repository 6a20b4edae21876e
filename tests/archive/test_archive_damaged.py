"""A damaged archive directory at start-up (docs/archive.md section 15): a catalog entry with a bad descriptor
length or invalid strings, a missing or short segment file, garbage after the last frame of a recording left
without a stop position. Each is reported by name (log and "Archive errors"), nothing crashes, and the rest of
the archive records, lists and replays."""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any

from driver.archive.catalog import (
    CATALOG_FILE_NAME,
    DESCRIPTOR_LENGTH_OFFSET,
    DESCRIPTOR_OFFSET,
    Catalog,
    entry_offset,
)
from driver.archive.codecs import (
    ControlResponse,
    ControlResponseCode,
    ListRecordingsRequest,
    RecordingDescriptor,
    ReplayRequest,
    codec,
)
from driver.archive.segment_file import segment_indexes, segment_path
from driver.util.bit_util import to_int32
from tests.archive.test_archive_server import message, record
from tests.support import wait_for
from tests.support.archive_env import Env, archive_env

ENTRY = 1024
BLOCK = codec(RecordingDescriptor).block_length


def replayed(env: Env, recording_id: int, stream_id: int, count: int) -> list[bytes]:
    response = env.control.request(ReplayRequest, recording_id, -1, -1, stream_id, "aeron:ipc")
    assert response.code == ControlResponseCode.OK, response
    subscription = env.aeron.add_subscription(
        f"aeron:ipc?session-id={to_int32(response.relevant_id)}", stream_id
    )
    received: list[bytes] = []

    def on_fragment(buffer: Any, offset: int, size: int, _header: Any) -> None:
        received.append(bytes(buffer.view[offset : offset + size]))

    wait_for(lambda: subscription.poll(on_fragment, 100) >= 0 and len(received) >= count, 10, "the replay")
    subscription.close()
    return received


def test_damage_is_reported_by_name_and_the_rest_works(tmp_path: Path) -> None:
    archive_dir = tmp_path / "archive"
    with archive_env(tmp_path, archive_dir) as env:
        ids = [record(env, "aeron:ipc", 8000 + i, 20, 300)[0] for i in range(6)]
    assert ids == list(range(6))
    catalog_path = archive_dir / CATALOG_FILE_NAME
    fd = os.open(catalog_path, os.O_RDWR)
    try:
        os.pwrite(fd, struct.pack("<i", 5), entry_offset(0, ENTRY) + DESCRIPTOR_LENGTH_OFFSET)  # bad length
        os.pwrite(fd, b"\xff\xfe", entry_offset(1, ENTRY) + DESCRIPTOR_OFFSET + BLOCK + 4)  # not ASCII
    finally:
        os.close(fd)
    os.unlink(segment_path(archive_dir, 2, 0))  # missing
    os.truncate(segment_path(archive_dir, 3, 0), 1000)  # short
    with Catalog(archive_dir) as catalog:  # as if the archive had died while recording 4
        stop4 = catalog.stop_position(4)
        catalog.recording_stopped(4, -1)
    with open(segment_path(archive_dir, 4, 0), "r+b") as f:
        f.seek(stop4)
        f.write(b"\xff" * 40)  # garbage after the last frame

    errors: list[str] = []
    with archive_env(tmp_path, archive_dir) as env:
        errors = list(env.archive.errors)
        text = "\n".join(errors)
        assert "catalog entry of recording 0 is damaged: recording 0: descriptor length 5" in text
        assert "catalog entry of recording 1 is damaged" in text and "not US-ASCII" in text
        assert f"recording 2: segment file {segment_path(archive_dir, 2, 0)} is missing" in text
        assert f"recording 3: segment file {segment_path(archive_dir, 3, 0)} is 1000 bytes" in text
        assert (
            f"recording 4: {segment_path(archive_dir, 4, 0)} holds bytes that are not a whole frame" in text
        )
        assert len(errors) == 5, errors
        assert env.archive.conductor.error_count == 5
        # Recording 4 recovered up to its last whole frame; 5 is untouched; both replay intact.
        assert env.archive.catalog.stop_position(4) == stop4
        assert replayed(env, 4, 8104, 20) == [message(i, 300) for i in range(20)]
        assert replayed(env, 5, 8105, 20) == [message(i, 300) for i in range(20)]
        # Listing skips the damaged entries; a replay of a missing segment is an ERROR, not a crash.
        listed = env.control.descriptors(ListRecordingsRequest, 0, 4, count=4)
        assert [m.recording_id for m in listed if isinstance(m, RecordingDescriptor)] == [2, 3, 4, 5]
        correlation_id = env.control.next_id()
        env.control.send(
            ReplayRequest(env.control.control_session_id, correlation_id, 2, -1, -1, 8102, "aeron:ipc")
        )
        responses = [env.control.response(correlation_id)]
        if responses[0].code == ControlResponseCode.OK:
            responses.append(env.control.response(correlation_id))
        assert isinstance(responses[-1], ControlResponse) and responses[-1].code == ControlResponseCode.ERROR
        # And it records: a new recording gets the next id.
        assert record(env, "aeron:ipc", 8106, 5, 100)[0] == 6
        assert segment_indexes(archive_dir, 6) == [0]
