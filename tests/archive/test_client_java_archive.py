"""The Python archive client (driver.archive.client) against the real Aeron 1.15.1 Archive, on the Java driver and
on ours, and against our archive, embedded in our driver and standalone on the Java driver (the
``archive_server`` fixture of tests/archive/conftest.py: one archive per kind for the module). The same
operations and errors are asserted on every archive.

The client takes its channels from the same ``aeron.archive.*`` properties the archive got. Recordings are made
once per archive (the ``recorded`` fixture: LOCAL UDP through a spy, REMOTE UDP, IPC) and replayed, listed,
extended and truncated by the tests after it; the error tests provoke codes 1-9 and compare the archive's texts
(docs/archive.md sections 3 and 12).
"""

from __future__ import annotations

import asyncio
import itertools
import re
import struct
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from driver.archive.client import (
    NULL_LENGTH,
    NULL_POSITION,
    AeronArchive,
    ArchiveClientContext,
    ArchiveError,
    ArchiveErrorCode,
    RecordingEventsAdapter,
    RecordingProgress,
    RecordingStarted,
    RecordingStopped,
    SourceLocation,
    replay_channel_for_session,
)
from driver.client import Aeron, Publication, Subscription
from tests.support.java_archive import free_udp_channels

pytestmark = [pytest.mark.interop, pytest.mark.slow]

# Small limits, so that codes 7 and 8 can be provoked; every test stops what it starts.
JAVA_ARCHIVE_PROPS = {
    "aeron.archive.max.concurrent.recordings": "4",
    "aeron.archive.max.concurrent.replays": "4",
    "aeron.archive.segment.file.length": str(1 << 20),
    "aeron.archive.threading.mode": "SHARED",
}
WAIT_S = 10.0
MESSAGE_LENGTH = 100
FRAME_LENGTH = 160  # 32-byte header + 100 bytes, aligned to 32
MESSAGES = 40
IPC = "aeron:ipc"


def message(sequence: int) -> bytes:
    return struct.pack("<q", sequence) + bytes([sequence & 0x7F]) * (MESSAGE_LENGTH - 8)


@dataclass
class Env:
    """One archive, its driver, an Aeron client, two archive clients and the recording events seen so far."""

    kind: str
    context: ArchiveClientContext
    aeron: Aeron
    archive: AeronArchive
    other: AeronArchive
    events: RecordingEventsAdapter
    started: dict[int, RecordingStarted] = field(default_factory=dict)  # by stream id
    progress: dict[int, RecordingProgress] = field(default_factory=dict)  # last one, by recording id
    stopped: dict[int, RecordingStopped] = field(default_factory=dict)
    stream_ids: Iterator[int] = field(default_factory=lambda: itertools.count(7001))
    expected_archive_errors: list[str] = field(default_factory=list)  # regexes of ARCHIVE ERROR lines

    def wait(self, predicate: Callable[[], Any], what: str, timeout_s: float = WAIT_S) -> Any:
        """Poll ``predicate`` (and the recording events) until it is truthy."""
        deadline = time.monotonic() + timeout_s
        while not (result := predicate()):
            self.events.poll()
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.kind}: timed out after {timeout_s} s waiting for {what}")
            time.sleep(0.001)
        return result

    def publish(self, publication: Publication, first: int, count: int) -> None:
        for sequence in range(first, first + count):
            self.wait(lambda s=sequence: publication.offer(message(s)) > 0, f"offer of message {sequence}")

    def record(self, channel: str, source: SourceLocation, count: int = MESSAGES) -> Recorded:
        """Start recording a new stream of ``channel``, publish ``count`` messages, wait until recorded."""
        stream_id = next(self.stream_ids)
        publication = self.aeron.add_publication(channel, stream_id)
        subscription_id = self.archive.start_recording(channel, stream_id, source)
        started = self.wait(lambda: self.started.get(stream_id), f"{channel}: recording started event")
        self.wait(lambda: publication.is_connected, f"{channel}: publication connected")
        self.publish(publication, 0, count)
        target = publication.position
        self.wait(
            lambda: self.archive.get_recording_position(started.recording_id) == target,
            f"{channel}: recorded up to {target}",
        )
        return Recorded(channel, stream_id, source, publication, subscription_id, started.recording_id)


