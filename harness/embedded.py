"""An in-process MediaDriver on a uvloop loop in a background thread, as users run the driver."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import uvloop

from driver.context import DriverContext
from driver.media_driver import MediaDriver

STOP_TIMEOUT_S = 10.0

SWITCH_INTERVAL_S = 0.0002
"""The GIL switch interval while an embedded driver runs. The driver thread shares the GIL with the test's
client, which spins in C without letting go of it; every syscall the driver makes (each datagram sent or
received) then waits up to one interval to get the GIL back. At Python's default 5 ms a retransmission of a
few hundred datagrams took seconds and NAKs reached the sender seconds late; a separate driver process, as
users run it, has no such wait."""

_switch_interval_users = 0
_saved_switch_interval = 0.0
_switch_interval_lock = threading.Lock()


def _hold_short_switch_interval() -> None:
    global _switch_interval_users, _saved_switch_interval
    with _switch_interval_lock:
        if _switch_interval_users == 0:
            _saved_switch_interval = sys.getswitchinterval()
            sys.setswitchinterval(min(SWITCH_INTERVAL_S, _saved_switch_interval))
        _switch_interval_users += 1


def _release_short_switch_interval() -> None:
    global _switch_interval_users
    with _switch_interval_lock:
        _switch_interval_users -= 1
        if _switch_interval_users == 0:
            sys.setswitchinterval(_saved_switch_interval)


CREATED_AERON_DIRS: list[Path] = []
"""Every path new_aeron_dir handed out, so that tests/conftest.py removes each after the test (or, for a
module's or session's fixtures, after them): log files are allocated in full, so a dir left on /dev/shm holds
its memory until someone deletes it."""


def new_aeron_dir(base: Path | None = None, prefix: str = "aeron-test") -> Path:
    """A fresh, unique aeron dir path on /dev/shm when it exists (as Aeron's default), else under ``base``."""
    shm = Path("/dev/shm")
    parent = shm if shm.is_dir() else (base or Path("/tmp"))
    path = parent / f"{prefix}-{os.getpid()}-{time.monotonic_ns()}"
    CREATED_AERON_DIRS.append(path)
    return path


def remove_aeron_dirs(since: int = 0) -> None:
    """Remove the dirs new_aeron_dir handed out from index ``since`` on (and forget them)."""
    for path in CREATED_AERON_DIRS[since:]:
        shutil.rmtree(path, ignore_errors=True)
    del CREATED_AERON_DIRS[since:]


class EmbeddedDriver:
    """Starts at construction; ``close()`` stops the loop, joins the thread and closes the driver.

    ``settings`` are DriverContext fields; ``on_created(driver)`` runs before the loop starts (to attach agents
    such as an embedded archive) and its result is ``attached``. Clocks default to the real ones; pass a ManualClock's
    ``epoch_clock_ms``/``nano_clock`` to drive the driver's protocol timers by hand.
    """

    def __init__(
        self,
        aeron_dir: Path,
        *,
        epoch_clock_ms: Callable[[], int] | None = None,
        nano_clock: Callable[[], int] | None = None,
        on_created: Callable[[MediaDriver], Any] | None = None,
        **settings: Any,
    ) -> None:
        self.aeron_dir = aeron_dir
        clocks = {k: v for k, v in (("epoch_clock_ms", epoch_clock_ms), ("nano_clock", nano_clock)) if v}
        self.driver = MediaDriver(DriverContext(aeron_dir=str(aeron_dir), **settings), **clocks)
        self.attached: Any = on_created(self.driver) if on_created is not None else None
        """What ``on_created`` returned: it runs before the loop starts, to add agents (an archive)."""
        self._failure: BaseException | None = None
        self._loop = uvloop.new_event_loop()
        self._thread = threading.Thread(
            target=self._run, name=f"embedded-driver-{aeron_dir.name}", daemon=True
        )
        self._stop = threading.Event()
        _hold_short_switch_interval()
        self._thread.start()

    def _run(self) -> None:
        try:
            self._loop.run_until_complete(self._serve())
        except BaseException as exc:  # reported by close(), in the test's thread
            self._failure = exc

    async def _serve(self) -> None:
        """run() in every threading mode but INVOKER, where a task on the loop invokes the duty cycle."""
        invoker = self.driver.invoker
        if invoker is None:
            await self.driver.run()
            return
        invoker.start()
        idle_s = 0.0
        try:
            while not self._stop.is_set():
                if invoker.invoke() > 0:
                    idle_s = 0.0
                    await asyncio.sleep(0)
                else:
                    idle_s = min(0.001, idle_s * 2 or 0.00005)
                    await asyncio.sleep(idle_s)
        finally:
            invoker.close()

    @property
    def loop(self) -> uvloop.Loop:
        return self._loop

    def close(self) -> None:
        if self._loop.is_closed():
            return
        self._stop.set()
        self.driver.request_stop()  # thread-safe, and heard by a run() that has not started yet
        self._thread.join(STOP_TIMEOUT_S)
        assert not self._thread.is_alive(), "embedded driver did not stop"
        self._loop.close()
        _release_short_switch_interval()
        self.driver.close()
        if self._failure is not None:
            raise AssertionError(f"embedded driver failed: {self._failure!r}") from self._failure

    def __enter__(self) -> EmbeddedDriver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def embedded_driver(aeron_dir: Path | None = None, **settings: Any) -> Iterator[EmbeddedDriver]:
    """``with embedded_driver(**settings) as d:`` an EmbeddedDriver in a fresh dir, stopped and removed after."""
    directory = aeron_dir or new_aeron_dir()
    driver = EmbeddedDriver(directory, **settings)
    try:
        yield driver
    finally:
        try:
            driver.close()
        finally:
            if aeron_dir is None:
                shutil.rmtree(directory, ignore_errors=True)
