"""Idle strategies: how long an agent waits after a duty cycle, as a plain decision (sans-IO).

The backoff goes spin (run the duty cycle again at once) -> yield (let the loop run other callbacks
first) -> park (a timer of at most ``max_park_ns``, ≤ 1 ms, that a ``Waker`` cuts short so I/O can end
it). The runner turns the decision into loop callbacks; a callback chain costs about half the CPU of
a coroutine awaiting a future on every park, which is what keeps an idle driver cheap.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

SPIN = -1
YIELD = 0
OS_YIELD = -2
"""Give the CPU to another thread or process (``sched_yield``), then run the next cycle after the loop's turn."""
SPINS_PER_LOOP_TURN = 16
"""Busy spinning still hands the loop a turn this often: other runners and the stop request need it."""
ANSWER_PARK_GROWTH = 4
"""An adaptive answer park (``BackoffIdleStrategy``) lengthens to at most this many times the shortest park:
beyond it an answer is no longer what the agent is waiting for, and the backoff's doubling takes over."""


class Waker:
    """Handed to I/O callbacks so they can end an agent's park; the runner binds it."""

    __slots__ = ("_callback",)

    def __init__(self) -> None:
        self._callback: Callable[[], None] | None = None

    def bind(self, callback: Callable[[], None] | None) -> None:
        self._callback = callback

    def wake(self) -> None:
        if self._callback is not None:
            self._callback()


class IdleStrategy(Protocol):
    waker: Waker

    def reset(self) -> None: ...

    def next_delay_ns(self, work_count: int) -> int: ...


class BackoffIdleStrategy:
    """Spin, then yield, then park with exponential backoff from ``min_park_ns`` up to ``max_park_ns``."""

    def __init__(
        self,
        max_spins: int = 10,
        max_yields: int = 5,
        min_park_ns: int = 250_000,
        max_park_ns: int = 1_000_000,
        dormant_park_ns: int = 0,
        is_dormant: Callable[[], bool] | None = None,
        busy_work: int = 1,
        adaptive_answer_park: bool = False,
    ) -> None:
        """``is_dormant`` (optional): when it says there is nothing at all to serve, parks last
        ``dormant_park_ns`` instead of ``max_park_ns`` (a driver with no clients need not wake 1000x/s).
        ``busy_work``: a duty cycle that did at least this much work runs the next one at once (a stream is
        flowing); one that did less (a single message's worth) parks first, the *answer park*, so that the
        processes it serves get the CPU to answer before the agent looks again. 1 = Agrona's behaviour.
        The answer park is ``min_park_ns``; with ``adaptive_answer_park`` it lengthens by a quarter each
        time the cycle after it finds nothing (the answer came later than the park ended: a wake-up for
        nothing, and on a small machine one that takes the CPU from the client still answering) and
        shortens by a thirty-second each time it finds work, within ``min_park_ns`` and
        ``ANSWER_PARK_GROWTH`` times that: about one answer park in eight then wakes too soon."""
        if not 0 < min_park_ns <= max_park_ns:
            raise ValueError(f"need 0 < min_park_ns ({min_park_ns}) <= max_park_ns ({max_park_ns})")
        if busy_work < 1:
            raise ValueError(f"need busy_work ({busy_work}) >= 1")
        self.busy_work = busy_work
        self.adaptive_answer_park = adaptive_answer_park
        self.answer_park_ns = min_park_ns
        self.max_answer_park_ns = min(min_park_ns * ANSWER_PARK_GROWTH, max_park_ns)
        self._answer_due = False
        self.dormant_park_ns = dormant_park_ns
        self.is_dormant = is_dormant if dormant_park_ns > 0 else None
        self.max_spins = max_spins
        self.max_yields = max_yields
        self.min_park_ns = min_park_ns
        self.max_park_ns = max_park_ns
        self.waker = Waker()
        self._spins = 0
        self._yields = 0
        self._park_ns = min_park_ns

    def reset(self) -> None:
        self._spins = 0
        self._yields = 0
        self._park_ns = self.min_park_ns

    def next_delay_ns(self, work_count: int) -> int:
        """SPIN, YIELD, or a park in nanoseconds, after a duty cycle that did ``work_count`` work."""
        if self._answer_due:  # the call after an answer park says whether the answer was there
            self._answer_due = False
            park_ns = self.answer_park_ns
            if work_count > 0:
                self.answer_park_ns = max(park_ns - (park_ns >> 5), self.min_park_ns)
            else:
                self.answer_park_ns = min(park_ns + (park_ns >> 2), self.max_answer_park_ns)
        if work_count > 0:
            self.reset()
            if work_count < self.busy_work:  # park at once, then go on backing off from there
                park_ns = self.answer_park_ns
                self._answer_due = self.adaptive_answer_park
                self._spins, self._yields = self.max_spins, self.max_yields
                self._park_ns = min(park_ns * 2, self.max_park_ns)
                return park_ns
            return YIELD  # a busy agent still gives the other agents on the loop a turn
        if self._spins < self.max_spins:
            self._spins += 1
            return SPIN
        if self._yields < self.max_yields:
            self._yields += 1
            return YIELD
        park_ns = self._park_ns
        if park_ns == self.max_park_ns and self.is_dormant is not None and self.is_dormant():
            return self.dormant_park_ns
        self._park_ns = min(park_ns * 2, self.max_park_ns)
        return park_ns