@dataclass
class Recorded:
    channel: str
    stream_id: int
    source: SourceLocation
    publication: Publication
    subscription_id: int
    recording_id: int
    position_while_active: int = NULL_POSITION
    stop_position_while_active: int = 0
    stop_position: int = NULL_POSITION
    position_after_stop: int = 0


@pytest.fixture(scope="module")
def env(archive_server: Any) -> Iterator[Env]:
    java_archive = archive_server
    context = ArchiveClientContext.from_sources(properties=java_archive.props, environ={})
    aeron = Aeron.connect(java_archive.aeron_dir)
    clients: list[AeronArchive] = []
    try:
        clients.append(AeronArchive.connect(aeron, context=context))
        clients.append(AeronArchive.connect(aeron, context=context))
        env = Env(java_archive.kind, context, aeron, clients[0], clients[1], None)  # type: ignore[arg-type]
        env.events = RecordingEventsAdapter.subscribe(
            aeron,
            context,
            on_start=lambda e: env.started.__setitem__(e.stream_id, e),
            on_progress=lambda e: env.progress.__setitem__(e.recording_id, e),
            on_stop=lambda e: env.stopped.__setitem__(e.recording_id, e),
        )
        env.wait(lambda: env.events.subscription.is_connected, "the recording events stream")
        yield env
        env.events.close()
    finally:
        for client in clients:
            client.close()
        aeron.close()
    errors = java_archive.archive.errors()
    unexpected = [
        line
        for line in errors
        if not any(
            re.fullmatch(f"ARCHIVE ERROR .*: {expected}", line) for expected in env.expected_archive_errors
        )
    ]
    assert unexpected == [], java_archive.archive.process.stderr_text()
    # Like 1.15.1, every archive logs the errors it could only answer after an OK.
    unseen = [
        expected
        for expected in env.expected_archive_errors
        if not any(re.fullmatch(f"ARCHIVE ERROR .*: {expected}", line) for line in errors)
    ]
    assert unseen == [], java_archive.archive.process.stderr_text()[-4000:]


@pytest.fixture(scope="module")
def recorded(env: Env) -> dict[str, Recorded]:
    """LOCAL UDP (a spy), REMOTE UDP and IPC recordings of 40 messages each, stopped three ways."""
    local_channel, remote_channel = free_udp_channels(2)
    recordings = {
        "local": env.record(local_channel, SourceLocation.LOCAL),
        "remote": env.record(remote_channel, SourceLocation.REMOTE),
        "ipc": env.record(IPC, SourceLocation.LOCAL),
    }
    for r in recordings.values():
        r.position_while_active = env.archive.get_recording_position(r.recording_id)
        r.stop_position_while_active = env.other.get_stop_position(r.recording_id)
    local, remote, ipc = recordings.values()
    env.archive.stop_recording(local.channel, local.stream_id)
    env.archive.stop_recording_subscription(remote.subscription_id)
    env.other.stop_recording(ipc.channel, ipc.stream_id)  # the other control session stops it: allowed
    for r in recordings.values():
        env.wait(lambda r=r: r.recording_id in env.stopped, f"{r.channel}: recording stopped event")
        r.stop_position = env.wait(
            lambda r=r: env.archive.get_stop_position(r.recording_id) != NULL_POSITION, "the stop position"
        ) and env.archive.get_stop_position(r.recording_id)
        r.position_after_stop = env.archive.get_recording_position(r.recording_id)
    return recordings


def replay_messages(
    env: Env, subscription: Subscription, count: int, *, until_image_gone: bool = False
) -> list[int]:
    """The sequence numbers of ``count`` replayed messages (each checked whole)."""
    received: list[int] = []
    bad: list[str] = []

    def on_fragment(buffer: Any, offset: int, length: int, _header: Any) -> None:
        data = bytes(buffer.view[offset : offset + length])
        (sequence,) = struct.unpack_from("<q", data)
        if data != message(sequence):
            bad.append(f"message {sequence} of length {length} is corrupt")
        received.append(sequence)

    def done() -> bool:
        subscription.poll(on_fragment, 10)
        return len(received) >= count and (not until_image_gone or not subscription.images)

    env.wait(done, f"{count} replayed messages (got {len(received)})")
    assert bad == []
    return received


