"""Idle strategies for an application's own poll and offer loops, under Agrona's names.

``idle(work_count)`` goes after each poll (``idle(subscription.poll(handler, 256))``) and ``idle()`` after a
refused offer. A loop that spins on empty polls takes a whole core for nothing; on a host with fewer cores
than busy processes it takes that core from the driver, which then moves less data for everyone. These give
the CPU back when there is nothing to do. Yields and parks let go of the GIL, so the client's conductor
thread (and any other thread) runs meanwhile. An ``idle`` call after work only resets the backoff: it costs
a few tens of nanoseconds, so calling it after every poll is cheap.

``park`` (nanoseconds to sleep) and ``yield_cpu`` are injectable, as the clocks are elsewhere, so a test
can see what a strategy decided without sleeping.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Protocol

__all__ = [
    "BackoffIdleStrategy",
    "BusySpinIdleStrategy",
    "IdleStrategy",
    "NoOpIdleStrategy",
    "SleepingIdleStrategy",
    "YieldingIdleStrategy",
]

Park = Callable[[int], None]
YieldCpu = Callable[[], None]


class IdleStrategy(Protocol):
    """What the strategies here have (and what a loop needs of one of its own)."""

    def idle(self, work_count: int = 0) -> None: ...

    def reset(self) -> None: ...


def sleep_ns(duration_ns: int) -> None:
    time.sleep(duration_ns / 1e9)


class BackoffIdleStrategy:
    """Spin ``max_spins`` idle calls, then yield the CPU ``max_yields`` times, then park from ``min_park_ns``
    doubling up to ``max_park_ns``; any work starts over. Agrona's defaults."""

    __slots__ = (
        "_count",
        "_max_park_ns",
        "_min_park_ns",
        "_park",
        "_park_ns",
        "_spins_end",
        "_yield_cpu",
        "_yields_end",
    )

    def __init__(
        self,
        max_spins: int = 10,
        max_yields: int = 5,
        min_park_ns: int = 1_000,
        max_park_ns: int = 1_000_000,
        *,
        park: Park = sleep_ns,
        yield_cpu: YieldCpu = os.sched_yield,
    ) -> None:
        if max_spins < 0 or max_yields < 0:
            raise ValueError(f"max_spins and max_yields must not be negative: {max_spins}, {max_yields}")
        if not 0 < min_park_ns <= max_park_ns:
            raise ValueError(f"need 0 < min_park_ns ({min_park_ns}) <= max_park_ns ({max_park_ns})")
        self._spins_end = max_spins
        self._yields_end = max_spins + max_yields
        self._min_park_ns = min_park_ns
        self._max_park_ns = max_park_ns
        self._park = park
        self._yield_cpu = yield_cpu
        self._count = 0  # idle calls since the last work
        self._park_ns = min_park_ns

    def idle(self, work_count: int = 0) -> None:
        if work_count > 0:
            if self._count:
                self._count = 0
                self._park_ns = self._min_park_ns
            return
        count = self._count
        if count < self._yields_end:
            self._count = count + 1
            if count >= self._spins_end:
                self._yield_cpu()
            return
        park_ns = self._park_ns
        self._park(park_ns)
        self._park_ns = min(park_ns * 2, self._max_park_ns)

    def reset(self) -> None:
        self._count = 0
        self._park_ns = self._min_park_ns


class BusySpinIdleStrategy:
    """Never give the CPU up: the lowest latency, and a whole core."""

    __slots__ = ()

    def idle(self, work_count: int = 0) -> None:
        pass

    def reset(self) -> None:
        pass


class NoOpIdleStrategy(BusySpinIdleStrategy):
    """As busy spin (Agrona's has no spin-wait hint, which Python has not either)."""

    __slots__ = ()


class YieldingIdleStrategy:
    """Yield the CPU after every idle call: near busy-spin latency, and others on the core still run."""

    __slots__ = ("_yield_cpu",)

    def __init__(self, *, yield_cpu: YieldCpu = os.sched_yield) -> None:
        self._yield_cpu = yield_cpu

    def idle(self, work_count: int = 0) -> None:
        if work_count <= 0:
            self._yield_cpu()

    def reset(self) -> None:
        pass


class SleepingIdleStrategy:
    """Park ``park_ns`` after every idle call (Agrona's ``SleepingIdleStrategy``; default 1 ms)."""

    __slots__ = ("_park", "_park_ns")

    def __init__(self, park_ns: int = 1_000_000, *, park: Park = sleep_ns) -> None:
        if park_ns <= 0:
            raise ValueError(f"park_ns must be positive: {park_ns}")
        self._park_ns = park_ns
        self._park = park

    def idle(self, work_count: int = 0) -> None:
        if work_count <= 0:
            self._park(self._park_ns)

    def reset(self) -> None:
        pass
