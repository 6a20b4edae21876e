"""Response channels with a modern client: pyaeron (the Aeron 1.53 C client) as a server and as a client, each on
its own driver of ours, request and answer over UDP.

The client opens the answer path itself (a response subscription towards the server's response address, then
a request publication naming it), so the server answers without knowing the client's address: what lets a
server answer clients behind NAT. pyaeron runs in the Python 3.12 venv harness/install.py makes (``make peers``); without
it the test skips saying why.
"""

from __future__ import annotations

import contextlib
import signal
import struct
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from driver.concurrent.counter_types import RECEIVER_HWM_TYPE_ID, SYSTEM_COUNTER_TYPE_ID
from harness.wait import wait_for
from tests.interop.test_pyaeron import PEER, _free_udp_port, _pyaeron_python

pytestmark = [pytest.mark.interop, pytest.mark.slow]

REQUESTS = 50
STREAM_ID = 1201  # requests; answers on 1202
PROCESS_DEADLINE_S = 90


def _image_correlation_id(driver, session_id: int) -> int | None:
    """The correlation id of the server driver's image of ``session_id``: its rcv-hwm counter's key."""
    for counter in driver.counters().values():
        if counter.type_id == RECEIVER_HWM_TYPE_ID:
            registration_id, key_session_id, key_stream_id = struct.unpack_from("<qii", counter.key)
            if key_session_id == session_id and key_stream_id == STREAM_ID:
                return registration_id
    return None


def _stream_counters(driver: Any) -> str:
    """The driver's counters other than its system counters, a line each: what a failed run left to look at
    (which positions, images and response setups each side got)."""
    return "\n".join(
        f"  {counter.type_id:3d} {counter.label}: {counter.value}"
        for counter in driver.counters().values()
        if counter.type_id != SYSTEM_COUNTER_TYPE_ID
    )


def _read_line(proc: subprocess.Popen[str], prefix: str, deadline: float) -> str:
    while time.monotonic() < deadline:
        line = proc.stdout.readline() if proc.stdout is not None else ""
        if not line:
            break
        if line.startswith(prefix):
            return line
    raise AssertionError(f"no {prefix!r} line from the server (exit {proc.poll()})")


def test_pyaeron_client_gets_its_answers_over_a_response_channel(our_driver, tmp_path: Path) -> None:
    python = _pyaeron_python()
    server_driver, client_driver = our_driver(), our_driver()
    request_channel = f"aeron:udp?endpoint=127.0.0.1:{_free_udp_port()}"
    response_control = f"127.0.0.1:{_free_udp_port()}"
    args = [request_channel, response_control, str(STREAM_ID), str(REQUESTS)]
    procs: list[subprocess.Popen[str]] = []
    deadline = time.monotonic() + PROCESS_DEADLINE_S
    try:
        server = subprocess.Popen(
            [str(python), str(PEER), "rsp-server", str(server_driver.aeron_dir), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        procs.append(server)
        _read_line(server, "READY", deadline)
        client = subprocess.Popen(
            [str(python), str(PEER), "rsp-client", str(client_driver.aeron_dir), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        procs.append(client)
        session_id = int(_read_line(server, "IMAGE ", deadline).split()[1])
        correlation_id = wait_for(lambda: _image_correlation_id(server_driver, session_id), 10, "the image's rcv-hwm counter")
        assert server.stdin is not None
        server.stdin.write(f"{correlation_id}\n")
        server.stdin.flush()
        client_out = client.communicate(timeout=max(1.0, deadline - time.monotonic()))[0]
        server_out = server.communicate(timeout=max(1.0, deadline - time.monotonic()))[0]
    finally:
        for proc in procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=10)

    def report() -> str:  # only on failure: the drivers' counters are read then
        return (
            f"--- client (exit {client.returncode}):\n{client_out}\n--- server (exit {server.returncode}):\n{server_out}"
            f"\n--- server driver:\n{_stream_counters(server_driver)}\n--- client driver:\n{_stream_counters(client_driver)}"
        )

    assert client.returncode == 0 and server.returncode == 0, report()
    assert f"ANSWERED {REQUESTS}" in client_out, report()
    assert f"ANSWERED {REQUESTS}" in server_out, report()
