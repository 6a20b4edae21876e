"""One transition table per session state machine (docs/design.md section 3): a session holds a ``StateMachine``
over its table and moves only by naming an event; an event the table does not list for the current state is
ignored (returns False), so a late abort of a finished session is harmless."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Generic, TypeVar

S = TypeVar("S", bound=enum.Enum)


class StateMachine(Generic[S]):
    __slots__ = ("state", "table")

    def __init__(self, table: Mapping[tuple[S, str], S], initial: S) -> None:
        self.table = table
        self.state = initial

    def on(self, event: str) -> bool:
        """Apply ``event``; True when the table has a transition for it in the current state."""
        target = self.table.get((self.state, event))
        if target is None:
            return False
        self.state = target
        return True

    def __repr__(self) -> str:
        return f"StateMachine({self.state.name})"
