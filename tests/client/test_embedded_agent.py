"""Acceptance: a user's agent built on the non-blocking client runs on the driver's own loop and publishes and
receives (IPC and UDP) with no deadlock, SHARED (the driver's runners and the user's AgentRunner on one loop)
and INVOKER (one task calls the driver's duty cycles, the client's and the user's in turn)."""

from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path

import pytest
import uvloop

from driver.agent.runner import AgentRunner, CompositeAgent
from driver.client import Aeron, ExclusivePublication, FragmentAssembler, Subscription
from driver.concurrent.logbuffer.header import Header
from driver.context import DriverContext
from driver.media_driver import MediaDriver

MESSAGES = 300
DEADLINE_S = 20.0


@pytest.fixture(params=["asyncio", "uvloop"])
def loop(request):
    loop = uvloop.new_event_loop() if request.param == "uvloop" else asyncio.new_event_loop()
    errors: list[dict] = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    yield loop
    loop.close()
    assert errors == [], errors


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def channel_for(media: str) -> str:
    if media == "ipc":
        return "aeron:ipc?term-length=64k"
    return f"aeron:udp?endpoint=127.0.0.1:{free_udp_port()}|term-length=64k"


class EchoAgent:
    """Registers without blocking, then offers numbered messages and reads them back; never waits."""

    role_name = "user-echo"

    def __init__(self, aeron: Aeron, channel: str, stream_id: int, count: int) -> None:
        self.aeron = aeron
        self.channel = channel
        self.stream_id = stream_id
        self.count = count
        self.publication: ExclusivePublication | None = None
        self.subscription: Subscription | None = None
        self.sent = 0
        self.received: list[int] = []
        self.sources: set[str] = set()
        self._assembler = FragmentAssembler(self._on_message)

    def on_start(self) -> None:
        self._subscription_id = self.aeron.async_add_subscription(self.channel, self.stream_id)
        self._publication_id = self.aeron.async_add_exclusive_publication(self.channel, self.stream_id)

    def do_work(self) -> int:
        if self.subscription is None:
            self.subscription = self.aeron.get_subscription(self._subscription_id)
        if self.publication is None:
            self.publication = self.aeron.get_exclusive_publication(self._publication_id)
        if self.subscription is None or self.publication is None:
            return 0
        work = 0
        if self.sent < self.count and self.publication.offer(self.sent.to_bytes(4, "little") * 16) > 0:
            self.sent += 1
            work += 1
        return work + self.subscription.poll(self._assembler, 10)

    def _on_message(self, buffer, offset: int, length: int, _header: Header) -> None:
        self.received.append(int.from_bytes(buffer.get_bytes(offset, 4), "little"))

    @property
    def done(self) -> bool:
        return len(self.received) >= self.count

    def on_close(self) -> None:
        # Non-blocking removals: the client's duty cycle (or nobody, once it closes) takes the answers.
        if self.publication is not None:
            self.publication.close()
        if self.subscription is not None:
            self.sources = {image.source_identity for image in self.subscription.images}
            self.subscription.close()


async def run_shared(aeron_dir: Path, channel: str) -> EchoAgent:
    driver = MediaDriver(DriverContext(aeron_dir=str(aeron_dir)))
    driver_task = asyncio.create_task(driver.run())
    errors: list[BaseException] = []
    try:
        aeron = Aeron.connect(aeron_dir=aeron_dir, timeout_s=1, use_conductor_agent_invoker=True)
        user = EchoAgent(aeron, channel, 4001, MESSAGES)
        runner = AgentRunner(
            CompositeAgent([aeron.conductor_agent_invoker, user]), error_handler=errors.append
        )
        runner.start()
        try:
            deadline = time.monotonic() + DEADLINE_S
            while not user.done and time.monotonic() < deadline and not driver_task.done():
                await asyncio.sleep(0.005)
        finally:
            runner.stop()
            await runner.join()
        assert aeron.is_closed  # the client agent's on_close closed the client
    finally:
        driver.request_stop()
        await asyncio.wait_for(driver_task, 10)
        driver.close()
    assert errors == []
    return user


async def run_invoker(aeron_dir: Path, channel: str) -> EchoAgent:
    driver = MediaDriver(DriverContext(aeron_dir=str(aeron_dir), threading_mode="INVOKER"))
    invoker = driver.invoker
    assert invoker is not None
    invoker.start()
    try:
        aeron = Aeron.connect(aeron_dir=aeron_dir, timeout_s=1, use_conductor_agent_invoker=True)
        client = aeron.conductor_agent_invoker
        user = EchoAgent(aeron, channel, 4002, MESSAGES)
        client.on_start()
        user.on_start()
        deadline = time.monotonic() + DEADLINE_S
        while not user.done and time.monotonic() < deadline:
            invoker.invoke()
            client.do_work()
            user.do_work()
            await asyncio.sleep(0)
        user.on_close()
        for _ in range(10):  # let the driver and the client take the removals
            invoker.invoke()
            client.do_work()
        assert aeron.conductor._pending == {}
        client.on_close()
    finally:
        driver.close()  # closes the invoker (the agents' on_close) first
    return user


@pytest.mark.parametrize("media", ["ipc", "udp"])
@pytest.mark.parametrize("mode", ["shared", "invoker"])
def test_user_agent_publishes_and_receives_on_the_drivers_loop(
    aeron_dir: Path, loop: asyncio.AbstractEventLoop, mode: str, media: str
) -> None:
    run = run_shared if mode == "shared" else run_invoker
    channel = channel_for(media)
    user = loop.run_until_complete(asyncio.wait_for(run(aeron_dir, channel), DEADLINE_S + 15))
    assert user.received == list(range(MESSAGES))
    # An IPC image names the channel; a UDP image the sender's address: the data really crossed UDP.
    if media == "ipc":
        assert user.sources == {channel}
    else:
        assert len(user.sources) == 1 and user.sources.pop().startswith("127.0.0.1:")


def test_awaited_registrations_in_agent_mode_do_not_block_the_drivers_loop(
    aeron_dir: Path, loop: asyncio.AbstractEventLoop
) -> None:
    async def main() -> bytes:
        driver = MediaDriver(DriverContext(aeron_dir=str(aeron_dir)))
        driver_task = asyncio.create_task(driver.run())
        try:
            aeron = Aeron.connect(aeron_dir=aeron_dir, timeout_s=1, use_conductor_agent_invoker=True)
            runner = AgentRunner(aeron.conductor_agent_invoker)
            runner.start()
            try:
                subscription = await aeron.add_subscription_async("aeron:ipc", 4003)
                publication = await aeron.add_publication_async("aeron:ipc", 4003)
                await publication.offer_async(b"awaited", timeout_s=5)
                async for message in subscription.messages():
                    return message.data
            finally:
                runner.stop()
                await runner.join()
        finally:
            driver.request_stop()
            await asyncio.wait_for(driver_task, 10)
            driver.close()
        raise AssertionError("subscription closed before a message arrived")

    assert loop.run_until_complete(asyncio.wait_for(main(), 15)) == b"awaited"
