"""A modern client against our driver: pyaeron 0.1.0 (the Aeron 1.53 C client) publishes and subscribes over IPC and
UDP for four client liveness timeouts (the driver's set to 3 s, against the client's 0.5 s heartbeat: the default
10 s would only make the run longer).

The 1.53 client sends no CLIENT_KEEPALIVE: it keeps alive by writing the time into its client-heartbeat counter.
The run shows every message arrives and neither client is timed out. pyaeron lives in a Python 3.12 venv made by
harness/install.py (``make peers``); when it cannot be made the test skips saying why.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from harness import install

pytestmark = [pytest.mark.interop, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
PEER = Path(__file__).resolve().parent / "pyaeron_peer.py"
LIVENESS_TIMEOUT_S = 3
RUN_SECONDS = 4 * LIVENESS_TIMEOUT_S
RATE = 200  # messages per second and per stream
CLIENT_TIMEOUTS_ID = 24  # system counter "Client liveness timeouts"
PROCESS_DEADLINE_S = RUN_SECONDS + 60


def _pyaeron_python() -> Path:
    try:
        return install.install_pyaeron()
    except RuntimeError as exc:
        pytest.skip(f"pyaeron venv unavailable: {exc}")


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_pyaeron_publisher_and_subscriber_outlive_four_liveness_timeouts(our_driver, tmp_path: Path) -> None:
    python = _pyaeron_python()
    driver = our_driver({"aeron.client.liveness.timeout": f"{LIVENESS_TIMEOUT_S}s"})
    assert driver.header().client_liveness_timeout_ns == LIVENESS_TIMEOUT_S * 1_000_000_000
    aeron_dir = str(driver.aeron_dir)
    streams = {
        "ipc": ("aeron:ipc", 1101),
        "udp": (f"aeron:udp?endpoint=127.0.0.1:{_free_udp_port()}", 1102),
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith("AERON_")}
    procs: dict[str, subprocess.Popen[str]] = {}
    try:
        for name, (channel, stream_id) in streams.items():
            for role, extra in (("sub", ()), ("pub", (str(RATE),))):
                procs[f"{name}-{role}"] = subprocess.Popen(
                    [
                        str(python),
                        str(PEER),
                        role,
                        aeron_dir,
                        channel,
                        str(stream_id),
                        str(RUN_SECONDS),
                        *extra,
                    ],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                    env=env,
                )
        deadline = time.monotonic() + PROCESS_DEADLINE_S
        # Late in the run (over three liveness timeouts in) every client must still be there and none timed out;
        # read now because a client's own close later also counts as a timeout on the Java driver (1.15.1).
        time.sleep(RUN_SECONDS - 2)
        still_running = {key: proc.poll() is None for key, proc in procs.items()}
        timeouts = driver.counters()[CLIENT_TIMEOUTS_ID]
        outputs = {}
        for key, proc in procs.items():
            try:
                outputs[key] = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))[0]
            except subprocess.TimeoutExpired:
                proc.kill()
                outputs[key] = proc.communicate()[0] + f"\n<killed after {PROCESS_DEADLINE_S} s>"
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=10)

    report = "\n".join(f"--- {key} (exit {procs[key].returncode}):\n{out}" for key, out in outputs.items())
    assert all(proc.returncode == 0 for proc in procs.values()), report
    for name in streams:
        sent = int(outputs[f"{name}-pub"].split("SENT ")[1].split()[0])
        received = int(outputs[f"{name}-sub"].split("RECEIVED ")[1].split()[0])
        assert sent >= RUN_SECONDS * RATE * 0.9, report  # it really ran for the whole run
        assert received == sent, report
    assert all(still_running.values()), f"{still_running}\n{report}"
    assert timeouts.label == "Client liveness timeouts"
    assert timeouts.value == 0, report


def test_pyaeron_first_client_of_a_fresh_driver_has_a_client_id_above_zero(our_driver) -> None:
    python = _pyaeron_python()
    driver = our_driver()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AERON_")}
    done = subprocess.run(
        [str(python), str(PEER), "client-id", str(driver.aeron_dir)],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    client_id = int(done.stdout.split("CLIENT_ID ")[1].split()[0])
    assert client_id > 0