# -- connect, record, positions, events ----------------------------------------------------------------------


def test_two_clients_get_their_own_control_sessions(env: Env) -> None:
    assert env.archive.control_session_id != env.other.control_session_id
    # Both share one response channel and stream: each sees only its own session's answers.
    assert env.archive.list_recordings(10_000, 10) == env.other.list_recordings(10_000, 10) == []
    with AeronArchive.connect(context=env.context.replace(aeron_dir=str(env.aeron.aeron_dir))) as own:
        assert own.control_session_id not in (env.archive.control_session_id, env.other.control_session_id)
        assert own.get_recording_position(10_000) == NULL_POSITION


def test_recordings_positions_and_events(env: Env, recorded: dict[str, Recorded]) -> None:
    target = MESSAGES * FRAME_LENGTH
    for name, r in recorded.items():
        assert r.publication.position == target, name
        assert (r.position_while_active, r.stop_position_while_active) == (target, NULL_POSITION), name
        assert (r.stop_position, r.position_after_stop) == (target, NULL_POSITION), name
        started = env.started[r.stream_id]
        assert (started.start_position, started.session_id, started.channel) == (
            0,
            r.publication.session_id,
            r.channel,
        ), name
        env.wait(lambda r=r: r.recording_id in env.progress, f"{name}: a progress event")
        assert 0 < env.progress[r.recording_id].position <= target, name
        assert (env.stopped[r.recording_id].start_position, env.stopped[r.recording_id].stop_position) == (
            0,
            target,
        ), name
    assert env.started[recorded["local"].stream_id].source_identity == "aeron:ipc"  # a spy image
    assert env.started[recorded["remote"].stream_id].source_identity.startswith("127.0.0.1:")


# -- the catalog ---------------------------------------------------------------------------------------------


def test_list_recordings(env: Env, recorded: dict[str, Recorded]) -> None:
    ids = sorted(r.recording_id for r in recorded.values())
    seen: list[int] = []
    listed = env.other.list_recordings(ids[0], 3, consumer=lambda d: seen.append(d.recording_id))
    assert [d.recording_id for d in listed] == seen == ids
    by_id = {d.recording_id: d for d in listed}
    for r in recorded.values():
        d = by_id[r.recording_id]
        assert (d.stream_id, d.session_id, d.start_position, d.stop_position, d.original_channel) == (
            r.stream_id,
            r.publication.session_id,
            0,
            MESSAGES * FRAME_LENGTH,
            r.channel,
        )
        assert d.control_session_id == env.other.control_session_id
    # Past the end of the catalog the listing ends early (RECORDING_UNKNOWN).
    assert env.archive.list_recordings(10_000, 5) == []


def test_list_recordings_for_uri(env: Env, recorded: dict[str, Recorded]) -> None:
    remote = recorded["remote"]
    fragment = remote.channel[remote.channel.index("endpoint=") :]
    found = env.archive.list_recordings_for_uri(0, 100, fragment, remote.stream_id)
    assert [d.recording_id for d in found] == [remote.recording_id]
    assert env.archive.list_recordings_for_uri(0, 100, fragment, remote.stream_id + 100) == []


def test_list_recording(env: Env, recorded: dict[str, Recorded]) -> None:
    ipc = recorded["ipc"]
    d = env.archive.list_recording(ipc.recording_id)
    assert d is not None
    assert (d.recording_id, d.session_id, d.stream_id, d.stripped_channel, d.source_identity) == (
        ipc.recording_id,
        ipc.publication.session_id,
        ipc.stream_id,
        IPC,
        IPC,
    )
    assert env.archive.list_recording(ipc.recording_id + 10_000) is None


def test_find_last_matching_recording(env: Env, recorded: dict[str, Recorded]) -> None:
    local = recorded["local"]
    fragment = local.channel[local.channel.index("endpoint=") :]
    session_id = local.publication.session_id
    assert (
        env.other.find_last_matching_recording(0, fragment, local.stream_id, session_id) == local.recording_id
    )
    assert env.other.find_last_matching_recording(0, fragment, local.stream_id, session_id + 1) == -1


# -- replay --------------------------------------------------------------------------------------------------


