"""ParkTimer: a one-shot Linux timerfd (``driver._native``, native/include/amd_timer.h) for agent parks.

uvloop's timers have millisecond resolution (a ``call_later`` under 0.5 ms runs at once, anything else
waits >= 1 ms), too coarse for the short parks after a busy spell. An agent runner watches this descriptor
with ``loop.add_reader`` instead: the park can be any length and socket readiness still ends it at once.
The one owner of the native ``amd_timerfd_*`` functions; the runner owns the loop side, this only makes
system calls on its fd.
"""

from __future__ import annotations

import os

from driver._native import lib


def _check(result: int) -> int:
    if result < 0:
        raise OSError(-result, os.strerror(-result))
    return result


class ParkTimer:
    """A disarmed timerfd; :meth:`arm` it, wait until it is readable, :meth:`clear` it; :meth:`close` once."""

    __slots__ = ("_fd",)

    def __init__(self) -> None:
        self._fd = _check(lib.amd_timerfd_create())

    def fileno(self) -> int:
        """The descriptor to watch for readability; -1 once closed."""
        return self._fd

    def arm(self, delay_ns: int) -> None:
        """Expire once, ``delay_ns`` (> 0) from now; re-arming replaces the earlier expiry."""
        _check(lib.amd_timerfd_arm(self._fd, max(1, delay_ns)))

    def disarm(self) -> None:
        _check(lib.amd_timerfd_arm(self._fd, 0))

    def clear(self) -> int:
        """Consume expirations so the descriptor is no longer readable; returns how many there were."""
        return _check(lib.amd_timerfd_clear(self._fd))

    def close(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)

    def __enter__(self) -> ParkTimer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
