"""A publisher, a polling subscriber or a subscriber that never polls, as its own process on our client.

    untethered_peer.py pub AERON_DIR CHANNEL STREAM_ID SECONDS RATE
    untethered_peer.py sub AERON_DIR CHANNEL STREAM_ID SECONDS
    untethered_peer.py idle AERON_DIR CHANNEL STREAM_ID SECONDS

``pub`` offers SECONDS x RATE messages of 1 KiB at RATE per second (catching up after back-pressure, giving
up 3 s after SECONDS) and prints ``SENT n``. ``sub`` polls for SECONDS + 4 and prints ``RECEIVED n``. ``idle`` subscribes, never polls, and prints
each image event as ``AVAILABLE t`` / ``UNAVAILABLE t`` (seconds since start). All print ``READY`` first.
"""

from __future__ import annotations

import sys
import time

from driver.client import Aeron

MESSAGE = b"x" * 1024


def main() -> int:
    role, aeron_dir, channel, stream_id, seconds = sys.argv[1:6]
    duration = float(seconds)
    start = time.monotonic()
    with Aeron.connect(aeron_dir=aeron_dir) as aeron:
        if role == "pub":
            rate = int(sys.argv[6])
            publication = aeron.add_publication(channel, int(stream_id))
            print("READY", flush=True)
            sent, total = 0, int(duration * rate)
            while sent < total and (elapsed := time.monotonic() - start) < duration + 3:
                if sent < elapsed * rate:
                    if publication.offer(MESSAGE) > 0:
                        sent += 1
                else:
                    time.sleep(0.001)
            print(f"SENT {sent}", flush=True)
        elif role == "sub":
            subscription = aeron.add_subscription(channel, int(stream_id))
            print("READY", flush=True)
            received = 0

            def count(*_args: object) -> None:
                nonlocal received
                received += 1

            while time.monotonic() - start < duration + 4:
                if subscription.poll(count, 64) == 0:
                    time.sleep(0.0005)
            print(f"RECEIVED {received}", flush=True)
        else:

            def event(name: str) -> None:
                print(f"{name} {time.monotonic() - start:.3f}", flush=True)

            aeron.add_subscription(
                channel,
                int(stream_id),
                on_available_image=lambda _image: event("AVAILABLE"),
                on_unavailable_image=lambda _image: event("UNAVAILABLE"),
            )
            print("READY", flush=True)
            time.sleep(duration + 4)
    return 0


if __name__ == "__main__":
    sys.exit(main())
