"""Scheduling of the thread that runs the driver's agents: real time (``aeron.driver.realtime.priority``) or a
short time slice under normal scheduling (``aeron.driver.scheduler.slice``).

On a small machine busy-spinning clients hold every core; a driver woken by a datagram or its park timer then
waits for a scheduler slice before it can move a message (milliseconds). Under ``SCHED_FIFO`` the woken driver
runs at once and, since it still parks when idle, gives the cores back between duty cycles. The kernel's
real-time throttling (``/proc/sys/kernel/sched_rt_runtime_us``) keeps a runaway thread from taking all of a core.
Needs CAP_SYS_NICE or an ``RLIMIT_RTPRIO`` of at least the priority; without either the driver keeps normal
scheduling and says why.

Under normal scheduling (Linux 6.12 and later: EEVDF with custom slices) a thread may ask for a shorter slice
than the kernel's default (1.4 ms on a 2-vCPU VM; it grows with the CPU count): a thread with a shorter slice may
preempt a longer-sliced one when it wakes, instead of waiting for that one's slice to run out. Our driver wakes
from a short park or a datagram many thousand times a second and runs a few tens of microseconds each time, so
it asks for the shortest, 100 us: busy-spinning clients then hold it back less often (Ping/Pong p99 with Java's
sample clients on a 2-vCPU VM, tools/bench/shell_launch.sh -p: 3.78-3.84 ms without it, 3.20-3.58 ms in ten runs
with it, the Java driver's 3.34-3.67 ms). No privilege is needed; an older kernel ignores the request.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import struct
from dataclasses import dataclass

MAX_PRIORITY = 99
MIN_SLICE_NS = 100_000
DEFAULT_SLICE_NS = MIN_SLICE_NS
"""What the driver asks for unless told otherwise (``aeron.driver.scheduler.slice``): the shortest."""
MAX_SLICE_NS = 100_000_000
"""The custom slices Linux accepts for normal scheduling (it clamps others into this range)."""

# struct sched_attr (include/uapi/linux/sched/types.h, SCHED_ATTR_SIZE_VER1): size, policy, flags, nice,
# priority, runtime, deadline, period, util_min, util_max.
_SCHED_ATTR = struct.Struct("=IIQiIQQQII")
_SYS_SCHED_SETATTR = {"x86_64": 314, "aarch64": 274}
_SYS_SCHED_GETATTR = {"x86_64": 315, "aarch64": 275}


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


def use_slice(slice_ns: int) -> str | None:
    """Ask for ``slice_ns`` as the calling thread's time slice under normal scheduling (its policy and nice
    value kept; 0 = back to the kernel's default). Returns None when set, or the reason it was not possible."""
    if slice_ns and not MIN_SLICE_NS <= slice_ns <= MAX_SLICE_NS:
        raise ValueError(f"a scheduler slice must be 100us-100ms: {slice_ns} ns")
    machine = os.uname().machine
    if machine not in _SYS_SCHED_SETATTR:
        return f"sched_setattr is not known on {machine}"
    libc = ctypes.CDLL(None, use_errno=True)
    attr = ctypes.create_string_buffer(_SCHED_ATTR.size)
    if libc.syscall(_SYS_SCHED_GETATTR[machine], 0, attr, _SCHED_ATTR.size, 0) != 0:
        return f"sched_getattr failed: {os.strerror(ctypes.get_errno())}"
    fields = _SCHED_ATTR.unpack(attr.raw)
    policy, nice = fields[1], fields[3]
    if policy not in (os.SCHED_OTHER, os.SCHED_BATCH):
        return "the thread is not under normal scheduling"
    attr = ctypes.create_string_buffer(_SCHED_ATTR.pack(_SCHED_ATTR.size, policy, 0, nice, 0, slice_ns, 0, 0, 0, 0))
    if libc.syscall(_SYS_SCHED_SETATTR[machine], 0, attr, 0) != 0:
        return f"sched_setattr failed: {os.strerror(ctypes.get_errno())}"
    return None
