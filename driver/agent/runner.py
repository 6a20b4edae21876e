"""Agents and the runner that drives one on the event loop.

An agent has ``on_start()``, a synchronous ``do_work() -> int`` duty cycle and ``on_close()``. The runner
calls ``do_work`` and hands the work count to its idle strategy; it never lets an exception from an
agent kill the loop: the error goes to the agent's error handler and the runner keeps going.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Protocol

from driver.agent.idle_strategy import BackoffIdleStrategy

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
        return sum(agent.do_work() for agent in self.agents)

    def on_close(self) -> None:
        for agent in reversed(self.agents):
            agent.on_close()


class AgentRunner:
    """Runs one agent as an asyncio task until ``stop()``."""

    def __init__(
        self,
        agent: Agent,
        idle_strategy: BackoffIdleStrategy | None = None,
        error_handler: Callable[[BaseException], None] | None = None,
    ) -> None:
        self.agent = agent
        self.idle_strategy = idle_strategy or BackoffIdleStrategy()
        self.error_handler = error_handler or (lambda e: log.exception("agent %s failed", agent.role_name))
        self._running = False
        self._task: asyncio.Task[None] | None = None

    @property
    def waker(self):
        return self.idle_strategy.waker

    def start(self) -> asyncio.Task[None]:
        self._running = True
        self._task = asyncio.get_running_loop().create_task(self._run(), name=self.agent.role_name)
        return self._task

    def stop(self) -> None:
        """First phase of shutdown: ask the duty cycle to end; wake it if parked."""
        self._running = False
        self.idle_strategy.waker.wake()

    async def join(self, timeout_s: float = 5.0) -> None:
        """Second phase: wait for the loop to finish (cancel it if it does not in time)."""
        if self._task is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(self._task), timeout_s)
        except TimeoutError:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                if asyncio.current_task() is not None and asyncio.current_task().cancelling():  # type: ignore[union-attr]
                    raise

    async def _run(self) -> None:
        agent, idle = self.agent, self.idle_strategy
        try:
            agent.on_start()
        except Exception as e:
            self.error_handler(e)
            raise
        try:
            while self._running:
                try:
                    work = agent.do_work()
                except Exception as e:
                    self.error_handler(e)
                    work = 1
                await idle.idle(work)
        finally:
            agent.on_close()


def do_work_until_idle(agent: Agent, max_cycles: int = 1000) -> int:
    """INVOKER mode helper for tests and embedders: run duty cycles until one does no work."""
    total = 0
    for _ in range(max_cycles):
        work = agent.do_work()
        total += work
        if work == 0:
            break
    return total
