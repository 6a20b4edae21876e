"""The archive's agents exchange work only through these queues (docs/design.md section 3): the conductor hands
sessions and aborts to the recorder and the replayer, which hand back each finished session's outcome."""

from __future__ import annotations

from collections import deque
from typing import Any, NamedTuple


class RecordingStopped(NamedTuple):
    recording_id: int
    stop_position: int
    error: str | None


class ReplayDone(NamedTuple):
    replay_session_id: int
    error: str | None


class SessionQueue:
    """A one-way queue of commands between two agents on the same loop (add, abort, or an outcome)."""

    def __init__(self) -> None:
        self._items: deque[tuple[str, Any]] = deque()

    def put(self, command: str, item: Any) -> None:
        self._items.append((command, item))

    def drain(self, limit: int = 64) -> list[tuple[str, Any]]:
        items = self._items
        if not items:
            return []  # the usual case, on every duty cycle of three agents
        return [items.popleft() for _ in range(min(limit, len(items)))]

    def __len__(self) -> int:
        return len(self._items)
