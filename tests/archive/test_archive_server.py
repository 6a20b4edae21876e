"""Our archive on an embedded driver (the archive's agents on the driver's loop), spoken to through the control
protocol (tests/support/archive_control.py): recording, replay, listings and the errors of docs/archive.md
sections 8, 9 and 12. The archive's clock is a ManualClock: connect timeouts are stepped, not slept."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from driver.archive.catalog import NULL_POSITION, Catalog
from driver.archive.codecs import (
    ControlResponse,
    ControlResponseCode,
    ListRecordingsRequest,
    RecordingDescriptor,
    RecordingPositionRequest,
    ReplayRequest,
    SourceLocation,
    StartRecordingRequest,
    StopPositionRequest,
    StopRecordingSubscriptionRequest,
    StopReplayRequest,
)
from driver.util.bit_util import to_int32
from tests.support import wait_for
from tests.support.archive_env import TERM_LENGTH, Env, archive_env

OK = ControlResponseCode.OK
ERROR = ControlResponseCode.ERROR


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    with archive_env(tmp_path) as environment:
        yield environment


def message(i: int, length: int) -> bytes:
    return struct.pack("<q", i) + bytes([i & 0x7F]) * (length - 8)


def publish(publication: Any, first: int, count: int, length: int) -> None:
    for i in range(first, first + count):
        data = message(i, length)
        wait_for(lambda d=data: publication.offer(d) > 0, 10, f"offer of message {i}")


def record(env: Env, channel: str, stream_id: int, count: int, length: int) -> tuple[int, Any]:
    """Record ``count`` messages published on ``channel``; returns (recording id, the stopped publication)."""
    publication = env.aeron.add_exclusive_publication(channel, stream_id)
    catalog = env.archive.catalog
    before = catalog.count_entries
    response = env.control.request(StartRecordingRequest, stream_id, SourceLocation.LOCAL, "aeron:ipc")
    assert response.code == OK, response
    wait_for(lambda: catalog.count_entries > before, 10, "the recording to start")
    recording_id = catalog.count_entries - 1
    publish(publication, 0, count, length)
    target = publication.position
    wait_for(
        lambda: env.control.request(RecordingPositionRequest, recording_id).relevant_id == target,
        10,
        f"recorded up to {target}",
    )
    stop = env.control.request(StopRecordingSubscriptionRequest, response.relevant_id)
    assert stop.code == OK, stop
    wait_for(lambda: catalog.stop_position(recording_id) == target, 10, "the stop position")
    return recording_id, publication


def replay(
    env: Env, recording_id: int, position: int, length: int, stream_id: int, expect: int | None = None
) -> tuple[int, list[int]]:
    """(replaySessionId, sequence numbers received) of a replay on IPC: until its image goes, or until
    ``expect`` messages arrived."""
    response = env.control.request(ReplayRequest, recording_id, position, length, stream_id, "aeron:ipc")
    assert response.code == OK, response
    replay_session_id = response.relevant_id
    subscription = env.aeron.add_subscription(
        f"aeron:ipc?session-id={to_int32(replay_session_id)}", stream_id
    )
    received: list[int] = []

    def on_fragment(buffer: Any, offset: int, _length: int, _header: Any) -> None:
        received.append(struct.unpack_from("<q", buffer.view, offset)[0])

    seen_image = []

    def ended() -> bool:
        subscription.poll(on_fragment, 100)
        if subscription.images:
            seen_image.append(subscription.images[0].session_id)
        if expect is not None:
            return len(received) >= expect
        return bool(seen_image) and not subscription.images

    wait_for(ended, 15, f"replay of {recording_id} from {position} to end")
    subscription.poll(on_fragment, 100)
    subscription.close()
    assert seen_image[0] == to_int32(replay_session_id & 0xFFFF_FFFF)
    return replay_session_id, received


def test_replay_session_id_and_image_session(env: Env) -> None:
    recording_id, _ = record(env, "aeron:ipc", 3001, 30, 200)
    first_id, received = replay(env, recording_id, -1, -1, 3101)
    assert received == list(range(30))
    second_id, _ = replay(env, recording_id, 0, 224 * 2, 3102)
    assert first_id >> 32 == 1 and second_id >> 32 == 2
    stop = env.control.request(StopReplayRequest, 12345)
    assert (stop.code, stop.relevant_id, stop.error_message) == (
        ERROR,
        6,
        "replay session not known for 12345",
    )


def test_late_joining_recording_replays_from_every_frame_boundary(env: Env) -> None:
    start = 10560  # not term aligned: 1.15.1 looks these positions up in the wrong segment
    channel = f"aeron:ipc?init-term-id=7|term-id=7|term-offset={start}|term-length={TERM_LENGTH}"
    count, length = 110, 1300
    recording_id, _ = record(env, channel, 3002, count, length)
    descriptor = env.archive.catalog.descriptor(recording_id)
    assert descriptor.start_position == start
    assert descriptor.stop_position > start + 2 * TERM_LENGTH  # several segments, padding at term ends
    frame = 1344
    positions = []
    position = start
    for _ in range(count):
        if (position & (TERM_LENGTH - 1)) + frame > TERM_LENGTH:
            position += TERM_LENGTH - (position & (TERM_LENGTH - 1))  # the padding frame
        positions.append(position)
        position += frame
    for i, position in enumerate(positions):
        _, received = replay(env, recording_id, position, frame, 3200 + i, expect=1)
        assert received == [i], f"replay from {position}"


def test_replay_position_errors(env: Env) -> None:
    recording_id, _ = record(env, "aeron:ipc", 3003, 10, 200)
    unaligned = env.control.request(ReplayRequest, recording_id, 16, -1, 3301, "aeron:ipc")
    assert unaligned.code == ERROR
    assert unaligned.error_message == (
        f"requested replay start position 16 is not a multiple of FRAME_ALIGNMENT (32) for recording {recording_id}"
    )
    # Aligned but inside the first frame (frames are 256 bytes): OK first, then the header check fails.
    correlation_id = env.control.next_id()
    env.control.send(
        ReplayRequest(env.control.control_session_id, correlation_id, recording_id, 64, -1, 3302, "aeron:ipc")
    )
    ok = env.control.response(correlation_id)
    assert ok.code == OK and ok.relevant_id >> 32 >= 1
    error = env.control.response(correlation_id)
    assert (error.code, error.error_message) == (ERROR, "64 position not aligned to data header")
    unknown = env.control.request(ReplayRequest, 99, -1, -1, 3303, "aeron:ipc")
    assert (unknown.code, unknown.relevant_id, unknown.error_message) == (ERROR, 5, "unknown recording id 99")


def test_no_subscriber_within_the_connect_timeout(env: Env) -> None:
    recording_id, _ = record(env, "aeron:ipc", 3004, 5, 200)
    correlation_id = env.control.next_id()
    env.control.send(
        ReplayRequest(env.control.control_session_id, correlation_id, recording_id, -1, -1, 3401, "aeron:ipc")
    )
    assert env.control.response(correlation_id).code == OK
    env.clock.advance_ms(5_001)
    error = env.control.response(correlation_id)
    assert (error.code, error.error_message) == (ERROR, "no connection established for replay")


def test_listing_skips_invalid_entries_without_counting_them(env: Env) -> None:
    ids = [record(env, "aeron:ipc", 3500 + i, 2, 100)[0] for i in range(3)]
    env.archive.catalog.invalidate(ids[1])
    listed = env.control.descriptors(ListRecordingsRequest, ids[0], 2, count=2)
    assert [m.recording_id for m in listed if isinstance(m, RecordingDescriptor)] == [ids[0], ids[2]]
    beyond = env.control.descriptors(ListRecordingsRequest, ids[2], 5, count=5)
    assert (
        isinstance(beyond[-1], ControlResponse) and beyond[-1].code == ControlResponseCode.RECORDING_UNKNOWN
    )
    assert beyond[-1].relevant_id == ids[2] + 1
    stop = env.control.request(StopPositionRequest, 77)
    assert (stop.code, stop.relevant_id, stop.error_message) == (ERROR, 5, "unknown recording 77")


def test_unknown_template_is_answered_and_hostile_input_is_counted(env: Env) -> None:
    control = env.control
    correlation_id = control.next_id()
    body = struct.pack("<qq", control.control_session_id, correlation_id)
    control.send_raw(struct.pack("<HHHH", len(body), 77, 101, 0) + body)
    response = control.response(correlation_id)
    assert response.code == ERROR and "unknown template id 77" in response.error_message
    errors_before = env.archive.conductor.error_count
    control.send_raw(struct.pack("<HHHH", 8, 3, 999, 0) + bytes(8))  # another schema
    control.send_raw(struct.pack("<HHHH", 24, 10, 101, 0) + bytes(4))  # truncated
    control.send_raw(
        struct.pack("<HHHH", 24, 10, 101, 0) + struct.pack("<qqq", 424242, 1, 0)
    )  # no such session
    wait_for(lambda: env.archive.conductor.error_count >= errors_before + 3, 5, "three errors counted")
    assert control.request(RecordingPositionRequest, 0).code == OK  # still serving


def test_closing_the_archive_stops_every_live_recording_at_its_recorded_position(tmp_path: Path) -> None:
    """More recordings than the conductor takes outcomes in one duty cycle: each stop position still reaches the
    catalog when the archive closes with all of them recording (docs/archive.md section 15)."""
    count = 14
    targets: dict[int, int] = {}
    with archive_env(tmp_path) as env:
        catalog = env.archive.catalog
        publications = []
        for i in range(count):
            stream_id = 3700 + i
            publication = env.aeron.add_exclusive_publication("aeron:ipc", stream_id)
            publications.append(publication)
            started = env.control.request(StartRecordingRequest, stream_id, SourceLocation.LOCAL, "aeron:ipc")
            assert started.code == OK, started
            wait_for(lambda n=i + 1: catalog.count_entries == n, 10, f"recording {i} to start")
            publish(publication, 0, 3 + i, 200)
            targets[i] = publication.position
        for recording_id, target in targets.items():
            wait_for(
                lambda r=recording_id, t=target: (
                    env.control.request(RecordingPositionRequest, r).relevant_id == t
                ),
                10,
                f"recording {recording_id} up to {target}",
            )
        assert all(catalog.stop_position(r) == NULL_POSITION for r in targets)
    with Catalog(tmp_path / "archive", read_only=True) as closed:
        assert {r: closed.stop_position(r) for r in targets} == targets
