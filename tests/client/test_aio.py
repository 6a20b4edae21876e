"""The asyncio helpers under both asyncio and uvloop: awaited offers and ``async for`` over messages."""

from __future__ import annotations

import asyncio
import time

import pytest
import uvloop

from driver.client import Aeron, Message, PublicationClosedError, aio


@pytest.fixture(params=["asyncio", "uvloop"])
def loop(request):
    loop = uvloop.new_event_loop() if request.param == "uvloop" else asyncio.new_event_loop()
    errors: list[dict] = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    yield loop
    loop.close()
    assert errors == [], errors


def frame_bytes(length: int, max_payload: int = 1408 - 32) -> int:
    """Bytes a message of ``length`` takes in the log: each fragment's header + payload, 32-byte aligned."""
    chunks = [max_payload] * (length // max_payload) + (
        [length % max_payload] if length % max_payload else []
    )
    return sum((chunk + 32 + 31) & ~31 for chunk in chunks or [0])


def payload(i: int) -> bytes:
    # Every 7th message is fragmented (3 frames at the default MTU), so whole and fragmented ones interleave.
    return i.to_bytes(4, "little") * (750 if i % 7 == 3 else 20)


def test_offer_async_waits_out_back_pressure_and_messages_iterates(
    embedded_driver, loop, client_path
) -> None:
    driver = embedded_driver()

    async def main() -> list[Message]:
        with Aeron.connect(aeron_dir=driver.aeron_dir) as aeron:
            subscription = await aeron.add_subscription_async("aeron:ipc?term-length=64k", 77)
            publication = await aeron.add_publication_async("aeron:ipc?term-length=64k", 77)
            count = 2000  # ~6 terms: the publisher must wait for the reader several times

            async def produce() -> None:
                for i in range(count):
                    await publication.offer_async(payload(i), timeout_s=10)

            received: list[Message] = []

            async def consume() -> None:
                async for message in subscription.messages():
                    received.append(message)
                    if len(received) == count:
                        return

            await asyncio.wait_for(asyncio.gather(produce(), consume()), 30)
            assert {(m.session_id, m.stream_id, m.reserved_value) for m in received} == {
                (publication.session_id, 77, 0)
            }
            publication.close()
            with pytest.raises(PublicationClosedError):
                await publication.offer_async(b"closed")
            subscription.close()
            return received

    received = loop.run_until_complete(main())
    assert [m.data for m in received] == [payload(i) for i in range(2000)]
    positions, position = [], 0
    for i in range(2000):
        needed = frame_bytes(len(payload(i)))
        if position % 65536 + needed > 65536:
            position += 65536 - position % 65536  # padding: a message never crosses a term's end
        position += needed
        positions.append(position)
    assert [m.position for m in received] == positions


def test_messages_ends_when_the_subscription_closes_and_lets_other_tasks_run(
    embedded_driver, loop, client_path
) -> None:
    driver = embedded_driver()

    async def main() -> tuple[int, int]:
        with Aeron.connect(aeron_dir=driver.aeron_dir) as aeron:
            subscription = await aeron.add_subscription_async("aeron:ipc", 78)
            publication = await aeron.add_publication_async("aeron:ipc", 78)
            for i in range(1000):
                await publication.offer_async(payload(i), timeout_s=10)
            ticks = 0
            received = 0

            async def tick() -> None:
                nonlocal ticks
                while True:
                    ticks += 1
                    await asyncio.sleep(0)

            ticker = asyncio.ensure_future(tick())
            async for _message in subscription.messages(fragment_limit=16):
                received += 1
                if received == 1000:
                    subscription.close()  # the iteration ends at its next poll
            ticker.cancel()
            return received, ticks

    received, ticks = loop.run_until_complete(main())
    assert received == 1000
    assert ticks >= 1000 // 16 // 2  # the loop ran other tasks between polls, not once at the end


def test_offer_async_is_an_awaitable_for_every_asyncio_helper(embedded_driver, loop, client_path) -> None:
    """An offer that goes at once is awaited without a coroutine on the fast path: it still works with
    ``wait_for``, ``ensure_future`` and ``gather``, and gives the position each message ended at."""
    driver = embedded_driver()

    async def main() -> list[int]:
        with Aeron.connect(aeron_dir=driver.aeron_dir) as aeron:
            subscription = await aeron.add_subscription_async("aeron:ipc", 79)
            publication = await aeron.add_publication_async("aeron:ipc", 79)
            positions = [await asyncio.wait_for(publication.offer_async(b"a" * 32), 5)]
            positions.append(await asyncio.ensure_future(publication.offer_async(b"b" * 32)))
            positions += await asyncio.gather(
                publication.offer_async(b"c" * 32), publication.offer_async(b"d" * 32, timeout_s=5)
            )
            subscription.close()
            return positions

    assert loop.run_until_complete(main()) == [64, 128, 192, 256]


