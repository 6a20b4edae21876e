"""Our archive checked by the unmodified 1.15.1 AeronArchive client (tests/interop/java/ArchiveChecks.java): every
check must pass, embedded in our driver (``mediadriver run --archive``) and standalone (``mediadriver archive``)
as a client of the Java driver, and neither the driver nor the archive may log an error."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import free_port
from tests.support.java_archive import ARCHIVE_CHECKS

pytestmark = [pytest.mark.interop, pytest.mark.slow]

CHECKS_TIMEOUT_S = 180.0
ARCHIVE_READY_TIMEOUT_S = 30.0
CHECKS = ARCHIVE_CHECKS


def settings(archive_dir: Path) -> tuple[dict[str, str], dict[str, str]]:
    """(archive settings, checks settings) on fresh loopback ports."""
    control, response, events, local, remote, replay = (
        f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}" for _ in range(6)
    )
    shared = {
        "aeron.archive.control.channel": control,
        "aeron.archive.control.response.channel": response,
        "aeron.archive.recording.events.channel": events,
    }
    archive = {
        "aeron.archive.dir": str(archive_dir),
        "aeron.archive.replay.linger.timeout": "3s",
        "aeron.archive.segment.file.length": str(1 << 20),
    }
    checks = {
        "checks.local.channel": local,
        "checks.remote.channel": remote,
        "checks.replay.channel": replay,
        "checks.timeout.ms": "10000",
    }
    return shared | archive, shared | checks


def run_checks(peers, aeron_dir: Path, check_settings: dict[str, str]) -> tuple[dict[str, str], str]:
    result = peers.run(
        "ArchiveChecks", props={"aeron.dir": str(aeron_dir)} | check_settings, timeout=CHECKS_TIMEOUT_S
    )
    outcomes = {}
    for line in result.stdout.splitlines():
        match = re.match(r"^(PASS|FAIL) ([\w-]+)(?:: (.*))?$", line)
        if match:
            outcomes[match[2]] = "PASS" if match[1] == "PASS" else match[3]
    return outcomes, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr[-4000:]}"


def archive_errors(log: str) -> list[str]:
    return [line for line in log.splitlines() if "archive:" in line and "ERROR" in line.upper()]


def test_checks_pass_on_our_driver_with_embedded_archive(archive_java, driver_pool, tmp_path: Path) -> None:
    archive_settings, check_settings = settings(tmp_path / "archive")
    driver = driver_pool.ours(
        {"aeron.spies.simulate.connection": "true", "aeron.archive.threading.mode": "SHARED"}
        | archive_settings,
        args=["--archive"],
    )
    outcomes, output = run_checks(archive_java, driver.aeron_dir, check_settings)
    failed = {name: why for name, why in outcomes.items() if why != "PASS"}
    assert not failed and list(outcomes) == list(CHECKS), (
        f"{failed}\n{output}\ndriver log:\n{driver.log()[-6000:]}"
    )
    assert archive_errors(driver.log()) == [], driver.log()[-6000:]
    report = archive_java.error_stat(driver.aeron_dir)
    assert report.entries == [], report.raw


def test_checks_pass_on_the_java_driver_with_standalone_archive(
    archive_java, driver_pool, tmp_path: Path
) -> None:
    archive_settings, check_settings = settings(tmp_path / "archive")
    driver = driver_pool.java({"aeron.spies.simulate.connection": "true"}, peers=archive_java)
    log_path = tmp_path / "archive.log"
    props = [f"-D{k}={v}" for k, v in archive_settings.items()]
    with open(log_path, "wb") as log:
        archive = subprocess.Popen(
            [sys.executable, "-m", "driver", "archive", "--aeron-dir", str(driver.aeron_dir), *props],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + ARCHIVE_READY_TIMEOUT_S
        while "archive running" not in log_path.read_text():
            assert archive.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.05)
        outcomes, output = run_checks(archive_java, driver.aeron_dir, check_settings)
    finally:
        archive.send_signal(signal.SIGTERM)
        code = archive.wait(10)
    text = log_path.read_text()
    failed = {name: why for name, why in outcomes.items() if why != "PASS"}
    assert not failed and list(outcomes) == list(CHECKS), f"{failed}\n{output}\narchive log:\n{text[-6000:]}"
    assert code == 0 and "archive stopped" in text, text[-4000:]
    assert archive_errors(text) == [], text[-6000:]
