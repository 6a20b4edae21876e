"""WorkProbe and the runner's use of it: a park that ends on its timer costs no duty cycle while nothing a client
writes has moved, whether the cycle before it did work or not; a moved word, queued work or a changed word set
runs the cycle."""

from __future__ import annotations

import asyncio

from driver.agent.idle_strategy import BackoffIdleStrategy
from driver.agent.runner import AgentRunner, CompositeAgent
from driver.agent.work_probe import WorkProbe
from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.word_watch import WatchVersion, Word
from tests.support import PlainAgent, wait_until
from tests.support.clock import ManualClock


class WatchedAgent:
    """An agent whose work is a client-written word: each cycle does work when the word moved since the last."""

    role_name = "watched"

    def __init__(self, buffer: AtomicBuffer, offset: int = 0) -> None:
        self.buffer = buffer
        self.offset = offset
        self.watch_version = WatchVersion()
        self.queued = 0
        self.cycles = 0
        self._seen = 0

    def watched_words(self) -> list[Word]:
        return [(self.buffer, self.offset)]

    def has_queued_work(self) -> bool:
        return self.queued > 0

    def on_start(self) -> None:
        pass

    def do_work(self) -> int:
        self.cycles += 1
        value = self.buffer.get_int64_volatile(self.offset)
        work = self.queued + (value != self._seen)
        self._seen, self.queued = value, 0
        return work

    def on_close(self) -> None:
        pass


def test_quiet_until_a_watched_word_moves_then_not_until_the_next_cycle() -> None:
    buffer = AtomicBuffer(bytearray(64))
    clock = ManualClock()
    agent = WatchedAgent(buffer)
    probe = WorkProbe([agent], cycle_interval_ns=1_000_000, clock=clock.nano_clock)
    probe.before_cycle()
    assert probe.is_quiet()
    buffer.put_int64_release(0, 1)
    assert not probe.is_quiet()  # a client wrote: a cycle is due
    probe.before_cycle()
    assert probe.is_quiet()


def test_queued_work_a_changed_word_set_and_the_interval_each_end_the_quiet() -> None:
    buffer = AtomicBuffer(bytearray(64))
    clock = ManualClock()
    agent = WatchedAgent(buffer)
    probe = WorkProbe([agent], cycle_interval_ns=1_000_000, clock=clock.nano_clock)
    probe.before_cycle()
    agent.queued = 1
    assert not probe.is_quiet()
    agent.queued = 0
    agent.offset = 8
    agent.watch_version.bump()  # e.g. a subscriber joined: its position must be watched
    assert not probe.is_quiet()
    probe.before_cycle()  # the cycle rebuilds the watch: the new word is watched, the old one no longer
    buffer.put_int64_release(0, 5)
    assert probe.is_quiet()
    buffer.put_int64_release(8, 5)
    assert not probe.is_quiet()
    probe.before_cycle()
    clock.advance_ns(999_999)
    assert probe.is_quiet()
    clock.advance_ns(1)
    assert not probe.is_quiet()  # the agents' timers get a full cycle at least this often


def test_moves_soon_sees_an_answer_already_written_and_otherwise_says_park() -> None:
    buffer = AtomicBuffer(bytearray(64))
    agent = WatchedAgent(buffer)
    probe = WorkProbe([agent], spin_ns=1_000)
    probe.before_cycle()
    assert not probe.moves_soon()
    buffer.put_int64_release(0, 2)
    assert probe.moves_soon()
    agent.queued = 1
    assert probe.moves_soon()


def test_a_probe_speaks_only_for_agents_that_can_all_be_watched() -> None:
    watched = WatchedAgent(AtomicBuffer(bytearray(64)))
    assert WorkProbe.for_agents([watched]) is not None
    assert WorkProbe.for_agents([watched, PlainAgent()]) is None  # e.g. an archive agent sharing the runner
    assert WorkProbe.for_agents([]) is None


def test_the_runner_skips_idle_cycles_while_nothing_moves_and_runs_one_when_a_word_does(
    event_loop_under_test,
) -> None:
    async def scenario() -> None:
        buffer = AtomicBuffer(bytearray(64))
        agent = WatchedAgent(buffer)
        idle = BackoffIdleStrategy(max_spins=0, max_yields=0, min_park_ns=50_000, max_park_ns=200_000)
        runner = AgentRunner(CompositeAgent([agent]), idle, probe=WorkProbe([agent], cycle_interval_ns=10**12))
        runner.start()
        await wait_until(lambda: agent.cycles >= 1)
        await asyncio.sleep(0.1)  # hundreds of parks end on their timer; the probe answers each of them
        assert agent.cycles == 1
        settled = agent.cycles
        buffer.put_int64_release(0, 42)
        await wait_until(lambda: agent.cycles > settled)
        runner.stop()
        await runner.join(1.0)

    event_loop_under_test.run(scenario())


def test_after_a_cycle_that_did_work_a_park_runs_no_cycle_until_a_word_moves_or_work_is_queued(
    event_loop_under_test,
) -> None:
    """A request answered (a cycle with a little work, then a park) costs no further cycle while nothing moves:
    the idle cycle each round trip used to run."""

    async def scenario() -> None:
        buffer = AtomicBuffer(bytearray(64))
        agent = WatchedAgent(buffer)
        # As the driver's: a cycle that moved less than busy_work parks (rather than yields) before the next.
        idle = BackoffIdleStrategy(max_spins=0, max_yields=0, min_park_ns=50_000, max_park_ns=200_000, busy_work=256)
        runner = AgentRunner(CompositeAgent([agent]), idle, probe=WorkProbe([agent], cycle_interval_ns=10**12))
        runner.start()
        await wait_until(lambda: agent.cycles >= 1)
        for step in range(2):
            settled = agent.cycles
            if step == 0:
                buffer.put_int64_release(0, 42)  # a client wrote: one cycle with work
            else:
                agent.queued = 1  # work another agent queued: one cycle
            await wait_until(lambda settled=settled: agent.cycles > settled)
            await asyncio.sleep(0.1)  # the parks after it end on their timer, and the probe answers them
            assert agent.cycles == settled + 1
        runner.stop()
        await runner.join(1.0)

    event_loop_under_test.run(scenario())


def test_without_a_probe_every_park_runs_a_cycle(event_loop_under_test) -> None:
    async def scenario() -> None:
        agent = WatchedAgent(AtomicBuffer(bytearray(64)))
        idle = BackoffIdleStrategy(max_spins=0, max_yields=0, min_park_ns=50_000, max_park_ns=200_000)
        runner = AgentRunner(agent, idle)
        runner.start()
        await asyncio.sleep(0.05)
        before = agent.cycles
        await asyncio.sleep(0.05)
        assert agent.cycles - before >= 50  # a cycle every ~200 us park (and its wake-up)
        runner.stop()
        await runner.join(1.0)

    event_loop_under_test.run(scenario())
