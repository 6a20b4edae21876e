"""Agents and the runner that drives one on the event loop.

An agent has ``on_start()``, a synchronous ``do_work() -> int`` duty cycle and ``on_close()``. The runner
schedules duty cycles as loop callbacks (``call_soon`` to yield, ``call_later`` to park) following its
idle strategy. A park shorter than ``PRECISE_PARK_BELOW_NS`` waits on a timerfd the loop watches instead
(:class:`driver.agent.park_timer.ParkTimer`): uvloop's timers have millisecond resolution, so a
short park there is either no park at all or a millisecond or more, while the processes the driver
serves (a subscriber freeing window, a publisher filling the term) move on in microseconds. An exception
from ``do_work`` goes to the error handler and the runner carries on. With a fast path (the SHARED driver's
native steady-state cycle, driver/fast_cycle.py) armed after a cycle that parks, a wake-up runs it instead of the
duty cycle until it hands back. What runs next, and how, is decided by one table
(driver/agent/wake_policy.py); this module only carries its actions out.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Sequence
from typing import Protocol

from driver.agent import wake_policy as policy
from driver.agent.idle_strategy import SPIN, BackoffIdleStrategy, IdleStrategy, Waker
from driver.agent.park_timer import ParkTimer
from driver.agent.wake_policy import PRECISE_PARK_BELOW_NS as PRECISE_PARK_BELOW_NS
from driver.agent.wake_policy import Action
from driver.agent.work_probe import WorkProbe

log = logging.getLogger(__name__)


class Agent(Protocol):
    role_name: str

    def on_start(self) -> None: ...

    def do_work(self) -> int: ...

    def on_close(self) -> None: ...


class CompositeAgent:
    """Several agents run as one: SHARED threading mode, and tests."""

    def __init__(self, agents: Sequence[Agent]) -> None:
        self.agents = list(agents)
        self.role_name = "[" + ",".join(a.role_name for a in self.agents) + "]"

    def on_start(self) -> None:
        for agent in self.agents:
            agent.on_start()

    def do_work(self) -> int:
        work = 0
        for agent in self.agents:
            work += agent.do_work()
        return work

    def on_close(self) -> None:
        for agent in reversed(self.agents):
            agent.on_close()


class FastPath(Protocol):
    """A native stand-in for the agent's duty cycle between two of its Python cycles (driver/fast_cycle.py)."""

    armed: bool

    def before_cycle(self) -> None: ...

    def after_cycle(self) -> None: ...

    def run(self) -> int | None: ...

    def pending(self) -> bool: ...


