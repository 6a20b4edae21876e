"""Fixtures shared by every test: manual clocks, aeron dirs, embedded drivers (uvloop, background thread) and
driver processes. The helpers themselves live in tests/support/."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from driver.concurrent.cnc_file import CNC_FILE, CNC_VERSION
from harness.embedded import CREATED_AERON_DIRS, remove_aeron_dirs
from tests.support import EmbeddedDriver, ManualClock, new_aeron_dir

# CI (.ci/run sets CI=true) replays the same examples every run, so a landing never hinges on a random draw;
# developers' runs keep exploring new ones (and the example database replays what failed before).
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(autouse=True, scope="session")
def _remove_every_aeron_dir() -> Iterator[None]:
    yield
    remove_aeron_dirs()


@pytest.fixture(autouse=True, scope="module")
def _remove_module_aeron_dirs() -> Iterator[None]:
    since = len(CREATED_AERON_DIRS)
    yield
    remove_aeron_dirs(since)


@pytest.fixture(autouse=True)
def _remove_test_aeron_dirs() -> Iterator[None]:
    """Aeron dirs a test made (its module's and the session's fixtures made theirs before it started)."""
    since = len(CREATED_AERON_DIRS)
    yield
    remove_aeron_dirs(since)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def aeron_dir(tmp_path: Path) -> Path:
    """A fresh aeron dir path on /dev/shm when it exists (as Aeron's default), else under tmp_path."""
    path = new_aeron_dir(tmp_path)
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
        try:
            with open(path, "rb") as f:
                header = f.read(48)
        except FileNotFoundError:  # not made yet, or a restarted driver just deleted the old one
            header = b""
        # A restarted driver's dir may still hold the old cnc.dat: the pid says whose it is.
        if len(header) == 48:
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


@pytest.fixture
def embedded_driver(aeron_dir: Path) -> Iterator[Callable[..., EmbeddedDriver]]:
    """Start an in-process driver on uvloop (settings as DriverContext fields, plus ``epoch_clock_ms`` and
    ``nano_clock``); stopped at teardown."""
    started: list[EmbeddedDriver] = []

    def start(**settings: Any) -> EmbeddedDriver:
        driver = EmbeddedDriver(aeron_dir, **settings)
        started.append(driver)
        return driver

    yield start
    for driver in started:
        driver.close()
