"""Our archive as a test peer, shaped like tests/support/java_archive.py's ``JavaArchive``: standalone
(``python -m driver archive``, a client of any running driver) or embedded (``mediadriver run --archive``, read
through its driver's log). ``errors()`` gives its error lines as "ARCHIVE ERROR archive: <text>", the form the
Java launcher prints, so one check reads both."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

ARCHIVE_START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
MARKER = "archive: "
ROOT = Path(__file__).resolve().parents[2]


def archive_error_lines(log: str) -> list[str]:
    """The archive's logged errors (``log.error("archive: %s", ...)``) as "ARCHIVE ERROR archive: <text>": bare
    (Python's last-resort handler prints only the message) or after a formatter's ERROR level."""
    return [
        f"ARCHIVE ERROR archive: {line.split(MARKER, 1)[1]}"
        for line in log.splitlines()
        if line.startswith(MARKER) or (MARKER in line and "ERROR" in line.split(MARKER, 1)[0])
    ]


@dataclass
class OurArchiveLog:
    """Stands for ``JavaArchive.process``: ``stderr_text()`` is the whole log."""

    read: Callable[[], str]

    def stderr_text(self) -> str:
        return self.read()


@dataclass
class OurArchive:
    """A running archive of ours: its ``props``, its log, and (standalone) the process to stop."""

    props: dict[str, str]
    process: OurArchiveLog
    archive_dir: Path
    popen: subprocess.Popen[bytes] | None = None
    stopped: bool = field(default=False)
    exit_code: int | None = None

    def errors(self) -> list[str]:
        return archive_error_lines(self.process.stderr_text())

    def stop(self) -> None:
        """SIGTERM the standalone process and wait (the embedded archive stops with its driver)."""
        if self.stopped or self.popen is None:
            return
        self.stopped = True
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.exit_code = self.popen.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(STOP_TIMEOUT_S)
        else:
            self.exit_code = self.popen.returncode


def embedded_archive(
    driver_log: Callable[[], str], archive_dir: Path, props: Mapping[str, str]
) -> OurArchive:
    """The archive of a driver started with ``--archive`` and ``props`` (its log is the driver's)."""
    return OurArchive(dict(props), OurArchiveLog(driver_log), archive_dir)


def start_our_archive(
    aeron_dir: Path, archive_dir: Path, props: Mapping[str, str], log_path: Path
) -> OurArchive:
    """``python -m driver archive`` on the driver of ``aeron_dir``, once it logs "archive running"."""
    all_props = {"aeron.dir": str(aeron_dir), "aeron.archive.dir": str(archive_dir), **props}
    args = [f"-D{k}={v}" for k, v in all_props.items()]
    with open(log_path, "wb") as log:
        popen = subprocess.Popen(
            [sys.executable, "-m", "driver", "archive", "--aeron-dir", str(aeron_dir), *args],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )
    archive = OurArchive(all_props, OurArchiveLog(log_path.read_text), archive_dir, popen)
    deadline = time.monotonic() + ARCHIVE_START_TIMEOUT_S
    try:
        while "archive running" not in log_path.read_text():
            if popen.poll() is not None:
                raise RuntimeError(f"our archive exited with {popen.returncode}:\n{log_path.read_text()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"our archive not running after {ARCHIVE_START_TIMEOUT_S} s")
            time.sleep(0.05)
    except BaseException:
        archive.stop()
        raise
    return archive
