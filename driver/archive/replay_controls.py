"""What may bound a replay beyond 1.15.1's length (docs/archive.md section 18): a counter in the driver's cnc.dat
(bounded replay), a limit the consumer moves with ReplayCreditRequest (credit), and the recorded timing read from
the sidecar index (paced replay). Each is a ``limit()``: the highest position the replay may publish up to now,
or None when the bound is gone and the replay should end cleanly."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

import numpy as np

from driver.concurrent.counters import RECORD_ALLOCATED, CountersReader


class Bound(Protocol):
    def limit(self, replay_position: int) -> int | None: ...

    def restart(self) -> None: ...


class CounterBound:
    """Never past the counter's value; ends when the counter is freed (record state not ALLOCATED)."""

    def __init__(self, reader: CountersReader, counter_id: int) -> None:
        self._reader = reader
        self.counter_id = counter_id

    def limit(self, replay_position: int) -> int | None:
        reader = self._reader
        if reader.get_counter_state(self.counter_id) != RECORD_ALLOCATED:
            return None
        value = reader.get_counter_value(self.counter_id)
        # The value is read after the state: a counter freed between the two reads is caught next time.
        return value

    def restart(self) -> None:
        pass


class CreditBound:
    """Never past the last limit the consumer granted; a grant only moves the limit forward."""

    def __init__(self, initial_limit: int) -> None:
        self.limit_position = initial_limit

    def grant(self, limit_position: int) -> None:
        if limit_position > self.limit_position:
            self.limit_position = limit_position

    def limit(self, replay_position: int) -> int | None:
        return self.limit_position

    def restart(self) -> None:
        pass


class Pacer:
    """The recorded timing times the rate: a position is released once the replay clock passes the time the
    recording reached it (linear between index entries). When nothing has gone out for ``max_idle_gap_ns`` the
    schedule jumps to the next index entry, so no wait is much longer than the cap."""

    def __init__(
        self,
        times: np.ndarray,
        positions: np.ndarray,
        start_position: int,
        rate: float,
        max_idle_gap_ns: int | None,
        clock_ns: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        if rate <= 0:
            raise ValueError(f"rate must be positive: {rate}")
        if len(times) < 2:
            raise ValueError("recording has no recorded times to pace by")
        self._times = times.astype(np.float64)
        self._positions = positions.astype(np.float64)
        self.rate = rate
        self.max_idle_gap_ns = max_idle_gap_ns
        self._clock_ns = clock_ns
        self._start_time = self._time_of(start_position)
        self._t0: int | None = None
        self._skipped = 0.0
        self._progress_ns = 0
        self._last_seen = start_position

    def _time_of(self, position: float) -> float:
        """When the recording reached ``position`` (linear between entries)."""
        p, t = self._positions, self._times
        k = int(np.searchsorted(p, position, side="left"))
        if k <= 0:
            return float(t[0])
        if k >= len(p):
            return float(t[-1])
        span = p[k] - p[k - 1]
        return float(t[k - 1] + (t[k] - t[k - 1]) * ((position - p[k - 1]) / span if span > 0 else 1.0))

    def _position_at(self, recorded_time: float) -> float:
        t, p = self._times, self._positions
        k = int(np.searchsorted(t, recorded_time, side="right")) - 1
        if k < 0:
            return float(p[0])
        if k >= len(t) - 1:
            return float(p[-1])
        span = t[k + 1] - t[k]
        return float(p[k] + (p[k + 1] - p[k]) * ((recorded_time - t[k]) / span if span > 0 else 0.0))

    def limit(self, replay_position: int) -> int | None:
        now = self._clock_ns()
        if self._t0 is None:
            self._t0 = now
            self._progress_ns = now
            self._last_seen = replay_position
        if replay_position != self._last_seen:
            self._last_seen = replay_position
            self._progress_ns = now
        recorded_now = self._start_time + (now - self._t0) * self.rate + self._skipped
        if self.max_idle_gap_ns is not None and now - self._progress_ns > self.max_idle_gap_ns:
            # Idle for longer than the cap: jump the schedule to the next index entry (a frame boundary).
            k = int(np.searchsorted(self._positions, replay_position, side="right"))
            if k < len(self._times) and self._times[k] > recorded_now:
                self._skipped += self._times[k] - recorded_now
                recorded_now = float(self._times[k])
            self._progress_ns = now
        return int(self._position_at(recorded_now))

    def restart(self) -> None:
        self._t0 = None
        self._skipped = 0.0


class ReplayControls:
    """The bounds of one replay and its repeat count (the number of times the range is sent)."""

    def __init__(self, bounds: list[Bound], repeat: int = 1) -> None:
        self.bounds = bounds
        self.repeat = repeat

    def limit(self, replay_position: int) -> int | None:
        result: int | None = None
        for bound in self.bounds:
            value = bound.limit(replay_position)
            if value is None:
                return None
            result = value if result is None else min(result, value)
        return result

    def credit(self) -> CreditBound | None:
        for bound in self.bounds:
            if isinstance(bound, CreditBound):
                return bound
        return None

    def next_round(self) -> bool:
        """True when the range is to be sent again (the bounds start over)."""
        if self.repeat <= 1:
            return False
        self.repeat -= 1
        for bound in self.bounds:
            bound.restart()
        return True
