#!/usr/bin/env python3
"""Driver CPU with thousands of idle IPC publications: ours against the Aeron 1.15.1 Java driver (same run).

For each driver in turn (a fresh dir under /dev/shm, each with the same properties), our Python client adds
``--publications`` exclusive publications on ``aeron:ipc`` (``--channel udp``: on one UDP endpoint on localhost,
a free port, nobody receiving) with small terms (``--term-length``, 64 KiB) and no subscriber, then holds them without offering anything while the driver's utime+stime (/proc) is measured over
the window. A driver's duty cycle should not grow with idle resources faster than the Java driver's does.
Prints one JSON line; exits 0 when ours <= the Java driver's CPU, 1 when not, 2 when no comparison was made.
"""

from __future__ import annotations

import argparse
import os
import time

from driver.client import Aeron
from driver.client.exceptions import AeronError
from harness.java import find_peers
from tools.bench.compare import ratio, rounded
from tools.bench.harness import Harness, free_udp_port
from tools.bench.report import BenchError, emit, no_comparison, progress, run_main

STREAM_ID = 1001
BATCH = 64  # registrations in flight at once: well inside the to-driver ring


def add_publications(aeron: Aeron, channel: str, count: int, timeout_s: float) -> list[object]:
    """Add ``count`` exclusive publications, ``BATCH`` registrations at a time; all of them, or BenchError."""
    publications: list[object] = []
    deadline = time.monotonic() + timeout_s
    while len(publications) < count:
        ids = [
            aeron.async_add_exclusive_publication(channel, STREAM_ID)
            for _ in range(min(BATCH, count - len(publications)))
        ]
        for registration_id in ids:
            while (publication := aeron.get_exclusive_publication(registration_id)) is None:
                if time.monotonic() > deadline:
                    raise BenchError(
                        f"only {len(publications)} of {count} publications added in {timeout_s:g}s"
                    )
                time.sleep(0.001)
            publications.append(publication)
    return publications


def measure(
    h: Harness, kind: str, count: int, channel: str, settle_s: float, window_s: float
) -> dict[str, float]:
    """Start a driver, add the publications, return its CPU (% of one core) with none and with them all."""
    driver = h.start_driver(kind)
    time.sleep(settle_s)
    baseline = cpu_pct(driver, window_s / 2)
    with Aeron.connect(aeron_dir=str(driver.aeron_dir)) as aeron:
        started = time.monotonic()
        publications = add_publications(aeron, channel, count, timeout_s=max(60.0, count / 20))
        added_s = time.monotonic() - started
        progress(f"{kind}: {len(publications)} publications added in {added_s:.1f}s")
        time.sleep(settle_s)
        loaded = cpu_pct(driver, window_s)
        if not driver.proc.alive:
            raise BenchError(f"{kind} driver exited during the measurement (rc={driver.proc.returncode})")
    return {"idle_pct_core": baseline, "loaded_pct_core": loaded, "add_s": added_s}


def cpu_pct(driver: object, window_s: float) -> float:
    cpu0, t0 = driver.cpu_seconds(), time.monotonic()
    time.sleep(window_s)
    cpu1, t1 = driver.cpu_seconds(), time.monotonic()
    return 100.0 * (cpu1 - cpu0) / (t1 - t0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--publications", type=int, default=4000, help="idle publications (default 4000)")
    parser.add_argument(
        "--channel", choices=("ipc", "udp"), default="ipc", help="their channel (default ipc)"
    )
    parser.add_argument("--term-length", type=int, default=65536, help="their term length (default 64 KiB)")
    parser.add_argument(
        "--seconds", type=float, default=10.0, help="measurement window per driver (default 10)"
    )
    parser.add_argument("--settle", type=float, default=2.0, help="wait before measuring (s)")
    parser.add_argument("--no-java", action="store_true", help="skip the Java reference")
    args = parser.parse_args()

    result: dict[str, object] = {
        "bench": "idle_publications",
        "channel": args.channel,
        "publications": args.publications,
    }
    if args.channel == "ipc":
        channel = f"aeron:ipc?term-length={args.term_length}"
    else:
        channel = f"aeron:udp?endpoint=localhost:{free_udp_port()}|term-length={args.term_length}"
    kinds = ["ours"] if args.no_java else ["ours", "java"]
    if not args.no_java and find_peers() is None:
        return no_comparison(result, BenchError("Aeron peer not installed (run `make peers`)"))
    figures: dict[str, dict[str, float]] = {}
    try:
        for kind in kinds:
            with Harness() as h:
                figures[kind] = measure(h, kind, args.publications, channel, args.settle, args.seconds)
    except (BenchError, AeronError, OSError) as exc:
        return no_comparison(result, exc)

    for kind, figure in figures.items():
        for key, value in figure.items():
            result[f"{kind}_{key}"] = rounded(value, 2)
    java = figures.get("java")
    ours = figures["ours"]["loaded_pct_core"]
    result["ratio"] = None if java is None else ratio(ours, java["loaded_pct_core"])
    result["window_s"] = args.seconds
    result["goal"] = "ours <= java"
    result["load_1m"] = round(os.getloadavg()[0], 2)
    emit(result)
    if java is None:
        return 2
    return 0 if ours <= java["loaded_pct_core"] else 1


if __name__ == "__main__":
    run_main(main)
