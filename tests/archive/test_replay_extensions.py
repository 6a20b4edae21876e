"""Replay beyond 1.15.1 (docs/archive.md section 18): our archive on an embedded driver, driven by the Python
client. A counter the test moves bounds a replay byte for byte; a replay starts at a recorder time or at the last n
messages; paced replays keep the recorded timing times the rate; a credit replay waits for the consumer's
grants."""

from __future__ import annotations

import struct
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from driver.archive.archive import Archive
from driver.archive.archive_context import ArchiveContext
from driver.archive.client import (
    AeronArchive,
    ArchiveClientContext,
    ArchiveError,
    SourceLocation,
    replay_channel_for_session,
)
from driver.archive.codecs import BoundedReplayRequest, decode, encode
from driver.archive.recording_index import index_path
from driver.archive_launcher import connect_embedded
from driver.client import Aeron, ExclusivePublication, Subscription
from driver.client.fragment_assembler import FragmentAssembler
from tests.support import EmbeddedDriver, free_port, new_aeron_dir, wait_for

TERM_LENGTH = 64 * 1024
MESSAGE_LENGTH = 100
FRAME_LENGTH = 160  # 32-byte header + 100 bytes, aligned to 32
IPC = "aeron:ipc"


@dataclass
class Env:
    driver: EmbeddedDriver
    archive: Archive
    aeron: Aeron
    client: AeronArchive
    stream_ids: Iterator[int]
    client_context: ArchiveClientContext


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    control, events, response = (f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}" for _ in range(3))
    ctx = ArchiveContext(
        archive_dir=str(tmp_path / "archive"),
        control_channel=control,
        recording_events_channel=events,
        segment_file_length=64 * 1024,
        threading_mode="SHARED",
        index_interval_bytes=1024,  # many entries, so lookups scan from the middle of the index
    )
    aeron_dir = new_aeron_dir(tmp_path)
    driver = EmbeddedDriver(
        aeron_dir,
        on_created=lambda d: connect_embedded(d, ctx),
        spies_simulate_connection=True,
        term_buffer_length=TERM_LENGTH,
        ipc_term_buffer_length=TERM_LENGTH,
    )
    aeron = Aeron.connect(aeron_dir)
    client_ctx = ArchiveClientContext(
        control_request_channel=control,
        control_response_channel=response,
        recording_events_channel=events,
    )
    client = AeronArchive.connect(aeron, context=client_ctx)
    try:
        yield Env(driver, driver.attached, aeron, client, iter(range(5001, 6000)), client_ctx)
    finally:
        client.close()
        aeron.close()
        driver.close()
        driver.attached.close()


def message(i: int, length: int = MESSAGE_LENGTH) -> bytes:
    return struct.pack("<q", i) + bytes([i & 0x7F]) * (length - 8)


def start_recording(env: Env) -> tuple[int, ExclusivePublication]:
    stream_id = next(env.stream_ids)
    publication = env.aeron.add_exclusive_publication(IPC, stream_id)
    catalog = env.archive.catalog
    before = catalog.count_entries
    env.client.start_recording(IPC, stream_id, SourceLocation.LOCAL)
    wait_for(lambda: catalog.count_entries > before, 10, "the recording to start")
    recording_id = catalog.count_entries - 1
    wait_for(lambda: env.client.get_recording_position(recording_id) >= 0, 10, "rec-pos")
    return recording_id, publication


def publish(publication: ExclusivePublication, first: int, count: int, length: int = MESSAGE_LENGTH) -> None:
    for i in range(first, first + count):
        data = message(i, length)
        wait_for(lambda d=data: publication.offer(d) > 0, 10, f"offer of message {i}")


def stop(env: Env, recording_id: int, publication: ExclusivePublication) -> int:
    target = publication.position
    wait_for(lambda: env.client.get_recording_position(recording_id) == target, 10, f"recorded to {target}")
    env.client.stop_recording(IPC, publication.stream_id)
    wait_for(lambda: env.client.get_stop_position(recording_id) == target, 10, "the stop position")
    return target


def record(env: Env, count: int, length: int = MESSAGE_LENGTH) -> tuple[int, int]:
    """(recording id, stop position) of ``count`` messages recorded and stopped."""
    recording_id, publication = start_recording(env)
    publish(publication, 0, count, length)
    return recording_id, stop(env, recording_id, publication)


