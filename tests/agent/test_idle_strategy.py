"""Idle strategies (sans-IO decisions) and the Waker, which cuts a runner's park short, on asyncio and uvloop."""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from driver.agent.idle_strategy import (
    OS_YIELD,
    SPIN,
    SPINS_PER_LOOP_TURN,
    YIELD,
    BackoffIdleStrategy,
    BusySpinIdleStrategy,
    SleepingIdleStrategy,
    Waker,
    YieldingIdleStrategy,
)
from driver.agent.runner import AgentRunner


def decisions(strategy: Any, work_counts: list[int]) -> list[int]:
    return [strategy.next_delay_ns(work) for work in work_counts]


# --- BackoffIdleStrategy: spin -> yield -> park, sans-IO -------------------------------------------------


def test_decision_constants_cannot_be_mistaken_for_a_park() -> None:
    assert SPIN < 0
    assert YIELD == 0
    assert SPIN != YIELD


def test_backoff_spins_then_yields_then_parks_doubling_up_to_the_cap() -> None:
    strategy = BackoffIdleStrategy(max_spins=3, max_yields=2, min_park_ns=100_000, max_park_ns=1_000_000)
    assert decisions(strategy, [0] * 12) == [
        SPIN, SPIN, SPIN,
        YIELD, YIELD,
        100_000, 200_000, 400_000, 800_000, 1_000_000, 1_000_000, 1_000_000,
    ]  # fmt: skip


def test_backoff_defaults() -> None:
    strategy = BackoffIdleStrategy()
    assert (strategy.max_spins, strategy.max_yields) == (10, 5)
    assert (strategy.min_park_ns, strategy.max_park_ns) == (250_000, 1_000_000)
    assert decisions(strategy, [0] * 19) == [SPIN] * 10 + [YIELD] * 5 + [
        250_000,
        500_000,
        1_000_000,
        1_000_000,
    ]


def test_backoff_caps_a_doubling_that_overshoots() -> None:
    strategy = BackoffIdleStrategy(max_spins=0, max_yields=0, min_park_ns=300_000, max_park_ns=1_000_000)
    assert decisions(strategy, [0] * 4) == [300_000, 600_000, 1_000_000, 1_000_000]


def test_backoff_with_min_equal_to_max_always_parks_the_same() -> None:
    strategy = BackoffIdleStrategy(max_spins=0, max_yields=0, min_park_ns=500_000, max_park_ns=500_000)
    assert decisions(strategy, [0] * 3) == [500_000] * 3


def test_work_yields_and_starts_the_backoff_over() -> None:
    strategy = BackoffIdleStrategy(max_spins=2, max_yields=1, min_park_ns=100_000, max_park_ns=1_000_000)
    assert decisions(strategy, [0, 0, 0, 0, 0]) == [SPIN, SPIN, YIELD, 100_000, 200_000]
    assert strategy.next_delay_ns(5) == YIELD, "a busy agent still gives the loop a turn"
    assert decisions(strategy, [0, 0, 0, 0]) == [SPIN, SPIN, YIELD, 100_000]


def test_little_work_parks_the_shortest_park_at_once_and_much_work_runs_the_next_cycle() -> None:
    strategy = BackoffIdleStrategy(
        max_spins=2, max_yields=1, min_park_ns=16_000, max_park_ns=1_000_000, busy_work=256
    )
    assert strategy.next_delay_ns(65) == 16_000, "one small message: let its reader answer first"
    assert decisions(strategy, [0, 0]) == [32_000, 64_000], "then the backoff goes on, no spins"
    assert strategy.next_delay_ns(256) == YIELD, "a stream is flowing: the next cycle at once"
    assert decisions(strategy, [0, 0, 0, 0]) == [SPIN, SPIN, YIELD, 16_000]


