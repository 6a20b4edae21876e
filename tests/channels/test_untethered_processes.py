"""Untethered subscriptions end to end: a driver, a publisher and two subscribers, each its own process.

A subscriber that never polls, on ``tether=false``, goes unavailable and comes back while the polling one
receives the stream at the publisher's rate; on a tethered channel the same idle subscriber stops the stream
for everyone after one window (as in 1.15.1). Short timeouts keep the run to seconds.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.ports import free_port

pytestmark = pytest.mark.slow

PEER = Path(__file__).resolve().parent / "untethered_peer.py"
SECONDS = 6.0
RATE = 500
DRIVER_ARGS = (
    "-Daeron.untethered.window.limit.timeout=200ms",
    "-Daeron.untethered.linger.timeout=100ms",
    "-Daeron.untethered.resting.timeout=1s",
    "-Daeron.timer.interval=50ms",
)


def _run(driver_process, slow_channel: str, channel: str) -> tuple[int, int, list[str]]:
    driver = driver_process(*DRIVER_ARGS)
    aeron_dir = str(driver.aeron_dir)

    def peer(*args: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, str(PEER), *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert proc.stdout is not None and proc.stdout.readline().strip() == "READY", proc.stdout
        return proc

    procs = []
    try:
        procs.append(peer("sub", aeron_dir, channel, "2001", str(SECONDS)))
        procs.append(peer("idle", aeron_dir, slow_channel, "2001", str(SECONDS)))
        procs.append(peer("pub", aeron_dir, channel + "|term-length=64k", "2001", str(SECONDS), str(RATE)))
        outputs = [proc.communicate(timeout=SECONDS + 30)[0] for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    for proc, output in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, output
    received = int(outputs[0].split("RECEIVED ")[1].split()[0])
    sent = int(outputs[2].split("SENT ")[1].split()[0])
    return sent, received, outputs[1].split()


def _channels(media: str) -> tuple[str, str]:
    if media == "ipc":
        return "aeron:ipc?tether=false", "aeron:ipc?alias=pub"
    endpoint = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    return f"{endpoint}|tether=false", endpoint


@pytest.mark.parametrize("media", ["ipc", "udp"])
def test_an_idle_untethered_subscriber_does_not_slow_the_polling_one(driver_process, media: str) -> None:
    slow_channel, channel = _channels(media)
    sent, received, events = _run(driver_process, slow_channel, channel)
    outputs = (sent, received, events)
    assert sent == SECONDS * RATE, outputs  # the publisher kept its rate (the stalls made up within 3 s)
    assert received == sent  # and the polling subscriber got all of it
    names = events[::2]
    assert names[:3] == ["AVAILABLE", "UNAVAILABLE", "AVAILABLE"], events  # dropped, rested, rejoined


@pytest.mark.parametrize("media", ["ipc", "udp"])
def test_an_idle_tethered_subscriber_still_holds_the_stream_back(driver_process, media: str) -> None:
    slow_channel, channel = _channels(media)
    _sent, received, events = _run(driver_process, slow_channel.replace("tether=false", "tether=true"), channel)
    assert received < 0.2 * SECONDS * RATE
    assert events[::2] == ["AVAILABLE"]
