"""Recordings made by our archive from Python publications, and a full replay of them back into a Python
subscriber: what the Spark data source over an archive directory is checked against (and benchmarked against).

``recording_archive(tmp_path)`` runs our archive on an embedded driver (SHARED, real clocks) with an
``AeronArchive`` client; ``record(env, sessions)`` publishes each session's messages on IPC and records them (a
session whose ``late`` count is set publishes that many first, unrecorded: its recording joins mid-stream); and
``replay(env, recording_id, on_message)`` replays a stopped recording whole into a ``FragmentAssembler`` (and
``replay_messages`` returns (payload, reserved value) per message).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import count
from pathlib import Path
from typing import Any

from driver.archive.archive_context import ArchiveContext
from driver.archive.client import AeronArchive, ArchiveClientContext, SourceLocation
from driver.archive_launcher import connect_embedded
from driver.client import Aeron, FragmentAssembler
from harness.embedded import EmbeddedDriver, new_aeron_dir
from harness.ports import free_port
from harness.wait import wait_for

IPC = "aeron:ipc"
REPLAY_IDLE_S = 0.001


@dataclass
class RecordingEnv:
    driver: EmbeddedDriver
    aeron: Aeron
    client: AeronArchive
    archive_dir: Path
    stream_ids: Iterator[int]


@contextmanager
def recording_archive(
    tmp_path: Path, term_length: int = 64 * 1024, segment_length: int = 64 * 1024, **settings: Any
) -> Iterator[RecordingEnv]:
    """Our archive on an embedded driver with a client; ``settings`` are more ArchiveContext fields."""
    archive_dir = tmp_path / "archive"
    control, events, response = (f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}" for _ in range(3))
    ctx = ArchiveContext(
        archive_dir=str(archive_dir),
        control_channel=control,
        recording_events_channel=events,
        threading_mode="SHARED",
        segment_file_length=segment_length,
        **settings,
    )
    aeron_dir = new_aeron_dir(tmp_path)
    driver = EmbeddedDriver(
        aeron_dir,
        on_created=lambda d: connect_embedded(d, ctx),
        spies_simulate_connection=True,
        term_buffer_length=term_length,
        ipc_term_buffer_length=term_length,
    )
    try:
        aeron = Aeron.connect(aeron_dir)
        try:
            client = AeronArchive.connect(
                aeron,
                context=ArchiveClientContext(
                    control_request_channel=control,
                    control_response_channel=response,
                    recording_events_channel=events,
                ),
            )
            try:
                yield RecordingEnv(driver, aeron, client, archive_dir, count(7001))
            finally:
                client.close()
        finally:
            aeron.close()
    finally:
        driver.close()


Message = tuple[bytes, int]  # payload, reserved value


@dataclass
class Session:
    """One publication's messages: ``late`` of them are published before the recording starts."""

    messages: Sequence[Message]
    late: int = 0
    between: Callable[[int], None] | None = None  # called before message i (e.g. to let time pass)


def _offer(publication: Any, payload: bytes, reserved: int, drain: Any = None) -> None:
    deadline = time.monotonic() + 30
    while publication.offer(payload, reserved) < 0:
        if drain is not None:
            drain.poll(lambda *_: None, 1000)
        if time.monotonic() > deadline:
            raise TimeoutError("offer back pressured for 30 s")
        time.sleep(0)


def record(env: RecordingEnv, sessions: Sequence[Session]) -> list[int]:
    """Publishes and records each session on its own IPC stream, one after another; the recording ids (stopped)."""
    ids = []
    for session in sessions:
        stream_id = next(env.stream_ids)
        publication = env.aeron.add_exclusive_publication(IPC, stream_id)
        early = env.aeron.add_subscription(IPC, stream_id) if session.late else None
        if early is not None:  # an IPC publication goes only while someone subscribes: drain as we go
            wait_for(lambda p=publication: p.is_connected, 10, "the early subscriber")
            for payload, reserved in session.messages[: session.late]:
                _offer(publication, payload, reserved, early)
            while early.poll(lambda *_: None, 1000):
                pass
        env.client.start_recording(IPC, stream_id, SourceLocation.LOCAL)
        recording_id = (
            wait_for(
                lambda s=stream_id, p=publication: (
                    env.client.find_last_matching_recording(0, IPC, s, p.session_id) + 1
                ),
                10,
                "the recording to start",
            )
            - 1
        )
        if early is not None:
            early.close()
        for i in range(session.late, len(session.messages)):
            if session.between is not None:
                session.between(i)
            payload, reserved = session.messages[i]
            _offer(publication, payload, reserved)
        end = publication.position
        wait_for(
            lambda r=recording_id, e=end: env.client.get_recording_position(r) == e, 60, "recorded to the end"
        )
        env.client.stop_recording(IPC, stream_id)
        wait_for(lambda r=recording_id, e=end: env.client.get_stop_position(r) == e, 10, "the stop position")
        publication.close()
        ids.append(recording_id)
    return ids


def replay(env: RecordingEnv, recording_id: int, on_message: Callable[[Any, int, int, Any], None]) -> None:
    """A full replay of a stopped recording into a Python subscriber: ``on_message(buffer, offset, length,
    header)`` for each whole message (a ``FragmentAssembler``), in order."""
    d = env.client.list_recording(recording_id)
    assert d is not None
    stream_id = next(env.stream_ids)
    subscription = env.aeron.add_subscription(IPC, stream_id)
    handler = FragmentAssembler(on_message)
    try:
        env.client.start_replay(recording_id, d.start_position, -1, IPC, stream_id)
        wait_for(lambda: subscription.images, 10, "the replay image")
        image = subscription.images[0]
        while not image.is_closed and not image.is_end_of_stream:
            if image.poll(handler, 1000) == 0:
                time.sleep(REPLAY_IDLE_S)
        while image.poll(handler, 1000):
            pass
    finally:
        subscription.close()


def replay_messages(env: RecordingEnv, recording_id: int) -> list[Message]:
    """``replay``: each whole message's (payload, reserved value), in order."""
    received: list[Message] = []

    def on_message(buffer: Any, offset: int, length: int, header: Any) -> None:
        received.append((bytes(buffer.view[offset : offset + length]), header.reserved_value))

    replay(env, recording_id, on_message)
    return received