def test_an_adaptive_answer_park_lengthens_while_answers_come_late_and_shortens_as_they_come_sooner() -> None:
    strategy = BackoffIdleStrategy(
        max_spins=0, max_yields=0, min_park_ns=16_000, max_park_ns=1_000_000, busy_work=256,
        adaptive_answer_park=True,
    )
    assert strategy.next_delay_ns(65) == 16_000, "the first answer park is the shortest park"
    assert strategy.next_delay_ns(0) == 32_000, "nothing there yet: the backoff goes on"
    assert strategy.next_delay_ns(65) == 20_000, "and the next answer park is a quarter longer"
    for _ in range(20):  # answers keep coming after the park ends: it grows to 4 x the shortest park
        strategy.next_delay_ns(0)
        strategy.next_delay_ns(65)
    assert strategy.answer_park_ns == 64_000
    assert strategy.next_delay_ns(65) == 62_000, "the answer was there: a thirty-second shorter"
    for _ in range(200):  # answers come at once: back to the shortest park, never below it
        strategy.next_delay_ns(65)
    assert strategy.next_delay_ns(65) == 16_000


def test_an_answer_park_is_fixed_unless_asked_to_adapt_and_a_stream_leaves_it_alone() -> None:
    fixed = BackoffIdleStrategy(
        max_spins=0, max_yields=0, min_park_ns=16_000, max_park_ns=1_000_000, busy_work=256
    )
    assert decisions(fixed, [65, 0, 65, 0, 65]) == [16_000, 32_000, 16_000, 32_000, 16_000]
    adaptive = BackoffIdleStrategy(
        max_spins=0, max_yields=0, min_park_ns=16_000, max_park_ns=1_000_000, busy_work=256,
        adaptive_answer_park=True,
    )
    assert decisions(adaptive, [4096, 0, 0, 4096]) == [YIELD, 16_000, 32_000, YIELD]
    assert adaptive.answer_park_ns == 16_000, "no answer park was taken: nothing to learn"


def test_an_adaptive_answer_park_stays_within_the_longest_park() -> None:
    strategy = BackoffIdleStrategy(
        max_spins=0, max_yields=0, min_park_ns=40_000, max_park_ns=100_000, busy_work=256,
        adaptive_answer_park=True,
    )
    for _ in range(20):
        strategy.next_delay_ns(65)
        strategy.next_delay_ns(0)
    assert strategy.next_delay_ns(65) == 100_000


def test_busy_work_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="busy_work"):
        BackoffIdleStrategy(busy_work=0)


def test_reset_starts_the_backoff_over() -> None:
    strategy = BackoffIdleStrategy(max_spins=1, max_yields=1, min_park_ns=100_000, max_park_ns=800_000)
    decisions(strategy, [0] * 6)
    strategy.reset()
    assert decisions(strategy, [0] * 3) == [SPIN, YIELD, 100_000]


@pytest.mark.parametrize(
    ("min_park_ns", "max_park_ns"), [(0, 1_000_000), (-1, 1_000_000), (2_000_000, 1_000_000)]
)
def test_backoff_rejects_a_park_range_that_could_exceed_the_cap_or_never_back_off(
    min_park_ns: int, max_park_ns: int
) -> None:
    with pytest.raises(ValueError, match="min_park_ns"):
        BackoffIdleStrategy(min_park_ns=min_park_ns, max_park_ns=max_park_ns)


@given(
    st.integers(0, 20),
    st.integers(0, 20),
    st.integers(1, 2_000_000),
    st.integers(0, 2_000_000),
    st.lists(st.integers(0, 3), max_size=200),
)
def test_backoff_properties(
    max_spins: int, max_yields: int, min_park: int, extra: int, work_counts: list[int]
) -> None:
    max_park = min_park + extra
    strategy = BackoffIdleStrategy(max_spins, max_yields, min_park, max_park)
    idle_run: list[int] = []
    for work in work_counts:
        decision = strategy.next_delay_ns(work)
        if work > 0:
            assert decision == YIELD
            idle_run = []
            continue
        if decision not in (SPIN, YIELD):
            assert min_park <= decision <= max_park
        idle_run.append(decision)
        # Within one idle run: exactly max_spins spins, then max_yields yields, then non-decreasing parks.
        spins = idle_run[:max_spins]
        yields = idle_run[max_spins : max_spins + max_yields]
        parks = idle_run[max_spins + max_yields :]
        assert all(d == SPIN for d in spins)
        assert all(d == YIELD for d in yields)
        assert all(d > 0 for d in parks)
        assert parks == sorted(parks)
        assert all(parks[i + 1] == min(parks[i] * 2, max_park) for i in range(len(parks) - 1))


