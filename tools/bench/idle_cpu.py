#!/usr/bin/env python3
"""Idle CPU of our media driver against the Aeron 1.15.1 Java driver (reference, measured in the same run).

Starts each driver in turn in a fresh dir under /dev/shm, waits until its cnc.dat is ready (version 15 and a
to-driver consumer heartbeat), lets it settle, then measures utime+stime from /proc/<pid>/stat over the window.
Prints one JSON line; exits 1 if ours uses >= 5 % of a core (the goal), 2 if a driver fails to start.

With ``--archive`` both run their archive too, with no clients: ours is ``mediadriver run --archive``, the
reference the 1.15.1 ``io.aeron.archive.ArchivingMediaDriver`` with its defaults (DEDICATED driver and archive);
the goal is the same.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from harness.java import find_peers
from tools.bench.archive_harness import archive_channel_props, start_archiving_driver
from tools.bench.harness import Harness
from tools.bench.report import BenchError, run_main

GOAL_PCT = 5.0


def measure(kind: str, settle_s: float, window_s: float, archive: bool = False) -> float:
    """Start a driver, wait for readiness and ``settle_s``, return its CPU use in % of one core over ``window_s``."""
    with Harness() as h:
        # The Java driver (and archive) with its defaults (DEDICATED threading), as it ships.
        driver = start_archiving_driver(h, kind, archive_channel_props()) if archive else h.start_driver(kind)
        time.sleep(settle_s)
        cpu0, t0 = driver.cpu_seconds(), time.monotonic()
        time.sleep(window_s)
        cpu1, t1 = driver.cpu_seconds(), time.monotonic()
        if not driver.proc.alive:
            raise BenchError(f"{kind} driver exited during the measurement (rc={driver.proc.returncode})")
        return 100.0 * (cpu1 - cpu0) / (t1 - t0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--seconds", type=float, default=10.0, help="measurement window per driver (default 10)"
    )
    parser.add_argument("--settle", type=float, default=2.0, help="wait after readiness before measuring (s)")
    parser.add_argument("--no-java", action="store_true", help="skip the Java reference")
    parser.add_argument("--archive", action="store_true", help="drivers with their archive, no clients")
    args = parser.parse_args()

    result: dict[str, object] = {"bench": "idle_cpu_archive" if args.archive else "idle_cpu"}
    try:
        ours = measure("ours", args.settle, args.seconds, args.archive)
        java = None
        if not args.no_java and find_peers() is not None:
            java = measure("java", args.settle, args.seconds, args.archive)
        elif not args.no_java:
            print("idle_cpu: Aeron peer not installed (run `make peers`); no Java reference", file=sys.stderr)
    except (RuntimeError, OSError) as exc:
        print(f"idle_cpu: {exc}", file=sys.stderr)
        return 2

    result["ours_pct_core"] = round(ours, 3)
    result["java_pct_core"] = None if java is None else round(java, 3)
    result["ratio"] = None if not java else round(ours / java, 3)
    result["window_s"] = args.seconds
    result["goal"] = f"ours < {GOAL_PCT:g}%"
    result["load_1m"] = round(os.getloadavg()[0], 2)
    print(json.dumps(result))
    return 0 if ours < GOAL_PCT else 1


if __name__ == "__main__":
    run_main(main)
