"""uvicorn serving the API as a coroutine on the running loop (the driver's, when embedded): no thread and no
loop of its own, and no signal handlers (the driver's handle the signals and stop it)."""

from __future__ import annotations

import asyncio
import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn

from driver.service.app import create_app
from driver.service.connections import GuardedHttpProtocol, RequestLimits
from driver.service.metrics import ServiceMetrics
from driver.service.retention import Retention
from driver.service.service import RecordReplayService
from driver.service.token_file import remove_token, write_new_token


@dataclass
class HttpSettings:
    """``token``: the one to require; None: a new one in the archive dir's token file, unless ``no_auth``."""

    host: str = "127.0.0.1"
    port: int = 8080
    token: str | None = None
    no_auth: bool = False
    limits: RequestLimits = field(default_factory=RequestLimits)
    retention: Retention = field(default_factory=Retention)


class _Server(uvicorn.Server):
    def capture_signals(self):  # the embedding program owns the signals
        return contextlib.nullcontext()


class HttpService:
    """The service and its server; ``url`` once ``started`` is set; ``stop()`` ends both."""

    def __init__(self, service: RecordReplayService, settings: HttpSettings) -> None:
        self.service = service
        self.settings = settings
        service.retention = settings.retention
        self.token = settings.token
        self.token_file: Path | None = None
        if self.token is None and not settings.no_auth:  # secure by default, as the aeron dir is
            self.token, self.token_file = write_new_token(service.archive_dir)
        self.app = create_app(service, token=self.token)
        config = uvicorn.Config(
            self.app,
            host=settings.host,
            port=settings.port,
            log_level="warning",
            loop="none",
            lifespan="off",
            access_log=False,
            timeout_graceful_shutdown=2,
            http=type("ServiceHttpProtocol", (GuardedHttpProtocol,), {"limits": settings.limits}),
        )
        self.server = _Server(config)
        self.task: asyncio.Future | None = None

    @property
    def url(self) -> str:
        servers = self.server.servers
        if servers and servers[0].sockets:
            host, port = servers[0].sockets[0].getsockname()[:2]
            return f"http://{host}:{port}"
        return f"http://{self.settings.host}:{self.settings.port}"

    @property
    def started(self) -> bool:
        return self.server.started

    async def run(self) -> None:
        metrics = await ServiceMetrics.start(self.service)  # the jobs as counters in cnc.dat
        retention = asyncio.ensure_future(self.service.retain_forever())
        try:
            await self.server.serve()
        finally:
            retention.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await retention
            if self.token_file is not None and self.token is not None:
                remove_token(self.token_file, self.token)
            await metrics.close()
            await self.service.close()

    def stop(self) -> None:
        self.server.should_exit = True


async def start_http(
    aeron_dir: str | os.PathLike[str],
    archive_dir: str | os.PathLike[str],
    settings: HttpSettings,
    **archive_settings: Any,
) -> HttpService:
    """Connect the service to the driver and archive and start serving; returns once the port is bound (the
    server runs on as ``http.task`` until ``http.stop()``). ``archive_settings`` are ArchiveClientContext
    fields (the archive's control channel, ...)."""
    service = await RecordReplayService.connect(aeron_dir, archive_dir, **archive_settings)
    http = HttpService(service, settings)
    http.task = asyncio.ensure_future(http.run())
    while not http.started and not http.task.done():
        await asyncio.sleep(0.005)
    if http.task.done():
        http.task.result()  # the bind failed: raise why
    return http


async def serve_http(
    aeron_dir: str | os.PathLike[str],
    archive_dir: str | os.PathLike[str],
    settings: HttpSettings,
    **archive_settings: Any,
) -> None:
    """``start_http`` then serve until stopped."""
    http = await start_http(aeron_dir, archive_dir, settings, **archive_settings)
    await http.task
