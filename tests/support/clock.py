"""A clock that moves only when a test says so: protocol timers are driven by it, not by sleeping."""

from __future__ import annotations

import time

NANOS_PER_MS = 1_000_000


class ManualClock:
    """Epoch-ms and monotonic-ns views of one manual time; both move together.

    Pass ``clock.epoch_clock_ms`` / ``clock.nano_clock`` wherever the driver takes a clock (``MediaDriver(ctx,
    clock.epoch_clock_ms, clock.nano_clock)``, agents' ``nano_clock``, ``CountersManager``, ``DistinctErrorLog``).
    """

    def __init__(self, epoch_ms: int = 1_700_000_000_000, nanos: int = 1_000_000_000) -> None:
        self._epoch_ms = epoch_ms
        self.nanos = nanos

    @classmethod
    def starting_now(cls) -> ManualClock:
        """Epoch view starting at the real time: for drivers whose real-time clients check their heartbeat
        (a client takes a driver whose heartbeat is older than its driver timeout for dead)."""
        return cls(epoch_ms=time.time_ns() // NANOS_PER_MS)

    @property
    def epoch_ms(self) -> int:
        return self._epoch_ms

    @epoch_ms.setter
    def epoch_ms(self, value: int) -> None:
        """Setting the wall clock moves the monotonic clock by the same amount (it never runs backwards)."""
        self.nanos += max(0, value - self._epoch_ms) * NANOS_PER_MS
        self._epoch_ms = value

    def advance_ms(self, ms: int) -> None:
        self._epoch_ms += ms
        self.nanos += ms * NANOS_PER_MS

    def advance_ns(self, ns: int) -> None:
        """Move the monotonic clock; the epoch view moves by the whole milliseconds crossed."""
        self._epoch_ms += (self.nanos + ns) // NANOS_PER_MS - self.nanos // NANOS_PER_MS
        self.nanos += ns

    def epoch_clock_ms(self) -> int:
        return self._epoch_ms

    def nano_clock(self) -> int:
        return self.nanos
