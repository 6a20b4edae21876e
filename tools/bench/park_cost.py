#!/usr/bin/env python3
"""What one park of a driver's agent costs on this host: the price of the park timer, not of the driver.

A parked runner arms its ``timerfd`` (driver/agent/park_timer.py) and waits for it through the event loop's
epoll. On a virtual machine the arming of a timer due soon reprograms the guest's clock, and the wake-up is an
interrupt delivered through the hypervisor: both can cost more than a Python duty cycle, which is why the driver
parks as rarely as it can (docs/performance.md). This measures, in this process:

- ``arm_us``: CPU per arming, by how far ahead it is due (a loop of re-arms: none of them expires);
- ``park``: per one-shot park through epoll, by its length: the arming, how late the wake-up comes after the
  deadline (median and p90), the wall time and the CPU time of the whole park (arming, wake-up and read).

There is no reference to compare with: it describes the host, so that round-trip figures can be read against it.

    .venv/bin/python -m tools.bench.park_cost
"""

from __future__ import annotations

import argparse
import select
import statistics
import time

from driver.agent.park_timer import ParkTimer
from tools.bench.report import emit, host_info, progress, run_main

ARM_DELAYS_NS = (1_000, 16_000, 50_000, 200_000, 1_000_000, 1_000_000_000)
PARK_LENGTHS_NS = (16_000, 50_000)


def arm_cost_us(timer: ParkTimer, delay_ns: int, count: int) -> float:
    """CPU per arming ``delay_ns`` ahead, each arming replacing the last before it expires."""
    started = time.process_time_ns()
    for _ in range(count):
        timer.arm(delay_ns)
    timer.disarm()
    return (time.process_time_ns() - started) / count / 1e3


def park_cost(timer: ParkTimer, length_ns: int, count: int) -> dict[str, float]:
    """``count`` one-shot parks of ``length_ns``, each armed, waited for through epoll and read."""
    poller = select.epoll()
    try:
        poller.register(timer.fileno(), select.EPOLLIN)
        arms, lates = [], []
        cpu_started, wall_started = time.process_time_ns(), time.perf_counter_ns()
        for _ in range(count):
            start = time.perf_counter_ns()
            timer.arm(length_ns)
            armed = time.perf_counter_ns()
            while not poller.poll(1):
                pass
            woken = time.perf_counter_ns()
            timer.clear()
            arms.append(armed - start)
            lates.append(woken - start - length_ns)
        cpu_ns = time.process_time_ns() - cpu_started
        wall_ns = time.perf_counter_ns() - wall_started
    finally:
        poller.close()
    deciles = statistics.quantiles(lates, n=10)
    return {
        "arm_us": round(statistics.median(arms) / 1e3, 1),
        "late_us_p50": round(statistics.median(lates) / 1e3, 1),
        "late_us_p90": round(deciles[-1] / 1e3, 1),
        "wall_us": round(wall_ns / count / 1e3, 1),
        "cpu_us": round(cpu_ns / count / 1e3, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arms", type=int, default=5_000, help="armings per delay (default 5,000)")
    parser.add_argument("--parks", type=int, default=2_000, help="parks per length (default 2,000)")
    args = parser.parse_args()
    timer = ParkTimer()
    try:
        progress("arming costs")
        arms = {f"{delay // 1000}us": round(arm_cost_us(timer, delay, args.arms), 2) for delay in ARM_DELAYS_NS}
        progress("parks")
        parks = {f"{length // 1000}us": park_cost(timer, length, args.parks) for length in PARK_LENGTHS_NS}
    finally:
        timer.close()
    emit({"bench": "park_cost", **host_info(), "arm_us": arms, "park": parks})
    return 0


if __name__ == "__main__":
    run_main(main)
