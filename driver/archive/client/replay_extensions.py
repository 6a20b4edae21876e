"""Replay beyond 1.15.1 (docs/archive.md section 18), mixed into ``AeronArchive``: replays bounded by a counter
or by the consumer's credit, paced replays, and positions looked up by recorder time or by message count. The
archive answers each with a ControlResponse, so a 1.15.1 client sharing the response stream sees nothing new."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from driver.archive.codecs import (
    BoundedReplayRequest,
    ExtendedReplayRequest,
    LookupType,
    PositionLookupRequest,
    ReplayCreditRequest,
)

if TYPE_CHECKING:
    from driver.archive.client.exchange import Exchange

NULL_POSITION = -1
RATE_SCALE = 1_000_000  # the rate goes on the wire in millionths

_Replay = tuple[int, int, int, str, int]
"""What every replay request names: (recording_id, position, length, replay_channel, replay_stream_id)."""


class ReplayExtensions:
    _exchange: Callable[..., Exchange]
    _run: Callable[[Exchange], Any]

    async def _run_async(self, exchange: Exchange) -> Any: ...  # provided by AeronArchive

    # -- bounded replay ------------------------------------------------------------------------------------------

    def _bounded(self, replay: _Replay, limit_counter_id: int) -> Exchange:
        recording_id, position, length, replay_channel, replay_stream_id = replay
        return self._exchange(
            "start_bounded_replay",
            lambda s, c: BoundedReplayRequest(
                s, c, recording_id, position, length, limit_counter_id, replay_stream_id, replay_channel
            ),
        )

    def start_bounded_replay(
        self,
        recording_id: int,
        position: int,
        length: int,
        limit_counter_id: int,
        replay_channel: str,
        replay_stream_id: int,
    ) -> int:
        """A replay that never publishes past the value of counter ``limit_counter_id`` (in the driver's cnc.dat)
        and follows it as it moves; it ends at ``length`` or when the counter is freed. Returns the replay
        session id."""
        replay = (recording_id, position, length, replay_channel, replay_stream_id)
        return self._run(self._bounded(replay, limit_counter_id))

    async def start_bounded_replay_async(
        self,
        recording_id: int,
        position: int,
        length: int,
        limit_counter_id: int,
        replay_channel: str,
        replay_stream_id: int,
    ) -> int:
        replay = (recording_id, position, length, replay_channel, replay_stream_id)
        return await self._run_async(self._bounded(replay, limit_counter_id))

    # -- paced and credit replays ----------------------------------------------------------------------------

    def _extended(
        self,
        what: str,
        replay: _Replay,
        rate: float = 0.0,
        repeat: int = 1,
        max_idle_gap_ns: int | None = None,
        credit_limit: int = NULL_POSITION,
    ) -> Exchange:
        recording_id, position, length, replay_channel, replay_stream_id = replay
        rate_ppm = round(rate * RATE_SCALE)
        gap = -1 if max_idle_gap_ns is None else max_idle_gap_ns
        return self._exchange(
            what,
            lambda s, c: ExtendedReplayRequest(
                s,
                c,
                recording_id,
                position,
                length,
                replay_stream_id,
                repeat,
                rate_ppm,
                gap,
                credit_limit,
                replay_channel,
            ),
        )

    def _paced(self, replay: _Replay, rate: float, repeat: int, max_idle_gap_ns: int | None) -> Exchange:
        # Checked before a correlation id is taken: bad pacing sends nothing.
        if not rate > 0:
            raise ValueError(f"rate must be positive: {rate}")
        if repeat < 1:
            raise ValueError(f"repeat must be at least 1: {repeat}")
        if max_idle_gap_ns is not None and max_idle_gap_ns < 0:
            raise ValueError(f"max_idle_gap_ns must not be negative: {max_idle_gap_ns}")
        return self._extended("start_paced_replay", replay, rate, repeat, max_idle_gap_ns)

    def start_paced_replay(
        self,
        recording_id: int,
        position: int,
        length: int,
        replay_channel: str,
        replay_stream_id: int,
        rate: float = 1.0,
        repeat: int = 1,
        max_idle_gap_ns: int | None = None,
    ) -> int:
        """Replay at the recorded timing times ``rate`` (2.0: twice as fast), ``repeat`` times, with idle gaps
        cut to ``max_idle_gap_ns`` of replay time. Returns the replay session id."""
        replay = (recording_id, position, length, replay_channel, replay_stream_id)
        return self._run(self._paced(replay, rate, repeat, max_idle_gap_ns))

    async def start_paced_replay_async(
        self,
        recording_id: int,
        position: int,
        length: int,
        replay_channel: str,
        replay_stream_id: int,
        rate: float = 1.0,
        repeat: int = 1,
        max_idle_gap_ns: int | None = None,
    ) -> int:
        replay = (recording_id, position, length, replay_channel, replay_stream_id)
        return await self._run_async(self._paced(replay, rate, repeat, max_idle_gap_ns))

    def _credit_replay(self, replay: _Replay, initial_limit_position: int) -> Exchange:
        return self._extended("start_credit_replay", replay, credit_limit=initial_limit_position)

    def start_credit_replay(
        self,
        recording_id: int,
        position: int,
        length: int,
        replay_channel: str,
        replay_stream_id: int,
        initial_limit_position: int,
    ) -> int:
        """A replay that never publishes past the limit the consumer grants (``grant_replay_credit``), starting
        with ``initial_limit_position``: back pressure over UDP without a counter on the archive's driver."""
        replay = (recording_id, position, length, replay_channel, replay_stream_id)
        return self._run(self._credit_replay(replay, initial_limit_position))

    async def start_credit_replay_async(
        self,
        recording_id: int,
        position: int,
        length: int,
        replay_channel: str,
        replay_stream_id: int,
        initial_limit_position: int,
    ) -> int:
        replay = (recording_id, position, length, replay_channel, replay_stream_id)
        return await self._run_async(self._credit_replay(replay, initial_limit_position))

    def _credit(self, replay_session_id: int, limit_position: int) -> Exchange:
        return self._exchange(
            "grant_replay_credit",
            lambda s, c: ReplayCreditRequest(s, c, replay_session_id, limit_position),
        )

    def grant_replay_credit(self, replay_session_id: int, limit_position: int) -> None:
        """Let a credit replay publish up to ``limit_position`` (a lower limit than the last is ignored)."""
        self._run(self._credit(replay_session_id, limit_position))

    async def grant_replay_credit_async(self, replay_session_id: int, limit_position: int) -> None:
        await self._run_async(self._credit(replay_session_id, limit_position))

    # -- positions by time and by count ----------------------------------------------------------------------

    def _lookup(self, recording_id: int, lookup_type: LookupType, value: int, bound: int) -> Exchange:
        return self._exchange(
            "lookup_position",
            lambda s, c: PositionLookupRequest(s, c, recording_id, lookup_type, value, bound),
        )

    def lookup_position_by_time(self, recording_id: int, time_ns: int) -> int:
        """The position of the first message recorded at or after ``time_ns`` (epoch ns), to within one index
        interval (earlier, never later)."""
        return self._run(self._lookup(recording_id, LookupType.TIME, time_ns, NULL_POSITION))

    async def lookup_position_by_time_async(self, recording_id: int, time_ns: int) -> int:
        return await self._run_async(self._lookup(recording_id, LookupType.TIME, time_ns, NULL_POSITION))

    def lookup_position_of_last(self, recording_id: int, n: int, bound_position: int = NULL_POSITION) -> int:
        """The position of the first of the last ``n`` messages below ``bound_position`` (NULL_POSITION: the
        recorded end); the recording's start when it holds fewer."""
        return self._run(self._lookup(recording_id, LookupType.LAST_COUNT, n, bound_position))

    async def lookup_position_of_last_async(
        self, recording_id: int, n: int, bound_position: int = NULL_POSITION
    ) -> int:
        return await self._run_async(self._lookup(recording_id, LookupType.LAST_COUNT, n, bound_position))
