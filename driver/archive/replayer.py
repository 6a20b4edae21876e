"""Replayer: the session worker that runs every ReplaySession (docs/archive.md section 8)."""

from __future__ import annotations

from collections.abc import Callable

from driver.agent.command_queue import CommandQueue
from driver.archive.archive_conductor_proxy import ArchiveConductorProxy
from driver.archive.replay_session import ReplaySession
from driver.archive.session_worker import SessionWorker


class Replayer(SessionWorker[ReplaySession]):
    role_name = "archive-replayer"

    def __init__(
        self, commands: CommandQueue, conductor: ArchiveConductorProxy, epoch_clock_ms: Callable[[], int]
    ) -> None:
        super().__init__(commands, conductor)
        self._epoch_clock_ms = epoch_clock_ms
        self._now_ms = 0

    def before_sessions(self) -> None:
        self._now_ms = self._epoch_clock_ms()  # one read per duty cycle serves every replay

    def work_on(self, session: ReplaySession) -> int:
        return session.do_work(self._now_ms)

    def session_done(self, session_id: int, session: ReplaySession) -> None:
        self.conductor.replay_done(session_id, session.error)

    # -- commands (from the ReplayerProxy) -------------------------------------------------------------------------

    def on_grant_credit(self, replay_session_id: int, limit_position: int) -> None:
        session = self.sessions.get(replay_session_id)
        controls = session.controls if session is not None else None
        credit = controls.credit() if controls is not None else None
        if credit is not None:
            credit.grant(limit_position)
