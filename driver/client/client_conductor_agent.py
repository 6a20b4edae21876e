"""The client's duty cycle as an Agent (Aeron's conductorAgentInvoker), for embedders that run agents on a loop.

With ``Aeron.connect(use_conductor_agent_invoker=True)`` no thread runs the client: put this agent in an
AgentRunner, a CompositeAgent, or call ``do_work()`` from an INVOKER loop. It can share the driver's own loop,
since nothing in the duty cycle waits for the driver.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from driver.client.aeron import Aeron


class ClientConductorAgent:
    """``on_start`` / ``do_work() -> int`` / ``on_close``, the Agent protocol of driver/agent/runner.py."""

    def __init__(self, aeron: Aeron, role_name: str = "aeron-client-conductor") -> None:
        self.aeron = aeron
        self.role_name = role_name

    def on_start(self) -> None:
        pass

    def do_work(self) -> int:
        """Driver events (registrations answered, images), keepalives, expired commands, linger."""
        return self.aeron.do_work()

    def on_close(self) -> None:
        """Closing the agent closes the client (CLIENT_CLOSE), as Aeron's ClientConductor.onClose."""
        self.aeron.close()
