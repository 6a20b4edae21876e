"""Start-up and shutdown of the driver process: the aeron dir, cnc.dat and the rules of docs/cnc.md §3."""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from driver.concurrent.cnc_file import CncFile
from driver.concurrent.error_log import ErrorLogReader
from driver.context import DriverContext
from driver.media_driver import ActiveDriverError, DriverStartError, MediaDriver, active_driver_message


def _run_driver(aeron_dir: Path, *args: str, timeout: float = 10) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "driver", "run", "--dir", str(aeron_dir), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_driver_creates_its_files_within_a_second(aeron_dir: Path, driver_process) -> None:
    started = time.monotonic()
    driver = driver_process()
    assert time.monotonic() - started < 5  # includes interpreter start; the files themselves come first
    assert (aeron_dir / "cnc.dat").stat().st_size == 8_392_704
    assert (aeron_dir / "loss-report.dat").stat().st_size == 1_048_576
    assert (aeron_dir / "publications").is_dir()
    assert (aeron_dir / "images").is_dir()
    with CncFile.map_existing(aeron_dir / "cnc.dat", writable=False) as cnc:
        assert cnc.pid == driver.pid
        assert cnc.client_liveness_timeout_ns == 5_000_000_000
        assert abs(cnc.start_timestamp_ms - time.time() * 1000) < 60_000
    assert driver.stop() == 0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signals_stop_the_driver_cleanly(aeron_dir: Path, driver_process, sig: signal.Signals) -> None:
    driver = driver_process()
    driver.proc.send_signal(sig)
    assert driver.proc.wait(5) == 0
    assert "stopped" in driver.proc.stdout.read()


def test_a_live_driver_on_the_same_dir_is_refused_naming_its_pid(aeron_dir: Path, driver_process) -> None:
    first = driver_process()
    result = _run_driver(aeron_dir)
    assert result.returncode == 1
    [line] = result.stderr.splitlines()
    assert line == (
        f"mediadriver: active driver detected in {aeron_dir}: pid {first.pid} is running, heartbeat "
        f"{line.split('heartbeat ')[1].split(' ms')[0]} ms ago; stop that driver first (mediadriver terminate "
        f"--dir {aeron_dir}) or choose another directory with --dir, AERON_DIR or -Daeron.dir"
    )
    assert first.proc.poll() is None  # the first driver is untouched
    assert first.stop() == 0


def test_dead_drivers_error_log_is_kept_beside_the_dir(aeron_dir: Path, clock) -> None:
    ctx = DriverContext(aeron_dir=str(aeron_dir))
    old = MediaDriver(ctx, lambda: clock.epoch_ms - 60_000, clock.nano_clock)  # heartbeat a minute old
    old.error_log.record_message("boom from the previous run")
    old.close()
    new = MediaDriver(DriverContext(aeron_dir=str(aeron_dir)))
    try:
        assert new.saved_error_log is not None
        assert new.saved_error_log.name.startswith(aeron_dir.name + "-")
        assert new.saved_error_log.name.endswith("-error.log")
        assert "boom from the previous run" in new.saved_error_log.read_text()
        assert not ErrorLogReader.has_errors(new.cnc.error_log_buffer)  # the new log starts empty
    finally:
        new.saved_error_log.unlink()
        new.close()


def test_cnc_of_another_version_is_refused_with_a_clear_message(aeron_dir: Path) -> None:
    aeron_dir.mkdir(parents=True)
    (aeron_dir / "cnc.dat").write_bytes(struct.pack("<i", 16) + bytes(8192))
    with pytest.raises(DriverStartError, match=r"CnC version 16, not 15 .*aeron.dir.delete.on.start"):
        MediaDriver(DriverContext(aeron_dir=str(aeron_dir)))
    # The operator's way out works.
    MediaDriver(DriverContext(aeron_dir=str(aeron_dir), dir_delete_on_start=True)).close()


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_unwritable_dir_is_a_clear_error_non_root(tmp_path: Path) -> None:
    parent = tmp_path / "ro"
    parent.mkdir(mode=0o500)
    with pytest.raises(DriverStartError, match="cannot create the aeron dir"):
        MediaDriver(DriverContext(aeron_dir=str(parent / "aeron")))


