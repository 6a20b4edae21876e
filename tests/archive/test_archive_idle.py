"""An embedded archive with nothing to do lets its driver go dormant (long parks: an idle ``run --archive`` costs
little CPU), and any other client wakes both."""

from __future__ import annotations

from pathlib import Path

from driver.archive.archive_context import ArchiveContext
from driver.archive_launcher import connect_embedded
from driver.client import Aeron
from harness.embedded import EmbeddedDriver, new_aeron_dir
from harness.ports import free_port
from harness.wait import wait_for


def test_a_driver_whose_only_client_is_its_idle_archive_goes_dormant_until_another_client_comes(
    tmp_path: Path,
) -> None:
    ctx = ArchiveContext(
        archive_dir=str(tmp_path / "archive"),
        control_channel=f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}",
        recording_events_channel=f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}",
        segment_file_length=64 * 1024,
    )
    aeron_dir = new_aeron_dir(tmp_path)
    embedded = EmbeddedDriver(aeron_dir, on_created=lambda d: connect_embedded(d, ctx))
    try:
        driver = embedded.driver
        # Both are read from this thread while the driver's thread runs them, so they can disagree for a moment
        # (work in flight in the archive): wait for one moment where both say dormant.
        wait_for(
            lambda: driver.is_dormant() and embedded.attached.is_dormant(),
            what="the driver with its idle archive dormant",
        )
        with Aeron.connect(aeron_dir) as aeron:
            aeron.add_subscription("aeron:ipc", 1001)  # the driver knows a client by its first command
            wait_for(lambda: not driver.is_dormant(), what="another client waking the driver")
        wait_for(driver.is_dormant, what="the driver dormant again once that client has left")
    finally:
        embedded.close()
        embedded.attached.close()
