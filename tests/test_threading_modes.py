"""Threading modes are what they say: the runners each mode makes, and an IPC and a UDP exchange through
the Python client under every mode (INVOKER: a task on the driver's loop calls ``driver.invoker``)."""

from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path

import pytest

from driver.agent.runner import CompositeAgent
from driver.client import Aeron
from driver.context import DriverContext
from driver.media_driver import DriverStartError, MediaDriver

MODES = ["DEDICATED", "SHARED", "SHARED_NETWORK", "INVOKER"]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def exchange(client: Aeron, channel: str, stream_id: int, count: int = 200, timeout_s: float = 20.0) -> None:
    """``count`` numbered messages from a publication to a subscription, every one in order."""
    subscription = client.add_subscription(channel, stream_id)
    publication = client.add_publication(channel, stream_id)
    received: list[int] = []

    def handler(buffer, offset: int, length: int, header) -> None:
        received.append(int.from_bytes(buffer.get_bytes(offset, length)[:4], "little"))

    deadline = time.monotonic() + timeout_s
    sent = 0
    while len(received) < count:
        assert time.monotonic() < deadline, f"mode exchange stalled: sent {sent}, received {len(received)}"
        if sent < count and publication.offer(sent.to_bytes(4, "little") * 8) > 0:
            sent += 1
        if subscription.poll(handler, 50) == 0:
            time.sleep(0.0002)
    assert received == list(range(count))
    publication.close()
    subscription.close()


@pytest.mark.parametrize("mode", MODES)
def test_ipc_and_udp_exchange_in_every_threading_mode(embedded_driver, mode: str) -> None:
    driver = embedded_driver(threading_mode=mode)
    assert (driver.driver.invoker is not None) == (mode == "INVOKER")
    with Aeron.connect(aeron_dir=driver.aeron_dir) as client:
        exchange(client, "aeron:ipc?term-length=64k", 1)
        exchange(client, f"aeron:udp?endpoint=127.0.0.1:{free_port()}|term-length=64k", 2)


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("DEDICATED", [["driver-conductor"], ["sender"], ["receiver"]]),
        ("SHARED", [["sender", "receiver", "driver-conductor"]]),  # Java's SHARED order
        ("SHARED_NETWORK", [["driver-conductor"], ["sender", "receiver"]]),
    ],
)
def test_runners_of_each_mode(aeron_dir: Path, mode: str, expected: list[list[str]]) -> None:
    with MediaDriver(DriverContext(aeron_dir=str(aeron_dir), threading_mode=mode)) as driver:

        async def main() -> list[list[str]]:
            task = asyncio.ensure_future(driver.run())
            await asyncio.sleep(0.05)
            roles = [
                [a.role_name for a in r.agent.agents]
                if isinstance(r.agent, CompositeAgent)
                else [r.agent.role_name]
                for r in driver._runners
            ]
            driver.request_stop()
            await asyncio.wait_for(task, 5)
            return roles

        assert asyncio.run(main()) == expected
        assert driver.invoker is None


@pytest.mark.parametrize(
    ("mode", "settings", "expected"),
    [
        (
            "DEDICATED",
            {
                "conductor_idle_strategy": "sleeping",
                "sender_idle_strategy": "busy-spin",
                "receiver_idle_strategy": "yield",
            },
            ["SleepingIdleStrategy", "BusySpinIdleStrategy", "YieldingIdleStrategy"],
        ),
        ("SHARED", {"shared_idle_strategy": "noop"}, ["BusySpinIdleStrategy"]),
        (
            "SHARED_NETWORK",
            {"shared_network_idle_strategy": "yield"},
            ["BackoffIdleStrategy", "YieldingIdleStrategy"],
        ),
    ],
)
def test_each_runner_idles_as_its_setting_says(
    aeron_dir: Path, mode: str, settings: dict[str, str], expected: list[str]
) -> None:
    ctx = DriverContext(aeron_dir=str(aeron_dir), threading_mode=mode, **settings)
    with MediaDriver(ctx) as driver:

        async def main() -> list[str]:
            task = asyncio.ensure_future(driver.run())
            await asyncio.sleep(0.05)
            names = [type(r.idle_strategy).__name__ for r in driver._runners]
            driver.request_stop()
            await asyncio.wait_for(task, 5)
            return names

        assert asyncio.run(main()) == expected


@pytest.mark.parametrize(("adapt", "expected"), [("true", True), ("false", False)])
def test_the_backoff_adapts_its_answer_park_unless_told_not_to(aeron_dir: Path, adapt: str, expected: bool) -> None:
    ctx = DriverContext.from_sources({"aeron_dir": str(aeron_dir)}, {"aeron.idle.min.park.adapt": adapt}, {})
    with MediaDriver(ctx) as driver:

        async def main() -> list[bool]:
            task = asyncio.ensure_future(driver.run())
            await asyncio.sleep(0.05)
            adaptive = [r.idle_strategy.adaptive_answer_park for r in driver._runners]
            driver.request_stop()
            await asyncio.wait_for(task, 5)
            return adaptive

        assert asyncio.run(main()) == [expected]


@pytest.mark.parametrize("strategy", ["busy-spin", "yield"])
def test_udp_exchange_with_agents_that_never_park(embedded_driver, strategy: str) -> None:
    driver = embedded_driver(
        threading_mode="DEDICATED",
        conductor_idle_strategy=strategy,
        sender_idle_strategy=strategy,
        receiver_idle_strategy=strategy,
    )
    with Aeron.connect(aeron_dir=driver.aeron_dir) as client:
        exchange(client, f"aeron:udp?endpoint=127.0.0.1:{free_port()}|term-length=64k", 3)


def test_request_stop_before_run_returns_after_a_clean_start_and_stop(aeron_dir: Path) -> None:
    with MediaDriver(DriverContext(aeron_dir=str(aeron_dir))) as driver:
        driver.request_stop()
        asyncio.run(asyncio.wait_for(driver.run(), 5))


def test_invoker_mode_runs_nothing_by_itself_and_says_what_to_use(aeron_dir: Path) -> None:
    with MediaDriver(DriverContext(aeron_dir=str(aeron_dir), threading_mode="INVOKER")) as driver:
        with pytest.raises(DriverStartError, match=r"driver\.invoker"):
            asyncio.run(driver.run())
        invoker = driver.invoker
        assert invoker is not None
        assert invoker.invoke() == 0  # not started
        invoker.start()
        with Aeron.connect(aeron_dir=aeron_dir, use_conductor_invoker=True, timeout_s=5) as client:
            # The client's command waits for the driver's answer, so serve it from this thread's loop.
            async def serve() -> None:
                while not done:
                    invoker.invoke()
                    await asyncio.sleep(0.0005)

            done = False

            async def main() -> int:
                nonlocal done
                task = asyncio.ensure_future(serve())
                counter = await asyncio.to_thread(client.add_counter, 1001, "invoked")
                done = True
                await task
                return counter.id

            assert asyncio.run(main()) >= 0
    assert invoker.is_closed  # the driver's close() closed the agents
