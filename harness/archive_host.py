"""Our driver with its archive (``mediadriver run --archive``) inside a network namespace (harness/netns.py's
``Host``), for replication tests and tools/bench/replication.py: its archive control channel is UDP on the host's
address, and this process reaches the archive through the driver's aeron dir on the local control channel (IPC),
which needs no route into the namespace."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from driver.archive.client import AeronArchive
from harness.embedded import new_aeron_dir
from harness.wait import wait_for

REPO = Path(__file__).resolve().parents[1]
CONTROL_PORT = 8010
WINDOW = "512k"  # at most half of a 1 MiB term
SOCKET_BUFFER = "2m"
LOCAL_CONTROL = dict(
    control_request_channel="aeron:ipc",
    control_request_stream_id=11,
    control_response_channel="aeron:ipc",
    control_response_stream_id=21,
)


class ArchiveHost:
    """Our driver and archive in one namespace."""

    def __init__(self, host: Any, base: Path, name: str, *settings: str) -> None:
        self.host = host
        self.aeron_dir = new_aeron_dir(base, name)
        self.archive_dir = base / f"{name}-archive"
        self.control_channel = f"aeron:udp?endpoint={host.address}:{CONTROL_PORT}"
        self.log = base / f"{name}.log"
        with self.log.open("w") as log:
            self.process = self._start(host, log, settings)
        wait_for(
            lambda: "archive in" in self.log.read_text() or self.process.poll() is not None, 30, "archive"
        )
        assert self.process.poll() is None, self.log.read_text()
        self.archive = wait_for(self._connect, 20, f"archive of {host.name}")

    def _start(self, host: Any, log, settings: tuple[str, ...]) -> subprocess.Popen:
        return host.run(
            sys.executable,
            "-m",
            "driver",
            "run",
            "--dir",
            str(self.aeron_dir),
            "--archive",
            "--archive-dir",
            str(self.archive_dir),
            f"-Daeron.archive.control.channel={self.control_channel}",
            "-Daeron.archive.recording.events.channel=aeron:udp?endpoint=127.0.0.1:8030",
            "-Daeron.archive.threading.mode=SHARED",
            f"-Daeron.rcv.initial.window.length={WINDOW}",
            f"-Daeron.socket.so_rcvbuf={SOCKET_BUFFER}",
            *settings,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=REPO,
        )

    def _connect(self) -> AeronArchive | None:
        try:
            return AeronArchive.connect(aeron_dir=str(self.aeron_dir), **LOCAL_CONTROL)
        except Exception:
            return None

    def replicate(self, *args: str, timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
        """``mediadriver archive replicate`` against this host's archive (through its aeron dir)."""
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "driver",
                "archive",
                "--aeron-dir",
                str(self.aeron_dir),
                "replicate",
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            cwd=REPO,
        )

    def close(self) -> None:
        self.archive.close()
