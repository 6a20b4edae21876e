"""The real Aeron 1.15.1 Archive (tests/interop/java/ArchiveLauncher.java) as a client of either driver, checked
by the unmodified 1.15.1 AeronArchive client (tests/interop/java/ArchiveChecks.java).

Both drivers must pass every check, and our driver must log no error while serving them. The archive runs with
``aeron.archive.replay.linger.timeout=3s``, which 1.15.1 sends as ``linger=-1294967296`` on each replay
publication.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.java_archive import ARCHIVE_CHECKS, archive_channels, free_udp_channels, java_archive

pytestmark = [pytest.mark.interop, pytest.mark.slow]

CHECKS_TIMEOUT_S = 240.0
CHECK_WAIT_MS = 10_000  # how long any one wait inside a check may take

CHECKS = ARCHIVE_CHECKS


def archive_props() -> tuple[dict[str, str], dict[str, str]]:
    """(settings of the archive, settings of the checks), on fresh ports."""
    shared = archive_channels()
    local, remote, replay = free_udp_channels(3)
    archive = {
        "aeron.archive.replay.linger.timeout": "3s",
        "aeron.archive.threading.mode": "SHARED",
        "aeron.archive.segment.file.length": str(1 << 20),
    }
    checks = {
        "checks.local.channel": local,
        "checks.remote.channel": remote,
        "checks.replay.channel": replay,
        "checks.timeout.ms": str(CHECK_WAIT_MS),
    }
    return shared | archive, shared | checks


def run_archive_checks(peers, driver, tmp_path: Path) -> dict[str, str]:
    """Start the archive on ``driver``, run the checks; returns {check: "PASS" or the failure reason}."""
    archive_settings, check_settings = archive_props()
    aeron_dir = {"aeron.dir": str(driver.aeron_dir)}
    with java_archive(peers, driver.aeron_dir, tmp_path / "archive", archive_settings) as archive:
        result = peers.run(
            "ArchiveChecks",
            props=aeron_dir | check_settings,
            timeout=CHECKS_TIMEOUT_S,
        )
    outcomes = {}
    for line in result.stdout.splitlines():
        match = re.match(r"^(PASS|FAIL) ([\w-]+)(?:: (.*))?$", line)
        if match:
            outcomes[match[2]] = "PASS" if match[1] == "PASS" else match[3]
    failed = {name: why for name, why in outcomes.items() if why != "PASS"}
    archive_errors = archive.errors()
    assert not failed and result.returncode == 0 and not archive_errors, (
        f"{driver.kind} driver: failed checks {failed}, exit {result.returncode}, archive errors {archive_errors}\n"
        f"checks stdout:\n{result.stdout}\nchecks stderr:\n{result.stderr[-6000:]}\n"
        f"archive stderr:\n{archive.process.stderr_text()[-6000:]}\ndriver log:\n{driver.log()[-4000:]}"
    )
    return outcomes


@pytest.mark.parametrize("kind", ["java", "ours"])
def test_java_archive_passes_every_check(kind: str, drivers, peers, tmp_path: Path) -> None:
    driver = drivers.start(kind, {"aeron.spies.simulate.connection": "true"})
    outcomes = run_archive_checks(peers, driver, tmp_path)
    assert list(outcomes) == list(CHECKS)
    report = peers.error_stat(driver.aeron_dir)
    # Two replays in a row to one replay channel, or a replay onto an endpoint just recorded, share a UDP send
    # endpoint: it must stay open until its last publication is gone, and nothing is logged.
    assert report.entries == [], f"{kind} driver logged errors while serving the archive:\n{report.raw}"