def test_replay_whole_recordings(env: Env, recorded: dict[str, Recorded]) -> None:
    (replay_channel,) = free_udp_channels(1)
    for r, channel in ((recorded["remote"], replay_channel), (recorded["ipc"], IPC)):
        with env.archive.replay(
            r.recording_id, 0, r.stop_position, channel, next(env.stream_ids)
        ) as subscription:
            assert f"session-id={subscription.channel.rsplit('=', 1)[1]}" in subscription.channel
            assert replay_messages(env, subscription, MESSAGES) == list(range(MESSAGES))
            assert subscription.images[0].join_position == 0


def test_replay_bounded_from_the_middle(env: Env, recorded: dict[str, Recorded]) -> None:
    local = recorded["local"]
    with env.other.replay(
        local.recording_id, 10 * FRAME_LENGTH, 15 * FRAME_LENGTH, IPC, next(env.stream_ids)
    ) as sub:
        assert replay_messages(env, sub, 15, until_image_gone=True) == list(range(10, 25))


def test_replay_following_a_live_recording_then_stop_replay(env: Env) -> None:
    live = env.record(IPC, SourceLocation.LOCAL, count=10)
    try:
        replay_stream_id = next(env.stream_ids)
        replay_session_id = env.archive.start_replay(live.recording_id, 0, NULL_LENGTH, IPC, replay_stream_id)
        channel = replay_channel_for_session(IPC, replay_session_id)
        assert (
            channel
            == f"aeron:ipc?session-id={(replay_session_id & 0xFFFF_FFFF) - ((replay_session_id & 0x8000_0000) << 1)}"
        )
        with env.aeron.add_subscription(channel, replay_stream_id) as subscription:
            assert replay_messages(env, subscription, 10) == list(range(10))
            env.publish(live.publication, 10, 20)
            assert replay_messages(env, subscription, 20) == list(range(10, 30))
            env.archive.stop_replay(replay_session_id)
            env.wait(lambda: not subscription.images, "the replay image to go after stop_replay")
            assert env.archive.get_recording_position(live.recording_id) == live.publication.position
    finally:
        env.archive.stop_recording_subscription(live.subscription_id)
        live.publication.close()


# -- extend and truncate -------------------------------------------------------------------------------------


def extension_channel(env: Env, recording_id: int, stop_position: int) -> str:
    """An IPC channel whose publication starts where the recording stopped, with its term length and mtu."""
    d = env.archive.list_recording(recording_id)
    assert d is not None
    term_length = d.term_buffer_length
    term_id = d.initial_term_id + stop_position // term_length
    return (
        f"aeron:ipc?init-term-id={d.initial_term_id}|term-id={term_id}|term-offset={stop_position % term_length}"
        f"|term-length={term_length}|mtu={d.mtu_length}"
    )


def test_extend_recording(env: Env, recorded: dict[str, Recorded]) -> None:
    ipc = recorded["ipc"]
    channel = extension_channel(env, ipc.recording_id, ipc.stop_position)
    ipc.publication.close()
    with env.aeron.add_exclusive_publication(channel, ipc.stream_id) as publication:
        assert publication.position == ipc.stop_position
        subscription_id = env.archive.extend_recording(
            ipc.recording_id, IPC, ipc.stream_id, SourceLocation.LOCAL
        )
        env.wait(
            lambda: env.archive.get_recording_position(ipc.recording_id) == ipc.stop_position, "extension"
        )
        env.publish(publication, MESSAGES, 10)
        target = publication.position
        env.wait(lambda: env.archive.get_recording_position(ipc.recording_id) == target, "extension recorded")
        env.archive.stop_recording_subscription(subscription_id)
        env.wait(lambda: env.archive.get_stop_position(ipc.recording_id) == target, "extension stopped")
    with env.archive.replay(ipc.recording_id, 0, NULL_LENGTH, IPC, next(env.stream_ids)) as subscription:
        assert replay_messages(env, subscription, MESSAGES + 10) == list(range(MESSAGES + 10))


def test_truncate_recording(env: Env, recorded: dict[str, Recorded]) -> None:
    local = recorded["local"]
    env.archive.truncate_recording(local.recording_id, 20 * FRAME_LENGTH)
    assert env.archive.get_stop_position(local.recording_id) == 20 * FRAME_LENGTH
    with env.archive.replay(local.recording_id, 0, NULL_LENGTH, IPC, next(env.stream_ids)) as subscription:
        assert replay_messages(env, subscription, 20, until_image_gone=True) == list(range(20))


