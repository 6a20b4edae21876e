"""Duty-cycle time trackers (system counters 26..31): the longest cycle and the cycles over the threshold, timed
by a manual clock."""

from __future__ import annotations

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.counters import CountersManager
from driver.status.duty_cycle import DutyCycleTracker
from tests.support.clock import ManualClock


def _manager() -> CountersManager:
    return CountersManager(AtomicBuffer(bytearray(16 * 512)), AtomicBuffer(bytearray(16 * 128)), lambda: 0)


def test_the_longest_cycle_and_the_slow_ones_are_counted() -> None:
    manager = _manager()
    longest, exceeded = manager.new_counter("max"), manager.new_counter("exceeded")
    clock = ManualClock()
    tracker = DutyCycleTracker(longest, exceeded, threshold_ns=1_000_000, nano_clock=clock.nano_clock)

    def work(took_ns: int):
        def do_work() -> int:
            clock.advance_ns(took_ns)
            return 3

        return tracker.wrap(do_work)

    assert work(200_000)() == 3  # the work count goes through
    assert (longest.get(), exceeded.get()) == (200_000, 0)
    work(1_500_000)()
    work(900_000)()
    work(1_000_001)()
    assert (longest.get(), exceeded.get()) == (1_500_000, 2)