# --- SleepingIdleStrategy --------------------------------------------------------------------------------


def test_sleeping_strategy_parks_when_idle_and_yields_after_work() -> None:
    strategy = SleepingIdleStrategy(park_ns=2_000_000)
    assert decisions(strategy, [0, 0, 1, 0, 7]) == [2_000_000, 2_000_000, YIELD, 2_000_000, YIELD]
    strategy.reset()
    assert SleepingIdleStrategy().next_delay_ns(0) == 1_000_000


# --- Waker -----------------------------------------------------------------------------------------------


def test_waker_calls_whatever_it_is_bound_to() -> None:
    calls: list[str] = []
    waker = Waker()
    waker.wake()  # unbound: nothing happens
    waker.bind(lambda: calls.append("woken"))
    waker.wake()
    waker.wake()
    waker.bind(None)
    waker.wake()
    assert calls == ["woken", "woken"]


def test_each_strategy_has_its_own_waker() -> None:
    assert isinstance(BackoffIdleStrategy().waker, Waker)
    assert BackoffIdleStrategy().waker is not BackoffIdleStrategy().waker
    assert isinstance(SleepingIdleStrategy().waker, Waker)


class TimedAgent:
    role_name = "timed"

    def __init__(self) -> None:
        self.work_times_ns: list[int] = []
        self.first_cycle = asyncio.Event()

    def on_start(self) -> None:
        pass

    def do_work(self) -> int:
        self.work_times_ns.append(time.monotonic_ns())
        self.first_cycle.set()
        return 0

    def on_close(self) -> None:
        pass


@pytest.mark.parametrize("schedule", ["call_soon", "call_later"])
def test_wake_from_a_loop_callback_ends_a_one_second_park_early(event_loop_under_test, schedule: str) -> None:
    async def scenario() -> float:
        loop = asyncio.get_running_loop()
        agent = TimedAgent()
        runner = AgentRunner(agent, SleepingIdleStrategy(park_ns=1_000_000_000))
        runner.start()
        await agent.first_cycle.wait()  # the first duty cycle ran and the runner is now parked for 1 s
        await asyncio.sleep(0.005)
        assert len(agent.work_times_ns) == 1
        parked_at = agent.work_times_ns[0]
        if schedule == "call_soon":
            loop.call_soon(runner.waker.wake)
        else:
            loop.call_later(0.01, runner.waker.wake)
        deadline = time.monotonic() + 2.0
        while len(agent.work_times_ns) < 2 and time.monotonic() < deadline:
            await asyncio.sleep(0.001)
        runner.stop()
        await runner.join(1.0)
        assert len(agent.work_times_ns) == 2, "woken once: exactly one more duty cycle, then parked again"
        return (agent.work_times_ns[1] - parked_at) / 1e9

    assert event_loop_under_test.run(scenario()) < 0.1


def test_wake_of_a_backoff_strategy_ends_its_park(event_loop_under_test) -> None:
    async def scenario() -> float:
        loop = asyncio.get_running_loop()
        agent = TimedAgent()
        strategy = BackoffIdleStrategy(
            max_spins=0, max_yields=0, min_park_ns=1_000_000_000, max_park_ns=1_000_000_000
        )
        runner = AgentRunner(agent, strategy)
        runner.start()
        await agent.first_cycle.wait()
        loop.call_later(0.01, strategy.waker.wake)
        start = time.monotonic()
        while len(agent.work_times_ns) < 2 and time.monotonic() - start < 2.0:
            await asyncio.sleep(0.001)
        runner.stop()
        await runner.join(1.0)
        return (agent.work_times_ns[1] - agent.work_times_ns[0]) / 1e9

    assert event_loop_under_test.run(scenario()) < 0.1


