"""AgentInvoker: an agent whose duty cycle the embedder calls (INVOKER threading mode), as Agrona's.

``start()`` runs ``on_start`` once, ``invoke()`` one duty cycle, ``close()`` ``on_close`` once. An
exception from the agent goes to the error handler; ``invoke`` then reports no work and carries on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from driver.agent.runner import Agent

log = logging.getLogger(__name__)


class AgentInvoker:
    def __init__(self, agent: Agent, error_handler: Callable[[BaseException], None] | None = None) -> None:
        self.agent = agent
        self.error_handler = error_handler or (
            lambda e: log.error("agent %s failed", agent.role_name, exc_info=e)
        )
        self.is_started = False
        self.is_running = False
        self.is_closed = False

    def start(self) -> None:
        """Run ``on_start`` (once; later calls do nothing). If it fails the agent is closed."""
        if self.is_started or self.is_closed:
            return
        self.is_started = True
        try:
            self.agent.on_start()
        except Exception as e:
            self._report(e)
            self.close()
            return
        self.is_running = True

    def invoke(self) -> int:
        """One duty cycle; returns its work count (0 before ``start()`` and after ``close()``)."""
        if not self.is_running:
            return 0
        try:
            return self.agent.do_work()
        except Exception as e:
            self._report(e)
            return 0

    def close(self) -> None:
        """Run ``on_close`` (once; later calls do nothing)."""
        if self.is_closed:
            return
        self.is_running = False
        self.is_closed = True
        try:
            self.agent.on_close()
        except Exception as e:
            self._report(e)

    def _report(self, error: Exception) -> None:
        try:
            self.error_handler(error)
        except Exception:  # a broken error handler must not stop the embedder's loop
            log.exception("error handler of agent %s failed on %r", self.agent.role_name, error)