def test_messages_the_loop_keeps_never_change(embedded_driver, loop, client_path) -> None:
    """On the fast path the messages of a poll that the loop let go are rewritten as later ones (their bytes,
    hash and position included); the messages it keeps stay as they were."""
    driver = embedded_driver()
    count = 3000

    def expected(i: int) -> bytes:
        return i.to_bytes(4, "little") * 20  # one size: every message can take a let-go one's place

    async def main() -> list[tuple[Message, str, str]]:
        with Aeron.connect(aeron_dir=driver.aeron_dir) as aeron:
            subscription = await aeron.add_subscription_async("aeron:ipc?term-length=64k", 78)
            publication = await aeron.add_publication_async("aeron:ipc?term-length=64k", 78)
            kept: list[tuple[Message, str, str]] = []

            async def produce() -> None:
                for i in range(count):
                    await publication.offer_async(expected(i), timeout_s=10)

            async def consume() -> None:
                i = 0
                async for message in subscription.messages():
                    assert message.data == expected(i) and hash(message.data) == hash(expected(i))
                    if i % 3 == 0:
                        kept.append((message, message.data.hex(), str(message.position)))
                    i += 1
                    if i == count:
                        return

            await asyncio.wait_for(asyncio.gather(produce(), consume()), 30)
            subscription.close()
            return kept

    kept = loop.run_until_complete(main())
    assert [m.data for m, _, _ in kept] == [expected(i) for i in range(0, count, 3)]
    assert all(m.data.hex() == data and str(m.position) == position for m, data, position in kept)
    assert [m.position for m, _, _ in kept] == sorted({m.position for m, _, _ in kept})


def test_batches_hand_over_a_poll_per_await_and_offer_many_waits_out_back_pressure(
    embedded_driver, loop, client_path
) -> None:
    """``aio.offer_many`` offers every message through a full log; ``subscription.batches()`` hands over each
    poll's messages as a list the caller keeps (later polls never change it), in order."""
    driver = embedded_driver()
    count = 3000

    async def main() -> list[list[Message]]:
        with Aeron.connect(aeron_dir=driver.aeron_dir) as aeron:
            subscription = await aeron.add_subscription_async("aeron:ipc?term-length=64k", 80)
            publication = await aeron.add_publication_async("aeron:ipc?term-length=64k", 80)

            async def produce() -> None:
                for start in range(0, count, 100):
                    assert (
                        await aio.offer_many(publication, [payload(i) for i in range(start, start + 100)])
                        == 100
                    )

            kept: list[list[Message]] = []

            async def consume() -> None:
                taken = 0
                async for batch in subscription.batches(fragment_limit=64):
                    kept.append(batch)
                    taken += len(batch)
                    if taken == count:
                        return

            await asyncio.wait_for(asyncio.gather(produce(), consume()), 30)
            subscription.close()
            return kept

    kept = loop.run_until_complete(main())
    assert len(kept) > 1
    assert [m.data for batch in kept for m in batch] == [payload(i) for i in range(count)]


def test_fragment_batches_are_zero_copy_views_of_every_fragment(embedded_driver, loop, client_path) -> None:
    driver = embedded_driver()
    count = 500

    async def main() -> list[bytes]:
        with Aeron.connect(aeron_dir=driver.aeron_dir) as aeron:
            subscription = await aeron.add_subscription_async("aeron:ipc", 81)
            publication = await aeron.add_publication_async("aeron:ipc", 81)
            for i in range(count):
                await publication.offer_async(i.to_bytes(8, "little"), timeout_s=10)
            seen: list[bytes] = []
            async for batch in subscription.fragment_batches():
                for offset, length in zip(batch.offsets, batch.lengths, strict=True):
                    seen.append(bytes(batch.buffer[offset : offset + length]))
                if len(seen) == count:
                    break
            subscription.close()
            return seen

    assert loop.run_until_complete(main()) == [i.to_bytes(8, "little") for i in range(count)]


