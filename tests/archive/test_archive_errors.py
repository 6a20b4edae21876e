"""Every error of the archive, codes 0-9, as the unmodified 1.15.1 AeronArchive client sees them
(tests/archive/java/ArchiveErrors.java): the real 1.15.1 archive (on the Java driver) and ours (embedded in our
driver) give the same code and the same text for every case (docs/archive.md section 12)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.java_archive import archive_channels, java_archive

pytestmark = [pytest.mark.interop, pytest.mark.slow]

LIMITS = {
    "aeron.archive.max.concurrent.recordings": "2",
    "aeron.archive.max.concurrent.replays": "2",
    "aeron.archive.threading.mode": "SHARED",
}
RUN_TIMEOUT_S = 60.0
# The lines 1.15.1 prints (recording 0 is live with 2 messages, 1 stopped at 1600, 2 the extra recording).
EXPECTED = [
    "ERROR active-listing 1 active listing already in progress",
    "ERROR truncate-active-recording 2 cannot truncate active recording",
    "ERROR extend-active-recording 2 cannot extend active recording for 0",
    "ERROR start-recording-twice 3 recording exists for streamId=9001 channel=aeron:ipc",
    "ERROR stop-recording-unknown-channel 4 no recording found for streamId=9004 channel=aeron:ipc",
    "ERROR stop-recording-unknown-subscription 4 no recording subscription found for 123456789",
    "ERROR replay-unknown-recording 5 unknown recording id 10000",
    "ERROR stop-position-unknown-recording 5 unknown recording 10000",
    "ERROR truncate-unknown-recording 5 unknown recording 10000",
    "ERROR extend-unknown-recording 5 unknown recording id 10000",
    "ERROR find-last-outside-range 5 min recording id outside valid range: 10000",
    "ERROR stop-unknown-replay 6 replay session not known for 77",
    "ERROR replay-unaligned-position 0 requested replay start position 3 is not a multiple of FRAME_ALIGNMENT (32)"
    " for recording 1",
    "ERROR replay-before-start 0 requested replay start position -32) is less than recording start position 0"
    " for recording 1",
    "ERROR replay-at-stop 0 requested replay start position 1600 must be less than highest recorded position 1600"
    " for recording 1",
    "ERROR replay-negative-length 0 replay recording 1 - length must be positive: -5",
    "ERROR replay-after-live-position 0 replay recording 0 - 4096 after current position of 320",
    "ERROR truncate-unaligned 0 invalid position 3",
    "ERROR truncate-after-stop 0 invalid position 1632",
    "ERROR truncate-mid-frame 0 32 position not aligned to data header",
    "NO-ERROR truncate-at-stop",
    "ERROR max-replays 7 max concurrent replays reached 2",
    "ERROR truncate-under-replay 2 cannot truncate recording with active replay 1",
    "ERROR max-recordings 8 max concurrent recordings reached 2",
    "ERROR max-recordings-extend 8 max concurrent recordings reached of 2",
    "ERROR invalid-extension 9 cannot extend recording 1 image joinPosition 0 not equal to recording stopPosition"
    " 1600",
    "DONE",
]


def run_errors(peers: Any, aeron_dir: Path, channels: dict[str, str]) -> list[str]:
    result = peers.run("ArchiveErrors", props={"aeron.dir": str(aeron_dir)} | channels, timeout=RUN_TIMEOUT_S)
    lines = result.stdout.splitlines()
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr[-4000:]}"
    return lines


def test_java_archive_errors(archive_java: Any, driver_pool: Any, tmp_path: Path) -> None:
    driver = driver_pool.java(peers=archive_java)
    channels = archive_channels()
    with java_archive(archive_java, driver.aeron_dir, tmp_path / "archive", channels | LIMITS):
        assert run_errors(archive_java, driver.aeron_dir, channels) == EXPECTED


def test_our_archive_errors_match(archive_java: Any, driver_pool: Any, tmp_path: Path) -> None:
    channels = archive_channels()
    driver = driver_pool.ours(
        channels | LIMITS | {"aeron.archive.dir": str(tmp_path / "archive")}, args=["--archive"]
    )
    assert run_errors(archive_java, driver.aeron_dir, channels) == EXPECTED, driver.log()[-4000:]
