"""Every stop signal ends ``mediadriver run`` as SIGTERM does: heartbeat withdrawn, restart at once."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from driver.concurrent.cnc_file import CncFile
from driver.concurrent.ring_buffer import ManyToOneRingBuffer
from tests.support import wait_for


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


def _catches(pid: int, sig: int) -> bool:
    """The process has a handler for ``sig`` (its SigCgt mask in /proc)."""
    status = Path(f"/proc/{pid}/status").read_text()
    caught = int(next(line for line in status.splitlines() if line.startswith("SigCgt:")).split()[1], 16)
    return bool(caught >> (sig - 1) & 1)


@pytest.mark.parametrize("delay_s", [0.0, 0.1, 0.2, 0.4])
def test_a_stop_signal_moments_after_start_stops_the_driver_cleanly(aeron_dir: Path, delay_s: float) -> None:
    """Whatever the driver is doing (importing, making its files), a stop signal ends it as SIGTERM would. Only
    the interpreter's own start-up, before any of our code runs, is waited out."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "driver", "run", "--dir", str(aeron_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(delay_s)
        wait_for(lambda: _catches(proc.pid, signal.SIGUSR1), 10, "the interpreter to start", interval=0.001)
        proc.send_signal(signal.SIGUSR1)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "mediadriver: stopped" in out
    assert "Traceback" not in err
    with CncFile.map_existing(aeron_dir / "cnc.dat", writable=False) as cnc:
        assert ManyToOneRingBuffer(cnc.to_driver_buffer).consumer_heartbeat_time() == 0
