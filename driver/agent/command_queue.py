"""Command queues between agents: an agent never calls another; it queues a command the other drains.

All agents share one thread (the event loop), so a deque is enough; the queue is still the only way
across, which keeps each agent testable alone and movable to its own process later.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any


class CommandQueue:
    __slots__ = ("_commands", "capacity", "failed_offers")

    def __init__(self, capacity: int = 4096) -> None:
        self._commands: deque[tuple[Callable[..., Any], tuple[Any, ...]]] = deque()
        self.capacity = capacity
        self.failed_offers = 0

    def offer(self, command: Callable[..., Any], *args: Any) -> bool:
        if len(self._commands) >= self.capacity:
            self.failed_offers += 1
            return False
        self._commands.append((command, args))
        return True

    def drain(self, limit: int = 10) -> int:
        commands = self._commands
        count = 0
        while commands and count < limit:
            command, args = commands.popleft()
            command(*args)
            count += 1
        return count

    def __len__(self) -> int:
        return len(self._commands)
