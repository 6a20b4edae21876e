"""Every stop signal ends ``mediadriver run`` as SIGTERM does: heartbeat withdrawn, restart at once."""

from __future__ import annotations

import signal

import pytest

from driver.concurrent.cnc_file import CncFile
from driver.concurrent.ring_buffer import ManyToOneRingBuffer


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2])
def test_stop_signal_stops_cleanly_and_the_dir_restarts_at_once(driver_process, sig) -> None:
    driver = driver_process()
    driver.proc.send_signal(sig)
    assert driver.proc.wait(10) == 0
    assert "mediadriver: stopped" in driver.proc.stdout.read()
    with CncFile.map_existing(driver.aeron_dir / "cnc.dat", writable=False) as cnc:
        assert ManyToOneRingBuffer(cnc.to_driver_buffer).consumer_heartbeat_time() == 0
    # No "active driver detected": the next driver starts on the same dir without waiting.
    again = driver_process()
    assert again.stop() == 0
