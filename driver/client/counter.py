"""A counter allocated by this client through the driver (ADD_COUNTER)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from driver.concurrent.counters import AtomicCounter

if TYPE_CHECKING:
    from driver.client.aeron import Aeron


class Counter:
    def __init__(self, aeron: Aeron, registration_id: int, counter_id: int, counter: AtomicCounter) -> None:
        self._aeron = aeron
        self.registration_id = registration_id
        self.id = counter_id
        self._counter = counter
        self.closed = False

    def get(self) -> int:
        return self._counter.get()

    def set(self, value: int) -> None:
        self._counter.set(value)

    def increment(self) -> int:
        return self._counter.increment()

    def close(self) -> None:
        """Remove the counter from the driver (REMOVE_COUNTER); idempotent."""
        if not self.closed:
            self.closed = True
            self._aeron._remove_counter(self.registration_id)

    def __repr__(self) -> str:
        return f"Counter(id={self.id}, registration_id={self.registration_id})"