def test_unwritable_dir_is_a_clear_error(tmp_path: Path) -> None:
    # A path under a regular file can never be created, even by root.
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = _run_driver(blocker / "aeron")
    assert result.returncode == 1
    assert f"cannot create the aeron dir {blocker / 'aeron'}" in result.stderr
    assert "--dir" in result.stderr


@pytest.mark.parametrize("dangling", [False, True])
def test_a_symlinked_dir_is_refused_naming_the_link_and_leaving_its_target(tmp_path: Path, dangling: bool) -> None:
    target = tmp_path / "real"
    if not dangling:
        target.mkdir()
        (target / "keep.txt").write_text("not the driver's")
    link = tmp_path / "aeron"
    link.symlink_to(target)
    result = _run_driver(link, "-Daeron.dir.delete.on.start=true")
    assert result.returncode == 1
    assert f"cannot use the aeron dir {link}: it is a symbolic link (to {target})" in result.stderr
    assert "rmtree" not in result.stderr and "Traceback" not in result.stderr
    assert link.is_symlink()
    if not dangling:
        assert (target / "keep.txt").read_text() == "not the driver's"


def test_active_driver_check_uses_the_heartbeat(aeron_dir: Path, clock) -> None:
    driver = MediaDriver(DriverContext(aeron_dir=str(aeron_dir)))
    try:
        with pytest.raises(ActiveDriverError, match=f"pid {os.getpid()}"):
            MediaDriver(DriverContext(aeron_dir=str(aeron_dir)))
    finally:
        driver.close()


def test_launch_embedded_uses_a_unique_dir_and_removes_it(tmp_path: Path) -> None:
    ctx = DriverContext(aeron_dir=str(tmp_path / "aeron"))
    with MediaDriver.launch_embedded(ctx) as driver:
        directory = driver.aeron_dir
        assert directory.name.startswith("aeron-") and (directory / "cnc.dat").exists()
    assert not directory.exists()


def test_a_stopped_driver_leaves_no_udp_port_bound(aeron_dir) -> None:
    """Subscriptions closed just before the driver stops (their endpoints' close still queued to the
    receiver) must not leave sockets open: the ports can be bound again at once."""
    import socket

    from driver.client import Aeron
    from tests.support import EmbeddedDriver, free_port

    ports = [free_port() for _ in range(3)]
    driver = EmbeddedDriver(aeron_dir)
    with Aeron.connect(aeron_dir=driver.aeron_dir) as client:
        for port in ports:
            client.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{port}", 10)
    driver.close()
    for port in ports:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("127.0.0.1", port))  # OSError (address in use) if a socket was left open


def test_a_dead_drivers_dir_says_its_pid_is_gone_and_when_it_is_taken_over(tmp_path: Path) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(gone.stdout)  # exited: no such process (unless reused at once)
    assert active_driver_message(tmp_path, pid, 3_000, 10_000) == (
        f"active driver detected in {tmp_path}: pid {pid} is gone (no such process here) but its last heartbeat "
        "was 3000 ms ago; a new driver takes the dir over in 7001 ms, once that heartbeat is older than the "
        "10000 ms driver timeout (aeron.driver.timeout), or now with -Daeron.dir.delete.on.start=true (safe "
        "unless a driver in another pid namespace, such as another container, shares the dir)"
    )
    # A restarted container's driver has the pid its predecessor had (1): that pid says nothing here.
    assert active_driver_message(tmp_path, os.getpid(), 9_000, 10_000).startswith(
        f"active driver detected in {tmp_path}: pid {os.getpid()} cannot be checked from this pid namespace but "
        "its last heartbeat was 9000 ms ago; a new driver takes the dir over in 1001 ms"
    )
