"""ArchiveConductorProxy: the recorder's and the replayer's only way back to the archive conductor (how each
session ended, over the conductor's queue; docs/design.md section 3)."""

from __future__ import annotations

from driver.agent.command_queue import CommandProxy


class ArchiveConductorProxy(CommandProxy):
    __slots__ = ()

    def recording_stopped(self, recording_id: int, stop_position: int, error: str | None) -> None:
        """The stop position goes into the catalog; an error goes to the log and the recording's client."""
        self._offer("on_recording_stopped", recording_id, stop_position, error)

    def replay_done(self, replay_session_id: int, error: str | None) -> None:
        self._offer("on_replay_done", replay_session_id, error)
