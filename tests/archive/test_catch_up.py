"""Catch-up then live on one host (docs/archive.md section 17): our archive on an embedded driver records an IPC
publication; ``archive.resume`` replays its history up to the live join and then delivers live, every message
once and in order, while the publisher keeps publishing. Also the typed failures: history that does not reach
back (a recording that began later, no recording at all) and a live buffer that overflows."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from driver.archive.archive_context import ArchiveContext
from driver.archive.client import (
    AeronArchive,
    CatchUp,
    CatchUpState,
    HistoryUnavailable,
    LiveBufferOverflow,
    channel_fragment,
)
from driver.archive.client.archive_requests import PolledArchive
from driver.archive.codecs import SourceLocation
from driver.archive_launcher import connect_embedded
from driver.client import Aeron, ExclusivePublication, Subscription
from driver.client.aio import Message
from tests.support import EmbeddedDriver, free_port, new_aeron_dir, wait_for

TERM_LENGTH = 1024 * 1024
FRAME = 64  # 8-byte messages: 40-byte frames, aligned to 64


@dataclass
class Env:
    aeron: Aeron
    archive: AeronArchive


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    ctx = ArchiveContext(
        archive_dir=str(tmp_path / "archive"),
        control_channel=f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}",
        recording_events_channel=f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}",
        threading_mode="SHARED",
    )
    aeron_dir = new_aeron_dir(tmp_path)
    driver = EmbeddedDriver(
        aeron_dir,
        on_created=lambda d: connect_embedded(d, ctx),
        term_buffer_length=TERM_LENGTH,
        ipc_term_buffer_length=TERM_LENGTH,
        spies_simulate_connection=True,  # a UDP publication nobody receives, spied on by archive and consumer
    )
    aeron = Aeron.connect(aeron_dir)
    archive = AeronArchive.connect(
        aeron,
        control_request_channel=ctx.control_channel,
        control_response_channel=f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}",
    )
    try:
        yield Env(aeron, archive)
    finally:
        archive.close()
        aeron.close()
        driver.close()
        driver.attached.close()


def publish(publication: ExclusivePublication, first: int, count: int) -> None:
    for i in range(first, first + count):
        data = i.to_bytes(8, "little")
        while publication.offer(data) < 0:
            time.sleep(0)


def recorded(env: Env, channel: str, stream_id: int) -> tuple[ExclusivePublication, int]:
    """A publication on ``channel`` being recorded (LOCAL: a UDP one through a spy); (the publication, its
    recording id)."""
    publication = env.aeron.add_exclusive_publication(channel, stream_id)
    env.archive.start_recording(channel, stream_id, SourceLocation.LOCAL)
    found: list[int] = []
    media = channel.split("?")[0]

    def started() -> bool:
        found[:] = [d.recording_id for d in env.archive.list_recordings_for_uri(0, 10, media, stream_id)]
        return bool(found)

    wait_for(started, 10, "the recording")
    return publication, found[-1]


def test_one_million_messages_history_then_live_exactly_once_in_order(env: Env) -> None:
    stream_id, total, history = 4001, 1_000_000, 400_000
    publication, recording_id = recorded(env, "aeron:ipc", stream_id)
    t0 = time.monotonic()
    publish(publication, 0, history)
    print(f"history published in {time.monotonic() - t0:.1f} s")
    resume = env.archive.resume("aeron:ipc", stream_id, 0, fragment_limit=1024)

    async def produce() -> None:
        i = history
        while i < total:
            end = min(i + 512, total)
            while i < end:
                if publication.offer(i.to_bytes(8, "little")) > 0:
                    i += 1
                else:
                    await asyncio.sleep(0)
            await asyncio.sleep(0)

    async def consume() -> int:
        producer = asyncio.create_task(produce())
        expected = 0
        try:
            async with asyncio.timeout(
                180
            ):  # a hang guard, not a speed check (25-30 s when the machine is calm)
                async for message in resume:
                    value = int.from_bytes(message.data, "little")
                    assert value == expected, (
                        f"got {value}, expected {expected}: a gap, a duplicate or reordering"
                    )
                    assert message.position == (value + 1) * FRAME
                    expected += 1
                    if expected == total:
                        break
            await producer
        finally:
            producer.cancel()
        return expected

    started = time.monotonic()
    assert asyncio.run(consume()) == total
    elapsed = time.monotonic() - started
    catch_up = resume.catch_up
    assert catch_up is not None and catch_up.state is CatchUpState.CLOSED
    states = [e.state for e in catch_up.trace if e.action == "enter"]
    assert states[:6] == [
        CatchUpState.AWAIT_LIVE,
        CatchUpState.FIND_RECORDING,
        CatchUpState.DESCRIBE_RECORDING,
        CatchUpState.START_REPLAY,
        CatchUpState.REPLAY,
        CatchUpState.LIVE,
    ]
    assert catch_up.recording_id == recording_id
    assert 0 < catch_up.join_position < total * FRAME  # some history replayed, some live held
    print(
        f"resume: {total} messages in {elapsed:.1f} s, join at {catch_up.join_position // FRAME}, "
        f"live held at most {catch_up.max_buffered_seen} bytes"
    )
    publication.close()


def test_spy_on_a_udp_publication_history_then_live(env: Env) -> None:
    stream_id, history, total = 4005, 20_000, 40_000
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}"
    publication, recording_id = recorded(env, channel, stream_id)
    publish(publication, 0, history)
    resume = env.archive.resume(f"aeron-spy:{channel}", stream_id, 0)

    async def publish_live() -> None:
        # Its own task: a consumer that waited for a message its own failed offer never sent would hang.
        i = history
        while i < total:
            if publication.offer(i.to_bytes(8, "little")) > 0:
                i += 1
                if i % 64:
                    continue
            await asyncio.sleep(0.0005)

    async def consume() -> list[int]:
        values: list[int] = []
        async with asyncio.timeout(60):
            iterator = resume.__aiter__()
            values.append(int.from_bytes((await anext(iterator)).data, "little"))
            publisher = asyncio.create_task(publish_live())
            while len(values) < total:
                message = await anext(iterator)
                values.append(int.from_bytes(message.data, "little"))
            await publisher
            await iterator.aclose()  # type: ignore[attr-defined]
        return values

    assert asyncio.run(consume()) == list(range(total))
    catch_up = resume.catch_up
    assert catch_up is not None and catch_up.recording_id == recording_id
    assert CatchUpState.REPLAY in [e.state for e in catch_up.trace]
    assert 0 < catch_up.join_position < total * FRAME
    publication.close()


def live_joined_at(env: Env, stream_id: int, position: int) -> Subscription:
    """A live subscription whose image joined at ``position``: an IPC subscriber joins where the furthest
    consumer is as the driver's conductor last saw it, so a subscription made too early is made again."""
    made: list[Subscription] = []

    def joined() -> bool:
        if made and made[-1].images:
            if made[-1].images[0].join_position == position:
                return True
            made.pop().close()
        if not made:
            made.append(env.aeron.add_subscription("aeron:ipc", stream_id))
        return False

    wait_for(joined, 10, f"a live image joined at {position}")
    return made[0]