class Consumer:
    """The messages (first 8 bytes: sequence) and their arrival times, and how far the image got."""

    def __init__(self, subscription: Subscription) -> None:
        self.subscription = subscription
        self.received: list[int] = []
        self.times: list[float] = []
        self.max_position = 0
        self.seen_image = False
        self._assembler = FragmentAssembler(self._on_message)

    def _on_message(self, buffer: Any, offset: int, _length: int, header: Any) -> None:
        self.received.append(struct.unpack_from("<q", buffer.view, offset)[0])
        self.times.append(time.monotonic())

    def poll(self) -> int:
        fragments = self.subscription.poll(self._assembler, 100)
        for image in self.subscription.images:
            self.seen_image = True
            self.max_position = max(self.max_position, image.position)
        return fragments

    @property
    def ended(self) -> bool:
        self.poll()
        return self.seen_image and not self.subscription.images

    def until(self, predicate: Callable[[], bool], what: str, timeout_s: float = 15.0) -> None:
        wait_for(lambda: (self.poll() or True) and predicate(), timeout_s, what)

    def settle(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.poll()
            time.sleep(0.002)


def subscribe(env: Env, replay_session_id: int, stream_id: int) -> Consumer:
    return Consumer(env.aeron.add_subscription(replay_channel_for_session(IPC, replay_session_id), stream_id))


# -- bounded replay --------------------------------------------------------------------------------------------


def test_bounded_replay_never_passes_the_counter_and_ends_when_it_is_freed(env: Env) -> None:
    recording_id, stop_position = record(env, 40)
    limit = env.aeron.add_counter(1001, "replay limit")
    limit.set(5 * FRAME_LENGTH)
    stream_id = next(env.stream_ids)
    replay_id = env.client.start_bounded_replay(recording_id, 0, -1, limit.id, IPC, stream_id)
    consumer = subscribe(env, replay_id, stream_id)
    for step in (5, 12, 12, 30):
        limit.set(step * FRAME_LENGTH)
        consumer.until(lambda s=step: len(consumer.received) >= s, f"{step} messages")
        consumer.settle(0.2)
        assert consumer.received == list(range(step))
        assert consumer.max_position <= step * FRAME_LENGTH
    limit.set(30 * FRAME_LENGTH + 100)  # inside a frame: that frame stays back
    consumer.settle(0.2)
    assert consumer.received == list(range(30))
    limit.close()  # freed: the replay ends cleanly, having sent nothing past the last value
    consumer.until(lambda: consumer.ended, "the replay to end when its counter is freed")
    assert consumer.received == list(range(30))
    assert env.client.poll_for_error_response() is None
    assert stop_position == 40 * FRAME_LENGTH


def test_bounded_replay_ends_at_its_length(env: Env) -> None:
    recording_id, _ = record(env, 20)
    limit = env.aeron.add_counter(1001, "replay limit")
    limit.set(1 << 40)
    stream_id = next(env.stream_ids)
    replay_id = env.client.start_bounded_replay(
        recording_id, 2 * FRAME_LENGTH, 8 * FRAME_LENGTH, limit.id, IPC, stream_id
    )
    consumer = subscribe(env, replay_id, stream_id)
    consumer.until(lambda: consumer.ended, "the replay to end at its length")
    assert consumer.received == list(range(2, 10))
    with pytest.raises(ArchiveError, match="limit counter id"):
        env.client.start_bounded_replay(recording_id, 0, -1, 1 << 30, IPC, stream_id)
    limit.close()


# -- by time and by count --------------------------------------------------------------------------------------


def test_replay_from_time_starts_at_the_first_message_recorded_after_it(env: Env) -> None:
    recording_id, publication = start_recording(env)
    publish(publication, 0, 10)
    time.sleep(0.3)
    middle = time.time_ns()
    time.sleep(0.05)
    publish(publication, 10, 10)
    stop(env, recording_id, publication)
    stream_id = next(env.stream_ids)
    consumer = Consumer(
        env.client.replay(recording_id, from_time=middle, replay_channel=IPC, replay_stream_id=stream_id)
    )
    consumer.until(lambda: consumer.ended, "the replay from a time")
    assert consumer.received == list(range(10, 20))
    assert env.client.lookup_position_by_time(recording_id, 0) == 0


def test_replay_last_gives_exactly_the_last_n_messages(env: Env) -> None:
    recording_id, publication = start_recording(env)
    for i in range(60):  # every 7th message is fragmented (3 frames), so counting frames would be wrong
        length = 3000 if i % 7 == 3 else MESSAGE_LENGTH
        data = message(i, length)
        wait_for(lambda d=data: publication.offer(d) > 0, 10, f"offer of message {i}")
    stop(env, recording_id, publication)
    for n in (1, 7, 25, 60, 80):
        stream_id = next(env.stream_ids)
        consumer = Consumer(env.client.replay_last(recording_id, n, IPC, stream_id))
        consumer.until(lambda c=consumer: c.ended, f"the last {n}")
        assert consumer.received == list(range(max(60 - n, 0), 60)), n
    # Without its index the archive rebuilds it by a scan: counts come back, times do not.
    expected = env.client.lookup_position_of_last(recording_id, 25)
    index_path(Path(env.archive.ctx.archive_dir), recording_id).unlink()
    assert env.client.lookup_position_of_last(recording_id, 25) == expected
    with pytest.raises(ArchiveError, match="no recorded times"):
        env.client.lookup_position_by_time(recording_id, time.time_ns())


# -- paced replay ----------------------------------------------------------------------------------------------

PACED_MESSAGES = 21
PACED_INTERVAL_S = 0.1  # a 2.0 s recorded span


def record_on_schedule(env: Env) -> tuple[int, int, float]:
    """(recording id, stop position, recorded span in s): one message every PACED_INTERVAL_S."""
    recording_id, publication = start_recording(env)
    start = time.monotonic()
    for i in range(PACED_MESSAGES):
        while time.monotonic() < start + i * PACED_INTERVAL_S:
            time.sleep(0.001)
        if i == 0:
            first = time.monotonic()
        publish(publication, i, 1)
    span = time.monotonic() - first
    return recording_id, stop(env, recording_id, publication), span


def paced(env: Env, recording_id: int, length: int, rate: float, repeat: int = 1) -> Consumer:
    stream_id = next(env.stream_ids)
    replay_id = env.client.start_paced_replay(
        recording_id, 0, length, IPC, stream_id, rate=rate, repeat=repeat
    )
    consumer = subscribe(env, replay_id, stream_id)
    consumer.until(lambda: consumer.ended, f"the paced replay at x{rate}", timeout_s=20)
    return consumer


def test_paced_replay_keeps_the_recorded_timing_times_the_rate(env: Env) -> None:
    recording_id, stop_position, recorded_span = record_on_schedule(
        env
    )  # as published (a busy machine is late)
    for rate in (2.0, 0.5):
        consumer = paced(env, recording_id, stop_position, rate)
        assert consumer.received == list(range(PACED_MESSAGES))
        span = consumer.times[-1] - consumer.times[0]
        assert abs(span - recorded_span / rate) <= 0.1 * recorded_span / rate, (rate, span)
    consumer = paced(env, recording_id, stop_position, 4.0, repeat=3)
    assert consumer.received == list(range(PACED_MESSAGES)) * 3
    with pytest.raises(ValueError, match="rate must be positive"):
        env.client.start_paced_replay(recording_id, 0, stop_position, IPC, 1, rate=0)


def test_idle_gaps_are_cut_to_the_cap(env: Env) -> None:
    recording_id, publication = start_recording(env)
    publish(publication, 0, 3)
    time.sleep(1.0)
    publish(publication, 3, 3)
    stop_position = stop(env, recording_id, publication)
    stream_id = next(env.stream_ids)
    replay_id = env.client.start_paced_replay(
        recording_id, 0, stop_position, IPC, stream_id, rate=1.0, max_idle_gap_ns=100_000_000
    )
    consumer = subscribe(env, replay_id, stream_id)
    consumer.until(lambda: consumer.ended, "the capped replay")
    assert consumer.received == list(range(6))
    assert consumer.times[-1] - consumer.times[0] < 0.5


# -- credit ----------------------------------------------------------------------------------------------------


def test_credit_replay_waits_for_the_consumers_grants(env: Env) -> None:
    recording_id, stop_position = record(env, 40)
    stream_id = next(env.stream_ids)
    replay_id = env.client.start_credit_replay(
        recording_id, 0, stop_position, IPC, stream_id, 5 * FRAME_LENGTH
    )
    consumer = subscribe(env, replay_id, stream_id)
    consumer.until(lambda: len(consumer.received) >= 5, "the first credit")
    consumer.settle(0.2)
    assert consumer.received == list(range(5))
    env.client.grant_replay_credit(replay_id, 20 * FRAME_LENGTH)
    consumer.until(lambda: len(consumer.received) >= 20, "the second credit")
    env.client.grant_replay_credit(replay_id, 10 * FRAME_LENGTH)  # backwards: ignored
    consumer.settle(0.2)
    assert consumer.received == list(range(20))
    env.client.grant_replay_credit(replay_id, stop_position)
    consumer.until(lambda: consumer.ended, "the replay to end")
    assert consumer.received == list(range(40))
    with pytest.raises(ArchiveError, match="replay session not known"):
        env.client.grant_replay_credit(12345, 0)


# -- the wire --------------------------------------------------------------------------------------------------


def test_bounded_replay_request_has_the_later_aeron_layout() -> None:
    """Template 18, block length 48: controlSessionId, correlationId, recordingId, position, length (i64),
    limitCounterId, replayStreamId (i32), replayChannel (u32 length + ASCII) (docs/archive.md section 18)."""
    request = BoundedReplayRequest(1, 2, 3, 4, 5, 6, 7, "aeron:ipc")
    expected = struct.pack("<HHHH", 48, 18, 101, 0) + struct.pack("<qqqqqii", 1, 2, 3, 4, 5, 6, 7)
    expected += struct.pack("<I", 9) + b"aeron:ipc"
    assert encode(request) == expected
    # A later client sends its schema version (2 in the release that added it): decoded all the same.
    later = bytearray(expected)
    struct.pack_into("<H", later, 6, 2)
    assert decode(bytes(later), 0, len(later)) == request


# -- a 1.15.1 client alongside ---------------------------------------------------------------------------------


@pytest.mark.interop
@pytest.mark.slow
def test_a_1_15_1_client_alongside_an_extension_user_sees_nothing_unexpected(
    env: Env, archive_java: Any
) -> None:
    ctx = env.client_context
    record(env, 5)  # recording 0, which the bystander asks about
    bystander = archive_java.spawn(
        "ArchiveBystander",
        props={
            "aeron.dir": str(env.driver.aeron_dir),
            "aeron.archive.control.channel": ctx.control_request_channel,
            # Its own response stream, as a 1.15.1 client beside other sessions needs: sharing one, its poller
            # loses answers (docs/archive.md section 12; tests/archive/test_shared_response_stream.py).
            "aeron.archive.control.response.channel": f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}",
            "aeron.archive.control.response.stream.id": ctx.control_response_stream_id,
            "bystander.duration.ms": 6000,
            "bystander.interval.ms": 100,
        },
    )
    try:
        bystander.read_until("BYSTANDER CONNECTED", 30)
        recording_id, publication = start_recording(env)
        publish(publication, 0, 10)
        time.sleep(0.2)  # recorded (the recorder's time) before the middle
        middle = time.time_ns()
        time.sleep(0.05)
        publish(publication, 10, 10)
        stop_position = stop(env, recording_id, publication)
        limit = env.aeron.add_counter(1001, "replay limit")
        limit.set(stop_position)
        stream_id = next(env.stream_ids)
        consumer = subscribe(
            env, env.client.start_bounded_replay(recording_id, 0, -1, limit.id, IPC, stream_id), stream_id
        )
        consumer.until(lambda: len(consumer.received) == 20, "the bounded replay")
        limit.close()
        assert env.client.lookup_position_by_time(recording_id, middle) == 10 * FRAME_LENGTH
        assert env.client.lookup_position_of_last(recording_id, 3) == 17 * FRAME_LENGTH
        paced(env, recording_id, stop_position, 4.0, repeat=2)
        stream_id = next(env.stream_ids)
        replay_id = env.client.start_credit_replay(
            recording_id, 0, stop_position, IPC, stream_id, FRAME_LENGTH
        )
        credit = subscribe(env, replay_id, stream_id)
        env.client.grant_replay_credit(replay_id, stop_position)
        credit.until(lambda: credit.ended, "the credit replay")
        with pytest.raises(ArchiveError):  # an ERROR for our session goes by the bystander too
            env.client.grant_replay_credit(12345, 0)
        lines = bystander.read_until(r"BYSTANDER (OK|FAIL)", 30)
        assert any(line.startswith("BYSTANDER OK") for line in lines), lines
        assert bystander.wait(10) == 0
    finally:
        bystander.stop()
