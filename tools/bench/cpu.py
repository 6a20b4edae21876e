"""CPU use of a process tree from /proc: on demand, or sampled every 50 ms in a thread."""

from __future__ import annotations

import contextlib
import os
import threading
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")
SAMPLE_INTERVAL_S = 0.05


def process_cpu_seconds(pid: int) -> float:
    """utime + stime of one process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # after "pid (comm)": field 3 (state) is index 0, so utime (14) and stime (15) are at indexes 11 and 12
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def _children(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/children") as f:
                found.extend(int(c) for c in f.read().split())
    return found


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds of ``pid`` and its live descendants (a driver that forks helpers is charged for them)."""
    total, stack, seen = 0.0, [pid], set()
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        try:
            total += process_cpu_seconds(current)
        except (OSError, IndexError, ValueError):
            if current == pid:
                raise
            continue
        stack.extend(_children(current))
    return total


class CpuSampler:
    """CPU use of a process tree: ``now()`` on demand, or ``start()`` a thread that samples every 50 ms."""

    def __init__(self, pid: int, interval: float = SAMPLE_INTERVAL_S) -> None:
        self.pid = pid
        self.interval = interval
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def now(self) -> tuple[float, float]:
        return time.monotonic(), tree_cpu_seconds(self.pid)

    def start(self) -> CpuSampler:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"cpu-{self.pid}", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.samples.append(self.now())
            except (OSError, IndexError, ValueError):
                return  # the process is gone
            self._stop.wait(self.interval)

    def pct(self, t0: float, t1: float) -> float | None:
        """CPU % of one core between the samples nearest to ``t0`` and ``t1`` (None without two samples)."""
        samples = list(self.samples)
        if len(samples) < 2:
            return None
        a = min(samples, key=lambda s: abs(s[0] - t0))
        b = min(samples, key=lambda s: abs(s[0] - t1))
        if b[0] <= a[0]:
            return None
        return 100.0 * (b[1] - a[1]) / (b[0] - a[0])