def poll_until(catch_up: CatchUp, received: list[Message], state: CatchUpState) -> None:
    wait_for(lambda: catch_up.poll(received.append) >= 0 and catch_up.state is state, 10, state.name)


def test_live_buffer_overflow_is_a_typed_error_after_an_in_order_prefix(env: Env) -> None:
    stream_id = 4002
    publication, _ = recorded(env, "aeron:ipc", stream_id)
    publish(publication, 0, 1000)
    live = live_joined_at(env, stream_id, publication.position)
    catch_up = CatchUp(
        live,
        PolledArchive(env.archive),
        env.aeron.add_subscription,
        0,
        channel_fragment=channel_fragment("aeron:ipc"),
        max_buffered_bytes=1024,
    )
    received: list[Message] = []
    # The live image is found on one poll; each of the three archive answers and every 64 replayed fragments
    # take one more: live published now is held for many polls.
    wait_for(lambda: catch_up.poll(received.append) >= 0 and catch_up.live_image is not None, 10, "live")
    assert catch_up.state is CatchUpState.FIND_RECORDING
    join = catch_up.join_position
    publish(publication, 1000, 200)  # 1600 bytes of live before the replay can have reached the join
    with pytest.raises(LiveBufferOverflow) as caught:
        wait_for(lambda: catch_up.poll(received.append) < 0, 10, "the overflow")
    assert caught.value.limit == 1024 and catch_up.state is CatchUpState.FAILED
    values = [int.from_bytes(m.data, "little") for m in received]
    assert values == list(range(len(values))) and len(values) <= join // FRAME
    catch_up.close()
    live.close()


