"""Smoke test of an installed aio-media-driver, run by the Python of the venv it is installed in.

Starts ``mediadriver run --archive`` on a temporary dir, then with our client: 20,000 IPC messages (on the C fast
path when this Python has it), 2,000 more on the cffi paths, 2,000 over UDP on loopback, and an archive recording of 500 messages replayed back. Prints one JSON object (what was checked
and where the package came from) and exits 0, or prints why and exits 1. Standard library and the installed
package only, so that it runs in a fresh venv outside the source tree (tests/packaging runs it).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import driver
from driver.archive.client import NULL_LENGTH, AeronArchive, SourceLocation
from driver.client import Aeron, Message
from driver.concurrent.logbuffer import fastpath

IPC_MESSAGES = 20_000
UDP_MESSAGES = 2_000
RECORDED_MESSAGES = 500
DEADLINE_S = 60.0


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def until(condition: Callable[[], bool], what: str, timeout_s: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.001)


def payload(i: int) -> bytes:
    return i.to_bytes(4, "little") * 8


def send_and_receive(aeron: Aeron, channel: str, stream_id: int, count: int) -> int:
    """``count`` messages from a publication to a subscription on ``channel``; all must arrive in order."""
    subscription = aeron.add_subscription(channel, stream_id)
    publication = aeron.add_publication(channel, stream_id)
    until(lambda: publication.is_connected and subscription.is_connected, f"{channel} connects")
    received: list[Message] = []
    sent = 0
    deadline = time.monotonic() + DEADLINE_S
    while len(received) < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{channel}: {len(received)} of {count} messages arrived")
        while sent < count and publication.offer(payload(sent)) > 0:
            sent += 1
        subscription.poll_messages(received, 256)
    assert [m.data for m in received] == [payload(i) for i in range(count)], f"{channel}: wrong messages"
    publication.close()
    subscription.close()
    return len(received)


def record_and_replay(aeron: Aeron, archive: AeronArchive) -> int:
    channel, stream_id = "aeron:ipc", 1001
    archive.start_recording(channel, stream_id, SourceLocation.LOCAL)
    publication = aeron.add_publication(channel, stream_id)
    until(lambda: publication.is_connected, "the recorder subscribes")
    sent = 0
    while sent < RECORDED_MESSAGES:
        if publication.offer(payload(sent)) > 0:
            sent += 1
    end = publication.position
    (recording,) = archive.list_recordings_for_uri(0, 10, channel, stream_id)
    until(lambda: archive.get_recording_position(recording.recording_id) >= end, "the recording catches up")
    archive.stop_recording(channel, stream_id)
    publication.close()
    replay = archive.replay(recording.recording_id, 0, NULL_LENGTH, "aeron:ipc", 2002)
    received: list[Message] = []
    until(lambda: replay.poll_messages(received, 256) >= 0 and len(received) >= RECORDED_MESSAGES, "the replay")
    assert [m.data for m in received] == [payload(i) for i in range(RECORDED_MESSAGES)], "replay: wrong messages"
    replay.close()
    return len(received)


def connect_archive(aeron: Aeron, control: str, response: str, events: str) -> AeronArchive:
    deadline = time.monotonic() + DEADLINE_S
    while True:
        try:
            return AeronArchive.connect(
                aeron,
                control_request_channel=control,
                control_response_channel=response,
                recording_events_channel=events,
                message_timeout_ns=2_000_000_000,
            )
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def main() -> int:
    result: dict[str, object] = {
        "python": ".".join(map(str, sys.version_info[:3])),
        "package": os.path.dirname(driver.__file__),
        "fastpath": fastpath.status(),
    }
    with tempfile.TemporaryDirectory(prefix="amd-smoke-") as tmp:
        aeron_dir = Path(tmp) / "aeron"
        control = f"aeron:udp?endpoint=127.0.0.1:{free_udp_port()}"
        events = f"aeron:udp?endpoint=127.0.0.1:{free_udp_port()}"
        response = f"aeron:udp?endpoint=127.0.0.1:{free_udp_port()}"
        mediadriver = Path(sys.executable).with_name("mediadriver")
        log = open(Path(tmp) / "driver.log", "w+")  # noqa: SIM115 - read back on failure
        proc = subprocess.Popen(
            [str(mediadriver), "run", "--dir", str(aeron_dir), "--archive", "--archive-dir", f"{tmp}/archive",
             f"-Daeron.archive.control.channel={control}", f"-Daeron.archive.recording.events.channel={events}"],
            stdout=log, stderr=subprocess.STDOUT, cwd=tmp,
        )  # fmt: skip
        try:
            log_path = Path(tmp) / "driver.log"
            until(lambda: "running on" in log_path.read_text() or proc.poll() is not None, "the driver starts")
            with Aeron.connect(str(aeron_dir)) as aeron:
                result["ipc"] = send_and_receive(aeron, "aeron:ipc", 10, IPC_MESSAGES)
                fastpath.ENABLED = False  # the cffi paths, which every Python has: the same messages
                result["ipc_cffi"] = send_and_receive(aeron, "aeron:ipc", 12, UDP_MESSAGES)
                fastpath.ENABLED = fastpath.AVAILABLE
                result["udp"] = send_and_receive(
                    aeron, f"aeron:udp?endpoint=127.0.0.1:{free_udp_port()}", 11, UDP_MESSAGES
                )
                with connect_archive(aeron, control, response, events) as archive:
                    result["replayed"] = record_and_replay(aeron, archive)
        except Exception as e:
            log.seek(0)
            print(f"smoke test failed: {type(e).__name__}: {e}\n--- driver log ---\n{log.read()}", file=sys.stderr)
            return 1
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                result["driver_exit"] = proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                result["driver_exit"] = "killed"
            log.close()
    print(json.dumps(result))
    return 0 if result["driver_exit"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
