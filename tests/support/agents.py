"""Stand-in agents for runner tests."""

from __future__ import annotations


class PlainAgent:
    """An agent that never has work and that no work probe can watch (as an archive agent sharing a runner)."""

    role_name = "plain"

    def on_start(self) -> None:
        pass

    def do_work(self) -> int:
        return 0

    def on_close(self) -> None:
        pass