def test_wake_while_not_parked_or_after_stop_is_harmless(event_loop_under_test) -> None:
    async def scenario() -> int:
        agent = TimedAgent()
        runner = AgentRunner(agent, SleepingIdleStrategy(park_ns=1_000_000_000))
        runner.waker.wake()  # before start
        runner.start()
        runner.waker.wake()  # first cycle still pending: not parked
        await agent.first_cycle.wait()
        runner.stop()
        runner.waker.wake()  # after stop: unbound
        await runner.join(1.0)
        await asyncio.sleep(0.01)
        return len(agent.work_times_ns)

    assert event_loop_under_test.run(scenario()) == 1


def test_an_idle_runner_parks_but_never_longer_than_the_cap(event_loop_under_test) -> None:
    """Idle for 100 ms with a 1 ms cap: neither a busy spin (thousands of cycles) nor a long sleep."""

    async def scenario() -> list[int]:
        agent = TimedAgent()
        runner = AgentRunner(agent, BackoffIdleStrategy(max_spins=10, max_yields=5))
        runner.start()
        await asyncio.sleep(0.1)
        runner.stop()
        await runner.join(1.0)
        return agent.work_times_ns

    times = event_loop_under_test.run(scenario())
    assert 10 + 5 + 10 <= len(times) < 400
    parked_gaps = [b - a for a, b in itertools.pairwise(times[20:])]
    assert max(parked_gaps) < 50_000_000, "no park may be much longer than max_park_ns (1 ms)"


def test_a_dormant_agent_parks_longer_and_wakes_back_to_short_parks() -> None:
    dormant = [True]
    idle = BackoffIdleStrategy(
        max_spins=0,
        max_yields=0,
        min_park_ns=500_000,
        max_park_ns=1_000_000,
        dormant_park_ns=10_000_000,
        is_dormant=lambda: dormant[0],
    )
    assert idle.next_delay_ns(0) == 500_000  # backing off as usual first
    assert idle.next_delay_ns(0) == 10_000_000  # fully backed off and nothing to serve
    dormant[0] = False
    assert idle.next_delay_ns(0) == 1_000_000  # a client arrived: parks are <= 1 ms again
    disabled = BackoffIdleStrategy(max_spins=0, max_yields=0, dormant_park_ns=0, is_dormant=lambda: True)
    assert max(disabled.next_delay_ns(0) for _ in range(5)) == 1_000_000


# --- never parking: busy-spin (and noop) and yield -------------------------------------------------------


def test_busy_spin_never_parks_and_hands_the_loop_a_turn_every_so_many_idle_cycles() -> None:
    strategy = BusySpinIdleStrategy()
    idle = decisions(strategy, [0] * (3 * SPINS_PER_LOOP_TURN))
    assert all(d in (SPIN, YIELD) for d in idle)
    assert idle.count(YIELD) == 3
    assert idle[SPINS_PER_LOOP_TURN - 1] == YIELD
    assert decisions(strategy, [1, 0]) == [YIELD, SPIN]  # work starts the count again


def test_yield_offers_the_cpu_after_every_idle_cycle_and_never_parks() -> None:
    assert decisions(YieldingIdleStrategy(), [0, 0, 1, 0]) == [OS_YIELD, OS_YIELD, YIELD, OS_YIELD]


def test_a_dormant_sleeping_agent_parks_longer_until_there_is_something_to_serve() -> None:
    dormant = [True]
    strategy = SleepingIdleStrategy(park_ns=100_000, dormant_park_ns=10_000_000, is_dormant=lambda: dormant[0])
    assert strategy.next_delay_ns(0) == 10_000_000
    assert strategy.next_delay_ns(1) == YIELD
    dormant[0] = False
    assert strategy.next_delay_ns(0) == 100_000
    assert SleepingIdleStrategy(park_ns=100_000, is_dormant=lambda: True).next_delay_ns(0) == 100_000
