"""The idle strategies an application's own poll and offer loops use (driver/client/idle_strategy.py)."""

from __future__ import annotations

import time

import pytest

from driver.client import (
    Aeron,
    BackoffIdleStrategy,
    BusySpinIdleStrategy,
    NoOpIdleStrategy,
    SleepingIdleStrategy,
    YieldingIdleStrategy,
)


class Recorder:
    """What a strategy did, call by call: 'spin', 'yield' or the park in ns."""

    def __init__(self) -> None:
        self.actions: list[str | int] = []

    def park(self, duration_ns: int) -> None:
        self.actions.append(duration_ns)

    def yield_cpu(self) -> None:
        self.actions.append("yield")

    def run(self, idle, work_count: int = 0) -> str | int:
        before = len(self.actions)
        idle(work_count)
        return self.actions[before] if len(self.actions) > before else "spin"


def test_backoff_spins_then_yields_then_parks_doubling_to_the_cap_and_work_starts_over() -> None:
    recorder = Recorder()
    strategy = BackoffIdleStrategy(
        max_spins=3, max_yields=2, min_park_ns=1_000, max_park_ns=5_000,
        park=recorder.park, yield_cpu=recorder.yield_cpu,
    )  # fmt: skip
    first = [recorder.run(strategy.idle) for _ in range(9)]
    assert first == ["spin"] * 3 + ["yield"] * 2 + [1_000, 2_000, 4_000, 5_000]
    assert recorder.run(strategy.idle, work_count=7) == "spin"  # work: nothing done, and the backoff restarts
    assert [recorder.run(strategy.idle) for _ in range(7)] == first[:7]
    strategy.reset()
    assert recorder.run(strategy.idle) == "spin"


def test_the_other_strategies_give_the_cpu_up_only_when_idle() -> None:
    recorder = Recorder()
    sleeping = SleepingIdleStrategy(250_000, park=recorder.park)
    yielding = YieldingIdleStrategy(yield_cpu=recorder.yield_cpu)
    assert [recorder.run(sleeping.idle), recorder.run(sleeping.idle, 3)] == [250_000, "spin"]
    assert [recorder.run(yielding.idle), recorder.run(yielding.idle, 3)] == ["yield", "spin"]
    for spinning in (BusySpinIdleStrategy(), NoOpIdleStrategy()):
        spinning.idle()
        spinning.idle(5)
        spinning.reset()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: BackoffIdleStrategy(max_spins=-1), "max_spins and max_yields must not be negative: -1, 5"),
        (lambda: BackoffIdleStrategy(min_park_ns=0), "need 0 < min_park_ns (0) <= max_park_ns (1000000)"),
        (
            lambda: BackoffIdleStrategy(min_park_ns=2_000, max_park_ns=1_000),
            "need 0 < min_park_ns (2000) <= max_park_ns (1000)",
        ),
        (lambda: SleepingIdleStrategy(0), "park_ns must be positive: 0"),
    ],
)
def test_bad_settings_are_named(make, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        make()
    assert str(raised.value) == message


def test_an_idle_poll_and_offer_loop_with_backoff_leaves_the_cpu_to_others(embedded_driver) -> None:
    driver = embedded_driver()
    with Aeron.connect(aeron_dir=driver.aeron_dir) as aeron:
        subscription = aeron.add_subscription("aeron:ipc", 7)
        publication = aeron.add_publication("aeron:ipc?term-length=64k", 8)  # nobody subscribes: refused
        idle = BackoffIdleStrategy().idle
        wall_start, cpu_start = time.monotonic(), time.thread_time()
        polls = 0
        while time.monotonic() - wall_start < 0.5:
            idle(subscription.poll(lambda *_: None, 10))
            if publication.offer(b"x") < 0:
                idle()
            polls += 1
        cpu_s, wall_s = time.thread_time() - cpu_start, time.monotonic() - wall_start
    # A busy-spinning loop would take the whole 0.5 s of CPU; parks of up to 1 ms leave nearly all of it.
    assert cpu_s < 0.25 * wall_s, f"{cpu_s:.3f} s of CPU in {wall_s:.3f} s ({polls} polls)"
    assert polls > 100  # it kept polling meanwhile (every ms or so at the longest park)
