"""``mediadriver run --archive --http PORT`` and ``mediadriver serve`` as users start them (docs/service.md
section 1): the API answers on loopback to its owner's token (written to a 0600 file it names), the OpenAPI
description is served, SIGTERM stops everything cleanly and removes the token file."""

from __future__ import annotations

import re
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx

from harness.ports import free_port
from tests.support import wait_for

URL = re.compile(r"record & replay API on (http://\S+)/api/v1.*bearer token in (\S+) ")


def _url(proc: subprocess.Popen, timeout_s: float = 30.0) -> tuple[str, Path]:
    """The API's URL and the token file the service printed."""
    deadline = time.monotonic() + timeout_s
    lines = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if match := URL.search(line):
            return match.group(1), Path(match.group(2))
    raise AssertionError(f"no API URL printed:\n{''.join(lines)}{proc.stderr.read() if proc.poll() else ''}")


def _check_api(url: str, token_file: Path) -> None:
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    token = token_file.read_text().strip()
    with httpx.Client(base_url=url, timeout=10) as stranger:
        assert stranger.get("/api/v1/datasets").status_code == 401
    with httpx.Client(base_url=url, timeout=10, headers={"Authorization": f"Bearer {token}"}) as client:
        spec = client.get("/openapi.json").json()
        assert {
            "/api/v1/record",
            "/api/v1/replay",
            "/api/v1/datasets",
            "/api/v1/datasets/{dataset_id}",
        } <= set(spec["paths"])
        assert client.get("/api/v1/datasets").json() == {"datasets": []}
        assert client.get("/api/v1/record").json()["state"] == "idle"


def test_run_with_archive_and_http_serves_on_loopback_and_stops_on_sigterm(
    driver_process, tmp_path: Path
) -> None:
    driver = driver_process(
        "--archive",
        "--archive-dir",
        str(tmp_path / "archive"),
        "--http",
        "0",
        f"-Daeron.archive.control.channel=aeron:udp?endpoint=127.0.0.1:{free_port('udp')}",
        f"-Daeron.archive.recording.events.channel=aeron:udp?endpoint=127.0.0.1:{free_port('udp')}",
    )
    url, token_file = _url(driver.proc)
    assert url.startswith("http://127.0.0.1:") and token_file == tmp_path / "archive" / "http-token"
    _check_api(url, token_file)
    assert driver.stop(10) == 0
    assert not token_file.exists()


def test_http_without_archive_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "driver", "run", "--dir", str(tmp_path / "d"), "--http", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "--http needs --archive" in done.stderr


def test_serve_is_a_client_of_a_running_driver_and_archive(driver_process, tmp_path: Path) -> None:
    archive_dir = tmp_path / "archive"
    props = [
        f"-Daeron.archive.control.channel=aeron:udp?endpoint=127.0.0.1:{free_port('udp')}",
        f"-Daeron.archive.recording.events.channel=aeron:udp?endpoint=127.0.0.1:{free_port('udp')}",
    ]
    driver = driver_process("--archive", "--archive-dir", str(archive_dir), *props)
    wait_for(lambda: (archive_dir / "archive.catalog").exists(), 30, "the archive's catalog")
    serve = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "driver",
            "serve",
            "--aeron-dir",
            str(driver.aeron_dir),
            "--archive-dir",
            str(archive_dir),
            "--port",
            "0",
            *props,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url, token_file = _url(serve)
        assert token_file == archive_dir / "http-token"
        _check_api(url, token_file)
        serve.terminate()
        assert serve.wait(10) == 0
        assert not token_file.exists()
    finally:
        if serve.poll() is None:
            serve.kill()
        serve.wait()
        serve.stdout.close()
        serve.stderr.close()
    assert driver.stop(10) == 0
