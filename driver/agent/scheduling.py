"""Real-time scheduling for the thread that runs the driver's agents (``aeron.driver.realtime.priority``).

On a small machine busy-spinning clients hold every core; a driver woken by a datagram or its park timer then
waits for a scheduler slice before it can move a message (milliseconds). Under ``SCHED_FIFO`` the woken driver
runs at once and, since it still parks when idle, gives the cores back between duty cycles. The kernel's
real-time throttling (``/proc/sys/kernel/sched_rt_runtime_us``) keeps a runaway thread from taking all of a core.
Needs CAP_SYS_NICE or an ``RLIMIT_RTPRIO`` of at least the priority; without either the driver keeps normal
scheduling and says why.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

MAX_PRIORITY = 99


@dataclass(frozen=True)
class ThreadScheduling:
    """The calling thread's policy and priority before a change, to put back."""

    policy: int
    priority: int


def use_realtime(priority: int) -> tuple[ThreadScheduling | None, str | None]:
    """Put the calling thread under SCHED_FIFO at ``priority`` (1-99). Returns what to restore, or None and
    the reason it was not possible."""
    if not 1 <= priority <= MAX_PRIORITY:
        raise ValueError(f"real-time priority must be 1-{MAX_PRIORITY}: {priority}")
    try:
        before = ThreadScheduling(os.sched_getscheduler(0), os.sched_getparam(0).sched_priority)
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
    except (AttributeError, OSError) as e:
        reason = getattr(e, "strerror", None) or str(e)
        return None, f"SCHED_FIFO priority {priority} refused ({reason}): needs CAP_SYS_NICE or RLIMIT_RTPRIO"
    return before, None


def restore(before: ThreadScheduling) -> None:
    """Give the calling thread back the scheduling ``use_realtime`` replaced."""
    with contextlib.suppress(OSError):  # lowering one's own priority is always allowed
        os.sched_setscheduler(0, before.policy, os.sched_param(before.priority))
