"""``archive_env``: our archive on an embedded driver (the archive's agents on the driver's loop, SHARED mode),
its clock a ManualClock, with a client and a control session (ArchiveControl) connected; closed in order on exit.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from driver.archive.archive import Archive
from driver.archive.archive_context import ArchiveContext
from driver.archive_launcher import connect_embedded
from driver.client import Aeron
from harness.embedded import EmbeddedDriver, new_aeron_dir
from harness.ports import free_port
from tests.support.archive_control import ArchiveControl
from tests.support.clock import ManualClock

TERM_LENGTH = 64 * 1024


@dataclass
class Env:
    driver: EmbeddedDriver
    archive: Archive
    aeron: Aeron
    control: ArchiveControl
    clock: ManualClock


@contextmanager
def archive_env(
    tmp_path: Path,
    archive_dir: Path | None = None,
    driver_settings: dict[str, Any] | None = None,
    **ctx_settings: Any,
) -> Iterator[Env]:
    """Terms of 64 KiB, segments of 64 KiB unless ``ctx_settings`` say otherwise; UDP control and events
    channels on free ports; ``archive_dir`` defaults to ``tmp_path / "archive"``; ``driver_settings`` are more
    DriverContext fields for the driver."""
    clock = ManualClock.starting_now()
    settings: dict[str, Any] = dict(
        archive_dir=str(archive_dir or tmp_path / "archive"),
        control_channel=f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}",
        recording_events_channel=f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}",
        segment_file_length=64 * 1024,
        threading_mode="SHARED",
    )
    settings.update(ctx_settings)
    ctx = ArchiveContext(**settings)
    aeron_dir = new_aeron_dir(tmp_path)
    driver = EmbeddedDriver(
        aeron_dir,
        on_created=lambda d: connect_embedded(d, ctx, epoch_clock_ms=clock.epoch_clock_ms),
        spies_simulate_connection=True,
        term_buffer_length=TERM_LENGTH,
        ipc_term_buffer_length=TERM_LENGTH,
        **(driver_settings or {}),
    )
    try:
        aeron = Aeron.connect(aeron_dir)
        try:
            control = ArchiveControl(aeron)
            try:
                yield Env(driver, driver.attached, aeron, control, clock)
            finally:
                control.close()
        finally:
            aeron.close()
    finally:
        driver.close()
        driver.attached.close()