# -- asyncio -------------------------------------------------------------------------------------------------


def test_async_record_events_list_replay(env: Env) -> None:
    async def scenario() -> None:
        stream_id = next(env.stream_ids)
        async with await AeronArchive.connect_async(env.aeron, context=env.context) as archive:
            events = RecordingEventsAdapter.subscribe(env.aeron, env.context)
            publication = await env.aeron.add_publication_async(IPC, stream_id)
            try:
                subscription_id = await archive.start_recording_async(IPC, stream_id, SourceLocation.LOCAL)
                seen: list[Any] = []
                async with asyncio.timeout(WAIT_S):
                    async for event in events.events():
                        seen.append(event)
                        if isinstance(event, RecordingStarted) and event.stream_id == stream_id:
                            break
                recording_id = seen[-1].recording_id
                for sequence in range(5):
                    await publication.offer_async(message(sequence), timeout_s=WAIT_S)
                async with asyncio.timeout(WAIT_S):
                    while await archive.get_recording_position_async(recording_id) != 5 * FRAME_LENGTH:
                        await asyncio.sleep(0.001)
                await archive.stop_recording_subscription_async(subscription_id)
                async with asyncio.timeout(WAIT_S):
                    async for event in events.events():
                        if isinstance(event, RecordingStopped) and event.recording_id == recording_id:
                            assert event.stop_position == 5 * FRAME_LENGTH
                            break
                (d,) = await archive.list_recordings_for_uri_async(0, 100, IPC, stream_id)
                assert (d.recording_id, d.stop_position) == (recording_id, 5 * FRAME_LENGTH)
                one = await archive.list_recording_async(recording_id)
                assert one is not None and one._replace(correlation_id=0) == d._replace(correlation_id=0)
                replay = await archive.replay_async(recording_id, 0, NULL_LENGTH, IPC, next(env.stream_ids))
                received = []
                async with asyncio.timeout(WAIT_S):
                    async for m in replay.messages():
                        received.append(struct.unpack_from("<q", m.data)[0])
                        if len(received) == 5:
                            break
                assert received == list(range(5))
                replay.close()
                with pytest.raises(ArchiveError) as error:
                    await archive.stop_replay_async(123)
                assert error.value.code == ArchiveErrorCode.UNKNOWN_REPLAY
            finally:
                publication.close()
                events.close()

    asyncio.run(scenario())


def test_concurrent_async_requests_of_one_client_get_their_own_answers(
    env: Env, recorded: dict[str, Recorded]
) -> None:
    async def scenario() -> list[int]:
        requests = [env.archive.get_stop_position_async(r.recording_id) for r in recorded.values()]
        return await asyncio.gather(*requests)

    assert asyncio.run(scenario()) == [
        env.archive.get_stop_position(r.recording_id) for r in recorded.values()
    ]


# -- the archive's errors (codes 1-9) ------------------------------------------------------------------------


def expect_error(code: ArchiveErrorCode, text: str, call: Callable[[], Any]) -> ArchiveError:
    with pytest.raises(ArchiveError) as caught:
        call()
    error = caught.value
    assert (error.code, error.error_message) == (code, text) or (
        error.code == code and re.fullmatch(text, error.error_message)
    ), repr(error)
    assert error.correlation_id > 0
    return error


def test_error_active_listing(env: Env) -> None:
    async def two_listings() -> list[Any]:
        return await asyncio.gather(
            env.archive.list_recordings_async(0, 100),
            env.archive.list_recordings_async(0, 100),
            return_exceptions=True,
        )

    for _ in range(10):  # both requests must reach the archive in one poll; they nearly always do
        errors = [r for r in asyncio.run(two_listings()) if isinstance(r, ArchiveError)]
        if errors:
            break
    (error,) = errors
    assert (error.code, error.error_message) == (
        ArchiveErrorCode.ACTIVE_LISTING,
        "active listing already in progress",
    )