class SleepingIdleStrategy:
    """Always park for a fixed time (still wakeable); for tools, low-priority agents and the low-latency
    profile's short parks. ``is_dormant`` as for :class:`BackoffIdleStrategy`."""

    def __init__(
        self,
        park_ns: int = 1_000_000,
        dormant_park_ns: int = 0,
        is_dormant: Callable[[], bool] | None = None,
    ) -> None:
        self.park_ns = park_ns
        self.dormant_park_ns = dormant_park_ns
        self.is_dormant = is_dormant if dormant_park_ns > 0 else None
        self.waker = Waker()

    def reset(self) -> None:
        pass

    def next_delay_ns(self, work_count: int) -> int:
        if work_count > 0:
            return YIELD
        if self.is_dormant is not None and self.is_dormant():
            return self.dormant_park_ns
        return self.park_ns


class BusySpinIdleStrategy:
    """Never park: run the duty cycle again at once, giving the loop a turn every ``SPINS_PER_LOOP_TURN``
    idle cycles (Agrona's ``BusySpinIdleStrategy``; ``NoOpIdleStrategy`` behaves the same here). The lowest
    latency and a whole core."""

    def __init__(self) -> None:
        self.waker = Waker()
        self._spins = 0

    def reset(self) -> None:
        self._spins = 0

    def next_delay_ns(self, work_count: int) -> int:
        if work_count > 0:
            self._spins = 0
            return YIELD
        self._spins += 1
        if self._spins < SPINS_PER_LOOP_TURN:
            return SPIN
        self._spins = 0
        return YIELD


class YieldingIdleStrategy:
    """Never park, but offer the CPU to others (``sched_yield``) after each idle cycle (Agrona's
    ``YieldingIdleStrategy``): near busy-spin latency, and a client spinning on the same core still runs."""

    def __init__(self) -> None:
        self.waker = Waker()

    def reset(self) -> None:
        pass

    def next_delay_ns(self, work_count: int) -> int:
        return YIELD if work_count > 0 else OS_YIELD


IDLE_STRATEGY_NAMES = ("backoff", "busy-spin", "yield", "noop", "sleeping")
_IDLE_STRATEGY_ALIASES = {
    "backoff": "backoff",
    "org.agrona.concurrent.backoffidlestrategy": "backoff",
    "busy-spin": "busy-spin",
    "busy_spin": "busy-spin",
    "busyspin": "busy-spin",
    "org.agrona.concurrent.busyspinidlestrategy": "busy-spin",
    "yield": "yield",
    "yielding": "yield",
    "org.agrona.concurrent.yieldingidlestrategy": "yield",
    "noop": "noop",
    "no-op": "noop",
    "org.agrona.concurrent.noopidlestrategy": "noop",
    "sleeping": "sleeping",
    "sleep": "sleeping",
    "org.agrona.concurrent.sleepingidlestrategy": "sleeping",
    "org.agrona.concurrent.sleepingmillisidlestrategy": "sleeping",
}


def idle_strategy_name(text: str) -> str | None:
    """The canonical name (one of ``IDLE_STRATEGY_NAMES``) for a value of an ``aeron.*.idle.strategy``
    setting: a short name or the Agrona class name Aeron takes; None when it is neither."""
    return _IDLE_STRATEGY_ALIASES.get(text.strip().lower())
