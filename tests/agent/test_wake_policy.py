"""The runner's wake-up table (driver/agent/wake_policy.py): each event's action, and an idle timeline on a
manual clock (how long a runner waits, and on what, as its idle strategy backs off)."""

from __future__ import annotations

import pytest

from driver.agent import wake_policy as policy
from driver.agent.idle_strategy import OS_YIELD, SPIN, YIELD, BackoffIdleStrategy
from driver.agent.wake_policy import Action, action
from tests.support import ManualClock

PRECISE = policy.PRECISE_PARK_BELOW_NS


@pytest.mark.parametrize(
    ("delay_ns", "precise", "expected"),
    [
        (YIELD, True, action(policy.SOON)),
        (OS_YIELD, True, action(policy.OS_YIELD_THEN)),
        (50_000, True, action(policy.PARK_TIMER, delay_ns=50_000)),
        (PRECISE - 1, True, action(policy.PARK_TIMER, delay_ns=PRECISE - 1)),
        (
            PRECISE,
            True,
            action(policy.PARK_LATER, delay_ns=PRECISE),
        ),  # a millisecond: the loop's timer will do
        (50_000, False, action(policy.PARK_LATER, delay_ns=50_000)),  # no timerfd
    ],
)
def test_a_wait_yields_or_parks_on_the_timer_that_can_keep_it(
    delay_ns: int, precise: bool, expected: Action
) -> None:
    assert policy.wait(delay_ns, policy.CYCLE, precise) == expected


def test_a_python_cycle_that_parks_arms_the_native_cycle_first_and_one_that_yields_does_not() -> None:
    parks = policy.after_cycle(0, 100_000, probe_spins=True, has_native=True, precise=True)
    assert parks == action(policy.PARK_TIMER, policy.CYCLE, 100_000, arm=True)
    assert not policy.after_cycle(0, YIELD, True, True, True)[3]
    assert not policy.after_cycle(0, 100_000, True, has_native=False, precise=True)[3]


def test_a_cycle_that_did_a_little_work_asks_the_probe_for_an_answer_before_it_parks() -> None:
    assert (
        policy.after_cycle(1, 100_000, probe_spins=True, has_native=True, precise=True)
        is policy.ASK_IF_ANSWER_SOON
    )
    # No spinning probe, no work, or no park: no question.
    assert policy.after_cycle(1, 100_000, False, True, True)[0] == policy.PARK_TIMER
    assert policy.after_cycle(0, 100_000, True, True, True)[0] == policy.PARK_TIMER
    assert policy.after_cycle(1, YIELD, True, True, True)[0] == policy.SOON
    assert policy.after_answer(True, 100_000, True, True) is policy.CYCLE_SOON  # the answer is there: no park
    assert policy.after_answer(False, 100_000, True, True) == action(
        policy.PARK_TIMER, policy.CYCLE, 100_000, True
    )


@pytest.mark.parametrize(
    ("work", "delay_ns", "pending", "expected"),
    [
        (None, 100_000, False, policy.CYCLE_NOW),  # handed back: the Python cycle at once
        (64, SPIN, False, policy.NATIVE_SOON),
        (64, 100_000, True, policy.NATIVE_SOON),  # more committed, or a command: no park
        (64, 100_000, False, action(policy.PARK_TIMER, policy.NATIVE, 100_000)),
        (
            0,
            100_000,
            True,
            action(policy.PARK_TIMER, policy.NATIVE, 100_000),
        ),  # pending is not asked after no work
        (64, YIELD, True, action(policy.SOON, policy.NATIVE)),
    ],
)
def test_after_a_native_cycle(work: int | None, delay_ns: int, pending: bool, expected: Action) -> None:
    assert policy.after_native(work, delay_ns, pending, precise=True) == expected


def test_the_native_cycle_is_asked_for_pending_work_only_when_the_answer_matters() -> None:
    assert policy.native_pending_matters(64, 100_000)
    assert not policy.native_pending_matters(None, 100_000)
    assert not policy.native_pending_matters(0, 100_000)
    assert not policy.native_pending_matters(64, SPIN)
    assert not policy.native_pending_matters(64, YIELD)


@pytest.mark.parametrize(
    ("fresh", "armed", "has_probe", "expected"),
    [
        (False, True, True, policy.DO_NOTHING),  # stale: consumes nothing
        (True, True, True, policy.NATIVE_NOW),
        (True, False, True, policy.ASK_IF_QUIET),
        (True, False, False, policy.CYCLE_NOW),
    ],
)
def test_when_the_park_timer_fires(fresh: bool, armed: bool, has_probe: bool, expected: Action) -> None:
    assert policy.on_park_timer(fresh, armed, has_probe) is expected


def test_a_quiet_probe_parks_again_without_a_cycle() -> None:
    assert policy.after_quiet(True, 200_000, precise=True) == action(policy.PARK_TIMER, policy.CYCLE, 200_000)
    assert policy.after_quiet(True, YIELD, precise=True) is policy.CYCLE_NOW  # a yield runs the cycle
    assert policy.after_quiet(False, None, precise=True) is policy.CYCLE_NOW


def test_a_wake_by_io_ends_a_park_only() -> None:
    assert policy.on_wake(parked=True, has_native=False) is policy.CYCLE_SOON
    assert policy.on_wake(parked=True, has_native=True) is policy.NATIVE_SOON
    assert policy.on_wake(parked=False, has_native=True) is policy.DO_NOTHING


def test_an_idle_runner_backs_off_to_the_loops_timer_on_a_manual_clock() -> None:
    """Nothing to do: the runner spins, yields, then parks on its timerfd for longer and longer, and once a park
    reaches a millisecond on the loop's timer; a native cycle armed after the first park serves each timer; I/O
    ends a park at the loop's next turn."""
    clock = ManualClock()
    idle = BackoffIdleStrategy(max_spins=2, max_yields=2, min_park_ns=100_000, max_park_ns=2_000_000)
    steps = []
    armed = False
    start_ns = clock.nanos
    for _ in range(12):
        delay_ns = idle.next_delay_ns(0)
        if delay_ns == SPIN:
            steps.append("spin")
            continue
        if not armed:
            decided = policy.after_cycle(0, delay_ns, probe_spins=True, has_native=True, precise=True)
            armed = decided[3]
        else:
            decided = policy.after_native(0, delay_ns, pending=False, precise=True)
        steps.append(decided[0])
        if policy.parks(decided):
            clock.advance_ns(decided[2])
            assert policy.on_park_timer(True, armed, True) is policy.NATIVE_NOW
    assert steps == ["spin", "spin", "soon", "soon"] + ["park_timer"] * 4 + ["park_later"] * 4
    # 0.1 + 0.2 + 0.4 + 0.8 ms on the timerfd, then 1.6 and three 2 ms parks on the loop's timer.
    assert clock.nanos - start_ns == 100_000 + 200_000 + 400_000 + 800_000 + 1_600_000 + 3 * 2_000_000
    assert policy.on_wake(parked=True, has_native=armed) is policy.NATIVE_SOON
