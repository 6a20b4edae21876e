"""AgentInvoker (INVOKER threading mode): on_start once, duty cycles on demand, on_close once."""

from __future__ import annotations

from driver.agent.agent_invoker import AgentInvoker


class Agent:
    role_name = "test-agent"

    def __init__(self, fail_start: bool = False) -> None:
        self.calls: list[str] = []
        self.fail_start = fail_start
        self.fail_next = False

    def on_start(self) -> None:
        self.calls.append("start")
        if self.fail_start:
            raise RuntimeError("cannot start")

    def do_work(self) -> int:
        self.calls.append("work")
        if self.fail_next:
            self.fail_next = False
            raise ValueError("bad cycle")
        return 3

    def on_close(self) -> None:
        self.calls.append("close")


def test_start_invoke_close_each_as_agrona() -> None:
    agent, errors = Agent(), []
    invoker = AgentInvoker(agent, errors.append)
    assert invoker.invoke() == 0  # not started: no cycle
    invoker.start()
    invoker.start()
    assert invoker.invoke() == 3
    agent.fail_next = True
    assert invoker.invoke() == 0  # the error goes to the handler; the invoker carries on
    assert invoker.invoke() == 3
    invoker.close()
    invoker.close()
    assert invoker.invoke() == 0
    assert agent.calls == ["start", "work", "work", "work", "close"]
    assert [type(e) for e in errors] == [ValueError]
    assert invoker.is_started and invoker.is_closed and not invoker.is_running


def test_a_failed_start_closes_the_agent() -> None:
    agent, errors = Agent(fail_start=True), []
    invoker = AgentInvoker(agent, errors.append)
    invoker.start()
    assert invoker.is_closed and invoker.invoke() == 0
    assert agent.calls == ["start", "close"]
    assert [str(e) for e in errors] == ["cannot start"]
