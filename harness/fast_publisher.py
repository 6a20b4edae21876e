"""A publisher in a process of its own, as fast as the stream takes it: ``python -m harness.fast_publisher
AERON_DIR CHANNEL STREAM COUNT LENGTH`` waits for a subscriber, offers COUNT messages of LENGTH bytes (each
starting with its sequence number, 8 bytes little-endian), prints "sent COUNT in SECONDS" and exits."""

from __future__ import annotations

import sys
import time

from driver.client import Aeron


def main(aeron_dir: str, channel: str, stream_id: str, count: str, length: str) -> None:
    with Aeron.connect(aeron_dir) as aeron:
        publication = aeron.add_publication(channel, int(stream_id))
        while not publication.is_connected:
            time.sleep(0.001)
        payload = bytearray(int(length))
        started = time.monotonic()
        offer = publication.offer
        for i in range(int(count)):
            payload[:8] = i.to_bytes(8, "little")
            while offer(payload) < 0:
                pass
        print(f"sent {count} in {time.monotonic() - started:.3f}", flush=True)
        time.sleep(0.5)  # the subscribers take the last messages before the publication goes
        publication.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
