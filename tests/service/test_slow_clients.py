"""Clients that hold connections without finishing their requests (docs/service.md section 1): a stalled
request's headers, body or upload is answered 408 and closed within its bound, and hundreds of stalled
connections neither exhaust the service nor keep a status poll from being answered at once."""

from __future__ import annotations

import socket
import statistics
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.requests import Request

from driver.service.connections import RequestLimits
from driver.service.service import ServiceError
from driver.service.transfer import import_dataset
from harness.wait import wait_for
from tests.support.service_env import API, ServiceEnv, start_service_env, stop_service_env

BOUND_S = 0.5
QUICK = RequestLimits(
    header_timeout_s=BOUND_S, body_timeout_s=BOUND_S, upload_window_s=BOUND_S, upload_min_bytes_per_s=1 << 20
)


@pytest.fixture
def quick_env(tmp_path: Path) -> Iterator[ServiceEnv]:
    env, archive = start_service_env(tmp_path, limits=QUICK)
    try:
        yield env
    finally:
        stop_service_env(env, archive)


def _connect(env: ServiceEnv) -> socket.socket:
    host, port = env.url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def _request_head(env: ServiceEnv, method: str, path: str, length: int) -> bytes:
    return (
        f"{method} {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {env.owner_token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


def _closed_after(sock: socket.socket, timeout_s: float = 10.0) -> tuple[float, bytes]:
    """Seconds until the service closed the connection, and what it said before."""
    start = time.monotonic()
    sock.settimeout(timeout_s)
    said = b""
    while chunk := sock.recv(4096):
        said += chunk
    return time.monotonic() - start, said


@pytest.mark.parametrize(
    "stall",
    ["in the headers", "in a JSON body", "in an upload"],
)
def test_a_stalled_request_is_closed_within_its_bound(quick_env: ServiceEnv, stall: str) -> None:
    env = quick_env
    with _connect(env) as sock:
        if stall == "in the headers":
            sock.sendall(b"GET /api/v1/status HTTP/1.1\r\nHost: x\r\n")
        elif stall == "in a JSON body":
            sock.sendall(_request_head(env, "POST", f"{API}/record", 100) + b'{"streams": [')
        else:
            sock.sendall(_request_head(env, "POST", f"{API}/datasets/import", 10 << 20) + bytes(4096))
        waited, said = _closed_after(sock)
    assert BOUND_S * 0.9 <= waited < BOUND_S + 1.0, waited
    assert said.startswith(b"HTTP/1.1 408 "), said
    assert env.client.get(f"{API}/status").status_code == 200
    # The upload's temporary directory goes with it: the handler sees the disconnect on its next read and cleans
    # up in a worker thread, so moments after the close on a busy machine.
    datasets = env.archive_dir / "datasets"
    wait_for(lambda: not any(datasets.iterdir()), 5.0, "the upload's temporary directory to be removed")


def test_an_upload_that_keeps_coming_is_not_cut(quick_env: ServiceEnv) -> None:
    """Above the minimum rate an upload takes as long as it takes (here: several windows)."""
    env = quick_env
    chunk = bytes(256 * 1024)  # 2 MiB/s in 256 KiB steps, above the 1 MiB/s minimum
    with _connect(env) as sock:
        sock.sendall(_request_head(env, "POST", f"{API}/datasets/import", 12 * len(chunk)))
        for _ in range(12):
            time.sleep(0.125)
            sock.sendall(chunk)
        _waited, said = _closed_after(sock)
    assert said.startswith(b"HTTP/1.1 400 "), said  # all of it arrived: refused for what it is, not its pace


def _still_open(sockets: list[socket.socket]) -> int:
    """How many of ``sockets`` the service has not closed (a closed one reads as the end of the stream)."""
    count = 0
    for sock in sockets:
        sock.setblocking(False)
        try:
            count += sock.recv(1, socket.MSG_PEEK) != b""
        except BlockingIOError:
            count += 1
    return count


@pytest.mark.parametrize("max_connections", [1000, 200])
def test_500_stalled_connections_do_not_delay_a_status_poll(tmp_path: Path, max_connections: int) -> None:
    env, archive = start_service_env(tmp_path, limits=RequestLimits(max_connections=max_connections))
    stalled: list[socket.socket] = []
    try:
        for n in range(500):
            sock = _connect(env)
            if n % 2:
                sock.sendall(b"GET /api/v1/status HTTP/1.1\r\nHost: x\r\n")
            else:
                sock.sendall(_request_head(env, "POST", f"{API}/record", 1000) + b"{")
            stalled.append(sock)
        # Once the service has taken them all (and closed those over its bound), poll.
        kept = min(500, max_connections)
        connections = env.http.server.server_state.connections
        wait_for(
            lambda: len(connections) == kept and _still_open(stalled) == kept,
            20,
            "the service to take them all",
        )
        headers = {"Authorization": f"Bearer {env.owner_token}"}
        times = []
        for _ in range(7):
            with httpx.Client(base_url=env.url, headers=headers, timeout=10) as poller:
                start = time.perf_counter()
                response = poller.get(f"{API}/status")
                times.append(time.perf_counter() - start)
            assert response.status_code == 200
        assert statistics.median(times) < 0.1 and max(times) < 0.5, times
        assert kept - 1 <= _still_open(stalled) <= kept  # a poll over the bound made room for itself
    finally:
        for sock in stalled:
            sock.close()
        stop_service_env(env, archive)


def test_an_upload_whose_client_goes_is_answered_and_leaves_nothing(quick_env: ServiceEnv) -> None:
    """The import handler sees the disconnect (a client gone, or the 408 above) as an error answer, not an exception
    that the server would log as a traceback, and removes what it had received."""
    env = quick_env
    messages = [
        {"type": "http.request", "body": bytes(4096), "more_body": True},
        {"type": "http.disconnect"},
    ]

    async def receive() -> dict:
        return messages.pop(0)

    scope = {"type": "http", "method": "POST", "path": f"{API}/datasets/import", "headers": []}
    request = Request(scope, receive)
    with pytest.raises(ServiceError) as raised:
        env.on_loop(import_dataset(env.http.service, request, None, "fail", 10 << 20))
    assert raised.value.status == 400, raised.value
    assert "went away" in str(raised.value)
    assert not any((env.archive_dir / "datasets").iterdir())