def test_history_from_before_the_recording_began_is_unavailable(env: Env) -> None:
    stream_id, start = 4003, 10560
    channel = f"aeron:ipc?init-term-id=7|term-id=7|term-offset={start}|term-length={TERM_LENGTH}"
    publication, _ = recorded(env, channel, stream_id)
    publish(publication, 0, 100)

    async def first_message() -> Message:
        async for message in env.archive.resume("aeron:ipc", stream_id, 0):
            return message
        raise AssertionError("no message")

    with pytest.raises(HistoryUnavailable) as caught:
        asyncio.run(first_message())
    assert (caught.value.requested_position, caught.value.earliest_position) == (0, start)
    assert caught.value.state is CatchUpState.DESCRIBE_RECORDING

    # From the earliest position the error names, the whole stream.
    async def from_earliest() -> list[int]:
        values = []
        async for message in env.archive.resume("aeron:ipc", stream_id, caught.value.earliest_position):
            values.append(int.from_bytes(message.data, "little"))
            if len(values) == 100:
                return values
        return values

    assert asyncio.run(from_earliest()) == list(range(100))
    publication.close()


def test_a_stream_never_recorded_has_only_live_from_its_join(env: Env) -> None:
    stream_id, start = 4004, 10560
    channel = f"aeron:ipc?init-term-id=7|term-id=7|term-offset={start}|term-length={TERM_LENGTH}"
    publication = env.aeron.add_exclusive_publication(channel, stream_id)
    live = env.aeron.add_subscription("aeron:ipc", stream_id)
    catch_up = CatchUp(
        live, PolledArchive(env.archive), env.aeron.add_subscription, 0, channel_fragment="aeron:ipc"
    )
    received: list[Message] = []
    with pytest.raises(HistoryUnavailable) as caught:
        wait_for(lambda: catch_up.poll(received.append) < 0, 10, "the answer")
    assert caught.value.earliest_position == catch_up.join_position == start
    assert caught.value.state is CatchUpState.FIND_RECORDING
    # From there on: live only, no replay.
    later = CatchUp(
        live, PolledArchive(env.archive), env.aeron.add_subscription, start, channel_fragment="aeron:ipc"
    )
    poll_until(later, received, CatchUpState.LIVE)
    publish(publication, 0, 10)
    wait_for(lambda: later.poll(received.append) >= 0 and len(received) == 10, 10, "live")
    assert [int.from_bytes(m.data, "little") for m in received] == list(range(10))
    assert [m.position for m in received] == [start + (i + 1) * FRAME for i in range(10)]
    catch_up.close()
    later.close()
    live.close()
    publication.close()


def test_fragments_history_held_live_then_live_each_once_at_its_stream_position(env: Env) -> None:
    stream_id = 4005
    publication, _ = recorded(env, "aeron:ipc", stream_id)
    publish(publication, 0, 1000)
    live = live_joined_at(env, stream_id, publication.position)
    catch_up = CatchUp(
        live, PolledArchive(env.archive), env.aeron.add_subscription, 0, channel_fragment="aeron:ipc"
    )
    received: list[tuple[int, int]] = []

    def on_fragment(buffer: Any, offset: int, length: int, header: Any) -> None:
        received.append((int.from_bytes(buffer.get_bytes(offset, length), "little"), header.position))

    wait_for(
        lambda: catch_up.poll_fragments(on_fragment) >= 0 and catch_up.live_image is not None, 10, "live"
    )
    publish(publication, 1000, 200)  # live from the join on, copied while the history replays
    wait_for(
        lambda: catch_up.poll_fragments(on_fragment) >= 0 and len(received) == 1200, 10, "history, copies"
    )
    assert catch_up.state is CatchUpState.LIVE and catch_up.max_buffered_seen > 0
    publish(publication, 1200, 10)
    wait_for(lambda: catch_up.poll_fragments(on_fragment) >= 0 and len(received) == 1210, 10, "live")
    assert received == [(i, (i + 1) * FRAME) for i in range(1210)]
    assert catch_up.position == 1210 * FRAME and catch_up.buffered_bytes == 0
    catch_up.close()
    live.close()
    publication.close()
