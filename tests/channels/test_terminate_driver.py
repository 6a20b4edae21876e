"""TERMINATE_DRIVER: refused by default, a clean stop when the driver's termination validator allows it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from driver.concurrent.cnc_file import CNC_FILE
from driver.protocol import control_protocol as cp
from driver.protocol.control_protocol import MalformedCommandError


def mediadriver(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "driver", *args], capture_output=True, text=True, timeout=timeout
    )


def test_terminate_is_refused_by_default_and_the_driver_runs_on(driver_process) -> None:
    driver = driver_process()
    result = mediadriver("terminate", "--dir", str(driver.aeron_dir), "--timeout", "1")
    assert result.returncode == 1
    assert "termination validator refused" in result.stderr
    assert "aeron.driver.termination.validator=allow" in result.stderr
    assert driver.proc.poll() is None
    assert driver.stop() == 0


def test_terminate_stops_the_driver_cleanly_when_allowed(driver_process) -> None:
    driver = driver_process("-Daeron.driver.termination.validator=allow")
    result = mediadriver("terminate", "--dir", str(driver.aeron_dir), "--token", "any")
    assert result.returncode == 0, result.stderr
    assert "stopped" in result.stdout
    assert driver.proc.wait(timeout=10) == 0
    stderr = driver.proc.stderr.read() if driver.proc.stderr else ""
    assert "Traceback" not in stderr
    # A clean stop: the directory can be used by a new driver at once.
    assert (driver.aeron_dir / CNC_FILE).exists() or not driver.aeron_dir.exists()
    again = driver_process()
    assert again.stop() == 0


def test_an_unknown_validator_is_a_clear_startup_error(aeron_dir) -> None:
    result = mediadriver("run", "--dir", str(aeron_dir), "-Daeron.driver.termination.validator=maybe")
    assert result.returncode != 0
    assert "aeron.driver.termination.validator='maybe'" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_command_layout_is_aerons() -> None:
    body = cp.encode_terminate_driver(7, 8, b"secret")
    assert body[16:20] == (6).to_bytes(4, "little") and body[20:] == b"secret"
    assert cp.decode_terminate_driver(memoryview(body)) == cp.TerminateDriverMessage(7, 8, b"secret")
    with pytest.raises(MalformedCommandError, match="token length 6 does not fit"):
        cp.decode_terminate_driver(memoryview(body[:-1]))
