"""Idle strategies for agents on an asyncio loop.

The backoff goes spin (call again at once) -> yield (one trip through the loop) -> park (a timed wait
that ``wake()`` cuts short, so I/O callbacks can end it). Parks never exceed ``max_park_ns`` (≤ 1 ms).
"""

from __future__ import annotations

import asyncio


class Waker:
    """Lets I/O callbacks (or anyone on the loop) cut an agent's park short."""

    __slots__ = ("_future", "_loop")

    def __init__(self) -> None:
        self._future: asyncio.Future[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def wake(self) -> None:
        future = self._future
        if future is not None and not future.done():
            future.set_result(None)

    async def park(self, timeout_s: float) -> None:
        loop = self._loop or asyncio.get_running_loop()
        self._loop = loop
        future = loop.create_future()
        self._future = future
        handle = loop.call_later(timeout_s, _resolve, future)
        try:
            await future
        finally:
            handle.cancel()
            self._future = None


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class BackoffIdleStrategy:
    """Spin, then yield, then park with exponential backoff up to ``max_park_ns``."""

    def __init__(
        self,
        max_spins: int = 10,
        max_yields: int = 5,
        min_park_ns: int = 100_000,
        max_park_ns: int = 1_000_000,
        waker: Waker | None = None,
    ) -> None:
        self.max_spins = max_spins
        self.max_yields = max_yields
        self.min_park_ns = min_park_ns
        self.max_park_ns = max_park_ns
        self.waker = waker or Waker()
        self._spins = 0
        self._yields = 0
        self._park_ns = min_park_ns

    def reset(self) -> None:
        self._spins = 0
        self._yields = 0
        self._park_ns = self.min_park_ns

    async def idle(self, work_count: int) -> None:
        if work_count > 0:
            self.reset()
            # Still give other tasks a turn: a busy agent must not starve the loop.
            await asyncio.sleep(0)
            return
        if self._spins < self.max_spins:
            self._spins += 1
            return
        if self._yields < self.max_yields:
            self._yields += 1
            await asyncio.sleep(0)
            return
        await self.waker.park(self._park_ns / 1e9)
        self._park_ns = min(self._park_ns * 2, self.max_park_ns)


class SleepingIdleStrategy:
    """Always park for a fixed time (wakeable); for tools and low-priority agents."""

    def __init__(self, park_ns: int = 1_000_000, waker: Waker | None = None) -> None:
        self.park_ns = park_ns
        self.waker = waker or Waker()

    def reset(self) -> None:
        pass

    async def idle(self, work_count: int) -> None:
        if work_count > 0:
            await asyncio.sleep(0)
        else:
            await self.waker.park(self.park_ns / 1e9)
