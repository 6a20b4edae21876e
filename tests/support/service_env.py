"""The record & replay service for tests: ``start_service_env`` gives our driver and archive (SHARED, real clocks) on an
embedded uvloop driver, the HTTP service on that same loop (as ``mediadriver run --archive --http`` runs it) bound
to a free loopback port, an httpx client of it and an Aeron client for the test's publishers and subscribers."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import httpx

from driver.archive.archive_context import ArchiveContext
from driver.archive_launcher import connect_embedded
from driver.client import Aeron
from driver.service.server import HttpService, HttpSettings, start_http
from tests.support import EmbeddedDriver, free_port, new_aeron_dir

TERM_LENGTH = 256 * 1024


@dataclass
class ServiceEnv:
    driver: EmbeddedDriver
    http: HttpService
    client: httpx.Client
    aeron: Aeron
    archive_dir: Path
    url: str

    def on_loop(self, coro, timeout_s: float = 30.0):
        """Run ``coro`` on the driver's (and service's) loop and return its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.driver.loop).result(timeout_s)


def start_service_env(tmp_path: Path, token: str | None = None) -> tuple[ServiceEnv, object]:
    archive_dir = tmp_path / "archive"
    ctx = ArchiveContext(
        archive_dir=str(archive_dir),
        control_channel=f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}",
        recording_events_channel=f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}",
        threading_mode="SHARED",
    )
    driver = EmbeddedDriver(
        new_aeron_dir(tmp_path),
        on_created=lambda d: connect_embedded(d, ctx),
        term_buffer_length=TERM_LENGTH,
        ipc_term_buffer_length=TERM_LENGTH,
    )
    archive = driver.attached
    try:
        http = asyncio.run_coroutine_threadsafe(
            start_http(
                driver.aeron_dir,
                archive_dir,
                HttpSettings(host="127.0.0.1", port=0, token=token),
                control_request_channel=ctx.local_control_channel,
                control_request_stream_id=ctx.local_control_stream_id,
                control_response_channel="aeron:ipc",
                control_response_stream_id=free_port("udp"),
            ),
            driver.loop,
        ).result(30)
    except BaseException:
        driver.close()
        archive.close()
        raise
    aeron = Aeron.connect(driver.aeron_dir)
    client = httpx.Client(base_url=http.url, timeout=30)
    return ServiceEnv(driver, http, client, aeron, archive_dir, http.url), archive


def stop_service_env(env: ServiceEnv, archive) -> None:
    try:
        env.client.close()
        env.aeron.close()

        async def stop() -> None:
            env.http.stop()
            await asyncio.wait_for(env.http.task, 10)

        env.on_loop(stop())
    finally:
        env.driver.close()
        archive.close()
