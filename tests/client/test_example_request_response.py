"""examples/asyncio_request_response.py run as a user runs it (docs/asyncio.md): a driver with its archive, the
server and the client each a process of its own; the client is killed (SIGKILL) mid-stream, started again, and
its log ends with every response exactly once, in order."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support import free_port, wait_for

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "asyncio_request_response.py"
COUNT = 30_000
KILL_AFTER = 5_000  # responses in the log when the client is killed


def udp() -> str:
    return f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}"


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines() if path.exists() else []


@pytest.mark.slow
def test_client_killed_mid_stream_resumes_from_the_archive_and_takes_every_response_once(
    tmp_path: Path, driver_process: Callable[..., object]
) -> None:
    archive_requests = udp()
    driver = driver_process(
        "--archive",
        "--archive-dir",
        str(tmp_path / "archive"),
        f"-Daeron.archive.control.channel={archive_requests}",
        f"-Daeron.archive.recording.events.channel={udp()}",
        "-Daeron.spies.simulate.connection=true",
    )
    common = [
        "--aeron-dir",
        str(driver.aeron_dir),  # type: ignore[attr-defined]
        "--requests",
        udp(),
        "--responses",
        udp(),
        "--archive-requests",
        archive_requests,
    ]
    server_out = tmp_path / "server.out"
    log = tmp_path / "responses.log"
    client_cmd = [
        sys.executable,
        str(EXAMPLE),
        "client",
        *common,
        "--archive-responses",
        udp(),
        "--count",
        str(COUNT),
        "--log",
        str(log),
    ]
    processes: list[subprocess.Popen[bytes]] = []

    def start(cmd: list[str], out: Path) -> subprocess.Popen[bytes]:
        with out.open("wb") as f:
            process = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT)
        processes.append(process)
        return process

    try:
        server = start(
            [sys.executable, str(EXAMPLE), "server", *common, "--archive-responses", udp()], server_out
        )
        wait_for(
            lambda: b"server ready" in server_out.read_bytes() or server.poll() is not None, 30, "the server"
        )
        assert server.poll() is None, server_out.read_text()

        first = start(client_cmd, tmp_path / "client-1.out")
        wait_for(lambda: len(lines_of(log)) >= KILL_AFTER or first.poll() is not None, 60, "responses")
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        assert first.returncode == -signal.SIGKILL, (tmp_path / "client-1.out").read_text()
        taken_before = len(lines_of(log))
        assert KILL_AFTER <= taken_before < COUNT
        print(f"killed after {taken_before} responses")

        second = start(client_cmd, tmp_path / "client-2.out")
        assert second.wait(120) == 0, (tmp_path / "client-2.out").read_text()

        entries = [line.split() for line in lines_of(log)]
        assert [int(number) for number, _ in entries] == list(range(COUNT))
        positions = [int(position) for _, position in entries]
        assert positions == sorted(set(positions))
        assert server.poll() is None, server_out.read_text()
    finally:
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
