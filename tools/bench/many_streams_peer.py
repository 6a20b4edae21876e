"""One side of ``many_streams.py``: our Python client publishing on, or subscribing to, N streams of one channel.

    python -m tools.bench.many_streams_peer pub --dir D --channel C --streams N --rate R --length L --seconds S
    python -m tools.bench.many_streams_peer sub --dir D --channel C --streams N --seconds S

``pub``: N exclusive publications (stream ids 1001..1000+N), each message stamped with the monotonic clock in its
first 8 bytes, offered round-robin at ``--rate`` messages a second in all (sleeping while ahead of it; 0: flat out,
spinning), until ``--seconds`` pass;
prints ``READY`` once every publication is connected, then ``SENT <count>`` at the end. ``sub``: N subscriptions,
polled round-robin (a 0.1 ms sleep after an empty round); prints ``SUBSCRIBED`` once they are added, ``READY`` once every subscription has an image, then each second ``RATE <monotonic s>
<messages so far>`` and at the end ``LATENCY <p50 us> <p99 us> <samples>`` (stamp to poll, one sample in 16).
"""

from __future__ import annotations

import argparse
import struct
import sys
import time
from typing import Any

from driver.client import Aeron

FIRST_STREAM_ID = 1001
STAMP = struct.Struct("<q")
SAMPLE_EVERY = 16
READY_TIMEOUT_S = 60.0


def ready(items: list[Any], failure: str) -> None:
    """Wait until every publication or subscription is connected, then say READY."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not all(item.is_connected for item in items):
        if time.monotonic() > deadline:
            raise SystemExit(failure)
        time.sleep(0.01)
    print("READY", flush=True)


def publish(aeron: Aeron, args: argparse.Namespace) -> None:
    publications = [
        aeron.add_exclusive_publication(args.channel, FIRST_STREAM_ID + i) for i in range(args.streams)
    ]
    ready(publications, "not every publication connected")
    message = bytearray(args.length)
    interval_ns = int(1e9 / args.rate) if args.rate > 0 else 0
    sent = 0
    start = time.monotonic_ns()
    end = start + int(args.seconds * 1e9)
    next_ns = start
    count = len(publications)
    i = 0
    while True:
        now = time.monotonic_ns()
        if now >= end:
            break
        if interval_ns and now < next_ns:
            time.sleep(min(next_ns - now, 1_000_000) / 1e9)  # paced: ahead of the rate, so wait (<= 1 ms)
            continue
        STAMP.pack_into(message, 0, now)
        if publications[i].offer(message) > 0:
            sent += 1
            i = i + 1 if i + 1 < count else 0
            next_ns += interval_ns
    print(f"SENT {sent}", flush=True)


def subscribe(aeron: Aeron, args: argparse.Namespace) -> None:
    subscriptions = [aeron.add_subscription(args.channel, FIRST_STREAM_ID + i) for i in range(args.streams)]
    print("SUBSCRIBED", flush=True)
    ready(subscriptions, "not every subscription has an image")
    received = 0
    latencies: list[int] = []

    def on_fragment(buffer: object, offset: int, length: int, header: object) -> None:
        nonlocal received
        received += 1
        if received % SAMPLE_EVERY == 0:
            latencies.append(time.monotonic_ns() - buffer.get_int64(offset))  # type: ignore[attr-defined]

    end = time.monotonic() + args.seconds
    next_report = time.monotonic() + 1.0
    while True:
        fragments = 0
        for subscription in subscriptions:
            fragments += subscription.poll(on_fragment, 64)
        if not fragments:
            time.sleep(
                0.0001
            )  # an empty round: back off, as an application would, leaving the cores to others
        now = time.monotonic()
        if now >= next_report:
            print(f"RATE {now:.3f} {received}", flush=True)
            next_report += 1.0
            if now >= end:
                break
    latencies.sort()
    if latencies:
        p50 = latencies[len(latencies) // 2] / 1000
        p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] / 1000
        print(f"LATENCY {p50:.1f} {p99:.1f} {len(latencies)}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("side", choices=("pub", "sub"))
    parser.add_argument("--dir", required=True)
    parser.add_argument("--channel", required=True)
    parser.add_argument("--streams", type=int, required=True)
    parser.add_argument("--rate", type=float, default=0.0)
    parser.add_argument("--length", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=12.0)
    args = parser.parse_args()
    with Aeron.connect(aeron_dir=args.dir) as aeron:
        (publish if args.side == "pub" else subscribe)(aeron, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
