"""Runs the archive (driver/archive/archive.py) on an event loop: embedded in a driver process
(``mediadriver run --archive``) or on its own as a client of any running driver (``mediadriver archive``).

Runners live here, above the archive in the import order (docs/design.md section 2): the archive only groups its
agents (``Archive.agent_groups``), this module gives each group an AgentRunner, or hands them to the driver.
"""

from __future__ import annotations

import asyncio
from typing import Any

from driver.agent.idle_strategy import BackoffIdleStrategy
from driver.agent.runner import AgentRunner
from driver.archive.archive import Archive, ArchiveStartError
from driver.archive.archive_context import ArchiveContext
from driver.media_driver import IDLE_MAX_SPINS, IDLE_MAX_YIELDS, IDLE_MIN_PARK_NS, MediaDriver

__all__ = [
    "ArchiveContext",
    "ArchiveRunners",
    "ArchiveStartError",
    "attach_to_driver",
    "connect_embedded",
    "run_standalone",
]  # ArchiveContext and ArchiveStartError too: the command line's lazy point of the archive is this module

JOIN_TIMEOUT_S = 5.0


def _idle(ctx: ArchiveContext) -> BackoffIdleStrategy:
    return BackoffIdleStrategy(
        max_spins=IDLE_MAX_SPINS,
        max_yields=IDLE_MAX_YIELDS,
        min_park_ns=min(IDLE_MIN_PARK_NS, ctx.idle_max_park_ns),
        max_park_ns=ctx.idle_max_park_ns,
    )


def _error_handler(archive: Archive) -> Any:
    def on_error(error: BaseException) -> None:
        archive.conductor.report_error(f"archive agent failed: {error!r}")

    return on_error


def attach_to_driver(driver: MediaDriver, archive: Archive) -> None:
    """The archive's agents on the driver's loop: in the driver's runner when both run SHARED (or INVOKER), in
    runners of their own otherwise. The driver's close of its runners closes them; ``archive.close()`` after."""
    share = archive.ctx.threading_mode != "DEDICATED"
    for agent in archive.agent_groups():
        driver.add_agent(agent, share_runner=share)
    # With no sessions the archive waits for clients, like the driver: it lets the driver go dormant.
    driver.add_embedded_client(archive.aeron.client_id, archive.is_dormant)


def connect_embedded(driver: MediaDriver, ctx: ArchiveContext, **archive_args: Any) -> Archive:
    """An Archive whose client (agent mode) is connected to ``driver`` in this process and runs on its loop;
    ``archive_args`` go to Archive (an epoch clock, an error handler).

    The archive's files follow the driver's file-permission policy: each of ``aeron.dir.group``,
    ``aeron.dir.mode`` and ``aeron.file.mode`` the archive's context leaves unset is the driver's (docs/archive.md
    section 15), so with none set the archive's ``file_permissions`` are the driver's."""
    ctx.aeron_dir = str(driver.aeron_dir)
    for name in ("dir_group", "dir_mode", "file_mode"):
        if getattr(ctx, name) is None:
            setattr(ctx, name, getattr(driver.ctx, name))
    archive = Archive(ctx, **archive_args)
    attach_to_driver(driver, archive)
    return archive


class ArchiveRunners:
    """The standalone archive's runners on the running loop."""

    def __init__(self, archive: Archive) -> None:
        self.archive = archive
        self.runners = [
            AgentRunner(agent, _idle(archive.ctx), _error_handler(archive))
            for agent in archive.agent_groups()
        ]

    def start(self) -> None:
        for runner in self.runners:
            runner.start()

    async def stop(self) -> None:
        for runner in self.runners:
            runner.stop()
        await asyncio.gather(*(runner.join(JOIN_TIMEOUT_S) for runner in self.runners))
        self.archive.close()


async def run_standalone(archive: Archive, stop: asyncio.Event) -> None:
    """Run ``archive`` until ``stop`` is set (SIGINT/SIGTERM set it when run from the CLI)."""
    runners = ArchiveRunners(archive)
    runners.start()
    try:
        await stop.wait()
    finally:
        await runners.stop()
