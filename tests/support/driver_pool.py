"""Drivers in processes of their own for tests: ours (``python -m driver run``) or the Java MediaDriver, each in a
fresh dir under /dev/shm, ready once its cnc.dat is (harness/cnc.py), all stopped by ``DriverPool.close``."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.children import ChildExited, NotReady, start
from harness.cnc import CncCounter, CncHeader, read_cnc_counters, read_cnc_header, wait_for_cnc
from harness.java import props_args
from tests.support.java_peers import JavaPeers, log_tail

SHM = Path("/dev/shm")
DRIVER_READY_TIMEOUT_S = 30.0
OUR_DRIVER_EXIT_TIMEOUT_S = 5.0


@dataclass
class DriverProcess:
    kind: str  # "java" or "ours"
    aeron_dir: Path
    proc: subprocess.Popen[bytes]
    log_path: Path
    props: dict[str, str]
    cmd: list[str]
    exit_code: int | None = None
    start_failed: bool = False

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log(self) -> str:
        return log_tail(self.log_path, 20000)

    def header(self) -> CncHeader | None:
        return read_cnc_header(self.aeron_dir)

    def counters(self, *, allocated_only: bool = True) -> dict[int, CncCounter]:
        return read_cnc_counters(self.aeron_dir, allocated_only=allocated_only)

    def signal_and_wait(self, sig: int, timeout: float) -> int | None:
        """Send ``sig`` by pid; return the exit code, or None (after a SIGKILL) if it did not exit in time."""
        if self.proc.poll() is not None:
            return self.proc.returncode
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)
            return None

    def __str__(self) -> str:
        return f"{self.kind} driver pid {self.pid} dir {self.aeron_dir}"


class DriverPool:
    """Starts drivers in fresh /dev/shm dirs, waits until cnc.dat is ready, stops them all at close()."""

    def __init__(self) -> None:
        self.started: list[tuple[DriverProcess, Path]] = []

    def _new_dir(self, kind: str) -> tuple[Path, Path]:
        base = SHM if SHM.is_dir() else Path(tempfile.gettempdir())
        parent = Path(tempfile.mkdtemp(prefix=f"aeron-interop-{kind}-", dir=base))
        return parent, parent / "aeron"

    def _launch(
        self, kind: str, cmd: list[str], parent: Path, aeron_dir: Path, props: dict[str, str]
    ) -> DriverProcess:
        log_path = parent / f"{kind}-driver.log"
        with open(log_path, "wb") as log:
            proc = start(cmd, stdout=log, stderr=subprocess.STDOUT, own_session=False)
        driver = DriverProcess(kind, aeron_dir, proc, log_path, props, cmd)
        self.started.append((driver, parent))
        try:
            wait_for_cnc(proc, aeron_dir, DRIVER_READY_TIMEOUT_S)
        except ChildExited:
            driver.start_failed = True  # reported here, not again at teardown
            pytest.fail(
                f"{kind} driver exited with {proc.returncode} before cnc.dat was ready: {cmd}\n{driver.log()}"
            )
        except NotReady:
            pytest.fail(
                f"{kind} driver: cnc.dat not ready after {DRIVER_READY_TIMEOUT_S}s: {cmd}\n{driver.log()}"
            )
        return driver

    def java(self, props: Mapping[str, Any] | None = None, *, peers: JavaPeers) -> DriverProcess:
        parent, aeron_dir = self._new_dir("java")
        all_props = {"aeron.dir": str(aeron_dir), "aeron.dir.delete.on.start": "true"}
        all_props.update({k: str(v) for k, v in (props or {}).items()})
        cmd = peers.cmd("io.aeron.driver.MediaDriver", props=all_props, tool=False)
        return self._launch("java", cmd, parent, aeron_dir, all_props)

    def ours(self, props: Mapping[str, Any] | None = None, args: Sequence[str] = ()) -> DriverProcess:
        parent, aeron_dir = self._new_dir("ours")
        str_props = {k: str(v) for k, v in (props or {}).items()}
        cmd = [sys.executable, "-m", "driver", "run", "--dir", str(aeron_dir), *args, *props_args(str_props)]
        return self._launch("ours", cmd, parent, aeron_dir, str_props)

    def close(self) -> list[str]:
        """Stop everything started (by pid), remove the dirs; returns problems found with our driver's exit."""
        problems = []
        for driver, parent in reversed(self.started):
            if driver.kind == "ours":
                was_alive = driver.alive()
                code = driver.signal_and_wait(signal.SIGTERM, OUR_DRIVER_EXIT_TIMEOUT_S)
                driver.exit_code = code
                if driver.start_failed:
                    pass
                elif code is None:
                    problems.append(f"{driver}: did not exit within {OUR_DRIVER_EXIT_TIMEOUT_S}s of SIGTERM")
                elif code != 0:
                    when = "on SIGTERM" if was_alive else "before teardown"
                    problems.append(f"{driver}: exited {code} {when}\n{driver.log()}")
            else:
                driver.exit_code = driver.signal_and_wait(signal.SIGTERM, 5.0)
            shutil.rmtree(parent, ignore_errors=True)
        self.started.clear()
        return problems


def close_pool(pool: DriverPool) -> None:
    """``pool.close()``, failing the test with what went wrong with our drivers' exits."""
    problems = pool.close()
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)
