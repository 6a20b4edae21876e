"""ParkTimer (driver/agent/park_timer.py): a one-shot timerfd the agent runner parks on."""

from __future__ import annotations

import select
import time

import pytest

from driver.agent.park_timer import ParkTimer


def readable(timer: ParkTimer, timeout_ms: int) -> bool:
    poller = select.poll()
    poller.register(timer.fileno(), select.POLLIN)
    return bool(poller.poll(timeout_ms))


def test_an_armed_timer_becomes_readable_after_its_delay_once() -> None:
    with ParkTimer() as timer:
        assert not readable(timer, 0)
        start = time.monotonic()
        timer.arm(2_000_000)
        assert readable(timer, 1000)
        assert time.monotonic() - start >= 0.0019
        assert timer.clear() == 1
        assert not readable(timer, 10)  # one-shot
        assert timer.clear() == 0


def test_rearming_replaces_and_disarming_cancels() -> None:
    with ParkTimer() as timer:
        timer.arm(1_000)
        time.sleep(0.005)
        timer.arm(10_000_000_000)  # re-arming also forgets the expiry not yet consumed
        assert not readable(timer, 0)
        timer.disarm()
        assert not readable(timer, 20)


def test_sub_millisecond_parks_are_honoured() -> None:
    with ParkTimer() as timer:
        start = time.perf_counter()
        timer.arm(50_000)
        assert readable(timer, 1000)
        assert time.perf_counter() - start < 0.05  # not rounded up to the loop's millisecond timers


def test_close_is_idempotent_and_a_closed_timer_raises() -> None:
    timer = ParkTimer()
    timer.close()
    timer.close()
    assert timer.fileno() == -1
    with pytest.raises(OSError):
        timer.arm(1000)
