"""A replay of a recording that is still running (docs/archive.md section 8): it follows the recorded position
and, when the recording stops, ends exactly at the stop position, every message delivered once, in order."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from driver.archive.codecs import (
    ControlResponseCode,
    RecordingPositionRequest,
    ReplayRequest,
    SourceLocation,
    StartRecordingRequest,
    StopRecordingSubscriptionRequest,
)
from driver.util.bit_util import to_int32
from tests.archive.test_archive_server import message, publish
from tests.support import wait_for
from tests.support.archive_env import Env, archive_env

OK = ControlResponseCode.OK


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    with archive_env(tmp_path) as environment:
        yield environment


def test_a_replay_follows_a_live_recording_to_its_stop(env: Env) -> None:
    control, catalog = env.control, env.archive.catalog
    publication = env.aeron.add_exclusive_publication("aeron:ipc", 6001)
    started = control.request(StartRecordingRequest, 6001, SourceLocation.LOCAL, "aeron:ipc")
    assert started.code == OK, started
    wait_for(lambda: catalog.count_entries == 1, 10, "the recording to start")
    length, batches, per_batch = 300, 8, 40
    publish(publication, 0, per_batch, length)
    wait_for(
        lambda: control.request(RecordingPositionRequest, 0).relevant_id == publication.position,
        10,
        "the first batch recorded",
    )

    replay = control.request(ReplayRequest, 0, 0, -1, 6002, "aeron:ipc")  # from the start, following
    assert replay.code == OK, replay
    subscription = env.aeron.add_subscription(f"aeron:ipc?session-id={to_int32(replay.relevant_id)}", 6002)
    received: list[bytes] = []
    positions: list[int] = []

    def on_fragment(buffer: Any, offset: int, size: int, header: Any) -> None:
        received.append(bytes(buffer.view[offset : offset + size]))

    def poll() -> None:
        subscription.poll(on_fragment, 100)
        if subscription.images:
            positions.append(subscription.images[0].position)

    wait_for(lambda: poll() or len(received) == per_batch, 10, "the recorded part replayed")
    for batch in range(1, batches):  # the replay catches up with each batch as it is recorded
        publish(publication, batch * per_batch, per_batch, length)
        wait_for(
            lambda b=batch: poll() or len(received) == (b + 1) * per_batch, 10, f"batch {batch} replayed"
        )
    assert subscription.images, "the replay is still open, following the recording"
    target = publication.position
    stop = control.request(StopRecordingSubscriptionRequest, started.relevant_id)
    assert stop.code == OK, stop
    wait_for(lambda: catalog.stop_position(0) == target, 10, "the stop position")
    wait_for(lambda: poll() or (positions and not subscription.images), 10, "the replay to end")
    assert received == [message(i, length) for i in range(batches * per_batch)]
    assert positions[-1] == target  # ended exactly at the stop position
    subscription.close()
    publication.close()
