"""Archive requests that a poll loop drives one step at a time (for ReplayMerge and CatchUp): the same exchanges
as AeronArchive's blocking and ``*_async`` methods, but advanced by ``poll()`` so a duty cycle never blocks
(docs/archive.md section 16)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from driver.archive.client.exchange import Exchange

if TYPE_CHECKING:
    from driver.archive.client.aeron_archive import AeronArchive


class PendingRequest(Protocol):
    """One request in flight: ``poll()`` is True once answered (``result`` set); it raises the archive's error."""

    result: Any

    def poll(self) -> bool: ...


class ArchiveRequests(Protocol):
    """What the merge and catch-up state machines ask of an archive; AeronArchive's is ``PolledArchive``."""

    def recording_position(self, recording_id: int) -> PendingRequest: ...

    def start_replay(
        self, recording_id: int, position: int, length: int, channel: str, stream_id: int
    ) -> PendingRequest: ...

    def stop_replay(self, replay_session_id: int) -> PendingRequest: ...

    def find_last_matching_recording(
        self, min_recording_id: int, channel_fragment: str, stream_id: int, session_id: int
    ) -> PendingRequest: ...

    def list_recording(self, recording_id: int) -> PendingRequest:
        """``result``: a list of at most one RecordingDescriptor."""
        ...


class _Polled:
    def __init__(self, archive: AeronArchive, exchange: Exchange) -> None:
        self._archive = archive
        self._exchange = exchange
        self.result: Any = None
        exchange.begin(archive.control_response_poller, archive.context.message_timeout_ns)

    def poll(self) -> bool:
        archive = self._archive
        try:
            if archive.context.invoke_aeron_client:
                archive.aeron.do_work()
            done = self._exchange.step(
                archive.archive_proxy, archive.control_response_poller, archive.context.message_timeout_ns
            )
        except BaseException:
            archive.control_response_poller.forget(self._exchange.correlation_id)
            raise
        if done:
            self.result = self._exchange.result
            archive.control_response_poller.forget(self._exchange.correlation_id)
        return done


class PolledConnect(_Polled):
    """The connect exchange of an AeronArchive made over an open publication and subscription (``result``: the
    control session id, for ``archive._open``): an archive that is a client of another archive connects without
    blocking its duty cycle."""

    def __init__(self, archive: AeronArchive) -> None:
        super().__init__(archive, archive._connect_exchange())


class PolledArchive:
    """``ArchiveRequests`` over an AeronArchive's control session."""

    def __init__(self, archive: AeronArchive) -> None:
        self.archive = archive

    def recording_position(self, recording_id: int) -> PendingRequest:
        return _Polled(self.archive, self.archive._recording_position(recording_id))

    def start_replay(
        self, recording_id: int, position: int, length: int, channel: str, stream_id: int
    ) -> PendingRequest:
        return _Polled(
            self.archive, self.archive._start_replay(recording_id, position, length, channel, stream_id)
        )

    def stop_replay(self, replay_session_id: int) -> PendingRequest:
        return _Polled(self.archive, self.archive._stop_replay(replay_session_id))

    def find_last_matching_recording(
        self, min_recording_id: int, channel_fragment: str, stream_id: int, session_id: int
    ) -> PendingRequest:
        return _Polled(
            self.archive, self.archive._find_last(min_recording_id, channel_fragment, stream_id, session_id)
        )

    def list_recording(self, recording_id: int) -> PendingRequest:
        return _Polled(self.archive, self.archive._list_recording(recording_id))
