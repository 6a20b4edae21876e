"""Fixtures for agent tests: every loop-touching test runs under asyncio and uvloop, and fails if anything
reaches the loop's exception handler."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import uvloop

LOOP_FACTORIES: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "asyncio": asyncio.new_event_loop,
    "uvloop": uvloop.new_event_loop,
}


class Loop:
    """A fresh event loop whose exception handler records whatever reaches it."""

    def __init__(self, factory: Callable[[], asyncio.AbstractEventLoop]) -> None:
        self.loop = factory()
        self.reached: list[dict[str, Any]] = []
        self.loop.set_exception_handler(lambda _loop, context: self.reached.append(context))

    def run(self, coro: Any) -> Any:
        result = self.loop.run_until_complete(coro)
        assert self.reached == [], f"reached the loop's exception handler: {self.reached}"
        return result

    def close(self) -> None:
        pending = asyncio.all_tasks(self.loop)
        for task in pending:
            task.cancel()
        if pending:
            self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()


@pytest.fixture(params=list(LOOP_FACTORIES))
def event_loop_under_test(request: pytest.FixtureRequest) -> Iterator[Loop]:
    loop = Loop(LOOP_FACTORIES[request.param])
    yield loop
    loop.close()
    assert loop.reached == [], f"reached the loop's exception handler: {loop.reached}"
