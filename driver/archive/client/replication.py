"""Replication (docs/archive.md section 20), mixed into ``AeronArchive``: ask this archive to copy a recording of
another archive, follow the copy's signals, stop it. Signals (RecordingSignalEvent) come only to the session
that asked, so a 1.15.1 client sharing the response stream sees nothing new."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from driver.archive.client.exceptions import ArchiveError, ArchiveTimeoutError
from driver.archive.codecs import (
    RecordingSignal,
    RecordingSignalEvent,
    ReplicateRequest,
    StopReplicationRequest,
)

if TYPE_CHECKING:
    from driver.archive.client.control_response_poller import ControlResponsePoller
    from driver.archive.client.exchange import Exchange

NULL_RECORDING_ID = -1
DEFAULT_CONTROL_STREAM_ID = 10
SIGNAL_NAMES = {
    RecordingSignal.START: "started",
    RecordingSignal.EXTEND: "extended",
    RecordingSignal.SYNC: "synced",
    RecordingSignal.MERGE: "merged",
    RecordingSignal.STOP: "stopped",
}


@dataclass(frozen=True, slots=True)
class ReplicationSignal:
    """What a replication reported: ``name`` one of started, extended, synced, merged, stopped, error
    (``message`` then says why); ``recording_id`` the copy (-1 before it exists)."""

    replication_id: int
    name: str
    recording_id: int
    position: int
    message: str = ""


class Replication:
    _exchange: Callable[..., Exchange]
    _run: Callable[[Exchange], Any]
    control_response_poller: ControlResponsePoller

    async def _run_async(self, exchange: Exchange) -> Any: ...  # provided by AeronArchive

    def _replicate(
        self,
        src_recording_id: int,
        src_control_channel: str,
        src_control_stream_id: int,
        live_destination: str,
        dst_recording_id: int,
    ) -> Exchange:
        exchange = self._exchange(
            "replicate",
            lambda s, c: ReplicateRequest(
                s,
                c,
                src_recording_id,
                dst_recording_id,
                src_control_stream_id,
                src_control_channel,
                live_destination or "",
            ),
        )
        self.control_response_poller.watch_signals(exchange.correlation_id)
        return exchange

    def replicate(
        self,
        src_recording_id: int,
        src_control_channel: str,
        src_control_stream_id: int = DEFAULT_CONTROL_STREAM_ID,
        *,
        live_destination: str = "",
        dst_recording_id: int = NULL_RECORDING_ID,
    ) -> int:
        """Copy recording ``src_recording_id`` of the archive at ``src_control_channel`` into this archive, as a
        new recording or (``dst_recording_id``) onto the end of a copy made before; with ``live_destination``
        (``aeron:udp?endpoint=host:port`` where the live stream arrives) a copy of a recording still going merges
        with live and goes on recording it. Returns the replication id; follow it with ``poll_replication``."""
        return self._run(
            self._replicate(
                src_recording_id,
                src_control_channel,
                src_control_stream_id,
                live_destination,
                dst_recording_id,
            )
        )

    async def replicate_async(
        self,
        src_recording_id: int,
        src_control_channel: str,
        src_control_stream_id: int = DEFAULT_CONTROL_STREAM_ID,
        *,
        live_destination: str = "",
        dst_recording_id: int = NULL_RECORDING_ID,
    ) -> int:
        return await self._run_async(
            self._replicate(
                src_recording_id,
                src_control_channel,
                src_control_stream_id,
                live_destination,
                dst_recording_id,
            )
        )

    def stop_replication(self, replication_id: int) -> None:
        """Stop a replication: the copy keeps what it received; ``stopped`` follows."""
        self._run(
            self._exchange("stop_replication", lambda s, c: StopReplicationRequest(s, c, replication_id))
        )

    def poll_replication(self) -> list[ReplicationSignal]:
        """Signals (and errors) of this session's replications that arrived since the last call; polls once."""
        self.control_response_poller.poll()
        return [self._signal(item) for item in self.control_response_poller.take_signals()]

    @staticmethod
    def _signal(item: Any) -> ReplicationSignal:
        if isinstance(item, RecordingSignalEvent):
            signal = item.signal
            name = SIGNAL_NAMES.get(signal) or (signal.name.lower() if signal is not None else "unknown")
            return ReplicationSignal(item.subscription_id, name, item.recording_id, item.position)
        replication_id, error = item
        return ReplicationSignal(replication_id, "error", NULL_RECORDING_ID, -1, error)

    def await_replication(
        self,
        replication_id: int,
        until: str = "stopped",
        timeout_s: float = 60.0,
        on_signal: Callable[[ReplicationSignal], None] | None = None,
    ) -> list[ReplicationSignal]:
        """Poll until ``replication_id`` signals ``until`` (or stopped); the signals seen. An ``error`` signal
        is raised as ArchiveError once the replication has stopped."""
        deadline = time.monotonic() + timeout_s
        seen: list[ReplicationSignal] = []
        error: str | None = None
        poller = self.control_response_poller
        while True:
            poller.poll()
            # One at a time: what follows the awaited signal, and other replications' signals, stay queued.
            while (item := poller.take_signal(replication_id)) is not None:
                signal = self._signal(item)
                seen.append(signal)
                if on_signal is not None:
                    on_signal(signal)
                if signal.name == "error":
                    error = signal.message
                elif signal.name in (until, "stopped"):
                    if error is not None:
                        raise ArchiveError(error, request="replicate")
                    return seen
            if time.monotonic() > deadline:
                raise ArchiveTimeoutError(
                    f"replication {replication_id} did not signal {until} within {timeout_s:g} s",
                    request="replicate",
                )
            time.sleep(0.001)
