"""Untethered subscriptions (``tether=false``): a subscriber that falls a window behind stops holding the
stream back, rests, then rejoins at the live position (docs/uri.md section 6, as Aeron's driver since 1.18).

Sans-IO: a subscribable (IPC publication, network publication for its spies, publication image) keeps an
:class:`UntetheredSubscriptions` beside its flow-control positions and calls :meth:`~UntetheredSubscriptions.check`
on the conductor's timer with the position below which a subscriber counts as behind. The answers are what
the subscribable and the conductor must do: tell the client its image went (``UNAVAILABLE``), take the position
out of flow control (``DROP``), put it back at the join position and announce the image again (``REJOIN``).

The states, one table (``TRANSITIONS``), each left when its timeout has run since the last change:

    ACTIVE  --behind for window-limit timeout-->  LINGER  (image unavailable; still in flow control, so the
                                                           client can let go of the log before it is reused)
    LINGER  --linger timeout-->                   RESTING (out of flow control)
    RESTING --resting timeout-->                  ACTIVE  (back at the live position, image available)

An ACTIVE subscriber inside the window restarts its clock at every check.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Protocol


class Position(Protocol):
    def get(self) -> int: ...


@dataclass(frozen=True, slots=True)
class UntetheredTimeouts:
    """``aeron.untethered.window.limit.timeout`` (5 s), ``aeron.untethered.linger.timeout`` (as the window
    limit timeout when not set), ``aeron.untethered.resting.timeout`` (10 s), or a channel's own values."""

    window_limit_ns: int = 5_000_000_000
    linger_ns: int = 5_000_000_000
    resting_ns: int = 10_000_000_000


DEFAULT_TIMEOUTS = UntetheredTimeouts()


class State(enum.Enum):
    ACTIVE = "active"
    LINGER = "linger"
    RESTING = "resting"


class Action(enum.Enum):
    UNAVAILABLE = "unavailable"
    DROP = "drop"
    REJOIN = "rejoin"


# state -> (timeout field of UntetheredTimeouts, next state, action when it runs out)
TRANSITIONS: dict[State, tuple[str, State, Action]] = {
    State.ACTIVE: ("window_limit_ns", State.LINGER, Action.UNAVAILABLE),
    State.LINGER: ("linger_ns", State.RESTING, Action.DROP),
    State.RESTING: ("resting_ns", State.ACTIVE, Action.REJOIN),
}


def window_limit(consumer_position: int, window_length: int) -> int:
    """A subscriber at or below this is behind: three quarters of a window behind the front runner."""
    return consumer_position - window_length + (window_length >> 2)


@dataclass(eq=False, slots=True)
class UntetheredSubscription:
    link: Any
    position: Position
    timeouts: UntetheredTimeouts
    time_of_last_update_ns: int
    state: State = State.ACTIVE


class UntetheredSubscriptions:
    """The untethered subscribers of one subscribable."""

    __slots__ = ("entries",)

    def __init__(self) -> None:
        self.entries: list[UntetheredSubscription] = []

    def __bool__(self) -> bool:
        return bool(self.entries)

    def add(self, link: Any, position: Position, timeouts: UntetheredTimeouts, now_ns: int) -> None:
        self.entries.append(UntetheredSubscription(link, position, timeouts, now_ns))

    def remove(self, position: Position) -> None:
        self.entries = [entry for entry in self.entries if entry.position is not position]

    def is_resting(self, position: Position) -> bool:
        return any(entry.position is position and entry.state is State.RESTING for entry in self.entries)

    def check(self, now_ns: int, behind_limit: int) -> list[tuple[Action, UntetheredSubscription]]:
        """Move each subscriber on whose timeout has run; returns what to do for each move."""
        actions = []
        for entry in self.entries:
            if entry.state is State.ACTIVE and entry.position.get() > behind_limit:
                entry.time_of_last_update_ns = now_ns
                continue
            timeout_name, next_state, action = TRANSITIONS[entry.state]
            if now_ns - entry.time_of_last_update_ns >= getattr(entry.timeouts, timeout_name):
                entry.state = next_state
                entry.time_of_last_update_ns = now_ns
                actions.append((action, entry))
        return actions
