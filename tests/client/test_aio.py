"""The asyncio helpers under both asyncio and uvloop: awaited offers and ``async for`` over messages."""

from __future__ import annotations

import asyncio

import pytest
import uvloop

from driver.client import Aeron, Message, PublicationClosedError


@pytest.fixture(params=["asyncio", "uvloop"])
def loop(request):
    loop = uvloop.new_event_loop() if request.param == "uvloop" else asyncio.new_event_loop()
    errors: list[dict] = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    yield loop
    loop.close()
    assert errors == [], errors


def test_offer_async_waits_out_back_pressure_and_messages_iterates(embedded_driver, loop) -> None:
    driver = embedded_driver()

    async def main() -> list[Message]:
        with Aeron.connect(aeron_dir=driver.aeron_dir) as aeron:
            subscription = await aeron.add_subscription_async("aeron:ipc?term-length=64k", 77)
            publication = await aeron.add_publication_async("aeron:ipc?term-length=64k", 77)
            count = 2000  # ~3 terms: the publisher must wait for the reader several times

            async def produce() -> None:
                for i in range(count):
                    await publication.offer_async(i.to_bytes(4, "little") * 20, timeout_s=10)

            received: list[Message] = []

            async def consume() -> None:
                async for message in subscription.messages():
                    received.append(message)
                    if len(received) == count:
                        return

            await asyncio.wait_for(asyncio.gather(produce(), consume()), 30)
            publication.close()
            with pytest.raises(PublicationClosedError):
                await publication.offer_async(b"closed")
            subscription.close()
            return received

    received = loop.run_until_complete(main())
    assert [int.from_bytes(m.data[:4], "little") for m in received] == list(range(2000))
    assert received[-1].position == 2000 * 128  # 80-byte payload + 32-byte header
