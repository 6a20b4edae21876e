"""SessionWorkerProxy and ReplayerProxy: the archive conductor's only ways to the recorder and the replayer
(commands over each worker's queue, docs/design.md section 3)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from driver.agent.command_queue import CommandProxy

if TYPE_CHECKING:
    from driver.archive.recording_session import RecordingSession
    from driver.archive.replay_session import ReplaySession


class SessionWorkerProxy(CommandProxy):
    """What every session worker takes: a session to run, and the abort of one (the recorder's proxy)."""

    __slots__ = ()

    def add_session(self, session_id: int, session: RecordingSession | ReplaySession | Any) -> None:
        self._offer("on_add_session", session_id, session)

    def abort_session(self, session_id: int) -> None:
        self._offer("on_abort_session", session_id)


class ReplayerProxy(SessionWorkerProxy):
    __slots__ = ()

    def grant_credit(self, replay_session_id: int, limit_position: int) -> None:
        """A ReplayCredit request: the replay may send up to ``limit_position`` (docs/archive.md section 18)."""
        self._offer("on_grant_credit", replay_session_id, limit_position)
