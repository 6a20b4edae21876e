"""Command queues between agents, and the proxy base that offers to them without ever dropping.

An agent never calls another: it offers a command (the name of one of the consuming agent's command
methods, and its arguments) to the other's bounded :class:`CommandQueue`, which the consumer drains in
its duty cycle. The producer holds no reference to the consumer, nor imports its module.

All agents share one thread (the event loop), so a producer cannot spin until a full queue drains:
the consumer only runs once the producer's duty cycle returns. :class:`CommandProxy` therefore keeps
what did not fit in an ordered backlog and moves it into the queue as space frees (whenever the proxy
is used, and at the start of the producer's duty cycle via :meth:`CommandProxy.flush`). A command
never overtakes an earlier one and none is dropped; each command that did not fit when offered
counts once in the proxy's failed-offers system counter.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Protocol

COMMAND_QUEUE_CAPACITY = 1024
"""Commands one agent may have queued for another. Bounded so that a consumer falling behind shows as
failed offers (system counters) instead of hidden growth; the producer's backlog keeps the overflow, so
a burst of any size loses nothing. Large enough that client bursts rarely reach it."""

COMMAND_DRAIN_LIMIT = 10
"""Commands a consumer runs per duty cycle: a burst cannot starve its data path."""

Command = str
"""The name of the consumer's method that runs the command."""


class CommandQueue:
    __slots__ = ("_commands", "capacity")

    def __init__(self, capacity: int | None = None) -> None:
        self._commands: deque[tuple[Command, tuple[Any, ...]]] = deque()
        self.capacity = COMMAND_QUEUE_CAPACITY if capacity is None else capacity
        if self.capacity < 1:
            raise ValueError(f"command queue capacity must be at least 1, not {self.capacity}")

    def offer(self, command: Command, args: tuple[Any, ...]) -> bool:
        """Queue ``consumer.<command>(*args)``; False (nothing queued) when the queue is full."""
        if len(self._commands) >= self.capacity:
            return False
        self._commands.append((command, args))
        return True

    def drain(self, consumer: object, limit: int = COMMAND_DRAIN_LIMIT) -> int:
        commands = self._commands
        count = 0
        while commands and count < limit:
            command, args = commands.popleft()
            count += 1
            getattr(consumer, command)(*args)
        return count

    @property
    def remaining_capacity(self) -> int:
        return self.capacity - len(self._commands)

    def __len__(self) -> int:
        return len(self._commands)


class FailureCounter(Protocol):
    def increment(self) -> int: ...


class CommandProxy:
    """Base of the proxies: offers to one agent's queue, keeping what does not fit in order."""

    __slots__ = ("_backlog", "_failed_offers", "queue")

    def __init__(self, queue: CommandQueue, failed_offers: FailureCounter) -> None:
        self.queue = queue
        self._failed_offers = failed_offers
        self._backlog: deque[tuple[Command, tuple[Any, ...]]] = deque()

    def _offer(self, command: Command, *args: Any) -> None:
        backlog = self._backlog
        if backlog:
            self.flush()
        if backlog or not self.queue.offer(command, args):
            self._failed_offers.increment()
            backlog.append((command, args))

    def flush(self) -> int:
        """Move backlogged commands into the queue, oldest first, while it has room; returns how many."""
        backlog = self._backlog
        if not backlog:
            return 0
        queue = self.queue
        moved = 0
        while backlog:
            command, args = backlog[0]
            if not queue.offer(command, args):
                break
            backlog.popleft()
            moved += 1
        return moved

    @property
    def backlog(self) -> int:
        """Commands waiting for room in the queue."""
        return len(self._backlog)

    def has_pending(self) -> bool:
        """Commands queued or backlogged that the consumer has not run yet."""
        return bool(self._backlog) or bool(self.queue)
