"""Duty-cycle time trackers: how long an agent's duty cycle takes, as today's Aeron counts it (system counters
26..31: the longest cycle in ns and how many cycles took longer than a threshold, docs/counters.md §8).

Aeron times from one duty cycle to the next (idle time included); an idle Python agent parks for far longer
than Aeron's 1 ms threshold, so here only the work is timed: the ``do_work`` call.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from driver.concurrent.counters import AtomicCounter

DEFAULT_CYCLE_THRESHOLD_NS = 1_000_000
"""Aeron's default for aeron.conductor.cycle.threshold, aeron.sender.cycle.threshold and
aeron.receiver.cycle.threshold."""


class DutyCycleTracker:
    __slots__ = ("_exceeded", "_max_cycle", "_max_ns", "_nano_clock", "threshold_ns")

    def __init__(
        self,
        max_cycle_time: AtomicCounter,
        threshold_exceeded: AtomicCounter,
        threshold_ns: int = DEFAULT_CYCLE_THRESHOLD_NS,
        nano_clock: Callable[[], int] = time.perf_counter_ns,
    ) -> None:
        self._max_cycle = max_cycle_time
        self._exceeded = threshold_exceeded
        self.threshold_ns = threshold_ns
        self._nano_clock = nano_clock
        self._max_ns = 0

    def on_cycle(self, cycle_ns: int) -> None:
        if cycle_ns > self._max_ns:
            self._max_ns = cycle_ns
            self._max_cycle.set(cycle_ns)
        if cycle_ns > self.threshold_ns:
            self._exceeded.increment()

    def wrap(self, do_work: Callable[[], int]) -> Callable[[], int]:
        """``do_work`` timed: the agent's duty cycle with this tracker around it."""
        clock = self._nano_clock
        on_cycle = self.on_cycle
        threshold_ns = self.threshold_ns

        def tracked() -> int:
            start = clock()
            work = do_work()
            cycle_ns = clock() - start
            if cycle_ns > threshold_ns or cycle_ns > self._max_ns:  # the usual cycle costs no further call
                on_cycle(cycle_ns)
            return work

        return tracked
