"""The signals that stop a long-running command (``run``, the archive server) cleanly, caught from the process's
first moment.

Importing the CLI (asyncio among it) and starting a driver take a few hundred milliseconds; a stop signal in that
time used to take its default action and kill the process (rc -SIGUSR1, files left as after a crash). ``hold``
runs before any of it: a signal is remembered until the event loop installs its own handlers and then stops the
driver as it would have a moment later. Commands that do not run until stopped ``release`` the signals at once.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

STOP_SIGNALS = (
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
)
"""Every catchable signal whose default action ends the process. SIGPIPE stays ignored (Python's default): a
closed stdout or socket is an error on that write, not a reason to stop the driver."""

_pending: list[int] = []
_saved: dict[int, Callable[..., Any] | int | None] = {}


def _remember(signum: int, _frame: object) -> None:
    _pending.append(signum)


def hold() -> list[int]:
    """Catch the stop signals, remembering each; returns the list of those caught (it grows while they are held).
    Idempotent: a second call keeps what the first caught."""
    for sig in STOP_SIGNALS:
        previous = signal.signal(sig, _remember)
        if previous is not _remember:
            _saved[sig] = previous
    return _pending


def release() -> None:
    """The handlers from before ``hold`` back; a signal caught meanwhile takes its effect now."""
    for sig, handler in _saved.items():
        signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
    _saved.clear()
    caught, _pending[:] = list(_pending), []
    for sig in caught:
        signal.raise_signal(sig)