def test_aio_run_is_uvloop_and_an_awaited_value_someone_holds_is_never_rewritten(
    embedded_driver, client_path
) -> None:
    """``aio.run`` runs on uvloop. An awaited offer finishes with a StopIteration the fast path keeps for the
    next one while nobody else holds it: one a caller caught (driving the awaitable by hand) keeps its value."""
    driver = embedded_driver()

    async def main() -> tuple[bool, int, list[int]]:
        with Aeron.connect(aeron_dir=driver.aeron_dir) as aeron:
            subscription = await aeron.add_subscription_async("aeron:ipc", 82)
            publication = await aeron.add_publication_async("aeron:ipc", 82)
            awaitable = publication.offer_async(b"x" * 32)
            try:
                next(awaitable.__await__())
                raise AssertionError("an offer that went at once finishes at its first step")
            except StopIteration as caught:
                held = caught
            later = [await publication.offer_async(b"y" * 32) for _ in range(3)]
            subscription.close()
            return isinstance(asyncio.get_running_loop(), uvloop.Loop), held.value, later

    on_uvloop, first, later = aio.run(main())
    assert on_uvloop
    assert (first, later) == (64, [128, 192, 256])


def test_messages_follow_the_images_as_they_come_and_go(embedded_driver, loop, client_path) -> None:
    """With one image ``messages()`` polls it straight from C; with two it takes the subscription's round robin,
    and back to one image the C poll again: every message of each session arrives once, in order, fragmented
    ones reassembled, whichever way it was polled."""
    driver = embedded_driver()
    channel = "aeron:ipc?term-length=64k"

    async def main() -> dict[int, list[bytes]]:
        with Aeron.connect(aeron_dir=driver.aeron_dir) as aeron:
            subscription = await aeron.add_subscription_async(channel, 83)
            first = await aeron.add_exclusive_publication_async(channel, 83)
            received: dict[int, list[bytes]] = {}
            stream = subscription.messages(fragment_limit=8)

            async def take(count: int) -> None:
                async for message in stream:
                    received.setdefault(message.session_id, []).append(message.data)
                    count -= 1
                    if count == 0:
                        return

            async def images(count: int) -> None:
                while len(subscription.images) != count:
                    await asyncio.sleep(0.001)

            await images(1)
            for i in range(100):
                await first.offer_async(payload(i), timeout_s=10)
            await take(100)
            second = await aeron.add_exclusive_publication_async(channel, 83)
            await asyncio.wait_for(images(2), 10)
            for i in range(100, 200):
                await first.offer_async(payload(i), timeout_s=10)
                await second.offer_async(payload(i), timeout_s=10)
            await take(200)
            second.close()
            await asyncio.wait_for(images(1), 20)
            for i in range(200, 300):
                await first.offer_async(payload(i), timeout_s=10)
            await take(100)
            subscription.close()
            return {session: received[session] for session in (first.session_id, second.session_id)}

    received = loop.run_until_complete(main())
    first_session, second_session = received.values()
    assert first_session == [payload(i) for i in range(300)]
    assert second_session == [payload(i) for i in range(100, 200)]


def test_waiting_for_back_pressure_or_data_does_not_spin_the_loop(embedded_driver, loop, client_path) -> None:
    """A back-pressured ``offer_async`` and a ``messages()`` with nothing to read wait on the loop's timers: over
    0.3 s the loop's thread uses a small part of its time (a spinning wait would use all of it), and each resumes
    once the subscriber drains or a message comes."""
    driver = embedded_driver()
    idle_s = 0.3

    async def main() -> tuple[float, float, int, bytes]:
        with Aeron.connect(aeron_dir=driver.aeron_dir) as aeron:
            subscription = await aeron.add_subscription_async("aeron:ipc?term-length=64k", 84)
            publication = await aeron.add_publication_async("aeron:ipc?term-length=64k", 84)
            sent = 0
            while publication.offer(b"x" * 1000) > 0:  # up to the window: the next offer waits
                sent += 1
            waiting = asyncio.ensure_future(publication.offer_async(b"last", timeout_s=20))
            cpu = time.thread_time()
            await asyncio.sleep(idle_s)
            offer_cpu = time.thread_time() - cpu
            assert not waiting.done()
            drained = 0

            def count(*_args) -> None:
                nonlocal drained
                drained += 1

            while not waiting.done():  # drain: the offer goes once the window moves
                subscription.poll(count, 64)
                await asyncio.sleep(0)
            await waiting
            while drained < sent + 1:  # and the waiting one
                subscription.poll(count, 64)
                await asyncio.sleep(0)

            stream = subscription.messages()
            reader = asyncio.ensure_future(stream.__anext__())
            cpu = time.thread_time()
            await asyncio.sleep(idle_s)
            data_cpu = time.thread_time() - cpu
            assert not reader.done()
            await publication.offer_async(b"wake", timeout_s=10)
            message = await asyncio.wait_for(reader, 10)
            subscription.close()
            return offer_cpu, data_cpu, drained - sent, message.data

    offer_cpu, data_cpu, after_window, data = loop.run_until_complete(main())
    assert after_window == 1
    assert offer_cpu < idle_s / 3, offer_cpu
    assert data_cpu < idle_s / 3, data_cpu
    assert data == b"wake"