class AgentRunner:
    """Runs one agent on the running loop until ``stop()``; ``join()`` waits for ``on_close``."""

    def __init__(
        self,
        agent: Agent,
        idle_strategy: IdleStrategy | None = None,
        error_handler: Callable[[BaseException], None] | None = None,
        probe: WorkProbe | None = None,
        fast: FastPath | None = None,
    ) -> None:
        """``probe``: when a park ends on its timer, ask it first and park again if nothing moved
        (driver/agent/work_probe.py), also after a cycle that did work: what that work leaves to do is queued
        (the probe sees it) or comes back as a datagram; a wake by I/O always runs the cycle."""
        self.agent = agent
        self.probe = probe
        self.fast = fast
        """``fast``: when armed (after a Python cycle that parks), a wake-up runs it instead of the duty cycle; it
        hands back (None) whenever the Python cycle must run."""
        self.idle_strategy: IdleStrategy = idle_strategy or BackoffIdleStrategy()
        self.error_handler = error_handler or (
            lambda e: log.error("agent %s failed", agent.role_name, exc_info=e)
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handle: asyncio.Handle | asyncio.TimerHandle | None = None
        self._parked = False
        self._running = False
        self._closed: asyncio.Future[None] | None = None
        self._park_timer: ParkTimer | None = None

    @property
    def waker(self) -> Waker:
        return self.idle_strategy.waker

    def start(self) -> None:
        """Call ``on_start`` now and schedule the first duty cycle on the running loop."""
        self._loop = loop = asyncio.get_running_loop()
        self._closed = loop.create_future()
        try:
            self.agent.on_start()
        except Exception:
            self._close()  # as Agrona: on_close runs even when on_start fails, and join() returns
            raise
        self._running = True
        self._open_park_timer(loop)
        self.idle_strategy.waker.bind(self._wake)
        self._handle = loop.call_soon(self._tick)

    def _open_park_timer(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            timer = ParkTimer()
        except OSError as e:  # pragma: no cover - timerfd is Linux; parks then fall back to call_later
            log.debug("no timerfd for %s parks: %s", self.agent.role_name, e)
            return
        try:
            loop.add_reader(timer.fileno(), self._on_park_timer)
        except (NotImplementedError, RuntimeError):  # pragma: no cover - a loop that cannot watch fds
            timer.close()
            return
        self._park_timer = timer

    def _close_park_timer(self) -> None:
        timer, self._park_timer = self._park_timer, None
        if timer is not None:
            if self._loop is not None and not self._loop.is_closed():
                self._loop.remove_reader(timer.fileno())
            timer.close()

    def _tick(self) -> None:
        self._handle = None
        self._parked = False
        if not self._running:
            return
        agent, idle, probe = self.agent, self.idle_strategy, self.probe
        fast = self.fast
        if fast is not None:
            fast.before_cycle()
        while True:
            if probe is not None:
                probe.before_cycle()
            try:
                work = agent.do_work()
            except Exception as e:
                self._report(e)
                work = 1
            if not self._running:
                return  # stop() was called during the duty cycle: no more cycles, no stale timer
            delay_ns = idle.next_delay_ns(work)
            if delay_ns != SPIN:
                break
        precise = self._park_timer is not None
        action = policy.after_cycle(work, delay_ns, probe is not None and probe.spin_ns > 0, fast is not None, precise)
        if action[0] == policy.ASK_ANSWER:
            action = policy.after_answer(probe.moves_soon(), delay_ns, fast is not None, precise)  # type: ignore[union-attr]
        self._carry_out(action)

    def _fast(self) -> None:
        """A wake-up while the fast path may be armed: its native cycle, or the duty cycle when it hands back."""
        self._handle = None
        self._parked = False
        fast = self.fast
        if not self._running:
            return
        if fast is None or not fast.armed:
            self._tick()
            return
        try:
            work = fast.run()
        except Exception as e:
            fast.armed = False
            self._report(e)
            work = None
        if not self._running:
            return
        delay_ns = 0 if work is None else self.idle_strategy.next_delay_ns(work)
        pending = policy.native_pending_matters(work, delay_ns) and fast.pending()
        self._carry_out(policy.after_native(work, delay_ns, pending, self._park_timer is not None))

    def _carry_out(self, action: Action) -> None:
        """Do what the table (driver/agent/wake_policy.py) decided: run the duty cycle or the native one now, at
        the loop's next turn, after an OS yield or after a park (a park on the timer ends in
        :meth:`_on_park_timer`); arm the native cycle first when the action says so."""
        step, then_name, delay_ns, arm = action
        if step == policy.NOTHING:
            return
        then = self._tick if then_name == policy.CYCLE else self._fast
        if step == policy.NOW:
            then()
            return
        if arm:
            fast = self.fast
            assert fast is not None
            try:
                fast.after_cycle()
            except Exception as e:
                fast.armed = False
                self._report(e)
        loop = self._loop
        assert loop is not None
        if step == policy.SOON:
            self._handle = loop.call_soon(then)
        elif step == policy.OS_YIELD_THEN:
            os.sched_yield()
            self._handle = loop.call_soon(then)
        else:
            self._parked = True
            if step == policy.PARK_TIMER:
                self._park_timer.arm(delay_ns)  # type: ignore[union-attr]  # _on_park_timer runs next
            else:
                self._handle = loop.call_later(delay_ns / 1e9, then)

    def _on_park_timer(self) -> None:
        timer = self._park_timer
        # A stale readiness (the park was already ended by a wake, or re-armed) consumes nothing: no cycle.
        fresh = timer is not None and timer.clear() and self._parked and self._handle is None
        fast, probe = self.fast, self.probe
        action = policy.on_park_timer(fresh, fast is not None and fast.armed, probe is not None)
        if action[0] == policy.ASK_QUIET:
            quiet = probe.is_quiet()  # type: ignore[union-attr]
            delay_ns = self.idle_strategy.next_delay_ns(0) if quiet else None
            action = policy.after_quiet(quiet, delay_ns, timer is not None)
        self._carry_out(action)

    def _report(self, error: Exception) -> None:
        try:
            self.error_handler(error)
        except Exception:  # a broken error handler must not stop the duty cycle
            log.exception("error handler of agent %s failed on %r", self.agent.role_name, error)

    def _wake(self) -> None:
        if self._loop is None:
            return
        action = policy.on_wake(self._parked, self.fast is not None)
        if action[0] != policy.NOTHING:
            if self._handle is not None:
                self._handle.cancel()
            self._parked = False
            self._carry_out(action)

    def stop(self) -> None:
        """First phase of shutdown: no further duty cycles; ``on_close`` runs on the loop next."""
        if not self._running:
            return
        self._running = False
        self.idle_strategy.waker.bind(None)
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._parked = False
        self._close_park_timer()
        assert self._loop is not None
        self._loop.call_soon(self._close)

    def _close(self) -> None:
        self._close_park_timer()  # idempotent: stop() closed it already unless on_start failed
        try:
            self.agent.on_close()
        except Exception as e:
            self._report(e)
        finally:
            if self._closed is not None and not self._closed.done():
                self._closed.set_result(None)

    async def join(self, timeout_s: float = 5.0) -> None:
        """Second phase: wait until the agent has closed."""
        if self._closed is not None:
            await asyncio.wait_for(asyncio.shield(self._closed), timeout_s)


def do_work_until_idle(agent: Agent, max_cycles: int = 1000) -> int:
    """INVOKER mode helper for tests and embedders: run duty cycles until one does no work."""
    total = 0
    for _ in range(max_cycles):
        work = agent.do_work()
        total += work
        if work == 0:
            break
    return total
