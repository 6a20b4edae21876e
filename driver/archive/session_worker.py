"""SessionWorker: the duty cycle the recorder and the replayer share (docs/archive.md section 6).

A session worker is an agent that owns sessions by id: it runs the commands the conductor queued for it (add a
session, abort one, and whatever its subclass adds), gives each session its work, and tells the conductor, through
its proxy, of each session that is done. On close every session still running is aborted, given its last work
and reported the same way, so the conductor learns how each one ended whatever stopped it.
"""

from __future__ import annotations

from typing import Generic, Protocol, TypeVar

from driver.agent.command_queue import CommandQueue
from driver.archive.archive_conductor_proxy import ArchiveConductorProxy


class Session(Protocol):
    @property
    def is_done(self) -> bool: ...

    def abort(self) -> None: ...


S = TypeVar("S", bound=Session)


class SessionWorker(Generic[S]):
    role_name = "archive-session-worker"

    def __init__(self, commands: CommandQueue, conductor: ArchiveConductorProxy) -> None:
        self.commands = commands  # from the conductor's SessionWorkerProxy
        self.conductor = conductor
        self.sessions: dict[int, S] = {}
        self._closed = False

    # -- what a subclass says ----------------------------------------------------------------------------------

    def work_on(self, session: S) -> int:
        """One session's share of a duty cycle."""
        raise NotImplementedError

    def session_done(self, session_id: int, session: S) -> None:
        """Tell the conductor how the session ended (it is no longer in ``sessions``)."""
        raise NotImplementedError

    def before_sessions(self) -> None:
        """Once per duty cycle with sessions, before any of them works (a clock read, say)."""

    # -- commands (from the SessionWorkerProxy) -------------------------------------------------------------------

    def on_add_session(self, session_id: int, session: S) -> None:
        self.sessions[session_id] = session

    def on_abort_session(self, session_id: int) -> None:
        session = self.sessions.get(session_id)
        if session is not None:  # it may have ended on its own while the command waited
            session.abort()

    # -- agent -----------------------------------------------------------------------------------------------------

    def on_start(self) -> None:
        pass

    def is_dormant(self) -> bool:
        return not (self.sessions or self.commands or self.conductor.backlog)

    def do_work(self) -> int:
        # Outcomes that did not fit the conductor's queue go first, before any newer one is offered.
        work = self.conductor.flush()
        if self.commands:
            work += self.commands.drain(self)
        if not self.sessions:
            return work
        self.before_sessions()
        for session_id, session in list(self.sessions.items()):
            work += self.work_on(session)
            if session.is_done:
                del self.sessions[session_id]
                self.session_done(session_id, session)
        return work

    def on_close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.before_sessions()
        sessions, self.sessions = self.sessions, {}
        for session_id, session in sessions.items():
            session.abort()
            self.work_on(session)
            self.session_done(session_id, session)
