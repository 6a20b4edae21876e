"""AgentRunner, CompositeAgent and do_work_until_idle, on asyncio and on uvloop."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

import pytest

from driver.agent.idle_strategy import SPIN, YIELD, BackoffIdleStrategy, SleepingIdleStrategy, Waker
from driver.agent.runner import AgentRunner, CompositeAgent, do_work_until_idle
from tests.support import wait_until


class RecordingAgent:
    """Returns scripted work counts (then ``default_work``); records its lifecycle into ``log``."""

    def __init__(
        self,
        name: str = "agent",
        script: list[int | BaseException] | None = None,
        default_work: int = 0,
        log: list[str] | None = None,
    ) -> None:
        self.role_name = name
        self.script = list(script or [])
        self.default_work = default_work
        self.log = log if log is not None else []
        self.starts = 0
        self.closes = 0
        self.cycles = 0
        self.on_cycle: Callable[[int], None] | None = None

    def on_start(self) -> None:
        self.starts += 1
        self.log.append(f"start {self.role_name}")

    def do_work(self) -> int:
        self.cycles += 1
        if self.on_cycle is not None:
            self.on_cycle(self.cycles)
        step = self.script.pop(0) if self.script else self.default_work
        if isinstance(step, BaseException):
            raise step
        return step

    def on_close(self) -> None:
        self.closes += 1
        self.log.append(f"close {self.role_name}")


class ScriptedIdle:
    """An idle strategy that returns scripted decisions and records the work counts it was given."""

    def __init__(self, decisions: list[int], then: int = 1_000_000_000) -> None:
        self.decisions = list(decisions)
        self.then = then
        self.seen: list[int] = []
        self.waker = Waker()

    def reset(self) -> None:
        pass

    def next_delay_ns(self, work_count: int) -> int:
        self.seen.append(work_count)
        return self.decisions.pop(0) if self.decisions else self.then


# --- lifecycle -------------------------------------------------------------------------------------------


def test_runs_do_work_until_stop_with_one_start_and_one_close(event_loop_under_test) -> None:
    async def scenario() -> None:
        agent = RecordingAgent(default_work=1)
        runner = AgentRunner(agent)
        runner.start()
        assert agent.starts == 1, "on_start runs in start()"
        assert agent.cycles == 0, "the first duty cycle is scheduled, not run, by start()"
        await asyncio.sleep(0.02)
        assert agent.cycles > 10
        runner.stop()
        await runner.join(1.0)
        cycles = agent.cycles
        await asyncio.sleep(0.02)
        assert agent.cycles == cycles, "no duty cycle after stop()"
        assert (agent.starts, agent.closes) == (1, 1)
        runner.stop()  # a second stop does nothing
        await runner.join(1.0)
        await asyncio.sleep(0)
        assert agent.closes == 1

    event_loop_under_test.run(scenario())


def test_a_busy_agent_does_not_starve_the_loop(event_loop_under_test) -> None:
    async def scenario() -> int:
        agent = RecordingAgent(default_work=1)
        runner = AgentRunner(agent)
        runner.start()
        ticks = 0
        for _ in range(50):
            await asyncio.sleep(0)
            ticks += 1
        runner.stop()
        await runner.join(1.0)
        return ticks

    assert event_loop_under_test.run(scenario()) == 50


def test_stop_from_inside_do_work_ends_at_that_cycle(event_loop_under_test) -> None:
    """stop() during a duty cycle: no further do_work, even while the strategy would still spin."""

    async def scenario() -> RecordingAgent:
        agent = RecordingAgent(default_work=0)
        runner = AgentRunner(agent, BackoffIdleStrategy(max_spins=10, max_yields=5))
        agent.on_cycle = lambda n: runner.stop() if n == 3 else None
        runner.start()
        await runner.join(1.0)
        await asyncio.sleep(0.01)
        return agent

    agent = event_loop_under_test.run(scenario())
    assert agent.cycles == 3
    assert (agent.starts, agent.closes) == (1, 1)


def test_stop_from_inside_do_work_leaves_no_timer_behind(event_loop_under_test) -> None:
    async def scenario() -> None:
        agent = RecordingAgent()
        runner = AgentRunner(agent, SleepingIdleStrategy(park_ns=60_000_000_000))
        agent.on_cycle = lambda n: runner.stop()
        runner.start()
        await runner.join(1.0)
        assert runner._handle is None, "a stopped runner must not keep a park timer scheduled"

    event_loop_under_test.run(scenario())


def test_join_after_stop_returns_promptly_even_from_a_long_park(event_loop_under_test) -> None:
    async def scenario() -> float:
        agent = RecordingAgent()
        runner = AgentRunner(agent, SleepingIdleStrategy(park_ns=10_000_000_000))
        runner.start()
        await wait_until(lambda: agent.cycles == 1)
        await asyncio.sleep(0.005)  # now parked for 10 s
        start = time.monotonic()
        runner.stop()
        await runner.join(5.0)
        elapsed = time.monotonic() - start
        assert agent.closes == 1
        return elapsed

    assert event_loop_under_test.run(scenario()) < 0.1


def test_join_before_start_returns_at_once(event_loop_under_test) -> None:
    async def scenario() -> None:
        runner = AgentRunner(RecordingAgent())
        runner.stop()  # stop before start does nothing either
        await asyncio.wait_for(runner.join(10.0), 0.5)

    event_loop_under_test.run(scenario())


def test_join_without_stop_times_out(event_loop_under_test) -> None:
    async def scenario() -> None:
        agent = RecordingAgent()
        runner = AgentRunner(agent, SleepingIdleStrategy(park_ns=10_000_000_000))
        runner.start()
        with pytest.raises(TimeoutError):
            await runner.join(0.02)
        assert agent.closes == 0
        runner.stop()
        await runner.join(1.0)
        assert agent.closes == 1

    event_loop_under_test.run(scenario())


def test_on_start_failure_propagates_from_start_and_runs_no_cycle(event_loop_under_test) -> None:
    class FailingStart(RecordingAgent):
        def on_start(self) -> None:
            raise RuntimeError("cannot start")

    async def scenario() -> None:
        agent = FailingStart()
        runner = AgentRunner(agent)
        with pytest.raises(RuntimeError, match="cannot start"):
            runner.start()
        await asyncio.sleep(0.01)
        assert agent.cycles == 0

    event_loop_under_test.run(scenario())


def test_waker_property_is_the_strategys_waker() -> None:
    strategy = BackoffIdleStrategy()
    assert AgentRunner(RecordingAgent(), strategy).waker is strategy.waker
    assert isinstance(AgentRunner(RecordingAgent()).idle_strategy, BackoffIdleStrategy)


# --- errors ----------------------------------------------------------------------------------------------


def test_do_work_exception_goes_to_the_error_handler_and_the_runner_keeps_going(
    event_loop_under_test,
) -> None:
    boom = ValueError("boom")
    errors: list[BaseException] = []

    async def scenario() -> RecordingAgent:
        agent = RecordingAgent(script=[1, boom, 1, boom], default_work=1)
        idle = ScriptedIdle([], then=YIELD)
        runner = AgentRunner(agent, idle, errors.append)
        runner.start()
        await wait_until(lambda: agent.cycles >= 10)
        runner.stop()
        await runner.join(1.0)
        assert idle.seen[:4] == [1, 1, 1, 1], "a failed cycle counts as work (the backoff starts over)"
        return agent

    agent = event_loop_under_test.run(scenario())
    assert errors == [boom, boom]
    assert (agent.starts, agent.closes) == (1, 1)


def test_on_close_exception_goes_to_the_error_handler_and_join_still_returns(
    event_loop_under_test,
) -> None:
    errors: list[BaseException] = []

    class FailingClose(RecordingAgent):
        def on_close(self) -> None:
            super().on_close()
            raise OSError("cannot close")

    async def scenario() -> None:
        agent = FailingClose()
        runner = AgentRunner(agent, error_handler=errors.append)
        runner.start()
        await asyncio.sleep(0.005)
        runner.stop()
        await runner.join(1.0)
        assert agent.closes == 1

    event_loop_under_test.run(scenario())
    assert [str(e) for e in errors] == ["cannot close"]


def test_default_error_handler_logs_the_exception(
    event_loop_under_test, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        agent = RecordingAgent("conductor", script=[KeyError("missing")], default_work=0)
        runner = AgentRunner(agent)
        runner.start()
        await wait_until(lambda: agent.cycles >= 2)
        runner.stop()
        await runner.join(1.0)

    with caplog.at_level(logging.ERROR, logger="driver.agent.runner"):
        event_loop_under_test.run(scenario())
    failures = [r for r in caplog.records if "agent conductor failed" in r.getMessage()]
    assert len(failures) == 1
    assert failures[0].exc_info is not None and isinstance(failures[0].exc_info[1], KeyError)


# --- how the runner follows the idle strategy -----------------------------------------------------------


def test_spin_runs_the_next_cycle_in_the_same_callback_and_yield_lets_others_run(
    event_loop_under_test,
) -> None:
    """Between spun cycles no other callback runs; after a YIELD other ready callbacks run first."""

    async def scenario() -> list[str]:
        loop = asyncio.get_running_loop()
        events: list[str] = []
        running = True

        def other() -> None:
            events.append("other")
            if running:
                loop.call_soon(other)

        agent = RecordingAgent()
        agent.on_cycle = lambda n: events.append(f"work{n}")
        idle = ScriptedIdle([SPIN, SPIN, YIELD, SPIN, YIELD], then=1_000_000_000)
        runner = AgentRunner(agent, idle)
        loop.call_soon(other)
        runner.start()
        await wait_until(lambda: agent.cycles == 6)
        await asyncio.sleep(0.01)
        running = False
        runner.stop()
        await runner.join(1.0)
        return events

    events = event_loop_under_test.run(scenario())
    works = [e for e in events if e.startswith("work")]
    assert works == [f"work{n}" for n in range(1, 7)], "parked for 1 s after cycle 6"
    between = {n: events.index(f"work{n + 1}") - events.index(f"work{n}") - 1 for n in range(1, 6)}
    assert between[1] == 0 and between[2] == 0, "SPIN: the next cycle runs at once"
    assert between[3] >= 1, "YIELD: other callbacks run first"
    assert between[4] == 0
    assert between[5] >= 1


def test_a_park_waits_about_the_requested_time(event_loop_under_test) -> None:
    async def scenario() -> float:
        agent = RecordingAgent()
        times: list[float] = []
        agent.on_cycle = lambda n: times.append(time.monotonic())
        runner = AgentRunner(agent, ScriptedIdle([30_000_000], then=10_000_000_000))
        runner.start()
        await wait_until(lambda: agent.cycles == 2)
        runner.stop()
        await runner.join(1.0)
        return times[1] - times[0]

    assert 0.025 <= event_loop_under_test.run(scenario()) < 0.5


# --- CompositeAgent and INVOKER mode ---------------------------------------------------------------------


def test_composite_agent_sums_work_starts_in_order_and_closes_in_reverse() -> None:
    log: list[str] = []
    a = RecordingAgent("a", script=[1, 0, 2], log=log)
    b = RecordingAgent("b", script=[3, 0, 0], log=log)
    c = RecordingAgent("c", script=[0, 0, 5], log=log)
    composite = CompositeAgent([a, b, c])
    assert composite.role_name == "[a,b,c]"
    composite.on_start()
    assert [composite.do_work() for _ in range(3)] == [4, 0, 7]
    composite.on_close()
    assert log == ["start a", "start b", "start c", "close c", "close b", "close a"]


def test_composite_agent_under_a_runner(event_loop_under_test) -> None:
    log: list[str] = []
    a = RecordingAgent("a", default_work=1, log=log)
    b = RecordingAgent("b", default_work=0, log=log)

    async def scenario() -> None:
        runner = AgentRunner(CompositeAgent([a, b]))
        runner.start()
        await wait_until(lambda: b.cycles >= 5)
        runner.stop()
        await runner.join(1.0)

    event_loop_under_test.run(scenario())
    assert a.cycles == b.cycles
    assert log == ["start a", "start b", "close b", "close a"]


def test_do_work_until_idle_stops_at_the_first_zero_work_cycle() -> None:
    agent = RecordingAgent(script=[3, 2, 0, 5])
    assert do_work_until_idle(agent) == 5
    assert agent.cycles == 3
    assert do_work_until_idle(agent) == 5 + 0
    assert agent.cycles == 5


def test_do_work_until_idle_of_an_idle_agent_runs_one_cycle() -> None:
    agent = RecordingAgent()
    assert do_work_until_idle(agent) == 0
    assert agent.cycles == 1


def test_do_work_until_idle_is_bounded_by_max_cycles() -> None:
    agent = RecordingAgent(default_work=2)
    assert do_work_until_idle(agent, max_cycles=7) == 14
    assert agent.cycles == 7


def test_do_work_until_idle_over_a_composite() -> None:
    a = RecordingAgent("a", script=[1, 1, 0])
    b = RecordingAgent("b", script=[1, 0, 0])
    assert do_work_until_idle(CompositeAgent([a, b])) == 3
    assert (a.cycles, b.cycles) == (3, 3)


def test_short_parks_wait_on_the_park_timer_and_stop_closes_it(event_loop_under_test) -> None:
    async def scenario() -> None:
        agent = RecordingAgent()
        runner = AgentRunner(agent, ScriptedIdle([300_000, 300_000, 300_000], then=10_000_000_000))
        runner.start()
        timer = runner._park_timer
        assert timer is not None and timer.fileno() >= 0
        await wait_until(lambda: agent.cycles == 4)  # three sub-millisecond parks, each ended by the timer
        assert runner._handle is not None  # now in the long call_later park
        runner.waker.wake()
        await wait_until(lambda: agent.cycles == 5)
        runner.stop()
        await runner.join(1.0)
        assert runner._park_timer is None and timer.fileno() == -1

    event_loop_under_test.run(scenario())


def test_a_wake_ends_a_short_park_and_the_stale_expiry_runs_no_extra_cycle(event_loop_under_test) -> None:
    async def scenario() -> None:
        agent = RecordingAgent()
        runner = AgentRunner(agent, ScriptedIdle([900_000], then=10_000_000_000))
        seen: list[tuple[bool, bool]] = []

        def wake_while_parked() -> None:
            seen.append((runner._parked, runner._handle is None))  # parked on the timer, no loop timer
            runner.waker.wake()

        agent.on_cycle = lambda n: asyncio.get_running_loop().call_soon(wake_while_parked) if n == 1 else None
        runner.start()
        await wait_until(lambda: agent.cycles == 2)
        assert seen == [(True, True)]
        await asyncio.sleep(0.01)  # the timer expires meanwhile: consumed, no cycle
        assert agent.cycles == 2
        runner.stop()
        await runner.join(1.0)

    event_loop_under_test.run(scenario())
