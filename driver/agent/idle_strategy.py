"""Idle strategies: how long an agent waits after a duty cycle, as a plain decision (sans-IO).

The backoff goes spin (run the duty cycle again at once) -> yield (let the loop run other callbacks
first) -> park (a timer of at most ``max_park_ns``, ≤ 1 ms, that a ``Waker`` cuts short so I/O can end
it). The runner turns the decision into loop callbacks; a callback chain costs about half the CPU of
a coroutine awaiting a future on every park, which is what keeps an idle driver cheap.
"""

from __future__ import annotations

from collections.abc import Callable

SPIN = -1
YIELD = 0


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
    ) -> None:
        """``is_dormant`` (optional): when it says there is nothing at all to serve, parks last
        ``dormant_park_ns`` instead of ``max_park_ns`` (a driver with no clients need not wake 1000x/s)."""
        if not 0 < min_park_ns <= max_park_ns:
            raise ValueError(f"need 0 < min_park_ns ({min_park_ns}) <= max_park_ns ({max_park_ns})")
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
        if work_count > 0:
            self.reset()
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
    """Always park for a fixed time (still wakeable); for tools and low-priority agents."""

    def __init__(self, park_ns: int = 1_000_000) -> None:
        self.park_ns = park_ns
        self.waker = Waker()

    def reset(self) -> None:
        pass

    def next_delay_ns(self, work_count: int) -> int:
        return YIELD if work_count > 0 else self.park_ns
