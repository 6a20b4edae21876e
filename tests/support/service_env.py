"""The record & replay service for tests: ``start_service_env`` gives our driver and archive (SHARED, real clocks) on an
embedded uvloop driver, the HTTP service on that same loop (as ``mediadriver run --archive --http`` runs it) bound
to a free loopback port, an httpx client of it and an Aeron client for the test's publishers and subscribers;
``Publisher`` and ``Receiver`` threads, and helpers that drive the API to the end of a job."""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from driver.archive.archive_context import ArchiveContext
from driver.archive_launcher import connect_embedded
from driver.client import Aeron, FragmentAssembler
from driver.service.command import archive_streams
from driver.service.connections import RequestLimits
from driver.service.retention import Retention
from driver.service.server import HttpService, HttpSettings, start_http
from driver.service.token_file import read_token, token_path
from harness.embedded import EmbeddedDriver, new_aeron_dir
from harness.ports import free_port
from harness.wait import wait_for

TERM_LENGTH = 2 * 1024 * 1024


@dataclass
class ServiceEnv:
    driver: EmbeddedDriver
    http: HttpService
    client: httpx.Client
    aeron: Aeron
    archive_dir: Path
    url: str
    owner_token: str | None = None
    """The token the service generated, read from its file as its owner reads it (None when one was given)."""

    def on_loop(self, coro, timeout_s: float = 30.0):
        """Run ``coro`` on the driver's (and service's) loop and return its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.driver.loop).result(timeout_s)


def start_service_env(
    tmp_path: Path,
    token: str | None = None,
    no_auth: bool = False,
    limits: RequestLimits | None = None,
    retention: Retention | None = None,
    **archive_settings: object,
) -> tuple[ServiceEnv, object]:
    """``token``: the one the service requires (the client then sends none); else the service makes its own and
    the client sends it, read from the archive dir as the owner's CLI reads it; ``no_auth``: no token at all.
    ``limits``: the connection bounds (the defaults when None). ``archive_settings``: more ArchiveContext fields
    (max_catalog_entries=16, ...)."""
    archive_dir = tmp_path / "archive"
    ctx = ArchiveContext(
        archive_dir=str(archive_dir),
        control_channel=f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}",
        recording_events_channel=f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}",
        threading_mode="SHARED",
        **archive_settings,
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
                HttpSettings(
                    host="127.0.0.1",
                    port=0,
                    token=token,
                    no_auth=no_auth,
                    limits=limits or RequestLimits(),
                    retention=retention or Retention(),
                ),
                reserved=archive_streams(ctx),
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
    owner_token = read_token(token_path(archive_dir)) if token is None and not no_auth else None
    headers = {"Authorization": f"Bearer {owner_token}"} if owner_token else {}
    client = httpx.Client(base_url=http.url, timeout=30, headers=headers)
    return ServiceEnv(driver, http, client, aeron, archive_dir, http.url, owner_token), archive


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


API = "/api/v1"


class Publisher(threading.Thread):
    """Offers ``payload(i)`` every ``interval_s`` on a publication until stopped or ``count`` are sent."""

    def __init__(
        self,
        env: ServiceEnv,
        channel: str,
        stream_id: int,
        interval_s: float,
        count: int | None = None,
        tag: str = "",
    ) -> None:
        super().__init__(daemon=True)
        self.publication = env.aeron.add_publication(channel, stream_id)
        self.interval_s, self.count, self.tag = interval_s, count, tag or f"{stream_id}"
        self.sent: list[bytes] = []
        self.stop_flag = threading.Event()

    def run(self) -> None:
        next_at = time.monotonic()
        i = 0
        while not self.stop_flag.is_set() and (self.count is None or i < self.count):
            data = f"{self.tag}:{i:06d}".encode() + bytes(20)
            while self.publication.offer(data) < 0 and not self.stop_flag.is_set():
                time.sleep(0.0001)
            self.sent.append(data)
            i += 1
            next_at += self.interval_s
            delay = next_at - time.monotonic()
            if delay > 0:
                time.sleep(delay)

    def stop(self) -> None:
        self.stop_flag.set()
        self.join(5)
        self.publication.close()


class Receiver:
    """Collects (arrival time, payload) of a subscription, polled from a thread."""

    def __init__(self, env: ServiceEnv, channel: str, stream_id: int) -> None:
        self.subscription = env.aeron.add_subscription(channel, stream_id)
        self.received: list[tuple[float, bytes]] = []
        self._stop = threading.Event()
        self._assembler = FragmentAssembler(
            lambda buf, off, length, _h: self.received.append((time.monotonic(), buf.get_bytes(off, length)))
        )
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            if self.subscription.poll(self._assembler, 256) == 0:
                time.sleep(0.0002)

    @property
    def payloads(self) -> list[bytes]:
        return [p for _, p in self.received]

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.subscription.close()


def record(env: ServiceEnv, body: dict, timeout_s: float = 30.0) -> dict:
    response = env.client.post(f"{API}/record", json=body)
    assert response.status_code == 202, response.text
    status = wait_for_state(env, "record", timeout_s)
    assert status["state"] == "done", status
    return env.client.get(f"{API}/datasets/{status['dataset_id']}").json()


def wait_for_state(env: ServiceEnv, job: str, timeout_s: float = 30.0) -> dict:
    status: dict = {}

    def finished() -> bool:
        nonlocal status
        status = env.client.get(f"{API}/{job}").json()
        return not status["running"]

    wait_for(finished, timeout_s, f"the {job} job to end", interval=0.05)
    return status


def replay_payloads(env: ServiceEnv, body: dict, channel: str, stream_id: int, timeout_s: float = 30.0):
    receiver = Receiver(env, channel, stream_id)
    try:
        response = env.client.post(f"{API}/replay", json=body)
        assert response.status_code == 202, response.text
        status = wait_for_state(env, "replay", timeout_s)
        assert status["state"] == "done", status
        wait_for(lambda: len(receiver.received) >= status["messages"], 5, "the replayed messages")
        return receiver.received, status
    finally:
        receiver.close()
