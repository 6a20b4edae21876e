"""Child processes of a benchmark or a test: their environment, their start, waiting until they are ready, the
output of one kept line by line, and their stop."""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from harness.errors import PeerError

ROOT = Path(__file__).resolve().parents[1]
STOP_GRACE_S = 5.0
POLL_INTERVAL_S = 0.02

Redirect = int | IO[Any] | None


class ChildExited(PeerError):
    """The child exited before it was ready."""


class NotReady(PeerError):
    """The child was not ready in time."""


def child_env() -> dict[str, str]:
    """No AERON_* settings leak in from the caller's shell; Python children are unbuffered."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AERON_")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _deathsig_preexec() -> Callable[[], None] | None:
    """A preexec_fn asking the kernel to SIGTERM the child if its parent dies (resolved before any fork)."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig, sigterm = 1, int(signal.SIGTERM)

    def preexec() -> None:
        prctl(pr_set_pdeathsig, sigterm, 0, 0, 0)

    return preexec


_PREEXEC = _deathsig_preexec()


def start(
    cmd: Sequence[str],
    *,
    stdin: Redirect = subprocess.DEVNULL,
    stdout: Redirect = subprocess.PIPE,
    stderr: Redirect = subprocess.STDOUT,
    cwd: Path = ROOT,
    bufsize: int = -1,
    own_session: bool = True,
) -> subprocess.Popen[bytes]:
    """Start ``cmd`` from the repository root with ``child_env()``, SIGTERMed by the kernel if this process dies
    (PR_SET_PDEATHSIG). ``own_session``: in a session of its own (the benchmarks); tests pass False so that
    their children stay in the test run's session and scheduling group (a niced run stays niced)."""
    return subprocess.Popen(
        list(cmd),
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        cwd=cwd,
        env=child_env(),
        bufsize=bufsize,
        # A session of its own, as a process started from its own terminal or by a service manager has:
        # with the kernel's autogroup scheduling (kernel.sched_autogroup_enabled) CPU is shared between
        # sessions first. In one session with two busy-spinning sample clients, a driver that parks when
        # idle (the Java driver's backoff, ours) got a few % of a core: Java moved 1.4-1.7 M msgs/s
        # instead of 4.0 M and its Ping/Pong p50 was milliseconds instead of 100 us.
        start_new_session=own_session,
        preexec_fn=_PREEXEC,
    )


def wait_ready(
    popen: subprocess.Popen[Any], ready: Callable[[], bool], timeout: float, interval: float = POLL_INTERVAL_S
) -> None:
    """Poll ``ready`` every ``interval`` seconds until it is true; ChildExited if ``popen`` exits first,
    NotReady after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not ready():
        if popen.poll() is not None:
            raise ChildExited(f"exited with code {popen.returncode} before it was ready")
        if time.monotonic() > deadline:
            raise NotReady(f"not ready after {timeout:g}s")
        time.sleep(interval)


def terminate(popen: subprocess.Popen[Any], grace: float = STOP_GRACE_S) -> None:
    """SIGTERM one child; SIGKILL if it has not exited after ``grace`` seconds."""
    popen.send_signal(signal.SIGTERM)
    try:
        popen.wait(grace)
    except subprocess.TimeoutExpired:
        popen.kill()
        popen.wait()


_EXCEPTION = re.compile(
    r'^(?:Exception in thread "[^"]*" )?(?:[\w$]+\.)+([\w$]*(?:Exception|Error))(?::\s*(.*))?$'
)


class Proc:
    """A started child: its Popen, and every line it printed (stdout and stderr) with its arrival time."""

    def __init__(self, name: str, popen: subprocess.Popen[bytes]) -> None:
        self.name = name
        self.popen = popen
        self.pid = popen.pid
        self.lines: list[tuple[float, str]] = []
        self._reader = threading.Thread(target=self._read, name=f"out-{name}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.popen.stdout is not None
        for raw in iter(self.popen.stdout.readline, b""):
            self.lines.append((time.monotonic(), raw.decode(errors="replace").rstrip("\r\n")))

    @property
    def alive(self) -> bool:
        return self.popen.poll() is None

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    def text(self) -> str:
        return "\n".join(line for _, line in list(self.lines))

    def tail(self, count: int = 15) -> str:
        return "\n".join(line for _, line in list(self.lines)[-count:])

    def find(self, pattern: re.Pattern[str] | str) -> re.Match[str] | None:
        regex = re.compile(pattern) if isinstance(pattern, str) else pattern
        for _, line in list(self.lines):
            match = regex.search(line)
            if match:
                return match
        return None

    def exception(self) -> str | None:
        """``SimpleName: message`` of the first Java exception the process printed, if any."""
        for _, line in list(self.lines):
            match = _EXCEPTION.match(line.strip())
            if match:
                name, message = match.group(1), (match.group(2) or "").strip()
                message = re.sub(r"^errorCodeValue=\d+\s*", "", message)
                return f"{name}: {message}" if message else name
        return None

    def signal(self, sig: int) -> None:
        if self.popen.poll() is not None:
            return
        try:
            os.killpg(self.pid, sig)  # its own process group: the child and anything it forked
        except (ProcessLookupError, PermissionError):
            with contextlib.suppress(ProcessLookupError):
                self.popen.send_signal(sig)

    def join_output(self, timeout: float = 2.0) -> None:
        self._reader.join(timeout=timeout)


def describe_failure(proc: Proc) -> str:
    """One line about why a child stopped: its Java exception, or its exit code and last line."""
    exc = proc.exception()
    if exc:
        return f"{proc.name}: {exc}"
    last = proc.tail(1).strip()
    return f"{proc.name} exited with code {proc.returncode}" + (f": {last}" if last else "")


def stop_all(procs: Sequence[Proc], grace: float = STOP_GRACE_S) -> None:
    """SIGTERM every live process, wait up to ``grace`` seconds in total, then SIGKILL what is left."""
    live = [p for p in procs if p.alive]
    for proc in live:
        proc.signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for proc in live:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
    for proc in live:
        if proc.alive:
            proc.signal(signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.popen.wait(timeout=10)
