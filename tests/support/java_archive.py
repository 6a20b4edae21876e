"""The real Aeron 1.15.1 Archive (tests/interop/java/ArchiveLauncher.java) as a test peer: fresh channels for
it and its clients, and its start and stop. The Java runner (``peers``: a ``JavaPeers`` of
tests/support/java_peers.py) is passed in, so this module needs no fixture."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Every check tests/interop/java/ArchiveChecks.java prints, in order: a renamed or lost check fails its tests.
ARCHIVE_CHECKS = (
    "connect-two-clients",
    "record-local-udp-spy",
    "record-remote-udp",
    "record-ipc",
    "recording-position-while-active",
    "stop-recordings",
    "recording-events",
    "list-recordings",
    "list-recordings-for-uri",
    "list-recording",
    "find-last-matching",
    "replay-whole-udp",
    "replay-whole-ipc",
    "replay-bounded-from-middle",
    "stop-replay",
    "replay-following-live-recording",
    "extend-recording",
    "truncate-recording",
    "replay-onto-recorded-endpoint",
)

ARCHIVE_START_TIMEOUT_S = 30.0


def free_udp_ports(count: int) -> list[int]:
    """Ports the kernel hands out now on 127.0.0.1 (held together so they are distinct)."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_DGRAM)) for _ in range(count)]
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]


def free_udp_channels(count: int) -> list[str]:
    """``aeron:udp?endpoint=127.0.0.1:<port>`` channels on distinct free ports."""
    return [f"aeron:udp?endpoint=127.0.0.1:{port}" for port in free_udp_ports(count)]


def archive_channels() -> dict[str, str]:
    """The control, control response and recording events channels, on fresh ports, as ``aeron.archive.*``
    properties (the archive and its clients take the same ones)."""
    control, response, events = free_udp_channels(3)
    return {
        "aeron.archive.control.channel": control,
        "aeron.archive.control.response.channel": response,
        "aeron.archive.recording.events.channel": events,
    }


@dataclass
class JavaArchive:
    """A running ArchiveLauncher: its ``props`` (every -D it got), its process, and its error lines."""

    props: dict[str, str]
    process: Any  # tests/support/java_peers.py Spawned
    archive_dir: Path
    stopped: bool = field(default=False)

    def errors(self) -> list[str]:
        return [line for line in self.process.stderr_text().splitlines() if line.startswith("ARCHIVE ERROR")]

    def stop(self) -> None:
        if not self.stopped:
            self.stopped = True
            self.process.stop()


def start_java_archive(
    peers: Any, aeron_dir: Path, archive_dir: Path, props: Mapping[str, str]
) -> JavaArchive:
    """ArchiveLauncher on the driver of ``aeron_dir``, once it prints ARCHIVE READY (the caller stops it)."""
    all_props = {"aeron.dir": str(aeron_dir), "aeron.archive.dir": str(archive_dir), **props}
    process = peers.spawn("ArchiveLauncher", props=all_props)
    archive = JavaArchive(all_props, process, archive_dir)
    try:
        process.read_until(r"^ARCHIVE READY", ARCHIVE_START_TIMEOUT_S)
    except BaseException:
        archive.stop()
        raise
    return archive


@contextlib.contextmanager
def java_archive(
    peers: Any, aeron_dir: Path, archive_dir: Path, props: Mapping[str, str]
) -> Iterator[JavaArchive]:
    archive = start_java_archive(peers, aeron_dir, archive_dir, props)
    try:
        yield archive
    finally:
        archive.stop()