def test_errors_of_recording(env: Env) -> None:
    live = env.record(IPC, SourceLocation.LOCAL, count=2)
    try:
        expect_error(
            ArchiveErrorCode.ACTIVE_RECORDING,
            "cannot truncate active recording",
            lambda: env.archive.truncate_recording(live.recording_id, 0),
        )
        expect_error(
            ArchiveErrorCode.ACTIVE_RECORDING,
            f"cannot extend active recording for {live.recording_id}",
            lambda: env.archive.extend_recording(live.recording_id, IPC, live.stream_id),
        )
        expect_error(
            ArchiveErrorCode.ACTIVE_SUBSCRIPTION,
            f"recording exists for streamId={live.stream_id} channel={IPC}",
            lambda: env.archive.start_recording(IPC, live.stream_id),
        )
    finally:
        env.archive.stop_recording_subscription(live.subscription_id)
        live.publication.close()
    expect_error(
        ArchiveErrorCode.UNKNOWN_SUBSCRIPTION,
        f"no recording found for streamId={live.stream_id} channel={IPC}",
        lambda: env.archive.stop_recording(IPC, live.stream_id),
    )
    expect_error(
        ArchiveErrorCode.UNKNOWN_SUBSCRIPTION,
        "no recording subscription found for 123456789",
        lambda: env.archive.stop_recording_subscription(123456789),
    )


def test_errors_of_unknown_recordings_and_replays(env: Env) -> None:
    expect_error(
        ArchiveErrorCode.UNKNOWN_RECORDING,
        "unknown recording id 10000",
        lambda: env.archive.start_replay(10_000, 0, NULL_LENGTH, IPC, 1),
    )
    expect_error(
        ArchiveErrorCode.UNKNOWN_RECORDING,
        "unknown recording 10000",
        lambda: env.archive.get_stop_position(10_000),
    )
    expect_error(
        ArchiveErrorCode.UNKNOWN_RECORDING,
        "unknown recording 10000",
        lambda: env.archive.truncate_recording(10_000, 0),
    )
    expect_error(
        ArchiveErrorCode.UNKNOWN_REPLAY,
        "replay session not known for 77",
        lambda: env.archive.stop_replay(77),
    )


def test_error_max_replays(env: Env, recorded: dict[str, Recorded]) -> None:
    remote = recorded["remote"]
    stream_id = next(env.stream_ids)  # nobody subscribes: each replay waits for a subscriber
    session_ids = []
    try:
        for _ in range(4):
            session_ids.append(env.archive.start_replay(remote.recording_id, 0, NULL_LENGTH, IPC, stream_id))
        expect_error(
            ArchiveErrorCode.MAX_REPLAYS,
            "max concurrent replays reached 4",
            lambda: env.archive.start_replay(remote.recording_id, 0, NULL_LENGTH, IPC, stream_id),
        )
    finally:
        for session_id in session_ids:
            env.archive.stop_replay(session_id)


def test_error_max_recordings(env: Env) -> None:
    recordings = []
    try:
        for _ in range(4):
            recordings.append(env.record(IPC, SourceLocation.LOCAL, count=1))
        expect_error(
            ArchiveErrorCode.MAX_RECORDINGS,
            "max concurrent recordings reached 4",
            lambda: env.archive.start_recording(IPC, next(env.stream_ids)),
        )
    finally:
        for r in recordings:
            env.archive.stop_recording_subscription(r.subscription_id)
            r.publication.close()


def test_error_invalid_extension_arrives_after_the_ok(env: Env) -> None:
    short = env.record(IPC, SourceLocation.LOCAL, count=2)
    env.archive.stop_recording_subscription(short.subscription_id)
    short.publication.close()
    env.wait(lambda: env.archive.get_stop_position(short.recording_id) == 2 * FRAME_LENGTH, "stopped")
    # A new publication starts at 0, not at the stop position: the archive answers OK, then the image fails.
    text = f"cannot extend recording {short.recording_id} image joinPosition 0 not equal to recording stopPosition 320"
    env.expected_archive_errors.append(text)
    with env.aeron.add_exclusive_publication(IPC, short.stream_id):
        subscription_id = env.archive.extend_recording(short.recording_id, IPC, short.stream_id)
        try:
            error = env.wait(env.archive.poll_for_error_response, "the invalid extension error")
        finally:
            env.archive.stop_recording_subscription(subscription_id)
    assert (error.code, error.error_message) == (ArchiveErrorCode.INVALID_EXTENSION, text), repr(error)
    assert error.correlation_id > 0
