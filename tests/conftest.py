"""Fixtures shared by every test: manual clocks, in-process drivers (INVOKER mode) and driver processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from driver.concurrent.cnc_file import CNC_FILE, CNC_VERSION

# CI (.ci/run sets CI=true) replays the same examples every run, so a landing never hinges on a random draw;
# developers' runs keep exploring new ones (and the example database replays what failed before).
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


class ManualClock:
    """Epoch-ms and monotonic-ns clocks that move only when a test says so."""

    def __init__(self, epoch_ms: int = 1_700_000_000_000) -> None:
        self.epoch_ms = epoch_ms
        self.nanos = 1_000_000_000

    def advance_ms(self, ms: int) -> None:
        self.epoch_ms += ms
        self.nanos += ms * 1_000_000

    def epoch_clock_ms(self) -> int:
        return self.epoch_ms

    def nano_clock(self) -> int:
        return self.nanos


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def aeron_dir(tmp_path: Path) -> Path:
    """A fresh aeron dir path on /dev/shm when it exists (as Aeron's default), else under tmp_path."""
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else tmp_path
    path = base / f"aeron-test-{os.getpid()}-{time.monotonic_ns()}"
    yield path
    subprocess.run(["rm", "-rf", str(path)], check=False)


def wait_for_cnc_ready(
    aeron_dir: Path, timeout_s: float = 10.0, proc: subprocess.Popen | None = None
) -> None:
    """Wait until cnc.dat exists with CnC version 15 written (the driver's 'ready' signal)."""
    path = aeron_dir / CNC_FILE
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(
                f"driver exited with {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}"
            )
        if path.exists() and path.stat().st_size >= 48:
            with open(path, "rb") as f:
                header = f.read(48)
            # A restarted driver's dir may still hold the old cnc.dat: the pid says whose it is.
            pid_matches = proc is None or int.from_bytes(header[40:48], "little") == proc.pid
            if int.from_bytes(header[:4], "little") == CNC_VERSION and pid_matches:
                return
        time.sleep(0.01)
    raise AssertionError(f"{path} not ready within {timeout_s} s")


class DriverProcess:
    def __init__(self, aeron_dir: Path, proc: subprocess.Popen) -> None:
        self.aeron_dir = aeron_dir
        self.proc = proc

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self, timeout_s: float = 5.0) -> int:
        """SIGTERM, and the exit code (kills and fails if it does not stop in time)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"driver did not stop within {timeout_s} s of SIGTERM") from None


@pytest.fixture
def driver_process(aeron_dir: Path) -> Iterator[Callable[..., DriverProcess]]:
    """Start ``python -m driver run --dir <aeron_dir> [args]`` and wait until it is ready."""
    started: list[DriverProcess] = []

    def start(*args: str, directory: Path | None = None) -> DriverProcess:
        directory = directory or aeron_dir
        proc = subprocess.Popen(
            [sys.executable, "-m", "driver", "run", "--dir", str(directory), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        driver = DriverProcess(directory, proc)
        started.append(driver)
        wait_for_cnc_ready(directory, proc=proc)
        return driver

    yield start
    for driver in started:
        if driver.proc.poll() is None:
            driver.proc.kill()
        driver.proc.wait()
        for stream in (driver.proc.stdout, driver.proc.stderr):
            if stream is not None:
                stream.close()


class EmbeddedDriver:
    """A MediaDriver running on its own event loop in a background thread (fast to start, same process).

    In INVOKER threading mode a task on that loop calls ``driver.invoker.invoke()``, sleeping briefly
    whenever a duty cycle finds nothing to do."""

    def __init__(self, aeron_dir: Path, **settings: object) -> None:
        import asyncio
        import threading

        from driver.context import DriverContext
        from driver.media_driver import MediaDriver

        self.aeron_dir = aeron_dir
        self.driver = MediaDriver(DriverContext(aeron_dir=str(aeron_dir), **settings))
        self._loop = asyncio.new_event_loop()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._loop.run_until_complete, args=(self._serve(),), daemon=True
        )
        self._thread.start()

    async def _serve(self) -> None:
        import asyncio

        invoker = self.driver.invoker
        if invoker is None:
            await self.driver.run()
            return
        invoker.start()
        idle_s = 0.0
        while not self._stop.is_set():
            if invoker.invoke() > 0:
                idle_s = 0.0
                await asyncio.sleep(0)
            else:
                idle_s = min(0.001, idle_s * 2 or 0.00005)
                await asyncio.sleep(idle_s)
        invoker.close()

    def close(self) -> None:
        self._stop.set()
        self.driver.request_stop()  # thread-safe, and heard by a run() that has not started yet
        self._thread.join(10)
        assert not self._thread.is_alive(), "embedded driver did not stop"
        self._loop.close()
        self.driver.close()


@pytest.fixture
def embedded_driver(aeron_dir: Path) -> Iterator[Callable[..., EmbeddedDriver]]:
    """Start an in-process driver (settings as DriverContext fields); stopped at teardown."""
    started: list[EmbeddedDriver] = []

    def start(**settings: object) -> EmbeddedDriver:
        driver = EmbeddedDriver(aeron_dir, **settings)
        started.append(driver)
        return driver

    yield start
    for driver in started:
        driver.close()
